"""Where the page's files are: the folder ``app.py`` runs from, with its ``sample_images/`` and
``atlas/``. app.py names it on every run, so an installed copy of the page finds the photos beside
it, not beside the package."""

from __future__ import annotations

import os
from pathlib import Path

_root = Path.cwd()


def use_root(folder: Path) -> None:
    """The page's folder (app.py's own); called by app.py at the start of each run."""
    global _root
    _root = Path(folder)


def samples_dir() -> Path:
    return _root / "sample_images"


def atlas_dir() -> Path:
    """The operator's atlases: ``VIZHOOKS_ATLAS_DIR``, else ``atlas/`` beside app.py (read on every
    run, so a changed variable counts without a restart)."""
    return Path(os.environ.get("VIZHOOKS_ATLAS_DIR", "") or _root / "atlas")


def shipped_atlas_dir() -> Path:
    """A small atlas built from the sample photos (random weights), so the view works on a fresh clone."""
    return samples_dir() / "atlas"
