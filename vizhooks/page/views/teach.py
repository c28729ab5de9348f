"""Teach: students give the network their own classes (names, photos from the camera, uploads or a
sample), train a new last layer on the frozen backbone, and the whole page then runs on it.

The photos live in this session only (each re-encoded to at most PHOTO_SIDE pixels; MAX_SESSION_MB
in all); their features are remembered by digest, so training again after one more photo runs the
network on that photo alone. The taught head is kept by the server (vizhooks.page.taught) under the
taught model's name, which becomes the session's model.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any

import streamlit as st
from PIL import Image

import vizhooks as vz
from vizhooks.analysis import image_digest
from vizhooks.exporting import KINDS, export_files, onnx_bytes, photos_zip, torchscript_bytes, usage_snippet
from vizhooks.interpret.audit import class_folders
from vizhooks.models.registry import backbone_name
from vizhooks.page.classes import teacher
from vizhooks.page.errors import reason, shown_errors
from vizhooks.page.folders import samples_dir
from vizhooks.page.results import get_bundle, plain_bundle
from vizhooks.page.sources.sample import read_sample, samples
from vizhooks.page.sources.upload import PHOTO_MB
from vizhooks.page.taught import checkpoint_bytes, checkpoint_files, names_of, read_upload, remember, use_model
from vizhooks.page.texts import listed, nt, t
from vizhooks.page.views import View
from vizhooks.page.widgets import fraction, progress_bar
from vizhooks.render.figures import confusion_figure, figure_to_png
from vizhooks.teaching import MAX_CLASSES, MAX_PHOTOS, MIN_CLASSES, check_classes, find_head, teach

PHOTO_SIDE = 448  # stored photos: enough for any model's 224-pixel view, a fraction of a camera's bytes
MAX_SESSION_MB = 30
SHOWN = 12  # thumbnails per class; the rest are counted


# --- the photos of this session --------------------------------------------------------------------

def photos() -> list[list[tuple[str, bytes]]]:
    """(digest, JPEG bytes) of each class's photos, MAX_CLASSES lists (the unused ones empty)."""
    return st.session_state.setdefault("_teach_photos", [[] for _ in range(MAX_CLASSES)])


def class_name(i: int) -> str:
    return str(st.session_state.get(f"teach_name_{i}", "")).strip()


def shown_name(i: int) -> str:
    return class_name(i) or t("teach_unnamed", n=i + 1)


def session_bytes() -> int:
    return sum(len(data) for group in photos() for _, data in group)


def stored(data: bytes) -> tuple[str, bytes]:
    """A photo as this session keeps it: read (vizhooks.load_image says why when it is not a
    picture), shrunk to PHOTO_SIDE, JPEG."""
    image = vz.load_image(data)
    image.thumbnail((PHOTO_SIDE, PHOTO_SIDE))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    out = buffer.getvalue()
    return image_digest(out), out


def add(i: int, files: list[tuple[str, bytes]]) -> None:
    """Add photos to class ``i``; each refusal is one notice, and what was added stays."""
    group, notices, added, again = photos()[i], [], 0, 0
    for file_name, data in files:
        if len(group) >= MAX_PHOTOS:
            notices.append(t("teach_full_class", name=shown_name(i), most=MAX_PHOTOS))
            break
        try:
            item = stored(data)
        except vz.InvalidImageError as exc:
            notices.append(t("teach_not_image", file=file_name, reason=reason(exc)))
            continue
        if session_bytes() + len(item[1]) > MAX_SESSION_MB * 1_000_000:
            notices.append(t("teach_full_session", mb=round(session_bytes() / 1e6), most=MAX_SESSION_MB))
            break
        elsewhere = next((j for j, other in enumerate(photos()) if j != i and any(item[0] == d for d, _ in other)),
                         None)
        if elsewhere is not None:  # one photo in two classes teaches two answers for one picture
            notices.append(t("teach_in_other", file=file_name, name=shown_name(elsewhere)))
        elif all(item[0] != d for d, _ in group):
            group.append(item)
            added += 1
        else:
            again += 1
    if again:  # the same picture twice teaches nothing more
        notices.insert(0, nt("teach_again", again, name=shown_name(i)))
    if added:
        notices.insert(0, nt("teach_added", added, name=shown_name(i)))
    st.session_state["_teach_notices"] = notices
    st.session_state["_teach_gen"] = st.session_state.get("_teach_gen", 0) + 1  # fresh camera and uploader


