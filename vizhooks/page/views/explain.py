"""Which map to trust: explanation methods side by side for the chosen class (vizhooks.explain),
drawn as the Grad-CAM view draws its maps; each map scored by deletion, insertion, Average Drop and
Increase in Confidence beside a random and a centred Gaussian map (vizhooks.faithfulness), and the
cascading-randomisation sanity check (vizhooks.interpret.sanity). Nothing slow runs before its button; every
result is kept in the shared cache, so a rerun or another session shows it at once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from vizhooks.interpret.faithfulness import Faithfulness
from vizhooks.interpret.methods import CAM_METHODS, IG_BASELINES, METHODS
from vizhooks.interpret.sanity import FLAG_AT
from vizhooks.page.results import (
    INFIDELITY_DRAWS,
    cam_layers,
    curves_png,
    explain_key,
    explain_layer_options,
    explain_references,
    get_explanations,
    get_faithfulness,
    get_infidelity,
    get_sanity,
    strips_png,
)
from vizhooks.page.texts import language, t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, keep_valid, labels_for, progress_bar, select_all, shown_labels
from vizhooks.render.figures import channel_overlay, image_to_png

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context

#: Shown when the view opens: quick methods of both families (Score-CAM and Occlusion run hundreds
#: of passes; they are one click away).
DEFAULT_METHODS = ("gradcam", "gradcampp", "saliency", "ig")
#: The sanity check's classic pair: Grad-CAM changes with the model, Guided Backprop barely does.
SANITY_DEFAULT = ("gradcam", "guidedbackprop")
BATCH_CHOICES = (8, 16, 32, 64)
#: Integrated Gradients' steps: 32 fill one batch of 32 (the library's 50 take two).
IG_STEPS = 32
SCORE_STEPS, SCORE_BASELINES = 20, ("blur", "zeros")
REFERENCES = ("random", "gaussian")
#: Methods whose map is signed (an attribution summed over the colours).
SIGNED = ("ig", "occlusion", "guidedbackprop", "guidedgradcam", "lrp")
COLUMNS = 3


def show(ctx: Context) -> None:
    c, bundle, analysis = ctx.choices, ctx.bundle, ctx.analysis
    st.markdown(t("ex_intro"))
    target = class_picker(bundle, analysis)
    label = shown_labels(bundle)[target]
    methods, layers, settings = _choices(c.model)
    names = {m: t(f"ex_method_{m}") for m in METHODS} | {r: t(f"ex_ref_{r}") for r in REFERENCES}
    key = (ctx.digest, c.size)
    if not methods:
        st.info(t("ex_no_methods"))
    else:
        if not st.session_state.get("_ex_on") and st.button(t("ex_compute"), key="ex_compute", type="primary",
                                                           icon=":material/play_arrow:"):
            st.session_state["_ex_on"] = True
        if st.session_state.get("_ex_on"):  # once asked, the maps follow the choices
            with progress_bar() as bar:
                maps = get_explanations(c.model, key, target, methods, layers, settings, analysis, bar, names)
            _show_maps(ctx, maps, label, target, names)
            st.divider()
            _show_scores(ctx, target, label, maps, layers, settings, names)
        else:
            st.caption(t("ex_compute_hint"))
    st.divider()
    _show_sanity(ctx, target, layers, settings, names, methods)


def _choices(model: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """Methods, CAM layers and the settings of explain() (name, value), from the view's widgets."""
    st.session_state.setdefault("ex_methods", list(DEFAULT_METHODS))
    st.session_state["ex_methods"] = [m for m in st.session_state["ex_methods"] if m in METHODS]
    methods = st.multiselect(t("ex_methods"), METHODS, key="ex_methods", select_all=select_all(),
                             format_func=labels_for("ex_method_"), help=t("ex_methods_help"))
    options = explain_layer_options(model)
    default = list(cam_layers(model))
    chosen = st.session_state.get("ex_layers")
    if not isinstance(chosen, list) or not set(chosen) <= set(options):  # another model's layers, say
        st.session_state["ex_layers"] = [n for n in default if n in options]
    layers = st.multiselect(t("ex_layers"), options, key="ex_layers", select_all=select_all(), help=t("ex_layers_help",
                                                                            default=", ".join(default)))
    with st.expander(t("ex_settings")):
        left, middle, right = st.columns(3)
        st.session_state.setdefault("ex_batch", 32)
        batch = left.select_slider(t("ex_batch"), BATCH_CHOICES, key="ex_batch", help=t("ex_batch_help"))
        st.session_state.setdefault("ex_ig_steps", IG_STEPS)
        steps = middle.number_input(t("ex_ig_steps"), min_value=2, max_value=300, step=1, key="ex_ig_steps")
        keep_valid("ex_ig_baseline", IG_BASELINES, "black")
        baseline = right.radio(t("ex_ig_baseline"), IG_BASELINES, key="ex_ig_baseline",
                               format_func=labels_for("ex_ig_baseline_"))
    settings = (("batch_size", int(batch)), ("ig_steps", int(steps)), ("ig_baseline", str(baseline)))
    return tuple(methods), tuple(layers), settings


