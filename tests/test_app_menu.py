"""The view registry and the grouped menu (issue 33): every ``?view=`` link from before the menu had
groups opens its view in the right group; a group opens its first view, then the one last shown in
it; the registry is the views' own modules, in the menu's order, and no view module can reach the
link's parser (which reads the registry) through its imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.helpers import choose_view, ok, open_page, shown_view
from vizhooks.page.texts import EN, ZH
from vizhooks.page.views import GROUPS, REGISTRY, View

#: Every view a link could name before this change, and the group the issue puts it in: written
#: here, not read from the registry, so a renamed or moved view fails.
OLD_LINKS = {
    "maps": "look", "overview": "look", "inspector": "look", "convolution": "look", "atlas": "look",
    "gradcam": "explain", "explain": "explain", "concepts": "explain",
    "intervene": "change", "compare": "change",
    "lesson": "learn", "teach": "learn", "code": "learn",
    "gradients": "hood", "backward": "hood", "table": "hood",
}
#: Views added since, and their groups.
NEW_VIEWS = {"audit": "explain", "concepts": "explain"}
MENU = {"look": ["maps", "overview", "inspector", "convolution", "atlas"],
        "explain": ["gradcam", "explain", "audit", "concepts"],
        "change": ["intervene", "compare"], "learn": ["lesson", "teach", "code"],
        "hood": ["gradients", "backward", "table"]}
VIEWS_DIR = Path(__file__).resolve().parents[1] / "vizhooks" / "page" / "views"


@pytest.mark.parametrize("view", list(OLD_LINKS))
def test_every_old_link_opens_its_view_in_its_group(view):
    at = open_page(view=view, size="128", layers="conv1")
    ok(at)
    assert not at.session_state["_url_notices"], at.session_state["_url_notices"]
    assert shown_view(at) == view and at.session_state["view"] == view
    assert at.segmented_control(key="view_group").value == OLD_LINKS[view]
    assert at.pills(key="view").options == [EN[f"view_{name}"] for name in MENU[OLD_LINKS[view]]]
    assert at.query_params["view"] in (view, [view])  # the address bar keeps the link's view


def test_a_group_opens_its_first_view_then_the_last_one_shown_in_it():
    at = open_page(size="128", layers="conv1")
    assert shown_view(at) == "maps"
    at.segmented_control(key="view_group").set_value("hood").run()
    ok(at)
    assert shown_view(at) == "gradients" and at.query_params["view"] in ("gradients", ["gradients"])
    at.pills(key="view").set_value("table").run()
    at.segmented_control(key="view_group").set_value("look").run()
    assert shown_view(at) == "maps"  # Look's last view was its first
    at.segmented_control(key="view_group").set_value("hood").run()
    ok(at)
    assert shown_view(at) == "table" and at.query_params["view"] in ("table", ["table"])
    choose_view(at, "lesson")  # the Start-the-lesson button's view moves the group too
    assert at.segmented_control(key="view_group").value == "learn"


def test_the_menu_speaks_the_pages_language():
    at = open_page(size="128", layers="conv1", lang="zh", view="explain")
    ok(at)
    assert at.segmented_control(key="view_group").options == [ZH[f"group_{g}"] for g in MENU]
    assert at.pills(key="view").options == [ZH["view_gradcam"], ZH["view_explain"], ZH["view_audit"],
                                                ZH["view_concepts"]]
    at.segmented_control(key="lang").set_value("en").run()
    ok(at)
    assert at.segmented_control(key="view_group").options == [EN[f"group_{g}"] for g in MENU]
    assert shown_view(at) == "explain" and at.segmented_control(key="view_group").value == "explain"


def test_the_registry_is_every_view_module_in_menu_order():
    modules = sorted(p.stem for p in VIEWS_DIR.glob("*.py") if p.stem != "__init__")
    assert sorted(v.name for v in REGISTRY) == modules == sorted(OLD_LINKS | NEW_VIEWS)
    assert [v.name for v in REGISTRY] == [name for group in MENU for name in MENU[group]]
    assert list(GROUPS) == list(MENU)
    for view in REGISTRY:
        assert view.label in EN and view.label in ZH, view.name
    for group in GROUPS:
        assert EN[f"group_{group}"] and ZH[f"group_{group}"] and EN[f"group_{group}"] != ZH[f"group_{group}"]
    assert [v.name for v in REGISTRY if v.own_area] == ["audit", "teach"]
    with pytest.raises(ValueError, match="use one of look, explain"):
        View("new", group="other", order=1, label="view_new", show=print)


def test_no_view_module_reaches_the_link_parser():
    """The registry imports every view module when it is first imported, and the link's parser
    (urlstate) imports the registry: a view importing urlstate or state (which imports urlstate) at
    run time would be an import cycle that the static check of test_architecture cannot see, as the
    registry finds its modules by name."""
    graph = grimp.build_graph("vizhooks", exclude_type_checking_imports=True)
    for view in REGISTRY:
        module = f"vizhooks.page.views.{view.name}"
        for target in ("vizhooks.page.urlstate", "vizhooks.page.state"):
            assert not graph.chain_exists(importer=module, imported=target), (module, target,
                                                                             graph.find_shortest_chain(module, target))


FIRSTS = ["vizhooks.page.urlstate", "vizhooks.page.views.maps", "vizhooks.page.views", "vizhooks.page.state",
          "vizhooks.page.sources", "vizhooks.page.menu"]
#: One interpreter imports the libraries the page stands on (none of vizhooks), then forks a child per module:
#: each child's first import of vizhooks is that module, as in a fresh interpreter, without six more
#: interpreter starts and torch imports (4.5 s each). A child prints the number of views or its traceback.
FORKS = """
import os, sys, traceback
import matplotlib, streamlit, torch, torchvision  # what every page module needs; no vizhooks module
assert not any(m == "vizhooks" or m.startswith("vizhooks.") for m in sys.modules)
for first in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            __import__(first)
            from vizhooks.page.urlstate import VIEWS
            print(first, "views", len(VIEWS), flush=True)
        except BaseException:
            print(first, "failed", repr(traceback.format_exc()), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
"""


@pytest.fixture(scope="module")
def imported_first() -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", FORKS, *FIRSTS], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in done.stdout.splitlines()}


@pytest.mark.parametrize("first", FIRSTS)
def test_any_page_module_can_be_imported_first(first, imported_first):
    assert imported_first.get(first) == f"views {len(OLD_LINKS | NEW_VIEWS)}", imported_first.get(first)
