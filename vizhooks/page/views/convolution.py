"""What one convolution computes: one output value of one conv taken apart (window, kernel,
products, sums, bias) with this photo's real numbers, and what BatchNorm and the activation make
of it next (vizhooks.network.convolution); a pooling layer's value the same way (its window, the max or
the mean); and for the first conv and pooling, the window sliding over the input as an animation,
built when asked (vizhooks.network.sliding)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from vizhooks.network.sliding import PoolInfo
from vizhooks.page.results import (
    conv_infos,
    conv_products_png,
    conv_window_png,
    get_conv_step,
    get_pool_step,
    get_slide,
    pool_infos,
    pool_window_png,
)
from vizhooks.page.texts import language, nt, t
from vizhooks.page.views import View
from vizhooks.page.widgets import keep_below, keep_valid, layer_label

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context

#: How many input channels the products table may show; the rest are summed in one sentence.
TOP_CHOICES = (1, 2, 3, 4, 6, 8)
TOP_DEFAULT = 4
#: What the view takes apart: a convolution, or a pooling layer (when the model has one).
PARTS = ("conv", "pool")


def _place(slot: Any, key: str, count: int, label: str) -> int:
    """A slider over ``0 .. count - 1``, or a sentence when the map has one place on that side
    (a slider needs two)."""
    keep_below(key, count, count // 2)
    if count < 2:
        slot.caption(nt("cv_one_place", count, what=label))
        return 0
    return int(slot.slider(label, 0, count - 1, key=key))


def show(ctx: Context) -> None:
    c, analysis = ctx.choices, ctx.analysis
    st.markdown(t("cv_intro"))
    hw = (int(analysis.x.shape[-2]), int(analysis.x.shape[-1]))
    pools = {info.name: info for info in pool_infos(c.model, hw)}
    if pools:
        keep_valid("cv_part", PARTS, "conv")
        if st.radio(t("cv_part"), PARTS, key="cv_part", horizontal=True,
                    format_func=lambda part: t(f"cv_part_{part}")) == "pool":
            _show_pool(ctx, pools)
            return
    infos = {info.name: info for info in conv_infos(c.model, hw)}
    if not infos:
        st.info(t("cv_no_conv"))
        return
    names = list(infos)
    keep_valid("cv_layer", names, next((n for n in c.layers if n in infos), names[0]))
    labels = {name: layer_label(info) for name, info in infos.items()}
    left, right = st.columns([3, 1])
    layer = left.selectbox(t("cv_layer"), names, key="cv_layer", format_func=labels.__getitem__)
    info = infos[layer]
    count = int(info.out_channels or 1)
    keep_below("cv_channel", count)
    channel = int(right.number_input(t("cv_channel"), min_value=0, max_value=count - 1, step=1, key="cv_channel"))
    h, w = info.out_hw or (1, 1)
    top, bottom = st.columns(2)
    row = _place(top, "cv_row", h, t("cv_row"))
    col = _place(bottom, "cv_col", w, t("cv_col"))
    with st.spinner(t("cv_running", model=c.model, layer=layer)):
        step = get_conv_step(c.model, (ctx.digest, c.size), layer, channel, row, col, analysis)
    key = ("conv", c.model, ctx.digest, c.size, layer, channel, row, col)
    _show_settings(step)
    titles = (nt("cv_title_input", len(step.in_channels)), t("cv_title_close"),
              t("cv_title_output", channel=channel, row=row, col=col))
    sw = step.stride[1]
    st.image(conv_window_png(step, key, titles, c.cmap), caption=nt("cv_window_caption", sw, sw=sw), width="stretch")
    _show_products(step, key)
    _show_next(step)
    if step.groups == 1 and len(step.in_channels) == 3:  # the first conv: it slides over the photo itself
        _show_slide(ctx, layer, channel, "cv_slide_conv")


def _show_settings(step: Any) -> None:
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = step.kernel_size, step.stride, step.padding, step.dilation
    cin = step.groups * len(step.in_channels)
    st.markdown(t("cv_settings", layer=step.layer, kh=kh, kw=kw, sh=sh, sw=sw, ph=ph, pw=pw, dh=dh, dw=dw, cin=cin,
                  h_in=step.input_hw[0], w_in=step.input_hw[1], h=step.output_hw[0], w=step.output_hw[1],
                  row=step.row, col=step.col, r0=step.rows[0], r1=step.rows[-1], c0=step.cols[0], c1=step.cols[-1]))
    if (dh, dw) != (1, 1):
        st.markdown(t("cv_dilated", dh=dh, dw=dw))
    if step.groups > 1 and len(step.in_channels) == 1:
        st.markdown(t("cv_depthwise", groups=step.groups, channel=step.channel, first=step.in_channels[0]))
    elif step.groups > 1:
        st.markdown(t("cv_grouped", groups=step.groups, channel=step.channel, group=step.group,
                      first=step.in_channels[0], last=step.in_channels[-1], n=len(step.in_channels), cin=cin))
    padded = int(step.padded.sum())
    if padded:
        st.caption(t("cv_padding_here", n=padded, taps=kh * kw))


def _show_products(step: Any, key: tuple) -> None:
    channels = len(step.in_channels)
    choices = [n for n in TOP_CHOICES if n < channels] + [min(channels, TOP_CHOICES[-1])]
    choices = list(dict.fromkeys(choices))
    keep_valid("cv_top", choices, min(TOP_DEFAULT, channels) if min(TOP_DEFAULT, channels) in choices else choices[0])
    k = int(st.select_slider(t("cv_top"), choices, key="cv_top", help=t("cv_top_help"))) if len(choices) > 1 \
        else choices[0]
    shown = tuple(step.strongest(k))
    sums = [float(step.sums[i]) for i in shown]
    labels = tuple(t("cv_in_channel", n=step.in_channels[i]) for i in shown)
    heads = (t("cv_head_window"), t("cv_head_weights"), t("cv_head_products"), t("cv_head_sum"))
    st.image(conv_products_png(step, (*key, language()), shown, labels, tuple(f"{s:+.4f}" for s in sums), heads),
             width="stretch")
    all_sums = step.total - step.bias
    if channels > k:
        st.caption(nt("cv_rest", channels - k, s=all_sums - sum(sums)))
    own = float(step.output[step.row, step.col])
    st.markdown(t("cv_equation", n=channels, sums=all_sums, bias=step.bias, total=step.total, own=own))
    if not step.has_bias:
        st.caption(t("cv_no_bias"))
    st.metric(t("cv_total", row=step.row, col=step.col), f"{step.total:.4f}")


def _show_next(step: Any) -> None:
    st.subheader(t("cv_next_header"))
    if not step.follow:
        st.info(t("cv_no_next"))
        return
    for f in step.follow:
        if f.scale is not None:
            st.markdown(t("cv_bn", layer=f.layer, scale=f.scale, before=f.before, shift=f.shift, after=f.after))
        else:
            st.markdown(t("cv_act", layer=f.layer, kind=f.kind, before=f.before, after=f.after))
    st.metric(t("cv_value", layer=step.follow[-1].layer), f"{step.value:.4f}")


def _pool_label(info: PoolInfo) -> str:
    (kh, kw), (sh, sw) = info.window.kernel_size, info.window.stride
    return f"{info.name} · {info.type} {kh}×{kw}, stride {sh if sh == sw else (sh, sw)}"


def _show_pool(ctx: Context, pools: dict[str, PoolInfo]) -> None:
    """A pooling layer's value: the window on the pooled channel, its values, the max or the mean
    beside the layer's own output, then the animation."""
    c = ctx.choices
    names = list(pools)
    keep_valid("cv_pool", names, names[0])
    left, right = st.columns([3, 1])
    layer = left.selectbox(t("cv_pool"), names, key="cv_pool", format_func=lambda n: _pool_label(pools[n]))
    info = pools[layer]
    keep_below("cv_channel", info.channels)
    channel = int(right.number_input(t("cv_channel"), min_value=0, max_value=info.channels - 1, step=1,
                                     key="cv_channel"))
    h, w = info.output_hw
    top, bottom = st.columns(2)
    row = _place(top, "cv_row", h, t("cv_row"))
    col = _place(bottom, "cv_col", w, t("cv_col"))
    with st.spinner(t("cv_running", model=c.model, layer=layer)):
        step = get_pool_step(c.model, (ctx.digest, c.size), layer, channel, row, col, ctx.analysis)
    (kh, kw), (sh, sw), (ph, pw) = step.window.kernel_size, step.window.stride, step.window.padding
    st.markdown(t("cv_pool_settings", layer=layer, type=info.type, kh=kh, kw=kw, sh=sh, sw=sw, ph=ph, pw=pw,
                  c=info.channels, h_in=info.input_hw[0], w_in=info.input_hw[1], h=h, w=w, row=row, col=col,
                  r0=step.rows[0], r1=step.rows[-1], c0=step.cols[0], c1=step.cols[-1]))
    key = ("pool", c.model, ctx.digest, c.size, layer, channel, row, col)
    titles = (t("cv_title_pool_input", channel=channel), t("cv_title_close"),
              t("cv_title_output", channel=channel, row=row, col=col))
    st.image(pool_window_png(step, key, titles, c.cmap), caption=nt("cv_window_caption", sw, sw=sw), width="stretch")
    padded = step.padded.numpy()
    cells = [[None if padded[u, v] else round(float(step.values[u, v]), 4) for v in range(len(step.cols))]
             for u in range(len(step.rows))]
    st.dataframe(cells, hide_index=False, key="cv_pool_window")
    inside = int((~step.padded).sum())
    if step.kind == "max":
        u, v = step.strongest
        st.markdown(t("cv_pool_max", n=inside, value=step.computed, r=step.rows[u], c=step.cols[v], own=step.own))
    else:
        st.markdown(t("cv_pool_mean", total=float(step.values.sum()), divisor=step.divisor, value=step.computed,
                      own=step.own))
    if int(step.padded.sum()):
        padding = dict(n=int(step.padded.sum()), taps=kh * kw)
        st.caption(t("cv_pool_padding_max", **padding) if step.kind == "max" else t("cv_pool_padding_avg", **padding))
    st.metric(t("cv_pool_total", row=row, col=col), f"{step.own:.4f}")
    _show_slide(ctx, layer, channel, "cv_slide_pool")


