"""Refusals that an application can say in its own language.

Each vizhooks refusal is an ordinary exception whose message is one English sentence for library
and command-line users; the ones a page meets also carry a stable ``code`` and the ``values`` the
sentence is built from, so the page can render it in its own language instead of putting English
inside a Chinese sentence. Both come from one entry of the text catalogue, ``err_<code>``
(vizhooks/i18n.py): raised with a code and no message, the English ``str()`` is that entry's English.
"""

from __future__ import annotations

from vizhooks.i18n import english


class CodedError(ValueError):
    """A refusal with an English ``str()``, a stable ``code`` ("" when it has none) and its ``values``.

    ``CodedError(code="image_empty")`` says the catalogue's ``err_image_empty`` in English, filled in with
    ``values``; a ``message`` given as well is said instead (a sentence that names a Python argument for
    library users, where the page says the same refusal in its own words).
    """

    def __init__(self, message: str = "", code: str = "", **values: object) -> None:
        if not message and not code:
            raise TypeError("CodedError needs a message or a code.")
        super().__init__(message or english(f"err_{code}", **values))
        self.code = code
        self.values = values

    def __reduce__(self) -> tuple[object, ...]:
        # pickles (Ray) keep the code and values, and what was set on the error after it was made (a
        # WeightsError's notes, a note added with add_note)
        state = {k: v for k, v in self.__dict__.items() if k not in ("code", "values")}
        return (_rebuild, (type(self), str(self), self.code, self.values), state or None)


def _rebuild(cls: type[CodedError], message: str, code: str, values: dict[str, object]) -> CodedError:
    return cls(message, code, **values)
