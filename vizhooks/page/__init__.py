"""The Streamlit page, as a package; app.py is its entry. ``import vizhooks`` never imports it, so
the library stays free of page code, and no library module imports it.

- state.py: the sidebar's :class:`~state.Choices`, the first run from a shared link, the URL kept in
  step (urlstate.py parses and writes the query); sidebar.py draws the sidebar and returns Choices.
- results.py: the caches and every ``get_*`` (one model per architecture, results bounded in bytes).
- widgets.py: the repeated page patterns, written once.
- views/: one module per view, each ``show(ctx)`` and a ``VIEW = View(...)`` line (name, menu
  group, link keys, label); the package is the registry everything that lists views reads, and a
  new view is a module there and its texts. menu.py: the grouped view menu.
  sources/: the picture sources (sample, upload, camera, video, live).
- metrics.py: the server's /metrics (Prometheus); classes.py: a class on the page (teacher, followers,
  polls, gallery) over vizhooks.classroom.
- errors.py (the error frame), folders.py (where the photos and atlases are), texts*.py (every
  sentence, English and Chinese; the lesson's own live in vizhooks/lesson), cache.py (the
  byte-bounded LRU). The lesson (steps, code, handout) is vizhooks/lesson, the analysis the views
  draw vizhooks/analysis.py: both without Streamlit, so the command line writes the lesson too.
"""

import logging


class _DeclaredBeforeRuntime(logging.Filter):
    """`streamlit run app.py` imports app.py (it holds an ``st.App``) before Streamlit's runtime
    starts, so each ``st.cache_data`` declared by an import says "No runtime found"; Streamlit picks
    the runtime's storage at the first call all the same, so that line only alarms an operator."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "No runtime found" not in record.getMessage()


logging.getLogger("streamlit.runtime.caching.cache_data_api").addFilter(_DeclaredBeforeRuntime())
