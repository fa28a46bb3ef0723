"""How a model ContextLab trained was trained and how well it does, typed: its metrics.json (written by
the script that trained it) read into one frozen dataclass per kind of training. A page's box reads
fields, not string keys; a metrics.json that lacks what its box shows fails here, at once, in one
sentence (BadCheckpoint), not as a KeyError in the middle of a page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import BadCheckpoint
from .registry import ASSETS, ModelCard, read_json_file, trained_file, trained_metrics

Curve = tuple[dict[str, float], ...]  # the learning curve: one point per evaluation, keyed by measure


@dataclass(frozen=True)
class Cloze:
    """A masked LM on a cloze set: items, share with the answer first / in the first five, and the share
    of first answers that are a word of the sentence itself (where measured)."""

    items: int
    top1: float
    top5: float
    copies: float | None = None

    @classmethod
    def read(cls, m: Mapping[str, Any], prefix: str = "cloze_") -> Cloze:
        return cls(
            int(m[f"{prefix}items"]), float(m[f"{prefix}top1"]), float(m[f"{prefix}top5"]), m.get(f"{prefix}copies")
        )


@dataclass(frozen=True)
class AntiCopyStage:
    """A stage of train_mntp trained against copying: its steps, the unlikelihood weight, the share of
    short (one-sentence) batches."""

    steps: int
    unlikelihood: float
    short: float


@dataclass(frozen=True)
class MntpTraining:
    """A decoder made a masked LM (model_zoo.training.train_mntp): smollm2-135m-mlm."""

    script: str
    device: str
    tokens_seen: int
    seconds: float
    held_top1: float  # held-out masked tokens
    held_top5: float
    fresh: Cloze  # the fresh everyday sentences' test split
    fresh_dev: Cloze  # their dev split (what choices read)
    test: Cloze  # the test half of assets/eval/cloze_en.tsv
    anti_copy_from: int | None  # the step the anti-copy stages began at (None: none ran)
    anti_copy: tuple[AntiCopyStage, ...]
    curve: Curve


@dataclass(frozen=True)
class MlmTraining:
    """An encoder further pre-trained as a masked LM (model_zoo.training.train_mlm): minilm-l6-mlm."""

    script: str
    device: str
    tokens_seen: int
    seconds: float
    corpus_sources: tuple[str, ...]
    held_top1: float
    held_top5: float
    unigram_top1: float  # the baseline: always the corpus's commonest words
    unigram_top5: float
    cloze: Cloze
    plain_tokens: int  # tokens of the stages trained without the anti-copy term (all of them if none had it)
    curve: Curve


@dataclass(frozen=True)
class ElmoTraining:
    """elmo-mini (model_zoo.training.train_elmo): held-out perplexity both ways against the unigram model."""

    script: str
    device: str
    parameters: int
    tokens_seen: int
    seconds: float
    corpus_sources: tuple[str, ...]
    held_forward_perplexity: float
    held_backward_perplexity: float
    unigram_perplexity: float
    curve: Curve


@dataclass(frozen=True)
class ReaderScores:
    """A reader on held-out questions: exact match, F1, and how often it wrongly or rightly said "no answer"."""

    exact: float
    f1: float
    answerable: int | None = None  # questions with an answer in their passage
    answerable_said_none: float | None = None
    unanswerable_said_none: float | None = None


@dataclass(frozen=True)
class WentOn:
    """A further written stage run on a shipped reader's weights (`train_qa --base ... --start`)."""

    script: str
    device: str
    minutes: float
    written_questions: int
    cloze_questions: int  # mixed in, so that the cloze stage is not forgotten
    runs: int  # runs it was chosen from on dev (the weights it went on from among the choices)
    cause_questions: int = 0  # questions of cause mixed in (qa_cause.jsonl.gz, `--cause-mix`)


