"""`make bench`: speed figures for ContextLab on this machine, printed and written to bench.json.

Not pass/fail: targets are printed beside the figures for a person to read.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
OFFLINE = ("glove-6b-50d", "minilm-l6", "smollm2-135m", "smollm2-135m-mlm")
SENTENCE_16 = "The man went to the bank to deposit his money before the flood."  # 16 tokens with [CLS], [SEP]


def timed(fn, repeat: int, warmup: int = 5) -> float:
    """Median wall time of fn() in milliseconds."""
    return timed_alternately(fn, repeat=repeat, warmup=warmup)[0]


def timed_alternately(*fns, repeat: int, warmup: int = 5) -> list[float]:
    """Median wall times of each fn() in ms, run in turn so that drift in the machine's
    load (other processes, CPU clocks, caches) falls on all of them alike."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, samples):
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1000)
    return [statistics.median(out) for out in samples]


def cold_load(name: str, cache_dir: str | None = None) -> dict[str, float]:
    """Import model_zoo's loading (torch, transformers, gensim) and load `name` in a fresh process."""
    code = (
        "import time; t0 = time.perf_counter(); import model_zoo, model_zoo.loading; t1 = time.perf_counter(); "
        f"model_zoo.load({name!r}); t2 = time.perf_counter(); print(t1 - t0, t2 - t1)"
    )
    import_s, load_s = fresh_process(code, {"CONTEXTLAB_CACHE": cache_dir} if cache_dir else {})[-2:]
    return {"import_s": round(import_s, 2), "load_s": round(load_s, 2)}


def fresh_process(code: str, env: dict[str, str]) -> list[float]:
    """The numbers `code` prints, run in a fresh Python process at the repository's root with `env` over ours."""
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    return [float(word) for word in out.stdout.split()]


def encode_latency() -> dict[str, float]:
    import torch

    import model_zoo

    model = model_zoo.load("minilm-l6")
    torch.set_num_threads(torch.get_num_threads())
    inputs = model.tokenizer(SENTENCE_16, return_tensors="pt")
    tokens = int(inputs["input_ids"].shape[1])

    def bare() -> None:
        with torch.inference_mode():
            model.model(**inputs)

    encode_ms = timed(lambda: model.encode(SENTENCE_16), repeat=200)
    bare_ms = timed(bare, repeat=200)
    return {
        "tokens": tokens,
        "encode_ms": round(encode_ms, 2),
        "bare_forward_ms": round(bare_ms, 2),
        "ratio": round(encode_ms / bare_ms, 3),
    }


def elmo_latency() -> dict[str, dict[str, float]]:
    """ELMo's encode on a 16-word sentence: the shipped elmo-mini, and a biLM of elmo-small's shape
    (AllenNLP's options: 2048 char filters, 1 highway, 2 x LSTM 1024, projection 128) with random weights."""
    import model_zoo
    from model_zoo.elmo import BiLm, ElmoModel, ElmoOptions

    small = ElmoOptions.from_json(
        {
            "lstm": {
                "use_skip_connections": True,
                "projection_dim": 128,
                "cell_clip": 3,
                "proj_clip": 3,
                "dim": 1024,
                "n_layers": 2,
            },
            "char_cnn": {
                "activation": "relu",
                "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
                "n_highway": 1,
                "embedding": {"dim": 16},
                "n_characters": 262,
                "max_characters_per_token": 50,
            },
        }
    )
    models = {
        "elmo-mini": model_zoo.load("elmo-mini"),
        "elmo-small shape (random weights)": ElmoModel("elmo-small-shape", BiLm(small)),
    }
    words = models["elmo-mini"].count_tokens(SENTENCE_16)  # words and the full stop: ELMo's tokens
    return {
        name: {"words": words, "encode_ms": round(timed(lambda m=model: m.encode(SENTENCE_16), repeat=50), 2)}
        for name, model in models.items()
    }


