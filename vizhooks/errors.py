"""Refusals that an application can say in its own language.

Each vizhooks refusal is an ordinary exception whose message is one English sentence for library
and command-line users; the ones a page meets also carry a stable ``code`` and the ``values`` the
sentence is built from, so the page can render it from its own texts (vizhooks.page: ``err_<code>``
in English and 简体中文) instead of putting English inside a Chinese sentence.
"""

from __future__ import annotations


class CodedError(ValueError):
    """A refusal with an English ``str()``, a stable ``code`` ("" when it has none) and its ``values``."""

    def __init__(self, message: str, code: str = "", **values: object) -> None:
        super().__init__(message)
        self.code = code
        self.values = values

    def __reduce__(self) -> tuple[object, ...]:  # pickles (Ray) keep the code and values
        return (_rebuild, (type(self), str(self), self.code, self.values))


def _rebuild(cls: type[CodedError], message: str, code: str, values: dict[str, object]) -> CodedError:
    return cls(message, code, **values)