@dataclass(frozen=True)
class ReaderTraining:
    """A span reader fine-tuned here (model_zoo.training.train_qa): minilm-l6-qa, smollm2-135m-qa."""

    script: str
    device: str
    examples: int  # cloze questions it had
    epochs: float  # of them, read (a time budget may end it early)
    minutes: float  # in all, the written stage included
    runs: int  # runs it was chosen from on dev (0: one run)
    written_questions: int
    written_test: ReaderScores
    cloze_test: ReaderScores
    went_on: WentOn | None = None  # a later stage on these weights, if any
    by_lecture_rule: ReaderScores | None = None  # written_test under the lecture's rule, before SQuAD 2.0's was chosen
    by_squad2_rule: ReaderScores | None = None  # written_test under SQuAD 2.0's rule without the answer type


Training = MntpTraining | MlmTraining | ElmoTraining | ReaderTraining


def _scores(m: Mapping[str, Any]) -> ReaderScores:
    return ReaderScores(
        float(m["exact"]),
        float(m["f1"]),
        m.get("answerable"),
        m.get("answerable_said_none"),
        m.get("unanswerable_said_none"),
    )


def _read(card: ModelCard, m: Mapping[str, Any]) -> Training:
    curve: Curve = tuple(m.get("curve", ()))
    if card.kind == "elmo":
        return ElmoTraining(
            m["script"],
            m["device"],
            int(m["parameters"]),
            int(m["tokens_seen"]),
            float(m["train_seconds"]),
            tuple(m["corpus_sources"]),
            float(m["held_forward_perplexity"]),
            float(m["held_backward_perplexity"]),
            float(m["unigram_perplexity"]),
            curve,
        )
    if card.kind == "qa":
        first = m.get("started_from", m)  # the stages the shipped weights went on from, if any
        minutes = first["run"]["minutes"] + (first["written_stage"]["minutes"] if card.builds_on else 0)
        went_on = None
        if "started_from" in m:
            stage = m["written_stage"]
            went_on = WentOn(
                m["script"],
                m["device"],
                float(stage["minutes"]),
                int(stage["written_questions"]),
                int(stage["cloze_questions"]),
                len(m.get("chosen_from", [])),
                int(stage.get("cause_questions", 0)),
            )
        return ReaderTraining(
            first["script"],
            first["device"],
            int(first["run"]["examples"]),
            float(first["run"]["epochs"]),
            minutes,  # as written (a whole number reads without a decimal)
            len(first.get("chosen_from", [])),
            int(first["written_stage"]["written_questions"]),
            _scores(m["written_test"]),
            _scores(m["cloze_test"]),
            went_on,
            _scores(m["by_lecture_rule"]["written_test"]) if "by_lecture_rule" in m else None,
            _scores(m["by_squad2_rule"]["written_test"]) if "by_squad2_rule" in m else None,
        )
    if "recipe" in m:
        stages = tuple(
            AntiCopyStage(int(s["steps"]), float(s["config"]["unlikelihood"]), float(s["config"]["short"]))
            for s in m.get("anti_copy_stages", [])
        )
        return MntpTraining(
            m["script"],
            m["device"],
            int(m["tokens_seen"]),
            float(m["training_seconds"]),
            float(m["held_top1"]),
            float(m["held_top5"]),
            Cloze.read(m["fresh"]),
            Cloze.read(m["fresh_dev"]),
            Cloze.read(m["test"]),
            int(m["continued_from"]["steps"]) if "continued_from" in m else None,
            stages,
            curve,
        )
    plain = [s["tokens"] for s in m.get("stages", []) if not s["config"].get("unlikelihood")]
    return MlmTraining(
        m["script"],
        m["device"],
        int(m["tokens_seen"]),
        float(m["train_seconds"]),
        tuple(m["corpus_sources"]),
        float(m["held_top1"]),
        float(m["held_top5"]),
        float(m["unigram_top1"]),
        float(m["unigram_top5"]),
        Cloze.read(m),
        int(sum(plain)) if plain else int(m["tokens_seen"]),
        curve,
    )


def reader_test(card: ModelCard) -> ReaderScores | None:
    """A reader trained here: its scores on the held-out written questions (None for any other model)."""
    training = training_of(card) if card.trained else None
    return training.written_test if isinstance(training, ReaderTraining) else None


