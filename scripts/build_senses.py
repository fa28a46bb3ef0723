"""Build assets/senses/senses.tsv, the sense-labelled sentence set of the "Word senses" lesson.

    apt-get install wordnet-base
    python scripts/build_senses.py

Input: assets/senses/src/<word>.tsv, sentences written for ContextLab, one per line as
`sense_key<TAB>sentence`. Each sense also gets WordNet 3.0's own example sentences for that
synset that use the word form. Every sentence is checked (the word form exactly once, no other
form of it, 8-30 words, no duplicates) and tagged with its sense key and WordNet's gloss.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "assets" / "senses" / "src"
OUT = ROOT / "assets" / "senses" / "senses.tsv"
WORDNET = Path("/usr/share/wordnet")
SS_TYPE = {"n": "1", "v": "2", "a": "3", "r": "4", "s": "5"}
POS_FILES = ("noun", "verb", "adj", "adv")
MIN_PER_SENSE = 25


def synsets() -> dict[str, tuple[str, list[str]]]:
    """sense key -> (gloss, example sentences) for every word sense in WordNet."""
    out: dict[str, tuple[str, list[str]]] = {}
    for pos in POS_FILES:
        for line in (WORDNET / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            head, text = line.split("|", 1)
            fields = head.split()
            lexfile, ss_type, count = int(fields[1]), fields[2], int(fields[3], 16)
            examples = re.findall(r'"([^"]+)"', text)
            gloss = text.split('; "')[0].strip().rstrip(";").strip()
            for i in range(count):
                lemma, lex_id = fields[4 + 2 * i].lower(), int(fields[5 + 2 * i], 16)
                lemma = re.sub(r"\(.*\)$", "", lemma)  # adjective markers such as (a)
                key = f"{lemma}%{SS_TYPE[ss_type]}:{lexfile:02d}:{lex_id:02d}::"
                out[key] = (gloss, examples)
    return out


def problem(word: str, sentence: str) -> str | None:
    """Why `sentence` cannot stand for `word`, or None."""
    hits = re.findall(rf"(?<![\w-]){word}(?![\w-])", sentence, flags=re.I)
    others = re.findall(rf"\b{word}\w+|\w+{word}\b|{word}-|-{word}", sentence, flags=re.I)
    words = len(sentence.split())
    if len(hits) != 1:
        return f"'{word}' appears {len(hits)} times"
    if others:
        return f"another form of '{word}': {others}"
    if not 8 <= words <= 30:
        return f"{words} words"
    if sentence[-1] not in ".?!":
        return "no closing punctuation"
    if "\t" in sentence:
        return "a tab inside"
    return None


def main() -> int:
    wordnet = synsets()
    rows, errors = [], []
    for path in sorted(SRC.glob("*.tsv")):
        word = path.stem
        seen: set[str] = set()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            key, sentence = line.split("\t")
            if key not in wordnet or not key.startswith(f"{word}%"):
                errors.append(f"{path.name}:{number}: unknown sense key {key}")
            elif (why := problem(word, sentence)) or sentence.lower() in seen:
                errors.append(f"{path.name}:{number}: {why or 'duplicate'}: {sentence}")
            else:
                seen.add(sentence.lower())
                # A sentence that is one of WordNet's own examples is WordNet's, whoever typed it in.
                quoted = {e.lower().rstrip(".?!") for e in wordnet[key][1]}
                source = "wordnet" if sentence.lower().rstrip(".?!") in quoted else "contextlab"
                rows.append((word, key, wordnet[key][0], sentence, source))
        for key in dict.fromkeys(r[1] for r in rows if r[0] == word):
            for example in wordnet[key][1]:
                sentence = example[0].upper() + example[1:] + ("" if example[-1] in ".?!" else ".")
                if problem(word, sentence) is None and sentence.lower() not in seen:
                    seen.add(sentence.lower())
                    rows.append((word, key, wordnet[key][0], sentence, "wordnet"))
    counts = Counter((r[0], r[1]) for r in rows)
    errors += [f"{w} {k}: only {n} sentences" for (w, k), n in counts.items() if n < MIN_PER_SENSE]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    with OUT.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writerow(["word", "sense_key", "gloss", "sentence", "source"])
        writer.writerows(rows)
    for (word, key), n in counts.items():
        print(f"{word:8s} {key:22s} {n:3d}  {wordnet[key][0][:70]}")
    print(f"{OUT.relative_to(ROOT)}: {len(rows)} sentences, {len({r[0] for r in rows})} words, {len(counts)} senses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
