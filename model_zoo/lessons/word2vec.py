"""Train word2vec (skip-gram with negative sampling, gensim) on the shipped corpus, live."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from gensim.models import Word2Vec
from gensim.models.callbacks import CallbackAny2Vec

from ..errors import WordNotInVocabulary
from ..static import StaticModel
from .onehot import cosine_matrix


@dataclass(frozen=True)
class TrainSettings:
    dim: int = 50
    window: int = 5
    negative: int = 5
    epochs: int = 5
    min_count: int = 5
    seed: int = 0
    workers: int = 1  # one core: the other keeps serving everyone else


@dataclass(frozen=True)
class EpochReport:
    epoch: int  # 1-based
    epochs: int
    seconds: float  # since training started
    loss: float  # gensim's running loss for this epoch
    neighbours: list[tuple[str, float]]  # of the watched word, now


class _Progress(CallbackAny2Vec):
    def __init__(self, watch: str, epochs: int, on_epoch: Callable[[EpochReport], None]) -> None:
        self.watch, self.epochs, self.on_epoch = watch, epochs, on_epoch
        self.epoch, self.start, self.previous_loss = 0, time.perf_counter(), 0.0

    def on_epoch_end(self, model: Word2Vec) -> None:
        self.epoch += 1
        total = model.get_latest_training_loss()
        loss, self.previous_loss = total - self.previous_loss, total
        # gensim caches vector norms at the first most_similar(); training moved the vectors.
        model.wv.fill_norms(force=True)
        neighbours = [(w, float(s)) for w, s in model.wv.most_similar(self.watch, topn=8)]
        self.on_epoch(EpochReport(self.epoch, self.epochs, time.perf_counter() - self.start, loss, neighbours))


def train_word2vec(
    sentences: Sequence[Sequence[str]],
    settings: TrainSettings = TrainSettings(),
    watch: str = "king",
    on_epoch: Callable[[EpochReport], None] | None = None,
    name: str = "word2vec (trained here)",
) -> StaticModel:
    """Skip-gram with negative sampling; `on_epoch` hears the watched word's neighbours after each epoch."""
    model = Word2Vec(
        vector_size=settings.dim,
        window=settings.window,
        negative=settings.negative,
        hs=0,
        sg=1,
        min_count=settings.min_count,
        seed=settings.seed,
        workers=settings.workers,
        compute_loss=True,
    )
    model.build_vocab(sentences)
    if watch not in model.wv.key_to_index:
        suggestions = [w for w in model.wv.index_to_key[:5000] if w.startswith(watch[:3])][:5]
        raise WordNotInVocabulary(watch, "the training corpus", suggestions)
    callbacks = [_Progress(watch, settings.epochs, on_epoch)] if on_epoch else []
    model.train(
        sentences,
        total_examples=model.corpus_count,
        epochs=settings.epochs,
        compute_loss=True,
        callbacks=callbacks,
    )
    return StaticModel(name, model.wv)


def class_agreement(model: StaticModel, classes: dict[str, str], words: Sequence[str]) -> float:
    """Share of `words` whose nearest neighbour (among `words`) has the same WordNet class.

    A measure of a static model's quality that needs no benchmark download: good vectors put
    animals next to animals and verbs of motion next to verbs of motion.
    """
    kept = [w for w in words if w in model and w in classes]
    if len(kept) < 2:
        return float("nan")
    sims = cosine_matrix(np.stack([model.vector(w) for w in kept]))
    np.fill_diagonal(sims, -np.inf)
    nearest = sims.argmax(1)
    return float(np.mean([classes[kept[i]] == classes[kept[j]] for i, j in enumerate(nearest)]))


@dataclass(frozen=True)
class Quality:
    """How good trained vectors are, against GloVe and chance, on the corpus's frequent words."""

    agreement: float  # nearest neighbour in the same WordNet class, among frequent words
    glove_agreement: float  # the same measure for GloVe on the same words
    chance: float  # what random vectors would score: the odds that two words share a class
    words: int  # frequent corpus words that WordNet classifies


def quality(model: StaticModel, glove: StaticModel, classes: dict[str, str], frequent: int = 3000) -> Quality:
    """class_agreement of `model` and of `glove` on `model`'s `frequent` most frequent classified words."""
    words = [w for w in model.kv.index_to_key[:frequent] if w in classes]
    shares = Counter(classes[w] for w in words).values()
    return Quality(
        agreement=class_agreement(model, classes, words),
        glove_agreement=class_agreement(glove, classes, words),
        chance=sum((n / len(words)) ** 2 for n in shares),
        words=len(words),
    )
