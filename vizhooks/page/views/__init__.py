"""The page's views, one module each, and the registry built from them: everything that lists views
(the menu, the link's parser, present mode, the class, app.py) reads :data:`REGISTRY` here.

Each module in this package describes itself beside its ``show``::

    VIEW = View("maps", group="look", order=10, label="view_maps", show=show)

- ``name``: the view's name in a link (``?view=maps``); never rename one, old links carry it.
- ``group``: its menu group, one of :data:`GROUPS` (labels ``group_<group>`` in the texts).
- ``order``: its place in the group's menu (tens, so a view can go between two).
- ``label``: the text key of its menu label.
- ``keys``: its own settings kept in the link while it is shown (session keys = parameter names;
  their values are checked in vizhooks.page.urlstate.parse_query).
- ``own_area``: True for a view with a main area of its own (no picture analysed first); its
  ``show`` is given the session's model name instead of a Context.

Adding a view is one module and its texts: write ``vizhooks/page/views/<name>.py`` with
``show(ctx: Context) -> None`` and its ``VIEW = View(...)`` line, and add its label (and any other
sentence it shows) to the text catalogue, vizhooks/locale/<lang>/LC_MESSAGES/vizhooks.po, in every
language (tests/test_catalogue.py says what is missing). The registry finds the module by itself;
the menu, ``?view=<name>`` links, present mode and the class follow. A view module never imports
vizhooks.page.state (only its types, under TYPE_CHECKING) nor vizhooks.page.urlstate: the link's
parser reads this registry, so that would be an import cycle.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The menu's groups, in menu order: what a newcomer does with a picture.
GROUPS = ("look", "explain", "change", "learn", "hood")


@dataclass(frozen=True)
class View:
    """One view of the page, as its module declares it (see the module's docstring)."""

    name: str
    group: str
    order: int
    label: str
    show: Callable[[Any], None]
    keys: tuple[str, ...] = ()
    own_area: bool = False

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"View {self.name!r} has group={self.group!r}; use one of {', '.join(GROUPS)}.")


def _collect() -> tuple[View, ...]:
    """Every ``VIEW`` of this package's modules, in menu order (group, then order)."""
    views: dict[str, View] = {}
    for info in pkgutil.iter_modules(__path__):
        view = getattr(importlib.import_module(f"{__name__}.{info.name}"), "VIEW", None)
        if not isinstance(view, View):
            continue
        if view.name in views:
            raise ValueError(f"Two views are named {view.name!r}; give the new one another name.")
        views[view.name] = view
    return tuple(sorted(views.values(), key=lambda v: (GROUPS.index(v.group), v.order, v.name)))


#: Every view, in menu order.
REGISTRY: tuple[View, ...] = _collect()
#: A view by its name in the link.
BY_NAME: dict[str, View] = {view.name: view for view in REGISTRY}


def in_group(group: str) -> tuple[str, ...]:
    """The names of the views of ``group``, in menu order."""
    return tuple(view.name for view in REGISTRY if view.group == group)


def group_of(name: str) -> str:
    """The menu group of the view ``name``."""
    return BY_NAME[name].group