def first_umap(cache_dir: str) -> float:
    """Seconds to a process's first UMAP map (200 random 50-d points), import included, in a fresh process
    whose ContextLab cache is `cache_dir` (numba's compiled umap-learn under it: disk.keep_compiled)."""
    code = (
        "import time; t0 = time.perf_counter(); import numpy as np; from model_zoo.lessons.projection import umap_2d; "
        "umap_2d(np.random.default_rng(0).normal(size=(200, 50)).astype(np.float32)); print(time.perf_counter() - t0)"
    )
    # NUMBA_CACHE_DIR empty is numba's unset: the cache goes under `cache_dir`
    env = {"CONTEXTLAB_CACHE": cache_dir, "OMP_NUM_THREADS": "1", "NUMBA_CACHE_DIR": ""}
    return round(fresh_process(code, env)[-1], 2)


def static_lessons() -> dict[str, float]:
    """Lessons 1-2: neighbours and analogies over 400k GloVe words, a 200-word map, live word2vec."""
    import model_zoo
    from model_zoo.lessons import lexicon
    from model_zoo.lessons.projection import project_2d
    from model_zoo.lessons.word2vec import TrainSettings, train_word2vec

    glove = model_zoo.load("glove-6b-50d")
    assert isinstance(glove, model_zoo.StaticModel)
    words = glove.kv.index_to_key[100:300]
    vectors = np.stack([glove.vector(w) for w in words])
    figures = {
        "neighbours_ms": timed(lambda: glove.most_similar("bank", 10), repeat=50),
        "analogy_ms": timed(lambda: glove.analogy("man", "king", "woman", 5), repeat=50),
        "map_200_pca_ms": timed(lambda: project_2d(vectors, "pca"), repeat=20),
    }
    figures["map_200_umap_ms"] = timed(lambda: project_2d(vectors, "umap"), repeat=3, warmup=1)
    sentences = lexicon.corpus()
    # Another session keeps asking for neighbours while one trains: does it stall?
    import threading

    during: list[float] = []
    done = threading.Event()

    def other_session() -> None:
        while not done.is_set():
            start = time.perf_counter()
            glove.most_similar("river", 10)
            during.append((time.perf_counter() - start) * 1000)
            time.sleep(0.05)

    probe = threading.Thread(target=other_session)
    probe.start()
    start = time.perf_counter()
    train_word2vec(sentences, TrainSettings(), watch="water")
    figures["word2vec_train_default_s"] = time.perf_counter() - start
    done.set()
    probe.join()
    figures["neighbours_during_training_median_ms"] = statistics.median(during)
    figures["neighbours_during_training_max_ms"] = max(during)
    return {k: round(v, 2) for k, v in figures.items()}


def masked_prediction() -> dict[str, dict[str, float]]:
    """fill_mask against transformers' fill-mask pipeline on the same checkpoint, and how much
    of the difference is the oneDNN kernels (the same fill_mask loaded with CONTEXTLAB_ONEDNN=0)."""
    from transformers import BertConfig, BertForPreTraining, pipeline

    import model_zoo

    def load(source: str, onednn: bool) -> model_zoo.MaskedLM:
        before = os.environ.get("CONTEXTLAB_ONEDNN")
        os.environ["CONTEXTLAB_ONEDNN"] = "1" if onednn else "0"
        try:
            model = model_zoo.load(source)
        finally:
            if before is None:
                del os.environ["CONTEXTLAB_ONEDNN"]
            else:
                os.environ["CONTEXTLAB_ONEDNN"] = before
        assert isinstance(model, model_zoo.MaskedLM)
        return model

    text = "The man went to the [MASK] to deposit his money before the flood."  # 16 tokens
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        tokenizer = load("minilm-l6-mlm", True).tokenizer
        BertForPreTraining(BertConfig()).save_pretrained(folder)  # bert-base shape, random weights
        tokenizer.save_pretrained(folder)
        for name, source in (("minilm-l6-mlm", "minilm-l6-mlm"), ("bert-base-shaped (random)", folder)):
            ours, stock = load(source, True), load(source, False)
            # The pipeline loads the checkpoint its own way (BertForMaskedLM); minilm-l6-mlm is no
            # checkpoint on disk, so it gets the model with fused attention and stock kernels.
            pipe = pipeline(
                "fill-mask", model=folder if source == folder else stock.fast_model, tokenizer=tokenizer, device=-1
            )
            mine, plain, theirs = timed_alternately(
                lambda m=ours: m.fill_mask(text, 5),
                lambda m=stock: m.fill_mask(text, 5),
                lambda p=pipe: p(text, top_k=5),
                repeat=60,
            )
            results[name] = {
                "fill_mask_ms": round(mine, 2),
                "fill_mask_stock_kernels_ms": round(plain, 2),
                "pipeline_ms": round(theirs, 2),
                "ratio": round(mine / theirs, 3),
                "ratio_stock_kernels": round(plain / theirs, 3),
            }
    return results


