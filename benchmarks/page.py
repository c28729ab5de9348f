"""Benchmark 3: page latency with Streamlit's AppTest (the real app.py, in this process).

Four kinds of rerun on the default view (maps, resnet18, chelsea.jpg, the five tour layers,
16 channels), after clearing ``st.cache_data`` and ``st.cache_resource``:

* display-only, grids redrawn: ``st.cache_data`` (the page's PNG cache) is cleared, then the
  colormap alternates between magma and viridis, so every grid is drawn again.
* display-only, PNGs cached: the colormap alternates between two colormaps the page has drawn
  before; this is what toggling back and forth costs.
* model-running, grids redrawn: the layer list changes and ``st.cache_data`` is cleared, so the
  network runs once and every grid is drawn again.
* model-running, 4 of 5 grids cached: the layer list changes (the tour with one layer swapped),
  so the network runs once and one new grid is drawn.

The page keeps activations per layer list (as long as its cache has room), so alternating
between two fixed lists would run the model only the first two times. Each layer change
therefore picks a list the page has not seen yet: the tour with its last one or two layers
swapped for other Conv2d layers, always five grids. A global PyTorch forward hook counts
whole-network passes (on real devices, not the page's meta-device size estimate) to prove that
every model-running rerun ran the network exactly once and no display-only rerun ran it.
The targets compare like with like: the two "grids redrawn" kinds.
"""

from __future__ import annotations

import itertools

from .common import APP, TOUR, Config, Result, Row, fmt_s, fmt_samples, median, timed, verdict

RATIO_TARGET = 0.40
ABS_TARGET = 1.0
CMAPS = ("magma", "viridis")


def unseen_layer_lists(all_convs: list[str]):
    """Five-layer lists the page has not shown yet, in network order: the tour with its last
    layer swapped for each other Conv2d, then with its last two swapped, and so on."""
    others = [name for name in all_convs if name not in TOUR]
    for k in range(1, len(TOUR)):
        for extra in itertools.combinations(others, k):
            chosen = set(TOUR[: len(TOUR) - k]) | set(extra)
            yield [name for name in all_convs if name in chosen]


def run(cfg: Config) -> Result:
    import streamlit as st
    from streamlit.testing.v1 import AppTest
    from torch.nn.modules.module import register_module_forward_hook
    from torchvision.models import ResNet

    passes = {"n": 0}

    def count(module, args, output):
        # meta-device passes (the page's memory estimate) compute nothing and are not counted
        if isinstance(module, ResNet) and output.device.type != "meta":
            passes["n"] += 1

    handle = register_module_forward_hook(count)
    try:
        # The caches stay filled afterwards: the profile of a MISS reruns this page.
        return _measure(cfg, st, AppTest, passes)
    finally:
        handle.remove()


def _measure(cfg: Config, st, AppTest, passes: dict) -> Result:
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=300)
    first = timed(at.run)
    _ok(at)
    import vizhooks as vz
    from vizhooks.models.layers import conv_layers

    convs = [layer.name for layer in conv_layers(vz.load_model("resnet18", weights="none", device="cpu").model)]
    lists = unseen_layer_lists(convs)
    state = {"cmap": 0, "bad": [], "layers": TOUR}
    if passes["n"] != 1:
        state["bad"].append(f"first run: {passes['n']} forward passes")

    def set_cmap():
        state["cmap"] ^= 1
        at.selectbox(key="cmap").set_value(CMAPS[state["cmap"]]).run()

    def set_layers():
        state["layers"] = next(lists)
        at.multiselect(key="layers").set_value(state["layers"]).run()

    def measure(kind: str, action, clear_pngs: bool, runs_model: bool) -> float:
        if clear_pngs:
            st.cache_data.clear()
        before = passes["n"]
        seconds = timed(action)
        _ok(at)
        ran = passes["n"] - before
        if ran != (1 if runs_model else 0):
            state["bad"].append(f"{kind}: {ran} forward passes")
        return seconds

    n = max(1, cfg.repeat)
    # redrawn kinds, interleaved so load drift hits both alike (each clears what it needs)
    measure("warm-up", set_cmap, True, False)
    measure("warm-up", set_layers, True, True)
    disp_new, model_new = [], []
    for _ in range(n):
        disp_new.append(measure("display, redrawn", set_cmap, True, False))
        model_new.append(measure("model, redrawn", set_layers, True, True))
    # cached kinds: both colormaps drawn once for the current layers
    set_cmap()
    set_cmap()
    _ok(at)
    disp_seen, model_seen = [], []
    for _ in range(n):
        disp_seen.append(measure("display, cached", set_cmap, False, False))
        model_seen.append(measure("model, 4 of 5 cached", set_layers, False, True))
        set_cmap()  # draw the new layer in the other colormap too, so the next toggle is all hits

    d_new, m_new, d_seen, m_seen = map(median, (disp_new, model_new, disp_seen, model_seen))
    ratio = d_new / m_new
    status_note = "" if not state["bad"] else f" (INVALID: {'; '.join(state['bad'])})"
    rows = [
        Row(bench="page", case="display-only rerun (colormap, grids redrawn) / model-running rerun (layers)",
            measured=f"{fmt_s(d_new)} / {fmt_s(m_new)} = {ratio:.2f}{status_note}",
            target=f"≤ {RATIO_TARGET:.2f}", status="INVALID" if state["bad"] else verdict(ratio, RATIO_TARGET),
            numbers={"display_s": d_new, "model_s": m_new, "ratio": ratio}),
        Row(bench="page", case="display-only rerun (colormap, grids redrawn), absolute",
            measured=fmt_s(d_new), target=f"≤ {ABS_TARGET:.0f} s", status=verdict(d_new, ABS_TARGET),
            numbers={"display_s": d_new}),
        Row(bench="page", case="display-only rerun, PNGs cached / model-running rerun, 4 of 5 grids cached",
            measured=f"{fmt_s(d_seen)} / {fmt_s(m_seen)} = {d_seen / m_seen:.2f}",
            numbers={"display_s": d_seen, "model_s": m_seen, "ratio": d_seen / m_seen}),
        Row(bench="page", case="first run of a fresh page (empty caches: model load, forward, 5 grids)",
            measured=fmt_s(first), numbers={"first_s": first}),
    ]
    details = [
        f"{n} measured rerun(s) of each kind after a warm-up; default view, 5 layers, 16 channels; "
        "each layer change shows a five-layer list not shown before "
        f"(last one: {', '.join(state['layers'])}). "
        f"Forward passes counted by a global hook: {passes['n']} in all"
        + (f"; unexpected: {'; '.join(state['bad'])}." if state["bad"] else ", exactly one per model-running rerun "
           "and none per display-only rerun."),
        "",
        f"- display-only, grids redrawn (s): {fmt_samples(disp_new)}",
        f"- model-running, grids redrawn (s): {fmt_samples(model_new)}",
        f"- display-only, PNGs cached (s): {fmt_samples(disp_seen)}",
        f"- model-running, 4 of 5 grids cached (s): {fmt_samples(model_seen)}",
        "- AppTest runs the script in this process and returns the element tree; no browser, websocket or "
        "image transfer is included.",
    ]

    def profile_display():
        st.cache_data.clear()
        set_cmap()

    return Result(rows=rows, details=details, profilers={rows[0].case: profile_display, rows[1].case: profile_display},
                  profile_thread="ScriptRunner")


def _ok(at) -> None:
    if at.exception:
        raise RuntimeError(f"the page raised: {[e.value for e in at.exception]}")
    if at.error:
        raise RuntimeError(f"the page showed an error: {[e.value for e in at.error]}")
