"""Table: every module's output shape, parameters and time, with the totals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.lesson.display import header
from vizhooks.page.results import get_summary
from vizhooks.page.texts import t
from vizhooks.page.views import View

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


def show(ctx: Context) -> None:
    c = ctx.choices
    with st.spinner(t("running_table")):
        frame, totals = get_summary(c.model, (ctx.digest, c.size), ctx.analysis)
    left, mid, right = st.columns(3)
    left.metric(t("total_params"), f"{int(totals['params']):,}")
    mid.metric(t("total_outputs"), f"{int(totals['output_elements']):,}")
    right.metric(t("total_time"), f"{totals['time_ms']:.0f} ms")
    st.caption(t("table_intro"))
    # headers in the page's language; the DataFrame keeps the library's names (and the CSV its own)
    numbers = {"time_ms": "%.2f", "params": "localized", "output_elements": "localized", "calls": "localized"}
    st.dataframe(frame, hide_index=True, key="layer_table", column_config={
        column: (st.column_config.NumberColumn(header(column), format=numbers[column]) if column in numbers
                 else st.column_config.Column(header(column)))
        for column in frame.columns
    })


VIEW = View("table", group="hood", order=30, label="view_table", show=show)
