"""What one convolution computes: one output value of one conv taken apart (window, kernel,
products, sums, bias) with this photo's real numbers, and what BatchNorm and the activation make
of it next (vizhooks.convolution)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from vizhooks.page.results import conv_infos, conv_products_png, conv_window_png, get_conv_step
from vizhooks.page.state import Context
from vizhooks.page.texts import language, t
from vizhooks.page.widgets import keep_below, keep_valid, layer_label

#: How many input channels the products table may show; the rest are summed in one sentence.
TOP_CHOICES = (1, 2, 3, 4, 6, 8)
TOP_DEFAULT = 4


def _place(slot: Any, key: str, count: int, label: str) -> int:
    """A slider over ``0 .. count - 1``, or a sentence when the map has one place on that side
    (a slider needs two)."""
    keep_below(key, count, count // 2)
    if count < 2:
        slot.caption(t("cv_one_place", n=count, what=label))
        return 0
    return int(slot.slider(label, 0, count - 1, key=key))


def show(ctx: Context) -> None:
    c, analysis = ctx.choices, ctx.analysis
    st.markdown(t("cv_intro"))
    hw = (int(analysis.x.shape[-2]), int(analysis.x.shape[-1]))
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
    titles = (t("cv_title_input", n=len(step.in_channels)), t("cv_title_close"),
              t("cv_title_output", channel=channel, row=row, col=col))
    st.image(conv_window_png(step, key, titles, c.cmap), caption=t("cv_window_caption", sw=step.stride[1]),
             width="stretch")
    _show_products(step, key)
    _show_next(step)


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
        st.caption(t("cv_rest", n=channels - k, s=all_sums - sum(sums)))
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