def offline_masked_lms() -> dict[str, float]:
    """fill_mask of the Masked LM page's offline model against the one it replaced (minilm-l6-mlm).
    transformers' fill-mask pipeline cannot load smollm2-135m-mlm (a decoder with bidirectional
    attention, read one position earlier), so the ratio is against the model it replaced."""
    import model_zoo

    text = "The man went to the [MASK] to deposit his money before the flood."
    new, old = model_zoo.load("smollm2-135m-mlm"), model_zoo.load("minilm-l6-mlm")
    assert isinstance(new, model_zoo.MaskedLM) and isinstance(old, model_zoo.MaskedLM)
    batch = [text.replace("man", f"man number {i}") for i in range(30)]
    one_new, one_old, many_new, many_old = timed_alternately(
        lambda: new.fill_mask(text, 5),
        lambda: old.fill_mask(text, 5),
        lambda: new.fill_masks(batch, 5),
        lambda: old.fill_masks(batch, 5),
        repeat=20,
    )
    return {
        "smollm2_135m_mlm_ms": round(one_new, 2),
        "minilm_l6_mlm_ms": round(one_old, 2),
        "ratio": round(one_new / one_old, 2),
        "thirty_sentences_smollm2_135m_mlm_ms": round(many_new, 1),
        "thirty_sentences_minilm_l6_mlm_ms": round(many_old, 1),
    }


def word_senses() -> dict[str, float]:
    """The Word senses lesson: encoding the set for one word, reloading it, a layer change, one sentence."""
    import model_zoo
    from model_zoo.lessons.projection import pca_2d, umap_2d
    from model_zoo.lessons.senses import cached_sense_vectors, layer_measures, load_senses, vote

    minilm = model_zoo.load("minilm-l6")
    assert isinstance(minilm, model_zoo.Encoder)
    bank = load_senses()["bank"]
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        encoded = cached_sense_vectors(minilm, bank, Path(folder))
        encode_s = time.perf_counter() - start
        reload_ms = timed(lambda: cached_sense_vectors(minilm, bank, Path(folder)), repeat=10, warmup=1)
    layer_ms = timed(lambda: pca_2d(encoded.vectors[:, 4]), repeat=20)
    measures_ms = timed(lambda: layer_measures(encoded, bank.senses), repeat=5, warmup=1)
    sentence = "We pulled the canoe up onto the muddy bank of the stream."

    def add_sentence() -> None:
        own = minilm.word_vectors([sentence], "bank")[0]
        vote(encoded.vectors[:, 6], bank.senses, own[6])
        pca_2d(np.vstack([encoded.vectors[:, 6], own[6][None]]))

    sentence_ms = timed(add_sentence, repeat=20)
    umap_ms = timed(lambda: umap_2d(encoded.vectors[:, 6]), repeat=3, warmup=1)
    return {
        "sentences": len(bank.sentences),
        "encode_set_s": round(encode_s, 2),
        "reload_from_disk_ms": round(reload_ms, 1),
        "layer_change_pca_ms": round(layer_ms, 2),
        "layer_measures_ms": round(measures_ms, 1),
        "add_sentence_ms": round(sentence_ms, 1),
        "umap_ms": round(umap_ms, 1),
    }


def probing() -> dict[str, dict[str, float]]:
    """The Probing lesson: reading 1,000 of its sentences through a model (once per server), and
    training every probe of one task (what "Retrain" runs) per task and model."""
    import numpy as np

    import model_zoo
    from model_zoo.lessons import probing as probes

    sentences = probes.load_sentences()
    targets = probes.select_targets(sentences)
    out: dict[str, dict[str, float]] = {}
    for name in ("minilm-l6", "elmo-mini"):
        model = model_zoo.load(name)
        first = np.isin(targets.sentence, np.unique(targets.sentence)[:1000])
        subset = probes.Targets(targets.sentence[first], targets.word[first], targets.dense[first])
        start = time.perf_counter()
        probes.word_features(model, sentences, subset)
        figures = {"features_per_1000_sentences_s": time.perf_counter() - start}
        features = probes.word_features(model, sentences, targets)
        for task in probes.TASKS:
            data = probes.task_set(sentences, targets, task, max_train=probes.max_train_rows(features))
            figures[f"retrain_{task}_s"] = probes.probe_task(features, data, name).seconds
        out[name] = figures
    return out


