"""The server's warm-up (vizhooks.page.startup) and the per-process caches of a default-page run:
what the warm-up fills is what the page then uses (one model, not two), it analyses no picture,
and nothing shared across sessions can be changed through one session's state."""

from __future__ import annotations

import sys

import streamlit as st

import vizhooks
from tests.helpers import ok, open_page
from vizhooks.models.layers import architecture_layers, quick_picks, token_model
from vizhooks.page import metrics, startup
from vizhooks.page.results import get_bundle
from vizhooks.page.state import picks_for


def analyses_computed() -> float:
    return metrics.COMPUTATIONS.labels("analysis")._value.get()


def test_warm_up_loads_the_model_the_page_then_uses(monkeypatch):
    st.cache_resource.clear()
    loads: list[str] = []
    real = vizhooks.load_model

    def counting(name, *args, **kwargs):
        loads.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(vizhooks, "load_model", counting)
    monkeypatch.delitem(sys.modules, "streamlit.emojis", raising=False)  # as in a fresh server process
    before = analyses_computed()
    startup.warm_up("resnet18")
    assert loads == ["resnet18"]
    assert "streamlit.emojis" in sys.modules  # the first segmented control's 0.35 s, paid here
    warmed = get_bundle("resnet18")
    assert loads == ["resnet18"]  # the page's cache entry, not a copy of its own
    assert analyses_computed() == before  # no picture analysed: that stays the first visitor's computation
    at = open_page()
    ok(at)
    assert loads == ["resnet18"] and get_bundle("resnet18") is warmed
    assert analyses_computed() == before + 1


def test_start_runs_the_warm_up_in_a_daemon_thread(monkeypatch):
    called: list[object] = []
    monkeypatch.setattr(startup, "warm_up", lambda model=None: called.append(model))
    thread = startup.start()
    thread.join(10)
    assert thread.daemon and called == [None]


def test_a_failed_warm_up_is_logged_not_raised(monkeypatch, caplog):
    def broken(model=None):
        raise OSError("disk gone")

    monkeypatch.setattr(startup, "warm_up", broken)
    startup.start().join(10)
    assert "warm-up stopped" in caplog.text and "disk gone" in caplog.text


def test_picks_are_worked_out_once_and_handed_out_as_new_lists():
    expected = quick_picks(architecture_layers("resnet18"), token_model("resnet18"))
    first = picks_for("resnet18")
    assert first == expected
    first["tour"].append("fc")  # one session's state changing its list
    first.pop("convs")
    assert picks_for("resnet18") == expected  # the next session's picks are untouched
    assert picks_for("resnet18")["tour"] is not picks_for("resnet18")["tour"]