def remove(i: int, digest: str) -> None:
    photos()[i][:] = [item for item in photos()[i] if item[0] != digest]


def clear(i: int) -> None:
    photos()[i].clear()


def example_dir() -> Path:
    """The Clever Hans lesson's photos to teach from (sample_images/shortcut/teach): a folder per class."""
    return samples_dir() / "shortcut" / "teach"


def example_button(slot: Any, label: str, key: str, **kwargs: Any) -> None:
    """The button that brings the lesson's classes (:func:`use_example`). It replaces the classes and photos
    held: when there are some, it sits in a pop-over that says so, so one stray click loses nothing."""
    if not any(photos()):
        slot.button(label, key=key, on_click=use_example, **kwargs)
        return
    with slot.popover(label):
        st.caption(t("teach_example_replaces"))
        st.button(label, key=key, on_click=use_example, **kwargs)


def use_example() -> None:
    """A button's callback: the Teach view opens with the lesson's classes (:func:`_fill_example`, in the
    run, where sentences are in the page's language). The Audit view offers it when its sample folders hold
    classes the model was not taught."""
    st.session_state["_teach_example"] = True
    st.session_state["view"] = "teach"


def _fill_example() -> None:
    """The lesson's classes (its folders' names, each with its photos) become the first classes; the
    photos held before are let go. Runs before the class widgets are drawn."""
    folders = class_folders(example_dir())
    st.session_state["teach_n"] = max(len(folders), MIN_CLASSES)
    for group in photos():
        group.clear()
    notices = []
    for i, (name, paths) in enumerate(folders.items()):
        st.session_state[f"teach_name_{i}"] = name
        add(i, [(path.name, path.read_bytes()) for path in paths])
        notices += st.session_state["_teach_notices"]
    st.session_state["_teach_notices"] = notices


def signature(n: int) -> tuple:
    """What a training saw: names and photo digests; a change makes the result stale."""
    return tuple((class_name(i), tuple(d for d, _ in photos()[i])) for i in range(n))


# --- the view ----------------------------------------------------------------------------------------

def show(model: str) -> None:
    """The Teach view for the session's model ``model`` (a taught model teaches on its backbone)."""
    backbone = backbone_name(model)
    with shown_errors():
        bundle = plain_bundle(backbone)
        find_head(bundle.model, len(bundle.categories))  # a model that cannot be taught says so first
        st.markdown(t("teach_intro", model=backbone))
        if st.session_state.pop("_teach_example", False):
            _fill_example()
        # a choice of 2..6, not a number field: a typed 7 stayed in the field with only a tooltip saying no
        st.session_state.setdefault("teach_n", 2)
        n = int(st.segmented_control(t("teach_classes"), list(range(MIN_CLASSES, MAX_CLASSES + 1)), key="teach_n",
                                     help=t("teach_classes_help", least=MIN_CLASSES, most=MAX_CLASSES)) or 2)
        for notice in st.session_state.pop("_teach_notices", []):
            st.info(notice)
        _classes(n)
        _add_photos(n)
        _photos_zip(n)
        if st.button(t("teach_train"), type="primary", key="teach_train"):
            _train(bundle, n)
        _result(model, n)
        _bring_back(bundle)


def _classes(n: int) -> None:
    columns = st.columns(min(n, 3))
    for i in range(n):
        with columns[i % len(columns)].container(border=True):
            st.text_input(t("teach_name", n=i + 1), key=f"teach_name_{i}", placeholder=t("teach_name_placeholder"),
                          max_chars=40, on_change=_relabel)
            group = photos()[i]
            st.caption(nt("teach_count", len(group)))
            shown = group[-SHOWN:]
            grid = st.columns(4)
            for k, (digest, data) in enumerate(shown):
                cell = grid[k % 4]
                cell.image(data, width=64)
                cell.button("✕", key=f"teach_rm_{i}_{digest}", help=t("teach_remove"), on_click=remove,
                            args=(i, digest))
            if len(group) > SHOWN:
                st.caption(t("teach_more", n=len(group) - SHOWN))
            if group:
                st.button(t("teach_clear"), key=f"teach_clear_{i}", on_click=clear, args=(i,))