def generation() -> dict[str, float]:
    """The GPT lesson: writing with smollm2-135m, greedy, 40 tokens after a 40-token prompt (KV cache)."""
    import model_zoo
    from model_zoo.lessons.generation import Strategy, generate_steps

    model = model_zoo.load("smollm2-135m")
    prompt = "In a shocking finding, scientist discovered a herd of unicorns living in a remote, previously "
    prompt += "unexplored valley, in the Andes Mountains."
    list(generate_steps(model, prompt, Strategy(max_new_tokens=5)))  # warm up
    firsts, rest = [], []
    for _ in range(3):
        start = time.perf_counter()
        times = []
        for _step in generate_steps(model, prompt, Strategy(max_new_tokens=40)):
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
        firsts.append(times[0])
        rest += times[1:]
    return {"first_token_ms": 1000 * statistics.median(firsts), "per_token_ms": 1000 * statistics.median(rest)}


def task_heads() -> dict[str, float]:
    """The Using BERT lesson on minilm-l6: each head's frozen features and training, and fine-tuning."""
    import model_zoo
    from model_zoo.lessons import tasks

    model = model_zoo.load("minilm-l6")
    out: dict[str, float] = {}
    for name in ("sentiment", "spam", "nli"):
        data = tasks.load_pairs() if name == "nli" else tasks.load_sentences(name)
        pairs = [x.text_b or "" for x in data.train] if name == "nli" else None
        start = time.perf_counter()
        x = tasks.sentence_features(model, [x.text for x in data.train], pairs)
        out[f"{name}_features_s"] = time.perf_counter() - start
        out[f"{name}_head_s"] = tasks.train_head(x, [x.label for x in data.train], x[:0], []).seconds
    train, test = tasks.load_questions()
    out["qa_head_s"] = tasks.train_qa(model, train, test).seconds
    out["fine_tune_sentiment_s"] = tasks.fine_tune(model, tasks.load_sentences("sentiment")).seconds
    return out


def qa_reader() -> dict[str, float]:
    """minilm-l6-qa answering the lecture's precipitation questions, and a passage at the page's limit."""
    import model_zoo
    from model_zoo.lessons import tasks

    reader = model_zoo.load("minilm-l6-qa")
    (passage, *_) = tasks.written_passages()["p11"]
    long = (passage.passage + " ") * 5  # about the page's 2,000-character limit: the model reads 512 tokens
    return {
        "read_ms": timed(lambda: tasks.read_answer(reader, passage.question, passage.passage), repeat=20),
        "read_long_ms": timed(lambda: tasks.read_answer(reader, passage.question, long[:2000]), repeat=10),
    }


