"""Audit: a whole labelled folder through the session's model (vizhooks.interpret.audit): per-class
accuracy, the confusion matrix with a cell picker whose pictures come with their explanation overlays,
the most confident mistakes, and per class the SpRAy clusters of the maps, a cluster whose heat sits
away from the centre flagged as a possible shortcut.

Folders: the operator's (``VIZHOOKS_AUDIT_DIRS``, separated by the system's path separator; never a
path a visitor types), the shipped shortcut lesson's (``sample_images/shortcut/``) and the photos
of the Teach view (students audit what they taught). Results are shared by every session through
vizhooks.page.results' cache, keyed by the model, the folder and its files' names, sizes and times.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import streamlit as st
from PIL import Image

from vizhooks.interpret.audit import OTHER, Audit, AuditError, audit, class_folders, match_classes
from vizhooks.models.images import load_image
from vizhooks.models.registry import display_name
from vizhooks.page.errors import shown_errors
from vizhooks.page.folders import samples_dir
from vizhooks.page.results import cached, get_bundle, model_option
from vizhooks.page.taught import is_taught
from vizhooks.page.texts import language, listed, nt, t
from vizhooks.page.views import View
from vizhooks.page.views.teach import example_button
from vizhooks.page.widgets import fraction, keep_valid, progress_bar
from vizhooks.render.figures import channel_overlay, confusion_figure, figure_to_png, image_to_png

SIZE = 224
SHOWN = 8  # pictures of a cell, members of a cluster's strip
THUMB = 112
#: The confusion matrix is drawn as buttons up to this many columns (the cell picker is there always).
MAX_GRID = 9
#: The Teach view's photos, as this session keeps them (vizhooks/page/views/teach.py).
TEACH_PHOTOS = "_teach_photos"


def operator_dirs() -> list[Path]:
    """The folders the operator allows (``VIZHOOKS_AUDIT_DIRS``), read on every run."""
    text = os.environ.get("VIZHOOKS_AUDIT_DIRS", "")
    return [Path(p) for p in text.split(os.pathsep) if p.strip()]


def shipped_dirs() -> list[Path]:
    root = samples_dir() / "shortcut"
    return [root / part for part in ("teach", "test") if (root / part).is_dir()]


#: Pictures in memory, as vizhooks.interpret.audit.audit reads them: {class: [(file name, bytes), ...]}.
Photos = dict[str, list[tuple[str, bytes]]]


def teach_photos() -> Photos | None:
    """The Teach view's photos by class name (kept in memory: a visitor's photos are never written to the
    server's disk), or None when fewer than two classes have a name and a photo."""
    groups = st.session_state.get(TEACH_PHOTOS) or []
    named = [(str(st.session_state.get(f"teach_name_{i}", "")).strip(), group) for i, group in enumerate(groups)]
    named = [(name, group) for name, group in named if name and group]
    if len(named) < 2:
        return None
    return {name: [(f"{d}.jpg", data) for d, data in group] for name, group in named}


def _signature(source: Path | Photos) -> str:
    files: list[tuple[str, ...]]
    if isinstance(source, dict):
        files = sorted((name, file, hashlib.sha256(data).hexdigest()) for name, pictures in source.items()
                       for file, data in pictures)
    else:
        files = sorted((p.relative_to(source).as_posix(), str(p.stat().st_size), str(p.stat().st_mtime_ns))
                       for p in source.rglob("*") if p.is_file())
    return hashlib.sha256(repr(files).encode()).hexdigest()


def _open(source: Path | Photos, path: str) -> Image.Image:
    """The picture at ``path`` of an audit (``"class/file"``), from its folder or from memory."""
    if isinstance(source, dict):
        name, file = path.split("/", 1)
        return load_image(dict(source[name])[file])
    return Image.open(source / path).convert("RGB")


def _sources() -> dict[str, tuple[str, Path | Photos | None]]:
    """label -> (the source's id in a link, its folder or photos); ids do not depend on the language."""
    found: dict[str, tuple[str, Path | Photos | None]] = {}
    for path in shipped_dirs():
        found[t("audit_source_sample", name=f"shortcut/{path.name}")] = (f"shortcut-{path.name}", path)
    for n, path in enumerate(operator_dirs(), 1):
        found[t("audit_source_dir", path=str(path))] = (f"dir{n}", path)
    found[t("audit_source_teach")] = ("teach", teach_photos())
    return found


