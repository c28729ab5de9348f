"""What the page server does once when ``streamlit run app.py`` starts, so its first visitors do not.

A visitor's run on a running server costs about 50 ms of CPU (benchmarks/pagecpu.py); the first
run in a new process cost 1.4 s, and thirty visitors arriving together on a fresh server all waited
for it, some of it done more than once: Streamlit's emoji table (imported by the first segmented
control, 0.35 s), the default model's layers described on the meta device (0.14 s; a plain
``functools.cache``, so every session that arrived before it was filled described them again, one
after another under the meta model's lock), the model menu's lines, and loading the default model.
:func:`start` does these in a background thread while the server waits for its first visitor.

Only what every visitor's first run needs and what no session owns: process-wide caches keyed by
model name and language, and the shared model (the same ``st.cache_resource`` entry the page uses,
so it is loaded once either way). No picture is analysed: that stays the first visitor's one
computation (what ``/metrics`` counts and the load test checks).
"""

from __future__ import annotations

import logging
import threading

LOG = logging.getLogger("vizhooks.page")


def warm_up(model: str | None = None) -> None:
    """Fill the process-wide caches of a default-page run (see the module's docstring)."""
    from streamlit.string_util import extract_leading_emoji

    from vizhooks.i18n import languages
    from vizhooks.models.layers import architecture_layers
    from vizhooks.models.registry import list_models
    from vizhooks.page.results import get_bundle, plain_option
    from vizhooks.page.state import picks_for
    from vizhooks.page.urlstate import DEFAULTS

    model = model or str(DEFAULTS["model"])
    extract_leading_emoji("中文")  # imports streamlit.emojis and compiles its pattern (an ASCII text skips both)
    architecture_layers(model)
    picks_for(model)
    for lang in languages():
        for name in list_models():
            plain_option(name, lang)
    get_bundle(model)


def _warm_up_logged() -> None:
    try:
        warm_up()
    except Exception:  # the first visitor's run does the same and shows the page's sentence
        LOG.warning("the server's warm-up stopped; the first visitor's run does the rest", exc_info=True)


def start() -> threading.Thread:
    """:func:`warm_up` in a daemon thread (the server answers meanwhile; a visitor who comes first
    shares what is being made: the model through Streamlit's cache lock)."""
    thread = threading.Thread(target=_warm_up_logged, name="vizhooks-warm-up", daemon=True)
    thread.start()
    return thread