def _show_maps(ctx: Context, maps: dict, label: str, target: int, names: dict[str, str]) -> None:
    st.markdown(t("ex_class", label=label, index=target))
    st.session_state.setdefault("ex_alpha", 0.5)
    alpha = st.slider(t("ex_alpha"), 0.0, 1.0, step=0.05, key="ex_alpha")
    items = list(maps.items())
    for start in range(0, len(items), COLUMNS):
        for column, (method, m) in zip(st.columns(COLUMNS), items[start:start + COLUMNS], strict=False):
            overlay = channel_overlay(ctx.analysis.picture, m, alpha, "jet")
            column.image(overlay, caption=t("ex_caption", method=names[method], label=label), width="stretch")
            if method in SIGNED:
                column.caption(t("ex_signed"))
            column.download_button(t("ex_download"), data=image_to_png(overlay), file_name=f"{method}.png",
                                   mime="image/png", key=f"ex_download_{method}", on_click="ignore",
                                   icon=":material/download:")


def _scored_maps(ctx: Context, target: int, maps: dict, layers: tuple[str, ...],
                 settings: tuple[tuple[str, Any], ...]) -> dict[str, tuple[tuple, Any]]:
    """Every map to score with what decides it: the methods', then the two references'."""
    c = ctx.choices
    key = (ctx.digest, c.size)
    scored = {m: (explain_key(c.model, key, target, m, layers, settings), v) for m, v in maps.items()}
    hw = tuple(int(s) for s in ctx.analysis.x.shape[-2:])
    for name, m in explain_references((hw[0], hw[1])).items():
        scored[name] = (("reference", name, hw), m)
    return scored


def _show_scores(ctx: Context, target: int, label: str, maps: dict, layers: tuple[str, ...],
                 settings: tuple[tuple[str, Any], ...], names: dict[str, str]) -> None:
    c = ctx.choices
    st.subheader(t("ex_scores_header"))
    left, right = st.columns(2)
    st.session_state.setdefault("ex_steps", SCORE_STEPS)
    steps = int(left.number_input(t("ex_steps"), min_value=2, max_value=100, step=1, key="ex_steps"))
    keep_valid("ex_baseline", SCORE_BASELINES, "blur")
    baseline = str(right.radio(t("ex_baseline"), SCORE_BASELINES, key="ex_baseline", horizontal=True,
                               format_func=labels_for("ex_baseline_")))
    st.markdown(t("ex_scores_intro", steps=steps))
    scored = _scored_maps(ctx, target, maps, layers, settings)
    asked = (c.model, ctx.digest, c.size, target, tuple(scored), layers, settings, steps, baseline)
    if st.button(t("ex_score"), key="ex_score", icon=":material/analytics:"):
        st.session_state["_ex_scores"] = asked
    if st.session_state.get("_ex_scores") != asked:
        return  # nothing slow before it is asked for
    with progress_bar() as bar:
        scores = get_faithfulness(c.model, (ctx.digest, c.size), target, scored, steps, baseline, ctx.analysis, bar,
                                  names)
    curves = tuple((names[n], f.deletion_curve.tolist(), f.insertion_curve.tolist(), n in REFERENCES)
                   for n, f in scores.items())
    titles = (t("ex_curve_deletion"), t("ex_curve_insertion"))
    xlabels = (t("ex_curve_x_deletion"), t("ex_curve_x_insertion"))
    st.image(curves_png(curves, (*asked, language()), titles, xlabels, t("ex_curve_y", label=label)),
             caption=t("ex_curves_caption"), width="stretch")
    infidelity = None
    if st.button(t("ex_infidelity"), key="ex_infidelity", icon=":material/blur_on:"):
        st.session_state["_ex_infidelity"] = asked
    if st.session_state.get("_ex_infidelity") == asked:
        with progress_bar() as bar:
            infidelity = get_infidelity(c.model, (ctx.digest, c.size), target, scored, ctx.analysis, bar, names)
    rows = _score_rows(scores, names, infidelity)
    st.dataframe(rows, hide_index=True, key="ex_scores_table", column_config=_formats(rows[0]))
    st.caption(t("ex_table_caption"))
    st.caption(t("ex_verdict_caption"))
    if infidelity is not None:
        st.caption(t("ex_infidelity_caption", n=INFIDELITY_DRAWS))


def _formats(row: dict[str, Any]) -> dict[str, Any]:
    """Numbers shown to a few digits (areas and correlations to 4 decimals, percentages to 1, infidelity
    to 4 significant digits); the table keeps them whole, so a download or a test reads them exactly."""
    digits = {t("ex_col_drop"): "%.1f", t("ex_col_increase"): "%.0f", t("ex_col_infidelity"): "%.4g"}
    columns: dict[str, Any] = {k: st.column_config.NumberColumn(format=digits.get(k, "%.4f")) for k, v in row.items()
                               if isinstance(v, float)}
    columns[t("ex_col_verdict")] = st.column_config.TextColumn(width="large")
    return columns


