"""Build ContextLab's shipped datasets from Debian's text packages. Run once; outputs go to assets/.

    apt-get install bible-kjv wordnet-base
    python scripts/build_assets.py

- assets/corpus/kjv_wordnet.txt.gz: the King James Bible (package bible-kjv) and WordNet
  3.0's glosses and example sentences (package wordnet-base), one lower-cased sentence
  a line: the corpus the "Word embeddings" lesson trains word2vec on.
- assets/corpus/wordnet_examples.txt: 300 of WordNet's quoted example sentences as written
  (punctuation kept, first letter capitalised and a full stop added where missing, 8 words
  or more, an even sample): the natural sentences
  over which the "Attention" lesson averages each head's habits.
- assets/word_classes.tsv.gz: each single word of WordNet with the lexicographer file
  ("word class": noun.animal, verb.motion, ...) of its most frequent sense.
- assets/inflected_forms.tsv.gz: WordNet's irregular forms (its exception lists: "sat" of "sit", "was" of
  "be", "feet" of "foot") that read as their dictionary form, with that form's class: those whose dictionary
  form is tagged more often in WordNet's sense-tagged texts (cntlist.rev) than the form as a word of its own
  ("sat": Saturday, tagged 0 times; "sit", 185).
- assets/verb_classes.tsv.gz: each single verb of WordNet with the class of its most frequent verb sense
  (a regular "-ed" or "-ing" form reads as the verb: "walked" as verb.motion, not walk's noun.act).
model_zoo.lessons.lexicon.word_class reads the three.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDNET = Path("/usr/share/wordnet")
LEXNAMES_MAN = Path("/usr/share/man/man5/lexnames.5WN.gz")
WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
SENTENCE_END = re.compile(r"(?<=[.;:?!])\s+")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def kjv_sentences() -> list[list[str]]:
    """Every verse of the KJV, split at sentence punctuation."""
    text = subprocess.run(["bible", "gen1:1-rev22:21"], capture_output=True, text=True, check=True).stdout
    # The listing interleaves "Book N" headings and verse numbers with the text.
    body = " ".join(line for line in text.splitlines() if line and not re.fullmatch(r"\S.* \d+", line))
    body = re.sub(r"\s\d+\s", " ", body)
    return [w for s in SENTENCE_END.split(body) if len(w := words(s)) >= 3]


def wordnet_sentences() -> list[list[str]]:
    """Glosses and quoted examples of every synset."""
    out = []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in (WORDNET / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" ") or "|" not in line:
                continue  # the licence header
            for part in line.split("|", 1)[1].split(";"):
                if len(w := words(part.strip().strip('"'))) >= 3:
                    out.append(w)
    return out


def wordnet_examples(count: int = 300) -> list[str]:
    """An even sample of WordNet's distinct quoted examples of 8 words or more, in data-file order."""
    found = []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in (WORDNET / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" ") or "|" not in line:
                continue
            for quoted in re.findall(r'"([^"]+)"', line.split("|", 1)[1]):
                sentence = quoted.strip()
                if len(sentence.split()) >= 8 and sentence[0].isalpha():
                    ending = "" if sentence[-1] in ".?!" else "."  # WordNet's examples rarely end in a stop
                    found.append(sentence[0].upper() + sentence[1:] + ending)
    found = list(dict.fromkeys(found))  # an example shared by several synsets counts once
    step = len(found) / count
    return [found[int(i * step)] for i in range(count)]


def write_examples() -> None:
    out = ROOT / "assets" / "corpus" / "wordnet_examples.txt"
    examples = wordnet_examples()
    out.write_text("\n".join(examples) + "\n", encoding="utf-8")
    print(f"{out.relative_to(ROOT)}: {len(examples)} WordNet example sentences")


def lexnames() -> dict[int, str]:
    man = gzip.decompress(LEXNAMES_MAN.read_bytes()).decode()
    return {int(n): name for n, name in re.findall(r"^(\d\d)\s+([a-z]+\.[A-Za-z]+)", man, flags=re.M)}


