"""What the class store refuses, each in one sentence a student or teacher can act on (model_zoo's
convention: pages show ModelZooError messages through components.notices, translated by class name)."""

from __future__ import annotations

from model_zoo.errors import ModelZooError


class ClassroomError(ModelZooError):
    """Base class of the class store's refusals."""


class UnknownClass(ClassroomError, LookupError):
    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(
            f"There is no class with the code {code!r} (it may have ended): check the code on the projector."
        )


class NotTeacher(ClassroomError, PermissionError):
    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(f"Only the teacher's own link can run class {code}.")


class NoQuestion(ClassroomError, LookupError):
    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(f"Class {code} has no question open right now: wait for the teacher to ask one.")


class TooLong(ClassroomError, ValueError):
    def __init__(self, what: str, length: int, limit: int) -> None:
        self.what, self.length, self.limit = what, length, limit
        super().__init__(f"The {what} is {length} characters long; the most is {limit}: make it shorter.")


class TooFast(ClassroomError):
    def __init__(self, wait_s: float) -> None:
        self.wait_s = round(wait_s, 1)
        super().__init__(f"You are sending too fast: wait {self.wait_s} s and send again.")


class QuestionClosed(ClassroomError):
    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(f"The teacher of class {code} has moved on to another question: answer the new one.")


class NoAnswer(ClassroomError, LookupError):
    def __init__(self, code: str, answer_id: int) -> None:
        self.code, self.answer_id = code, answer_id
        super().__init__(f"Class {code} has no answer {answer_id}: it may have been sent again.")


class AlreadyRevealed(ClassroomError):
    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(f"The teacher of class {code} has revealed this question's answers: wait for the next one.")


class StoreUnavailable(ClassroomError):
    """The class store's database cannot be opened (a read-only or full cache folder, a database away)."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"Class mode's store cannot be opened here: {problem}.")
