"""The guided lesson (``?view=lesson&step=N``): its steps, in order.

Each step names the text keys it uses (``lesson_<id>_title``, ``_text``, ``_q``, ``_a`` in
vizhooks/page/texts), the live view the page shows for it and the plain-PyTorch code it prints.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    id: str
    #: what the page shows live: one of the page's views, or a lesson-only demonstration
    live: str
    #: how the code is made: ("view", name) for snippets.snippet, ("lesson", body) for lesson_snippet
    code: tuple[str, str]


STEPS: tuple[Step, ...] = (
    Step("what", "hello", ("lesson", "hello")),
    Step("forward", "maps", ("view", "maps")),
    Step("prehook", "prepost", ("lesson", "prepost")),
    Step("shapes", "table", ("view", "table")),
    Step("tensor", "gradients", ("lesson", "grad_none")),
    Step("clamp", "clamp", ("lesson", "clamp")),
    Step("backward", "backward", ("view", "backward")),
    Step("gradcam", "gradcam", ("view", "gradcam")),
    Step("remove", "remove", ("lesson", "remove")),
)


def step_index(value: object) -> int:
    """A 1-based step number from a link or a widget, kept inside 1..len(STEPS)."""
    try:
        n = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 1
    return min(max(n, 1), len(STEPS))