def _relabel() -> None:
    """A class renamed: the "add photos to" choice shows names, and a choice travels as its label, so
    give it its value again (else it would fall back to the first class)."""
    if "teach_into" in st.session_state:
        st.session_state["teach_into"] = st.session_state["teach_into"]


def _add_photos(n: int) -> None:
    labels = {i: shown_name(i) for i in range(n)}  # fixed now: Streamlit may format the options later, elsewhere
    into = st.radio(t("teach_add_to"), list(labels), key="teach_into", horizontal=True, format_func=labels.__getitem__)
    i = int(into if into is not None and into < n else 0)
    gen = st.session_state.get("_teach_gen", 0)
    camera, files, sample = st.columns(3)
    shot = camera.camera_input(t("teach_snapshot"), key=f"teach_cam_{gen}")
    uploads = files.file_uploader(t("teach_upload"), accept_multiple_files=True, key=f"teach_up_{gen}",
                                  type=["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"],
                                  max_upload_size=PHOTO_MB)
    name = sample.selectbox(t("teach_sample"), samples(), key="teach_sample_pick")
    if sample.button(t("teach_add_sample"), key="teach_add_sample") and name:
        add(i, [(name, read_sample(name))])
        st.rerun()
    if example_dir().is_dir():
        example_button(sample, t("teach_example"), "teach_example",
                       help=t("teach_example_help", classes=listed(class_folders(example_dir()))))
    if shot is not None:
        add(i, [("snapshot", shot.getvalue())])
        st.rerun()
    if uploads:
        add(i, [(f.name, f.getvalue()) for f in uploads])
        st.rerun()


def _photos_zip(n: int) -> None:
    """The photos collected so far, one folder per class (ImageFolder), built when the download is asked."""
    if not any(photos()[i] for i in range(n)):
        return
    examples = {shown_name(i): [data for _, data in photos()[i]] for i in range(n) if photos()[i]}
    st.download_button(t("export_photos"), data=functools.partial(photos_zip, examples), file_name="my_photos.zip",
                       mime="application/zip", key="export_photos", on_click="ignore", help=t("export_photos_help"))


def _train(bundle: vz.ModelBundle, n: int) -> None:
    names = check_classes([class_name(i) for i in range(n)], [len(photos()[i]) for i in range(n)])
    examples = {name: [Image.open(io.BytesIO(data)).convert("RGB") for _, data in photos()[i]]
                for i, name in enumerate(names)}
    cache = st.session_state.setdefault("_teach_cache", {})
    with progress_bar() as bar:

        def progress(done: int, total: int, stage: str) -> None:
            text = (nt("teach_features", total, done=done, total=total) if stage == "features"
                    else t("teach_fitting", done=done, total=total))
            bar.progress(fraction(done, total), text=text)

        taught = teach(bundle, examples, progress=progress, cache=cache)
    name = remember(taught)
    png = figure_to_png(confusion_figure(taught.confusion, names, truth=t("teach_truth"), guess=t("teach_guess")))
    st.session_state["_teach_result"] = {
        "model": name, "accuracy": taught.accuracy, "per_class": taught.per_class, "method": taught.method,
        "heldout": taught.heldout, "spread": taught.spread, "names": names, "signature": signature(n),
        "confusion": png, "fresh": True,
    }
    use_model(name)
    st.rerun()