def _thumb(found: Audit, source: Path | Photos, path: str, with_map: bool = True) -> Image.Image:
    image = _open(source, path)
    image.thumbnail((THUMB, THUMB))
    return channel_overlay(image, found.maps[path], alpha=0.45, cmap="inferno") if with_map else image


def show(model: str) -> None:
    """The Audit view for the session's model ``model``."""
    st.markdown(t("audit_intro"))
    sources = _sources()
    linked = st.session_state.get("audit_folder")  # a link's folder (or the one shown last): reopened
    by_id = {ident: label for label, (ident, _) in sources.items()}
    if linked in by_id:
        keep_valid("audit_source", list(sources), by_id[linked])
    choice = st.radio(t("audit_source"), list(sources), key="audit_source")
    ident, folder = sources[choice] if choice is not None else ("", None)
    if folder is None:
        st.session_state.pop("audit_folder", None)
        st.info(t("audit_no_teach_photos"))
        return
    if isinstance(folder, Path) and folder in shipped_dirs() and not _knows(model, folder):
        st.session_state.pop("audit_folder", None)
        _teach_first(model, folder)
        return
    key = ("audit", model, str(folder) if isinstance(folder, Path) else "teach", _signature(folder), SIZE)
    if not (st.session_state.get("_audit_run") == key or linked == ident) and not st.button(
            t("audit_run"), type="primary", key="audit_run"):
        st.session_state.pop("audit_folder", None)
        return
    st.session_state["_audit_run"] = key
    st.session_state["audit_folder"] = ident
    with shown_errors():
        with progress_bar() as bar:

            def progress(done: int, total: int) -> None:
                bar.progress(fraction(done, total), text=t("audit_progress", done=done, total=total))

            found = cached(key, lambda: audit(get_bundle(model), folder, size=SIZE, progress=progress),
                           lambda a: len(a.maps) * (a.map_size ** 2 * 4 + 300))
        _summary(found)
        _cells(found, folder)
        _clusters(found, folder)


def _knows(model: str, folder: Path) -> bool:
    """Whether the model has an output for each class of ``folder`` (as the audit will match them)."""
    categories = get_bundle(model).categories
    try:
        match_classes(list(class_folders(folder)), categories, len(categories or []), folder)
    except AuditError:
        return False
    return True


def _teach_first(model: str, folder: Path) -> None:
    """The lesson's sample folders hold classes an ImageNet model was never taught (circle, triangle): the
    way on is to teach them first, which one button prepares in the Teach view."""
    shown = model_option(model, language()) if is_taught(model) else display_name(model)
    classes = listed(class_folders(folder))
    if "view" in (st.session_state.get("hide") or ()):  # a teacher's link fixed the view: no way to Teach and back
        st.info(t("audit_teach_first_locked", model=shown, classes=classes))
        return
    st.info(t("audit_teach_first", model=shown, classes=classes))
    example_button(st, t("audit_teach_example"), "audit_teach_example", type="primary")


def _summary(found: Audit) -> None:
    left, right = st.columns([1, 1])
    for name, accuracy in found.accuracy().items():
        n = int(found.confusion[found.classes.index(name)].sum())
        left.caption(t("audit_accuracy", name=name, acc=accuracy, n=n))
    if OTHER in found.columns:
        left.caption(nt("audit_other", int(found.confusion[:, -1].sum())))
    if found.skipped:
        left.warning(nt("audit_skipped", len(found.skipped), files=listed(p for p, _ in found.skipped[:5])))
    left.caption(t("audit_maps", layer=found.layer))
    k = len(found.classes)
    figure = confusion_figure(found.confusion[:, :k], found.classes, truth=t("audit_truth"), guess=t("audit_guess"))
    right.image(figure_to_png(figure), caption=t("audit_confusion"))


