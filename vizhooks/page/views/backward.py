"""Backward: the order in which backward hooks fire, with the gradient shapes each one sees."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.lesson.display import note, shapes_text, table_facts
from vizhooks.page.results import get_backward_report
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, shown_labels


def show(ctx: Context) -> None:
    analysis, bundle, c, digest = ctx.analysis, ctx.bundle, ctx.choices, ctx.digest
    target = class_picker(bundle, analysis)
    with st.spinner(t("running_backward", label=shown_labels(bundle)[target])):
        records = get_backward_report(c.model, (digest, c.size), target, analysis)
    st.markdown(t("backward_intro", label=shown_labels(bundle)[target]))
    st.dataframe(
        [{t("col_step"): i + 1, t("col_module"): r.name, t("col_type"): r.type,
          t("col_grad_output"): shapes_text(r.grad_output), t("col_grad_input"): shapes_text(r.grad_input),
          t("col_note"): note(r)} for i, r in enumerate(records)],
        hide_index=True, key="backward_table",
    )
    st.markdown(t("backward_reading"))
    for fact in table_facts(records):
        st.markdown(fact)

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


VIEW = View("backward", group="hood", order=20, label="view_backward", show=show)
