"""Backward: the order in which backward hooks fire, with the gradient shapes each one sees."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import streamlit as st

import vizhooks as vz
from vizhooks.page.results import get_backward_report
from vizhooks.page.texts import EN, t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, shown_labels


def shapes_text(shapes: Sequence[Sequence[int] | None] | None) -> str:
    if shapes is None:
        return "—"
    return ", ".join("None" if s is None else "×".join(map(str, s)) for s in shapes)


def table_facts(records: Sequence[vz.BackwardRecord]) -> list[str]:
    """Sentences read off the table itself, so the text says what the rows show for any model: the
    deepest and the shallowest map-shaped gradient, and what the first module passes back."""
    hooked = [r for r in records if r.supported and r.grad_output]
    maps = [(r.name, s) for r in hooked for s in r.grad_output[:1]  # type: ignore[index]
            if s is not None and len(s) == 4 and s[2] * s[3] > 1]
    facts = []
    if len(maps) >= 2:
        (deep, ds), (shallow, ss) = maps[0], maps[-1]
        facts.append(t("backward_shapes", deep=deep, shallow=shallow, deep_shape=shapes_text([ds]),
                       shallow_shape=shapes_text([ss]), deep_c=ds[1], shallow_c=ss[1],
                       deep_hw=f"{ds[2]}×{ds[3]}", shallow_hw=f"{ss[2]}×{ss[3]}"))
    first = hooked[-1] if hooked else None
    if first is not None and first.grad_input is not None:
        shape = first.grad_input[0] if first.grad_input else None
        facts.append(t("backward_first_none", first=first.name) if shape is None
                     else t("backward_first", first=first.name, shape=shapes_text([shape])))
    return facts


def note(record: vz.BackwardRecord) -> str:
    """A record's note in the page's language (the library's English note for an unknown code)."""
    key = f"backward_note_{record.note_code}"
    return t(key) if record.note_code and key in EN else record.note


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