def beaten_by(scores: dict[str, Faithfulness], method: str) -> list[tuple[str, str]]:
    """Where a reference map does at least as well as ``method``: ``(reference, "deletion" | "insertion")``
    pairs. A map earns its place only by beating both references on both curves (a lower deletion area,
    a higher insertion area)."""
    f = scores[method]
    lost = []
    for ref in REFERENCES:
        if ref not in scores:
            continue
        if f.deletion_auc >= scores[ref].deletion_auc:
            lost.append((ref, "deletion"))
        if f.insertion_auc <= scores[ref].insertion_auc:
            lost.append((ref, "insertion"))
    return lost


def _verdict(scores: dict[str, Faithfulness], method: str, names: dict[str, str]) -> str:
    if method in REFERENCES:
        return t("ex_verdict_reference")
    lost = beaten_by(scores, method)
    if not lost:
        return t("ex_verdict_yes")
    return t("ex_verdict_no", where="; ".join(t(f"ex_verdict_{curve}", ref=names[ref]) for ref, curve in lost))


def _score_rows(scores: dict[str, Faithfulness], names: dict[str, str],
                infidelity: dict[str, float] | None) -> list[dict[str, Any]]:
    rows = []
    for name, f in scores.items():
        # the verdict next to the method: at 1024 pixels the last column of a wide table was cut off
        row = {t("ex_col_method"): names[name], t("ex_col_verdict"): _verdict(scores, name, names),
               t("ex_col_deletion"): f.deletion_auc, t("ex_col_insertion"): f.insertion_auc,
               t("ex_col_drop"): f.avg_drop, t("ex_col_increase"): f.increase}
        if infidelity is not None:
            row[t("ex_col_infidelity")] = infidelity[name]
        rows.append(row)
    return rows


def _show_sanity(ctx: Context, target: int, layers: tuple[str, ...], settings: tuple[tuple[str, Any], ...],
                 names: dict[str, str], chosen: tuple[str, ...] = ()) -> None:
    c = ctx.choices
    st.subheader(t("ex_sanity_header"))
    st.markdown(t("ex_sanity_intro"))
    st.session_state.setdefault("ex_sanity_methods", list(chosen or SANITY_DEFAULT))  # the methods chosen above
    st.session_state["ex_sanity_methods"] = [m for m in st.session_state["ex_sanity_methods"] if m in METHODS]
    methods = tuple(st.multiselect(t("ex_sanity_methods"), METHODS, key="ex_sanity_methods", select_all=select_all(),
                                   format_func=labels_for("ex_method_")))
    if not methods:
        st.info(t("ex_no_methods"))
        return
    cam_layers_used = layers if any(m in CAM_METHODS or m == "guidedgradcam" for m in methods) else ()
    asked = (c.model, ctx.digest, c.size, target, methods, cam_layers_used, settings)
    if st.button(t("ex_sanity_run"), key="ex_sanity_run", icon=":material/science:"):
        st.session_state["_ex_sanity"] = asked
    if st.session_state.get("_ex_sanity") != asked:
        return
    with progress_bar() as bar:
        result = get_sanity(c.model, (ctx.digest, c.size), target, methods, cam_layers_used, settings, ctx.analysis,
                            bar)
    columns = (t("ex_sanity_original"), *result.stages)
    rows = tuple((names[m], tuple(result.maps[m])) for m in result.methods)
    st.image(strips_png(rows, (*asked, language()), columns, "jet"), caption=t("ex_sanity_caption"),
             width="stretch")
    for m in result.methods:
        r = result.correlations[m][-1] if result.correlations[m] else 1.0
        if m in result.flagged:
            st.warning(t("ex_sanity_flag", method=names[m], r=r), icon=":material/warning:")
        else:
            st.success(t("ex_sanity_passed", method=names[m], r=r))
    table = []
    undefined = False
    for i, stage in enumerate(result.stages):
        row: dict[str, Any] = {t("ex_col_step"): i + 1, t("ex_col_stage"): stage}
        for m in result.methods:
            # a constant map has no order: its rank correlation is undefined, not 0 (the library's 0.0
            # keeps the flag rule simple; a reader must not take it for "no likeness")
            flat = _constant(result.maps[m][0]) or _constant(result.maps[m][i + 1])
            undefined |= flat
            row[t("ex_col_spearman", method=names[m])] = None if flat else float(result.correlations[m][i])
            row[t("ex_col_ssim", method=names[m])] = float(result.ssim[m][i])
        table.append(row)
    numbers = {k: st.column_config.NumberColumn(format="%.4f") for k in table[0] if k != t("ex_col_stage")
               and k != t("ex_col_step")}
    st.dataframe(table, hide_index=True, key="ex_sanity_table", column_config=numbers)
    st.caption(t("ex_sanity_table_caption", flag=FLAG_AT))
    if undefined:
        st.caption(t("ex_sanity_undefined"))


def _constant(m: Any) -> bool:
    return bool(float(m.max()) == float(m.min()))


VIEW = View("explain", group="explain", order=20, label="view_explain", show=show,
            keys=("ex_methods", "ex_layers"))
