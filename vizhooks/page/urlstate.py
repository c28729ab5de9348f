"""The page's choices as a URL query string, so a teacher can share a link to one exact view.

Parsing is strict and forgiving at once: every value is checked, bad ones are dropped and
reported (the page shows a short notice), good ones are kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from vizhooks.classroom.core import ALPHABET, CODE_LENGTH, normalise_code
from vizhooks.errors import CodedError
from vizhooks.i18n import languages
from vizhooks.interpret.methods import METHODS as EXPLAIN_METHODS
from vizhooks.lesson.steps import HIDEABLE, STEPS, parse_plan
from vizhooks.models.layers import LayerInfo, architecture_layers, reference_hw
from vizhooks.models.registry import list_models
from vizhooks.page.clip import offered as clip_offered
from vizhooks.page.results import explain_layer_options
from vizhooks.page.sources import SOURCES
from vizhooks.page.taught import names_of
from vizhooks.page.views import REGISTRY
from vizhooks.page.views.compare import PATCH_PARTS, STEER_SCALES
from vizhooks.page.views.intervene import EDIT_MODES, STEER_DIRECTIONS
from vizhooks.render.figures import CMAPS, NORMS, ORDERS

#: Channel orders of the page: the grids' own, and "relevance" (Taylor, for the chosen class), which the
#: Feature maps view computes.
PAGE_ORDERS = (*ORDERS, "relevance")

SIZE_MIN, SIZE_MAX, SIZE_STEP = 128, 512, 32
CHANNEL_CHOICES: tuple[int | str, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, "all")
WHATS = ("output", "input")
#: The page's views, in menu order (read from the views' own modules: vizhooks.page.views).
VIEWS = tuple(view.name for view in REGISTRY)
#: The page's languages, one per catalogue (``?lang=zh-Hant``): a new .po file joins the switch and the links.
LANGS = languages()
#: Settings of one view, kept in the link while that view is shown (their session keys are the names).
VIEW_KEYS: dict[str, tuple[str, ...]] = {view.name: view.keys for view in REGISTRY if view.keys}

DEFAULTS: dict[str, object] = {
    "model": "resnet18",
    "size": 224,
    "what": "output",
    "channels": 16,
    "order": "index",
    "cmap": "viridis",
    "norm": "channel",
    "columns": 0,
    "view": "maps",
}

#: The order of parameters in a shared link.
KEYS = ("lang", "present", "view", "step", "plan", "hide", "model", "source", "sample", "compare", "layers", "what",
        "size", "channels", "order", "cmap", "norm", "columns", "target",
        *(k for keys in VIEW_KEYS.values() for k in keys), "class", "teacher")


def _one(value: str | Sequence[str]) -> str:
    return value if isinstance(value, str) else (value[-1] if value else "")


def _int(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


def _span(text: str) -> tuple[int, int] | None:
    """Rows or columns of a patched region in percent of the map, ``"25,75"``: 0 <= start < end <= 100."""
    parts = [_int(p) for p in text.split(",")]
    if len(parts) == 2 and parts[0] is not None and parts[1] is not None and 0 <= parts[0] < parts[1] <= 100:
        return parts[0], parts[1]
    return None


def layers_of(model: str) -> tuple[tuple[LayerInfo, ...], Exception | None]:
    """``model``'s layers, or no layers and the refusal where its listing refuses (an operator's entry whose
    files changed since the menu listed it: a processor now of non-square pictures, a config gone). The
    sidebar says the refusal; the link's parser and a model change leave the layers alone."""
    try:
        infos = architecture_layers(model)  # kept per model name: its input rules are asked again below
        reference_hw(model)
        return infos, None
    except (CodedError, OSError) as exc:
        return (), exc


def _explain_layer(model: str, name: str) -> bool:
    """Whether the Explain view offers ``name`` beyond the sidebar's layers (a ViT's default CAM layer); a model
    whose layers cannot be listed offers nothing more (its refusal is said where the model is chosen)."""
    try:
        return name in explain_layer_options(model)
    except (CodedError, OSError, KeyError, RuntimeError):
        return False