def inside_views() -> dict[str, dict[str, float]]:
    """Inside the model (issue 37) on the offline masked LM and causal LM, on a learner's sentence, as the page
    computes it the first time (no cache): the three views (the pass both lenses and the token's path at the
    answer read, the logit and the shipped tuned lens, the path through a middle block, one knock-out), then
    the map of every head knocked out alone."""
    import model_zoo
    from model_zoo.lessons import inside
    from model_zoo.lessons.lexicon import ASSETS

    text = "We sat on the river [MASK] and watched the boats."
    out: dict[str, dict[str, float]] = {}
    for name in ("smollm2-135m-mlm", "smollm2-135m"):
        model = model_zoo.load(name)
        parts = inside.anatomy(model)
        lens = inside.load_lens(ASSETS / "models" / f"{name}-lens", len(parts.layers), int(model.config.hidden_size))
        inside.answer_passes(model, [PARIS_WARM])  # warm up
        start = time.perf_counter()
        (found,) = inside.answer_passes(model, [text])
        inside.lens_of(model, text, found.streams)
        inside.lens_of(model, text, found.streams, lens)
        inside.path_from_pass(model, text, len(parts.layers) // 2, found)
        inside.knock_out(model, text, inside.Knock("mlp", 0))
        views = time.perf_counter() - start
        start = time.perf_counter()
        inside.head_effects(model, text)
        heads = time.perf_counter() - start
        out[name] = {"three_views_s": views, "head_map_s": heads, "heads": len(parts.layers) * parts.heads}
    return out


PARIS_WARM = "Paris is the capital of [MASK]."


def sense_instruments() -> dict[str, float]:
    """Word senses' instruments (issue 38) on minilm-l6: the index of every word of the shipped sentences
    (built once per server into an empty cache), one click's nearest uses with the shares at every layer, the
    class-wide curve over the 990 labelled uses, and the axes view for bank at the top layer."""
    import numpy as np

    import model_zoo
    from model_zoo import disk
    from model_zoo.lessons import probing, senses
    from model_zoo.lessons.axes import PoleChoice
    from model_zoo.lessons.uses import cached_index, nearest, select_uses, sense_share_by_layer, shares
    from serving import lesson_uses

    model = model_zoo.load("minilm-l6")
    uses = select_uses(probing.load_sentences())
    with tempfile.TemporaryDirectory() as empty:
        start = time.perf_counter()
        index = cached_index(model, uses, disk.weights_version(model), Path(empty))
        built = time.perf_counter() - start
        rows = np.random.default_rng(0).choice(len(uses), 20, replace=False)

        def click(row: int) -> None:
            query = np.asarray(index[:, row], dtype=np.float32)
            use = uses.use(int(row))
            nearest(index, index.shape[0] - 1, query[-1], 10, int(row))
            shares(index, uses, query, use.word, use.sense, use.pos, 10, int(row))

        click(int(rows[0]))
        times = []
        for row in rows:
            start = time.perf_counter()
            click(int(row))
            times.append(time.perf_counter() - start)
        start = time.perf_counter()
        sense_share_by_layer(index, uses, 10)
        class_wide = time.perf_counter() - start
        bank = senses.load_senses()["bank"].sense_keys
        ends = (PoleChoice(sense=bank[0]), PoleChoice(sense=bank[1]))
        lesson_uses.axis_view("minilm-l6", False, "bank", 6, ends, None)
        start = time.perf_counter()
        lesson_uses.axis_view("minilm-l6", False, "bank", 6, ends, None)
        axes_s = time.perf_counter() - start
        return {
            "uses": len(uses),
            "index_mb": index.nbytes / 1e6,
            "index_build_s": built,
            "click_median_ms": 1000 * float(np.median(times)),
            "click_max_ms": 1000 * float(np.max(times)),
            "class_wide_s": class_wide,
            "axes_view_ms": 1000 * axes_s,
        }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cold_start(
    path: str = "/", drawn_when: str = '[data-testid="stTable"]', then: Callable[[Any], dict] | None = None
) -> dict[str, float]:
    """`make run` (already installed), then open `path` in headless Chromium as soon as the
    server answers: seconds until `drawn_when` is on the page, from the start and from opening.
    `then(page)` may time more on the page, and its figures join the result."""
    import shutil

    from playwright.sync_api import sync_playwright

    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["make", "run", f"PORT={port}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=os.environ.get("CONTEXTLAB_CHROMIUM") or shutil.which("chromium"),
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            page = browser.new_page()
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                    break
                except Exception:  # noqa: BLE001 - server not listening yet
                    if time.perf_counter() - start > 180:
                        raise
                    time.sleep(0.2)
            served = time.perf_counter() - start
            page.goto(f"http://127.0.0.1:{port}{path}")
            page.locator(drawn_when).first.wait_for(timeout=180_000)
            drawn = time.perf_counter() - start
            more = then(page) if then else {}
            browser.close()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
    return {
        "server_answers_s": round(served, 2),
        "home_page_drawn_s": round(drawn, 2),  # kept under this name for the home page
        "opened_to_drawn_s": round(drawn - served, 2),
        **more,
    }


def sense_layer_changes(page: Any, rounds: int = 6) -> dict:
    """In the browser: the layer slider to the top or the bottom, until the map shows that layer."""
    slider = page.get_by_role("slider").first
    times = []
    for i in range(rounds):
        key, layer = ("End", 6) if i % 2 == 0 else ("Home", 0)
        slider.focus()
        t0 = time.perf_counter()
        page.keyboard.press(key)
        page.locator(f'.light-chart[data-drawn="map"]:has-text("minilm-l6 · layer {layer} of 6")').wait_for()
        times.append(time.perf_counter() - t0)
    return {"layer_change_in_browser_ms": round(1000 * statistics.median(times), 1)}


def main() -> int:
    results: dict[str, object] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
    }
    print("ContextLab bench (medians; targets in brackets)\n")

    results["cold_start"] = cold = cold_start()
    print(
        f"cold start, make run -> home page drawn: {cold['home_page_drawn_s']:.1f} s "
        f"(server answering after {cold['server_answers_s']:.1f} s)"
    )

    loads: dict[str, object] = {}
    for name in OFFLINE:
        loads[name] = figures = cold_load(name)
        print(f"load {name:<14} {figures['load_s']:6.2f} s  (after importing model_zoo: {figures['import_s']:.2f} s)")
    with tempfile.TemporaryDirectory() as empty_cache:
        loads["smollm2-135m (first load: GGUF conversion)"] = first = cold_load("smollm2-135m", empty_cache)
    print(f"load smollm2-135m, first ever (converts the GGUF file): {first['load_s']:.2f} s")
    results["model_load"] = loads

    results["encode_minilm_l6"] = enc = encode_latency()
    print(
        f"encode, minilm-l6, {enc['tokens']}-token sentence: {enc['encode_ms']:.2f} ms [< 15 ms]; "
        f"bare model(**inputs): {enc['bare_forward_ms']:.2f} ms; ratio {enc['ratio']:.2f} [<= 1.2]"
    )

    results["encode_elmo"] = elmo = elmo_latency()
    for name, fig in elmo.items():
        print(f"encode, {name}, the same sentence ({fig['words']} ELMo tokens): {fig['encode_ms']:.1f} ms")

    results["static_lessons"] = les = static_lessons()
    print(
        f"GloVe (400k words) neighbours: {les['neighbours_ms']:.1f} ms [< 50 ms]; analogy: {les['analogy_ms']:.1f} ms [< 50 ms]"
    )
    print(f"word map of 200 words: PCA {les['map_200_pca_ms']:.1f} ms; UMAP {les['map_200_umap_ms']:.0f} ms")
    with tempfile.TemporaryDirectory() as cache:  # the first process compiles umap-learn, the second loads it
        results["first_umap_s"] = first_map = {"compiled": first_umap(cache), "from_cache": first_umap(cache)}
    print(
        f"a process's first UMAP map, import included: {first_map['compiled']:.1f} s compiling umap-learn, "
        f"{first_map['from_cache']:.1f} s with numba's cache of an earlier process "
        f"({first_map['compiled'] / first_map['from_cache']:.1f}x)"
    )
    print(
        f"word2vec, default settings, one worker: trained in {les['word2vec_train_default_s']:.1f} s [< 60 s]; "
        f"meanwhile another session's neighbours query took {les['neighbours_during_training_median_ms']:.1f} ms "
        f"(median; worst {les['neighbours_during_training_max_ms']:.0f} ms)"
    )

    results["masked_prediction"] = masked = masked_prediction()
    for name, fig in masked.items():
        print(
            f"fill_mask, {name}, 16 tokens: {fig['fill_mask_ms']:.1f} ms; transformers' fill-mask pipeline: "
            f"{fig['pipeline_ms']:.1f} ms; ratio {fig['ratio']:.2f} [<= 0.8] (with PyTorch's stock MKL kernels "
            f"instead of oneDNN: {fig['fill_mask_stock_kernels_ms']:.1f} ms, ratio {fig['ratio_stock_kernels']:.2f})"
        )

    results["offline_masked_lms"] = om = offline_masked_lms()
    print(
        f"fill_mask, the Masked LM page's offline model smollm2-135m-mlm: {om['smollm2_135m_mlm_ms']:.1f} ms, "
        f"{om['ratio']:.1f}x minilm-l6-mlm's {om['minilm_l6_mlm_ms']:.1f} ms; thirty sentences in one pass (a class): "
        f"{om['thirty_sentences_smollm2_135m_mlm_ms']:.0f} ms against {om['thirty_sentences_minilm_l6_mlm_ms']:.0f} ms"
    )

    results["word_senses_cold"] = wc = cold_start(
        "/senses", '.light-chart[data-drawn="map"]:has-text("minilm-l6 · layer")', then=sense_layer_changes
    )
    print(
        f"word senses on a fresh make run: first sense map drawn {wc['opened_to_drawn_s']:.1f} s after opening "
        f"the page [< 3 s] (server answering after {wc['server_answers_s']:.1f} s; browser on the same 2 cores); "
        f"then a layer change, slider to map redrawn in the browser: {wc['layer_change_in_browser_ms']:.0f} ms "
        "(median of 6) [< 300 ms]"
    )
    results["transfer_cold"] = tc = cold_start("/transfer", '.st-key-main_output .light-chart[data-drawn="lines"]')
    print(
        f"transfer learning on a fresh make run: the race's curves (the shipped run) drawn "
        f"{tc['opened_to_drawn_s']:.1f} s after opening the page [< 3 s] (server answering after "
        f"{tc['server_answers_s']:.1f} s)"
    )
    results["word_senses"] = ws = word_senses()
    print(
        f"word senses, bank in {ws['sentences']} sentences, minilm-l6: encode the set {ws['encode_set_s']:.2f} s "
        f"(once; then from disk {ws['reload_from_disk_ms']:.1f} ms); layer change (PCA) {ws['layer_change_pca_ms']:.2f} ms "
        f"+ per-layer measures {ws['layer_measures_ms']:.0f} ms (once per word) [< 300 ms]; add one sentence "
        f"{ws['add_sentence_ms']:.0f} ms [< 1 s]; UMAP {ws['umap_ms']:.0f} ms"
    )

    results["sense_instruments"] = si = sense_instruments()
    print(
        f"word senses' instruments, minilm-l6: index of {si['uses']:,} uses ({si['index_mb']:.0f} MB on disk) built "
        f"in {si['index_build_s']:.0f} s (once per server); a click's nearest uses and shares at every layer "
        f"{si['click_median_ms']:.0f} ms (median of 20; worst {si['click_max_ms']:.0f} ms) [< 500 ms]; all 990 "
        f"labelled uses {si['class_wide_s']:.1f} s (once per server); bank on two sense axes {si['axes_view_ms']:.0f} ms"
    )

    results["probing"] = probe_figures = probing()
    for name, fig in probe_figures.items():
        tasks = ", ".join(f"{k[8:-2]} {v:.1f} s" for k, v in fig.items() if k.startswith("retrain_"))
        print(
            f"probing, {name}: features of 1,000 sentences {fig['features_per_1000_sentences_s']:.1f} s (once per "
            f"server); retrain every probe of a task: {tasks} [< 30 s each]"
        )

    results["generation"] = gen = generation()
    print(
        f"GPT lesson, smollm2-135m writing greedily with its KV cache: {gen['per_token_ms']:.1f} ms per token "
        f"[< 60 ms]; the first token (prompt read) {gen['first_token_ms']:.0f} ms"
    )

    results["task_heads"] = heads = task_heads()
    print("Using BERT, minilm-l6: " + ", ".join(f"{k[:-2].replace('_', ' ')} {v:.2f} s" for k, v in heads.items()))

    results["qa_reader"] = qa = qa_reader()
    print(
        f"Using BERT, minilm-l6-qa answering a question: {qa['read_ms']:.0f} ms on the precipitation passage, "
        f"{qa['read_long_ms']:.0f} ms on a 2,000-character passage"
    )

    results["inside"] = ins = inside_views()
    for name, fig in ins.items():
        print(
            f"Inside the model, {name}: the three views on a learner's sentence {fig['three_views_s']:.2f} s [< 3 s]; "
            f"every head knocked out alone ({fig['heads']:.0f} heads) {fig['head_map_s']:.1f} s [< 10 s]"
        )

    (ROOT / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    print("\nwritten to bench.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