def word_classes(parts: tuple[str, ...] = ("noun", "verb", "adj", "adv")) -> dict[str, str]:
    """word -> lexname of its most frequent sense, over `parts` of speech (all of them by default)."""
    names = lexnames()
    offsets: dict[str, dict[str, int]] = {}
    for pos in ("noun", "verb", "adj", "adv"):
        offsets[pos] = {}
        for line in (WORDNET / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if not line.startswith(" "):
                offsets[pos][line[:8]] = int(line.split()[1])
    best: dict[str, tuple[int, int, str]] = {}
    order = {"noun": 0, "verb": 1, "adj": 2, "adv": 3}
    for pos in parts:
        for line in (WORDNET / f"index.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            fields = line.split()
            lemma, p_cnt = fields[0], int(fields[3])
            if not lemma.isalpha():
                continue
            tagsense_cnt = int(fields[5 + p_cnt])
            first_synset = fields[6 + p_cnt]
            key = (-tagsense_cnt, order[pos], names[offsets[pos][first_synset]])
            if lemma not in best or key < best[lemma]:
                best[lemma] = key
    return {lemma: key[2] for lemma, key in sorted(best.items())}


def inflected_forms(classes: dict[str, str]) -> dict[str, tuple[str, str]]:
    """form -> (dictionary form, its class) for WordNet's irregular forms that read as their dictionary form:
    the base (of those listed) tagged most often, where it is tagged more often than the form itself."""
    tagged: Counter[str] = Counter()
    for line in (WORDNET / "cntlist.rev").read_text(encoding="latin-1").splitlines():
        key, _, count = line.split()
        tagged[key.split("%", 1)[0]] += int(count)
    found: dict[str, tuple[str, str]] = {}
    for pos in ("noun", "verb", "adj", "adv"):
        for line in (WORDNET / f"{pos}.exc").read_text(encoding="latin-1").splitlines():
            form, *bases = line.split()
            known = [b for b in bases if b in classes and b != form]
            if not form.isalpha() or not known:
                continue
            base = max(known, key=lambda b: tagged[b])
            if tagged[base] > tagged[form] and tagged[base] > tagged[found.get(form, ("", ""))[0]]:
                found[form] = (base, classes[base])
    return dict(sorted(found.items()))


def main() -> None:
    kjv, wn = kjv_sentences(), wordnet_sentences()
    corpus = ROOT / "assets" / "corpus" / "kjv_wordnet.txt.gz"
    with gzip.open(corpus, "wt", encoding="utf-8", compresslevel=9) as fh:
        for sentence in kjv + wn:
            fh.write(" ".join(sentence) + "\n")
    tokens = Counter(w for s in kjv + wn for w in s)
    print(
        f"{corpus.relative_to(ROOT)}: {len(kjv):,} KJV + {len(wn):,} WordNet sentences, "
        f"{sum(tokens.values()):,} tokens, {len(tokens):,} word types, {corpus.stat().st_size / 1e6:.1f} MB"
    )
    write_examples()
    classes = word_classes()
    out = ROOT / "assets" / "word_classes.tsv.gz"
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=9) as fh:
        fh.write("word\tclass\n")
        for word, lexname in classes.items():
            fh.write(f"{word}\t{lexname}\n")
    print(
        f"{out.relative_to(ROOT)}: {len(classes):,} words in {len(set(classes.values()))} classes, "
        f"{out.stat().st_size / 1e6:.1f} MB"
    )
    write_word_forms(classes)


def write_word_forms(classes: dict[str, str]) -> None:
    """The irregular forms and the verbs' own classes (model_zoo.lessons.lexicon.dictionary_form reads both)."""
    out = ROOT / "assets" / "inflected_forms.tsv.gz"
    forms = inflected_forms(classes)
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as fh:  # the same bytes on every build
        fh.write(("form\tbase\tclass\n" + "".join(f"{f}\t{b}\t{c}\n" for f, (b, c) in forms.items())).encode())
    print(f"{out.relative_to(ROOT)}: {len(forms):,} irregular forms read as their dictionary form")
    verbs = word_classes(("verb",))
    out = ROOT / "assets" / "verb_classes.tsv.gz"
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(("word\tclass\n" + "".join(f"{w}\t{c}\n" for w, c in verbs.items())).encode())
    print(f"{out.relative_to(ROOT)}: {len(verbs):,} verbs")


if __name__ == "__main__":
    main()
