"""Errors that model_zoo raises, each with a message a learner can act on."""

from __future__ import annotations


class ModelZooError(Exception):
    """Base class: every message is one or two plain sentences, safe to show on a page."""

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its class, message and attributes, not by calling __init__ again with the message (the
        subclasses' __init__ take other arguments): a training in the trainer process that raises one reaches
        the page as itself, not as "the training stopped" (serving.runtime.Trainer)."""
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[ModelZooError], args: tuple[object, ...], state: dict[str, object]) -> ModelZooError:
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


class UnknownModel(ModelZooError, KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = ", ".join(known)
        super().__init__(
            f"No model called {name!r}. Known models: {', '.join(known)}; "
            "or pass a local folder that holds a transformers checkpoint."
        )

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0])


class ModelUnavailable(ModelZooError):
    """A registered model whose weights cannot be had on this machine right now."""

    def __init__(self, name: str, reason: str, fallback: str | None = None, status: str = "needs download") -> None:
        self.name = name
        self.reason = reason
        self.fallback = fallback
        self.status = status  # as availability() says: "needs download", "coming" or "missing"
        self.prefetch_command = f"python -m model_zoo prefetch {name}"
        super().__init__(
            f"{name} is not available here ({reason}). "
            f"To get it, run `{self.prefetch_command}` on a machine with internet."
        )


class EmptyInput(ModelZooError, ValueError):
    def __init__(self, what: str = "text") -> None:
        self.what = what
        super().__init__(f"The {what} is empty: type something first.")


class QuestionTooLong(ModelZooError, ValueError):
    """A question that leaves no room for its passage in what the model reads at once."""

    def __init__(self, model: str, tokens: int, limit: int) -> None:
        self.model, self.tokens, self.limit = model, tokens, limit
        super().__init__(
            f"The question is too long for {model}: it is {tokens} tokens, and {model} reads {limit} with the "
            "passage. Ask a shorter question."
        )


class WordNotInVocabulary(ModelZooError, KeyError):
    def __init__(self, word: str, model: str, suggestions: list[str]) -> None:
        self.word = word
        self.model = model
        self.suggestions = suggestions
        hint = f" Closest spellings: {', '.join(suggestions)}." if suggestions else ""
        super().__init__(f"{word!r} is not in the vocabulary of {model}.{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


class WordNotInText(ModelZooError, ValueError):
    def __init__(self, word: str, text: str, index: int) -> None:
        self.word = word
        self.text = text
        self.index = index
        self.number = index + 1
        super().__init__(f"Sentence {index + 1} does not contain the word {word!r}: {text!r}")


class WordNotInCorpus(ModelZooError, KeyError):
    """A word asked of the shipped sentences that none of them uses."""

    def __init__(self, word: str, uses: int) -> None:
        self.word = word
        self.uses = uses
        super().__init__(f"{word!r} is not used in the {uses:,} words of the shipped sentences")

    def __str__(self) -> str:
        return str(self.args[0])


class NoMaskToken(ModelZooError, ValueError):
    def __init__(self, mask_token: str) -> None:
        self.mask_token = mask_token
        super().__init__(f"There is no {mask_token} in the text: put {mask_token} where a word should be predicted.")


class MissingCapability(ModelZooError):
    def __init__(self, model: str, capability: str, why: str) -> None:
        self.model = model
        self.capability = capability
        self.why = why
        super().__init__(f"{model} cannot do {capability}: {why}")


class BadCheckpoint(ModelZooError, ValueError):
    """Files that do not make the model they claim to (a dataset missing or extra, a wrong shape)."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path} cannot be loaded: {problem}")


class NotRunYet(ModelZooError):
    """A result that takes minutes, asked for before anyone ran it on this server (and none is shipped):
    a question never starts such a run on its own."""

    def __init__(self, model: str, what: str) -> None:
        self.model = model
        self.what = what
        super().__init__(f"{what} has not been run for {model} on this server yet: start it with its button first")