def training_of(card: ModelCard) -> Training:
    """The card's metrics.json, typed by the kind of training that wrote it."""
    m = trained_metrics(card)
    try:
        return _read(card, m)
    except (KeyError, TypeError, ValueError) as err:
        raise BadCheckpoint(f"{card.name} metrics.json", f"it lacks what its training box shows ({err!r})") from err


@dataclass(frozen=True)
class InBf16:
    """A model served with bf16 products (a class's server: onednn.use_bf16) measured again in bf16 beside
    fp32 by model_zoo.training.measure_bf16 (its bf16.json). A masked LM: `fp32`/`bf16` are Cloze scores on
    the fresh test sentences, `same` the first guesses alike; a reader: ReaderScores on the held-out written
    questions, `same` the answers alike. The seconds: thirty sentences through the masked LM."""

    script: str
    cpu: str
    items: int
    same: int
    fp32: Cloze | ReaderScores
    bf16: Cloze | ReaderScores
    seconds_fp32: float | None = None
    seconds_bf16: float | None = None


BF16_FILE = "bf16.json"


def in_bf16(card: ModelCard) -> InBf16 | None:
    """The card's bf16.json, read (None where it was never measured)."""
    path = trained_file(card).parent / BF16_FILE
    if not path.is_file():
        return None
    m = read_json_file(path)
    try:
        if "fresh" in m:  # a masked LM
            f = m["fresh"]
            return InBf16(
                m["script"], m["cpu"], int(f["items"]), int(f["same_first"]),
                Cloze.read(f["fp32"]), Cloze.read(f["bf16"]),
                float(m["seconds_30_fp32"]), float(m["seconds_30_bf16"]),
            )  # fmt: skip
        w = m["written_test"]
        return InBf16(
            m["script"], m["cpu"], int(w["questions"]), int(w["same_answer"]), _scores(w["fp32"]), _scores(w["bf16"])
        )
    except (KeyError, TypeError, ValueError) as err:
        raise BadCheckpoint(f"{card.name} {BF16_FILE}", f"it lacks what the page shows ({err!r})") from err


@dataclass(frozen=True)
class CausalInBf16:
    """CAUSAL_BF16 (not trained here) served with bf16 products, measured beside fp32 by
    model_zoo.training.measure_bf16: perplexity on the fresh test sentences and the positions where its next
    word is fp32's; the tuned and logit lenses' mean test KL (bits, layers before the last); the seconds of
    thirty blanks' whole-sentence table."""

    script: str
    cpu: str
    sentences: int
    perplexity_fp32: float
    perplexity_bf16: float
    positions: int
    same_next: int
    seconds_fp32: float
    seconds_bf16: float
    lens_bits: Mapping[str, float]  # {logit,tuned}_{fp32,bf16}


CAUSAL_BF16 = "smollm2-135m"  # the causal LM measure_bf16 measures (the offline pack's: not trained here)


def causal_bf16_file() -> Path:
    """Where measure_bf16 writes CAUSAL_BF16's figures (assets/eval/: the pack's model has no trained folder)."""
    return ASSETS / "eval" / f"{CAUSAL_BF16}.{BF16_FILE}"


def causal_in_bf16(model_name: str) -> CausalInBf16 | None:
    """`model_name`'s bf16 figures, read (None for any model but CAUSAL_BF16, or where it was never measured)."""
    path = causal_bf16_file()
    if model_name != CAUSAL_BF16 or not path.is_file():
        return None
    m = read_json_file(path)
    try:
        h = m["held_out"]
        return CausalInBf16(
            m["script"], m["cpu"], int(h["sentences"]), float(h["perplexity_fp32"]), float(h["perplexity_bf16"]),
            int(h["positions"]), int(h["same_next"]), float(m["seconds_30_fp32"]), float(m["seconds_30_bf16"]),
            {k: float(v) for k, v in m["lens_test_bits"].items()},
        )  # fmt: skip
    except (KeyError, TypeError, ValueError) as err:
        raise BadCheckpoint(f"{CAUSAL_BF16} {BF16_FILE}", f"it lacks what the page shows ({err!r})") from err