def _cells(found: Audit, folder: Path | Photos) -> None:
    st.subheader(t("audit_cells"))
    options = [(i, j) for i in range(len(found.classes)) for j in range(len(found.columns)) if found.confusion[i, j]]
    mistakes = [(i, j) for i, j in options if found.columns[j] != found.classes[i]]
    default = mistakes[0] if mistakes else options[0]
    keep_valid("audit_cell", options, default)
    label = {(i, j): t("audit_cell_option", truth=found.classes[i], guess=t("audit_other_column")
                       if found.columns[j] == OTHER else found.columns[j], n=int(found.confusion[i, j]))
             for i, j in options}
    _cell_buttons(found, options)
    i, j = st.selectbox(t("audit_cell"), options, key="audit_cell", format_func=label.__getitem__)
    truth, guess = found.classes[i], found.columns[j]
    rows = [r for r in found.predictions if r["label"] == truth
            and (r["predicted"] == guess or (guess == OTHER and r["predicted"] not in found.classes))]
    rows.sort(key=lambda r: -r["confidence"])
    columns = st.columns(4)
    for n, row in enumerate(rows[:SHOWN]):
        columns[n % 4].image(image_to_png(_thumb(found, folder, row["path"])), caption=t(
            "audit_picture", guess=row["predicted"], conf=row["confidence"]))
    if len(rows) > SHOWN:
        st.caption(t("audit_more", n=len(rows) - SHOWN))
    worst = found.mistakes()[:4]
    if worst:
        st.caption(t("audit_mistakes"))
        columns = st.columns(4)
        for n, row in enumerate(worst):
            columns[n].image(image_to_png(_thumb(found, folder, row["path"])), caption=t(
                "audit_mistake", truth=row["label"], guess=row["predicted"], conf=row["confidence"]))


def _pick(cell: tuple[int, int]) -> None:
    st.session_state["audit_cell"] = cell


def _cell_buttons(found: Audit, options: list[tuple[int, int]]) -> None:
    """The confusion matrix as buttons (rows the true class, columns the guess): a click opens that cell."""
    if len(found.columns) > MAX_GRID:
        return
    chosen = st.session_state.get("audit_cell")
    head = st.columns(len(found.columns) + 1)
    head[0].caption(t("audit_grid_corner"))
    for j, column in enumerate(found.columns):
        head[j + 1].caption(t("audit_other_column") if column == OTHER else column)
    for i, name in enumerate(found.classes):
        row = st.columns(len(found.columns) + 1)
        row[0].caption(name)
        for j in range(len(found.columns)):
            row[j + 1].button(str(int(found.confusion[i, j])), key=f"audit_cell_{i}_{j}", on_click=_pick,
                              args=((i, j),), disabled=(i, j) not in options,
                              type="primary" if chosen == (i, j) else "secondary", width="stretch")


def _clusters(found: Audit, folder: Path | Photos) -> None:
    st.subheader(t("audit_clusters"))
    st.caption(t("audit_clusters_help"))
    names = [n for n in found.classes if n in found.groups]
    keep_valid("audit_class", names, next((n for n, _ in found.suspicious()), names[0]))
    name = st.selectbox(t("audit_class"), names, key="audit_class")
    for cluster in found.groups[name]:
        with st.container(border=True):
            typical = cluster.members[0]
            left, right = st.columns([1, 3])
            image = _open(folder, typical)
            image.thumbnail((2 * THUMB, 2 * THUMB))
            left.image(image_to_png(channel_overlay(image, np.clip(cluster.mean, 0, None), alpha=0.5, cmap="inferno")),
                       caption=t("audit_cluster", id=cluster.id, n=cluster.size,
                                 where=t(f"audit_where_{cluster.where}")))
            if cluster.shortcut:
                right.warning(t("audit_shortcut", where=t(f"audit_where_{cluster.where}"), name=name,
                                cluster=cluster.id, n=cluster.size))
            strip = right.columns(6)
            for n, path in enumerate(cluster.members[:6]):
                strip[n].image(image_to_png(_thumb(found, folder, path)))
    if not found.suspicious():
        st.success(t("audit_no_shortcut"))


VIEW = View("audit", group="explain", order=40, label="view_audit", show=show, own_area=True,
            keys=("audit_folder", "audit_cell", "audit_class"))
