"""One rule for "a word" in text, used by every page and every model reader.

A word is a run of letters or digits, which an apostrophe or a hyphen inside may join:
"don't", "bank-holiday" and "twenty-one" are one word each. So "bank" is not in "bank-holiday"
or "banks", but it is in "bank's": a possessive 's (or ’s) is not part of the word it follows.
A Chinese character is a word of its own, as BERT's tokenizer reads it (长 in 长度); a Chinese word
of several characters (苹果) is found as those characters in a row, the pieces a model reads it in.
"""

from __future__ import annotations

import re
import unicodedata

# CJK ideographs, the ranges BERT's tokenizer splits one by one (_is_chinese_char).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df\U0002a700-\U0002ebef\U0002f800-\U0002fa1f"
_LETTERS = rf"[^\W_{_HAN}]"
_WORD = re.compile(rf"[{_HAN}]|{_LETTERS}+(?:['’-]{_LETTERS}+)*")
_POSSESSIVE = ("'s", "’s")
_HAN_WORD = re.compile(rf"[{_HAN}]+")
# A biLM vocabulary's three markers (bilm-tf's, ELMo's): a sentence's start and end, any word outside it.
# Here, not in model_zoo.elmo, so a view can name them without importing torch.
BOS, EOS, UNK = "<S>", "</S>", "<UNK>"


def words_in(text: str) -> list[str]:
    """The words of `text` in order, as written (case and inner punctuation kept)."""
    return _WORD.findall(text)


def has_han(text: str) -> bool:
    """Whether `text` holds a Chinese (Han) character."""
    return _HAN_WORD.search(text) is not None


def split_words(text: str) -> list[str]:
    """The words of `text` in order, lower-cased, with ’ written as '."""
    return [w.lower().replace("’", "'") for w in words_in(text)]


def find_word(text: str, word: str) -> re.Match[str] | None:
    """The first use of `word` (any case) in `text` as a whole word; its span is the word alone.

    Returns None for an empty `word` and where `text` uses only other forms (banks, bank-holiday).
    """
    target = word.strip().lower()
    if not target:
        return None
    if _HAN_WORD.fullmatch(target):  # Chinese is written without spaces: the characters in a row
        return re.compile(re.escape(target)).search(text)
    for found in _WORD.finditer(text):
        written = found.group().lower()
        if written == target or (written.endswith(_POSSESSIVE) and written[:-2] == target):
            return re.compile(re.escape(found.group()[: len(target)]), re.I).match(text, found.start())
    return None


def forms_of(text: str, word: str) -> list[str]:
    """Other words of `text` built on `word` (banks, riverbank, bank-holiday), each once, sorted."""
    target = word.strip().lower()
    if not target:
        return []
    return sorted({w for w in words_in(text) if target in w.lower() and w.lower() != target})


def valid_text(text: str) -> str:
    """`text` as a tokenizer can take it, the same length (offsets still point at the same places):
    a lone surrogate (a broken copy-paste, or a JavaScript client) becomes U+FFFD, and a NUL or other
    control character a space; tabs and line breaks stay."""
    if text.isprintable():
        return text
    return "".join(
        "\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else " " if c not in "\t\n\r" and unicodedata.category(c) == "Cc" else c
        for c in text
    )


SPECIAL_ROOM = 8  # more than any tokenizer here adds to a text or pair ([CLS]/[SEP], a word mark, <S>/</S>)


def fits_uncut(max_length: int, text: str, text_pair: str | None = None) -> bool:
    """Whether `text` (and `text_pair`) surely fits in `max_length` tokens, told without tokenizing: no
    tokenizer here makes more than a token of a UTF-8 byte, plus SPECIAL_ROOM for its special tokens
    (tests/test_batching.py checks the bound on every model of the offline pack)."""
    size = len(text.encode("utf-8")) + (len(text_pair.encode("utf-8")) if text_pair else 0)
    return size + SPECIAL_ROOM <= max_length


# Between a token's bytes (‹e4 bd›): a narrow no-break space, which the pages' ␣ (for a space) leaves alone.
# Here, not in model_zoo.contextual, so a view can name them without importing torch.
BYTE_GAP = "\u202f"
# a piece of a character as Contextual.shown_each and shown_tokens spell it
BYTE_PIECE = re.compile(f"‹[0-9a-f]{{2}}(?:{BYTE_GAP}[0-9a-f]{{2}})*›")