def parse_query(
    params: Mapping[str, str | Sequence[str]], samples: Sequence[str]
) -> tuple[dict[str, object], list[tuple[str, str]]]:
    """Check query parameters.

    Args:
        params: e.g. ``st.query_params.to_dict()``; a list value means a repeated parameter
            (the last one wins, except for ``layers``, whose lists are joined).
        samples: file names of the sample photos.

    Returns:
        (valid choices, ``[(parameter, bad value), ...]``). Unknown parameter names are bad too.
        Layer names are checked against the chosen (or default) model; good ones are kept.
    """
    good: dict[str, object] = {}
    bad: list[tuple[str, str]] = []
    for key in params:
        if key not in KEYS:
            bad.append((key, _one(params[key])))
    model = _one(params.get("model", ""))
    if "model" in params:
        if model in list_models() or names_of(model) or clip_offered(model):  # a taught model this server holds; CLIP
            good["model"] = model
        else:
            bad.append(("model", model))
    checks = {
        "sample": lambda v: v if v in samples else None,
        "compare": lambda v: v if v in samples else None,
        "lang": lambda v: v if v in LANGS else None,
        "step": lambda v: n if (n := _int(v)) is not None and 1 <= n <= len(STEPS) else None,
        "what": lambda v: v if v in WHATS else None,
        "order": lambda v: v if v in PAGE_ORDERS else None,
        "cmap": lambda v: v if v in CMAPS else None,
        "norm": lambda v: v if v in NORMS else None,
        "size": lambda v: n if (n := _int(v)) is not None and SIZE_MIN <= n <= SIZE_MAX
        and (n - SIZE_MIN) % SIZE_STEP == 0 else None,
        "channels": lambda v: "all" if v == "all" else (n if (n := _int(v)) in CHANNEL_CHOICES else None),
        "columns": lambda v: n if (n := _int(v)) is not None and 0 <= n <= 64 else None,
        "view": lambda v: v if v in VIEWS else None,
        # the class count is only known once the model is loaded; the page checks it then
        "target": lambda v: n if (n := _int(v)) is not None and 0 <= n < 100_000 else None,
        # a class to follow, and the teacher's secret of a teacher link (never written back to the address bar)
        "class": lambda v: code if len(code := normalise_code(v)) == CODE_LENGTH and set(code) <= set(ALPHABET)
        else None,
        "teacher": lambda v: v if re.fullmatch(r"[A-Za-z0-9_-]{16,64}", v) else None,
        "present": lambda v: {"1": True, "0": False}.get(v),
        "source": lambda v: v if v in SOURCES else None,
        # a view's channel is checked against its layer by the view itself (keep_below)
        "insp_channel": lambda v: n if (n := _int(v)) is not None and n < 100_000 else None,
        "atlas_channel": lambda v: n if (n := _int(v)) is not None and n < 100_000 else None,
        # the convolution's channel and place are checked against its layer and picture by the view
        "cv_channel": lambda v: n if (n := _int(v)) is not None and n < 100_000 else None,
        "cv_row": lambda v: n if (n := _int(v)) is not None and n < 100_000 else None,
        "cv_col": lambda v: n if (n := _int(v)) is not None and n < 100_000 else None,
        # the overview's stage (networks of over 60 layers) is checked against the network by the view
        "ov_stage": lambda v: n if (n := _int(v)) is not None and n < 1_000 else None,
        "iv_mode": lambda v: v if v in EDIT_MODES else None,
        "iv_k": lambda v: n if (n := _int(v)) is not None and 1 <= n < 100_000 else None,
        "ex_methods": lambda v: (list(dict.fromkeys(parts)) if (parts := [p.strip() for p in v.split(",")
                                                                           if p.strip()])
                                 and all(p in EXPLAIN_METHODS for p in parts) else None),
        "iv_channels": lambda v: (sorted({int(x) for x in parts}) if (parts := [p for p in v.split(",") if p])
                                  and all(_int(x) is not None and int(x) < 100_000 for x in parts) else None),
        # activation patching in the Compare view; the channels are checked against the layer by the view
        "pt_on": lambda v: {"1": True, "0": False}.get(v),
        "pt_sweep": lambda v: {"1": True, "0": False}.get(v),
        "pt_part": lambda v: v if v in PATCH_PARTS else None,
        "pt_channels": lambda v: (sorted({int(x) for x in parts}) if (parts := [p for p in v.split(",") if p])
                                  and all(_int(x) is not None and int(x) < 100_000 for x in parts) else None),
        # the Audit view: its folder's id, the confusion cell (true, guessed) and the class of its clusters,
        # each checked against the folder's audit by the view
        "audit_folder": lambda v: v if re.fullmatch(r"[a-z0-9-]{1,40}", v) else None,
        "audit_cell": lambda v: (int(v.split(",")[0]), int(v.split(",")[1])) if re.fullmatch(r"\d{1,3},\d{1,3}", v)
        else None,
        "audit_class": lambda v: v if 0 < len(v) <= 200 else None,
        "pt_rows": _span,
        "pt_cols": _span,
        # steering A towards B in the Compare view: a strength the slider offers
        "sr_on": lambda v: {"1": True, "0": False}.get(v),
        "sr_scale": lambda v: next((s for s in STEER_SCALES if v in (str(s), f"{s:g}")), None),
        # steering in the Intervene view; the class and the concept are checked against the photos by the view
        "iv_dir": lambda v: v if v in STEER_DIRECTIONS else None,
        "iv_scale": lambda v: next((s for s in STEER_SCALES if v in (str(s), f"{s:g}")), None),
        "iv_toward": lambda v: n if (n := _int(v)) is not None and 0 <= n < 100_000 else None,
        "iv_concept": lambda v: n if (n := _int(v)) is not None and 0 <= n < 100 else None,
    }
    for key, check in checks.items():
        if key in params:
            value = _one(params[key])
            parsed = check(value)
            if parsed is None:
                bad.append((key, value))
            else:
                good[key] = parsed
    if "plan" in params:  # the teacher's steps in the teacher's order: unknown steps are reported and dropped
        plan, unknown = parse_plan(_one(params["plan"]))
        bad.extend(("plan", part) for part in unknown)
        if plan:
            good["plan"] = plan
    if "hide" in params:  # the controls a teacher's link hides (vizhooks.lesson.steps.HIDEABLE)
        names = [n.strip().lower() for n in _one(params["hide"]).split(",") if n.strip()]
        bad.extend(("hide", n) for n in dict.fromkeys(names) if n not in HIDEABLE)
        if hidden := tuple(n for n in dict.fromkeys(names) if n in HIDEABLE):
            good["hide"] = hidden
    infos, refused = layers_of(str(good.get("model", DEFAULTS["model"])))
    if refused is not None and "model" in good:  # an operator's entry whose files no longer load: not used
        bad.append(("model", str(good.pop("model"))))
        infos, _ = layers_of(str(DEFAULTS["model"]))
    valid = {c.name for c in infos}
    convs = {c.name for c in infos if c.kind == "conv"}
    model_name = str(good.get("model", DEFAULTS["model"]))
    # one layer each (cv_layer: a conv)
    for key in ("insp_layer", "atlas_layer", "iv_layer", "cv_layer", "pt_layer", "sr_layer"):
        if key in params:
            name = _one(params[key])
            if name in (convs if key == "cv_layer" else valid):
                good[key] = name
            else:
                bad.append((key, name))
    if "ex_layers" in params:  # the CAM layers of the Explain view: convs and blocks, like the sidebar's
        names = [n.strip() for n in _one(params["ex_layers"]).split(",") if n.strip()]
        if names and all(n in valid or _explain_layer(model_name, n) for n in names):
            good["ex_layers"] = list(dict.fromkeys(names))
        else:
            bad.append(("ex_layers", _one(params["ex_layers"])))
    if "layers" in params:
        raw = params["layers"]
        names = [n.strip() for part in ([raw] if isinstance(raw, str) else raw) for n in part.split(",")]
        names = [n for n in names if n]
        keep = [n for n in names if n in valid]
        bad.extend(("layers", n) for n in dict.fromkeys(names) if n not in valid)
        if keep:
            good["layers"] = list(dict.fromkeys(keep))
    return good, bad


def to_query(choices: Mapping[str, object]) -> dict[str, str]:
    """Choices -> query parameters (strings), in a stable order; ``sample`` only when set."""
    out: dict[str, str] = {}
    for key in KEYS:
        value = choices.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, bool):
            value = int(value)  # present=1
        out[key] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return out
