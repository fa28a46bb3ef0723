"""Class mode's serving side (issue 35): the process's class store with its retention timer, and the live
model's answers the projector sets beside the class's: a word for a blank (the masked LM a lesson opens
on), and the students' own sentences on the Word senses map, each coloured by the sense its nearest
shipped uses vote for, at any layer. The store itself is serving.classroom (no Streamlit there)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

import serving
from model_zoo.lessons import senses
from serving import class_push, lesson_senses
from serving.classroom import ClassStore, default_store, retention

PURGE_EVERY_S = 600.0  # how often each worker deletes classes past the retention period
BLANK_TOP = 5  # the model's words shown beside the class's guesses for a blank
SENTENCES_SHOWN = 60  # a class's sentences drawn on the map at most (a class of thirty sends thirty)

_purger = threading.Lock()
_purging: list[threading.Thread] = []
_watchers: dict[int, class_push.Watcher] = {}  # by id of the store (one per database URL)


def store() -> ClassStore:
    """This worker's class store (serving.classroom.default_store), with its retention timer running."""
    found = default_store()  # StoreUnavailable (one sentence) where its database cannot be opened
    with _purger:
        if not _purging:
            thread = threading.Thread(target=_purge_forever, args=(found,), name="class-purge", daemon=True)
            thread.start()
            _purging.append(thread)
    return found


def push_on_change(code: str, shown: Hashable, key: Callable[[object], Hashable]) -> bool:
    """Have this worker rerun the calling tab once `key` of class `code`'s status is no longer `shown`
    (serving.class_push). False where Streamlit offers no way: the tab then polls on its own."""
    found = class_push.tab_rerunner()
    if found is None:
        return False
    current = store()
    with _purger:
        if (watcher := _watchers.get(id(current))) is None:
            watcher = _watchers[id(current)] = class_push.Watcher(current.status)
            current.on_change.append(watcher.changed)
    return watcher.watch(found[0], code, shown, key, found[1])


def _purge_forever(found: ClassStore) -> None:
    """Delete expired classes now and every PURGE_EVERY_S, also when nobody opens the Class page."""
    while True:
        try:
            found.purge_expired(datetime.now(UTC))
        except Exception:  # noqa: BLE001  a database that is briefly away: the next round tries again
            pass
        time.sleep(PURGE_EVERY_S)


def retention_hours() -> float:
    """How long a class and its answers are kept at most (CONTEXTLAB_CLASS_RETENTION_H, 24 by default)."""
    return retention().total_seconds() / 3600


# -- the open tasks ----------------------------------------------------------------------------------
def sentence_words() -> list[str]:
    """The words a "write a sentence that uses WORD" task may name: the sense-labelled words shipped."""
    return lesson_senses.lesson_words()


def blank_model() -> str:
    """The masked LM that answers "guess the word the model puts in this blank": the lessons' own."""
    return serving.default_for("masked_lm")


def blank_answers(text: str) -> tuple[str, list[tuple[str, float]]]:
    """The masked LM's first words for the blank in `text` (ModelZooError for a text without one)."""
    name = blank_model()
    return name, serving.fill_mask(name, text, BLANK_TOP)[0]


def map_model() -> str:
    """The contextual model whose layers the class's sentences are drawn at: BERT once prefetched, else
    MiniLM (the Word senses lesson's own)."""
    return serving.default_for("attention")


def uses_word(sentence: str, word: str) -> bool:
    return lesson_senses.other_forms(sentence, word) is None


def map_depth(word: str) -> int:
    """The layers of map_model() above its embeddings (the teacher's layer slider ends there)."""
    return int(serving.sense_vectors(map_model(), word).vectors.shape[1] - 1)


@dataclass(frozen=True)
class ClassMap:
    """The Word senses map at one layer with the class's sentences on it."""

    model: str
    layer: int
    depth: int  # the model's layers above its embeddings
    uses: np.ndarray  # (n, 2) the shipped uses, in the set's order
    sentences: list[str]  # the class's sentences drawn (those that use the word)
    points: np.ndarray  # (len(sentences), 2)
    votes: list[int]  # each sentence's voted sense, as its place in SenseSet.sense_keys
    shares: list[float]  # the vote's share of the five nearest uses
    left_out: int  # sentences that do not use the word (not drawn)


def class_map(word: str, layer: int, sentences: list[str]) -> ClassMap:
    """The class's `sentences` among `word`'s shipped uses at `layer` of map_model(), on the axes the Word
    senses lesson fits on the uses alone (PCA once per server: a sentence more is one small product)."""
    name = map_model()
    sense_set = lesson_senses.sense_sets()[word]
    uses = serving.sense_vectors(name, word).vectors
    depth = map_depth(word)
    layer = max(0, min(layer, depth))
    drawn = [s for s in sentences if uses_word(s, word)][:SENTENCES_SHOWN]
    pca = serving.sense_pca(name, word, layer)
    own = [serving.own_sentence_vector(name, s, word)[layer] for s in drawn]
    points = pca.place(np.stack(own)) if own else np.zeros((0, 2))
    keys = sense_set.sense_keys
    voted = [senses.vote(uses[:, layer], sense_set.senses, v) for v in own]
    return ClassMap(
        name,
        layer,
        depth,
        pca.place(uses[:, layer]),
        drawn,
        points,
        [keys.index(k) for k, _ in voted],
        [share for _, share in voted],
        len(sentences) - len(drawn),
    )