def _show_slide(ctx: Context, layer: str, channel: int, intro: str) -> None:
    """The window sliding over the whole input and the output map filling in: built only when the
    button is pressed (a pass up to the layer, ~120 frames drawn and encoded twice), then kept."""
    c = ctx.choices
    st.subheader(t("cv_slide_header"))
    st.markdown(t(intro, layer=layer, channel=channel))
    key = ("slide", c.model, ctx.digest, c.size, layer, channel, c.cmap)
    if st.button(t("cv_slide_build"), key="cv_slide_build"):
        st.session_state["_cv_slide"] = key
    if st.session_state.get("_cv_slide") != key:
        return  # nothing slow before it is asked for
    with st.spinner(t("cv_slide_running", layer=layer)):
        files = get_slide(c.model, (ctx.digest, c.size), layer, channel, c.cmap, ctx.analysis)
    st.image(files.gif, caption=t("cv_slide_caption", frames=files.frames, places=files.places), width="stretch")
    name = f"{c.model}-{layer}-{channel}-sliding"
    left, right = st.columns(2)
    left.download_button(t("cv_slide_gif"), files.gif, file_name=f"{name}.gif", mime="image/gif",
                         key="cv_slide_gif", on_click="ignore")
    if files.mp4:
        right.download_button(t("cv_slide_mp4"), files.mp4, file_name=f"{name}.mp4", mime="video/mp4",
                              key="cv_slide_mp4", on_click="ignore")
    else:
        right.caption(t("cv_slide_no_mp4"))


VIEW = View("convolution", group="look", order=40, label="view_convolution", show=show,
            keys=("cv_layer", "cv_channel", "cv_row", "cv_col"))