def _result(model: str, n: int) -> None:
    result = st.session_state.get("_teach_result")
    if not result:
        return
    backbone = backbone_name(result["model"])
    label = t("model_taught_option", name=backbone, classes=listed(result["names"]))
    if result.pop("fresh", False):
        st.success(t("teach_done", model=label, backbone=backbone))
    if signature(n) != result["signature"]:
        st.info(t("teach_stale"))
    left, right = st.columns([1, 1])
    spread = result.get("spread", float("nan"))
    shown = f"{result['accuracy']:.0%}" + (f" ± {spread:.0%}" if spread == spread else "")
    left.metric(t("teach_accuracy"), shown, help=t("teach_accuracy_help"))
    if result["method"] == "leave-one-out":
        left.caption(t("teach_method_loo", n=result["heldout"]))
    else:
        k = int(result["method"].split("-")[0])
        left.caption(t("teach_method_kfold", n=result["heldout"], k=k, rest=k - 1))
    chance = 1 / len(result["names"])
    if result["accuracy"] < chance:  # leave-one-out on look-alike classes can fall below chance: say why
        left.warning(t("teach_below_chance", chance=chance))
    for name, acc in zip(result["names"], result["per_class"], strict=True):
        if acc == acc:  # NaN: none of its photos was held out
            left.caption(t("teach_per_class", name=name, acc=acc))
    left.caption(t("teach_chance", chance=chance))
    right.image(result["confusion"], caption=t("teach_confusion"))
    _keep(result["model"])
    if model == result["model"] and teacher() is not None:
        st.caption(t("teach_class_follows", model=label))
    if model == result["model"]:
        st.button(t("teach_back", backbone=backbone), key="teach_back", on_click=_back, args=(backbone,))


def _back(backbone: str) -> None:
    st.session_state["model"] = backbone


def _keep(model: str) -> None:
    file, labels = checkpoint_files(model)
    st.subheader(t("teach_keep"))
    a, b = st.columns(2)
    a.download_button(t("teach_download"), data=functools.partial(checkpoint_bytes, get_bundle(model)), file_name=file,
                      mime="application/octet-stream", key="teach_download", on_click="ignore")
    b.download_button(t("teach_download_labels"), data="\n".join(names_of(model)) + "\n", file_name=labels,
                      mime="text/plain", key="teach_download_labels", on_click="ignore")
    st.caption(t("teach_keep_help", backbone=backbone_name(model), file=file, labels=labels))
    _export(model, labels)


#: What each format's program needs besides Python, as the page says it.
NEEDS = {"onnx": "numpy, pillow, onnxruntime", "torchscript": "numpy, pillow, torch"}


def _export(model: str, labels: str) -> None:
    """ONNX and TorchScript downloads (built when asked, not on every run), each with its program."""
    st.markdown(t("export_heading"))
    bundle = get_bundle(model)
    stem = Path(labels).stem
    tabs = st.tabs([t("export_tab_onnx"), t("export_tab_torchscript")])
    formats = ((t("export_download_onnx"), onnx_bytes, ".onnx"),
               (t("export_download_torchscript"), torchscript_bytes, ".pt"))
    for kind, tab, (label, build, suffix) in zip(KINDS, tabs, formats, strict=True):
        file, _, program = export_files(stem + suffix)
        tab.download_button(label, data=functools.partial(build, bundle),
                            file_name=file.name, mime="application/octet-stream", key=f"export_{kind}",
                            on_click="ignore")
        tab.code(usage_snippet(bundle, kind, file.name, labels), language="python")
        tab.caption(t("export_program_help", program=program.name, file=file.name, labels=labels,
                      needs=NEEDS[kind]))


def _bring_back(bundle: vz.ModelBundle) -> None:
    with st.expander(t("teach_upload_model")):
        files = st.file_uploader(t("teach_upload_model"), type=["pth", "pt", "txt", "json"],
                                 accept_multiple_files=True, key="teach_model_files", label_visibility="collapsed")
        if not st.button(t("teach_upload_go"), key="teach_upload_go"):
            return
        weights = next((f for f in files or [] if f.name.endswith((".pth", ".pt"))), None)
        labels = next((f for f in files or [] if f.name.endswith((".txt", ".json"))), None)
        if weights is None or labels is None:
            st.warning(t("teach_upload_needs_both"))
            return
        taught = read_upload(bundle, weights.getvalue(), labels.getvalue(), Path(labels.name).suffix)
        if taught is None:
            st.error(t("teach_upload_other", backbone=bundle.name))
            return
        use_model(remember(taught))
        st.session_state["_teach_notices"] = [t("teach_uploaded", model=t(
            "model_taught_option", name=bundle.name, classes=listed(taught.bundle.categories)))]
        st.rerun()


VIEW = View("teach", group="learn", order=20, label="view_teach", show=show, own_area=True)
