"""The guided lesson on hooks, without the page: what the page's Lesson view shows and what
``python -m vizhooks lesson`` writes, made from the library alone (``import vizhooks.lesson`` and the
command never import Streamlit; tests/test_handout.py checks it).

- steps.py: the steps, in order, and the command's arguments.
- code.py: the plain-PyTorch code of each view and step, made from the snippet files in snippets/
  (real Python, linted and type-checked; snippets/__init__.py says how they are written).
- handout.py: the lesson to take home, as a notebook or one HTML file.
- display.py: what the page's views and the handout show alike (backward's rows, the layer table's
  headers, the clamp's settings).
- i18n.py: the lesson's sentences in the current language; texts_*.py hold them (English, 简体中文).

The page (vizhooks/page/views/lesson.py, code.py) renders all of this; nothing here imports the page.
"""
