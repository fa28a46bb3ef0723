"""What the BERT inputs lesson draws around its predict-first moments (issue 34): how many pieces the
tokenizer cuts a word into, and which reversal of the learner's sentence moves the top layer's vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from components.quiz import Question, Solved, render_predict
from components.tokens import render_tokens
from model_zoo.lessons.architecture import Reordering

PIECES_WORD = "unhappiness"  # the word of the pieces moment: not one piece, and not cut where its meaning is
PIECE_COUNTS = (1, 2, 3, 4)  # plausible counts; the model's own count joins them
SAME = 0.9995  # a cosine above this is the same vector, up to float rounding


def render_guess_pieces(model_name: str, word: str, pieces: Sequence[str], vocabulary: int) -> None:
    """Predict, then see: how many pieces the model's tokenizer cuts `word` into. The options are small
    counts and the model's own, in order; the pieces are drawn after the pick."""
    question = Question(
        "inputs_pieces",
        tuple(str(n) for n in sorted({*PIECE_COUNTS, len(pieces)})),
        lambda: Solved(str(len(pieces)), {"model": model_name, "pieces": " ".join(pieces), "vocab": f"{vocabulary:,}"}),
        about={"word": word, "model": model_name},
    )
    if render_predict(question, model_name) is not None:
        render_tokens(list(pieces), [0] * len(pieces))


def order_answer(moves: Sequence[Reordering]) -> tuple[str, dict[str, str]]:
    """Which reversal of the words moves the top layer's vectors of the words (their mean) further from the
    usual order's: each token keeping its position number ("kept") or numbered afresh ("renumbered"), or
    "neither"; and the two cosines."""
    cosine = {m.key: m.cosine for m in moves}
    kept, fresh = cosine["words_kept"], cosine["words_renumbered"]
    if kept > SAME and fresh > SAME:
        answer = "neither"
    else:
        answer = "kept" if kept < fresh else "renumbered"
    return answer, {"kept": f"{kept:.3f}", "renumbered": f"{fresh:.3f}"}


def render_guess_order(model_name: str, text: str, moves: Callable[[], Sequence[Reordering]]) -> bool:
    """Predict, then see: the learner's sentence A with its words reversed, keeping each token's position
    number or numbering them afresh: which moves its words' vectors? True once revealed: the page then draws
    the table. `moves` runs only then (or on a teacher's Ask): five passes of the model that a class typing
    sentences would otherwise pay on every keystroke, before anyone has guessed."""

    def solve() -> Solved:
        answer, cosines = order_answer(moves())
        return Solved(answer, cosines | {"model": model_name})

    question = Question(
        "inputs_order",
        ("kept", "renumbered", "neither"),
        solve,
        translated=True,
        about={"sentence": text, "model": model_name},
    )
    return render_predict(question, model_name) is not None
