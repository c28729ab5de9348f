"""The error frame: a failure becomes one sentence on the page, and the run stops there."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

import vizhooks as vz
from vizhooks.classroom.store import StoreUnavailableError
from vizhooks.hooks.budget import CaptureTooLargeError
from vizhooks.i18n import is_plural, said
from vizhooks.models.weights import FILE_CODES
from vizhooks.ops import is_out_of_memory, release_memory
from vizhooks.page.cache import StillComputingError
from vizhooks.page.texts import EN, language, t
from vizhooks.video import InvalidVideoError

LOG = logging.getLogger("vizhooks.page")
_store_said: list[str] = []  # the class store's last failure written to the log (one line per change)
_store_lock = threading.Lock()


def store_down(exc: BaseException) -> None:
    """The operator's detail of an unreachable class store (its address, "start Redis, or unset
    VIZHOOKS_CLASS_STORE") goes to the server's log, once per new failure: a heartbeat every half
    second must not flood it. Visitors get a plain sentence instead (``class_store_*`` texts)."""
    with _store_lock:
        if _store_said[-1:] != [str(exc)]:
            LOG.warning("class store unavailable: %s", exc)
            _store_said[:] = [str(exc)]


def store_back() -> None:
    """The class store answered again: say so in the log once."""
    with _store_lock:
        if _store_said:
            LOG.warning("class store reachable again")
            _store_said.clear()


def reason(exc: BaseException) -> str:
    """A refusal's reason in the page's language: from the page's texts when the library gave it a
    code (vizhooks.errors.CodedError); else its English sentence on the English page, and on the
    others a pointer to the server's log, so no English sentence reaches a Chinese page. A refusal about
    a file on the server (``FILE_CODES``: the operator's checkpoint) is one without a code here."""
    if isinstance(exc, StoreUnavailableError):  # the detail is the operator's: to the log
        store_down(exc)
        return t("class_store_unreachable")
    code = getattr(exc, "code", "")
    if code and code not in FILE_CODES and (f"err_{code}" in EN or is_plural(f"err_{code}")):
        return said(f"err_{code}", getattr(exc, "values", {}))
    if language() == "en":
        return str(exc)
    LOG.warning("refusal without a code, shown as err_generic: %s", exc)
    return t("err_generic")


@contextmanager
def shown_errors() -> Iterator[None]:
    """Turn a failure into one sentence on the page and stop this run. Nothing else is lost: the
    sidebar is already drawn, the shared model is unharmed (vizhooks removes its hooks and
    restores its state in `finally`), and the next change runs normally."""
    try:
        yield
    except vz.InvalidImageError as exc:
        st.error(t("bad_image", reason=reason(exc)))
    except InvalidVideoError as exc:
        st.error(t("bad_video", reason=reason(exc)))
    except vz.WeightsError as exc:
        LOG.warning("model refused: %s", exc)
        st.error(t("bad_model", reason=reason(exc)))
    except CaptureTooLargeError as exc:
        st.warning(t("too_large", reason=reason(exc)))
    except StillComputingError:  # the same request, still running for another session
        st.warning(t("still_computing"))
    except (ValueError, KeyError) as exc:
        LOG.warning("refused: %s", exc)
        st.error(t("bad_input", reason=reason(exc)))
    except (RuntimeError, MemoryError) as exc:
        LOG.exception("model run failed")
        release_memory()
        st.error(t("out_of_memory") if is_out_of_memory(exc) else t("failed"))
    else:
        return
    st.stop()
