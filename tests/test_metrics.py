"""The server's /metrics: Prometheus text that prometheus_client's own parser reads, with the page's
computations and cache hits by kind, script runs, the model-lock wait, sessions and classes; served
by app.py's st.App under `streamlit run app.py` beside the page."""

from __future__ import annotations

import os

import pytest
import torch
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers import ok, open_page
from vizhooks.page import classes, metrics


def samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the exposition, by (name, labels)."""
    body, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode()) for s in family.samples}


def value(name: str, **labels: str) -> float:
    return samples().get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.mark.slow
def test_computations_and_hits_by_kind(fresh_results):
    computed, hits = value("vizhooks_computations_total", kind="analysis"), \
        value("vizhooks_cache_hits_total", kind="analysis")
    runs = value("vizhooks_script_run_seconds_count")
    ok(open_page())
    assert value("vizhooks_computations_total", kind="analysis") == computed + 1
    ok(open_page())  # a second visitor, the same request: served, not computed
    assert value("vizhooks_computations_total", kind="analysis") == computed + 1
    assert value("vizhooks_cache_hits_total", kind="analysis") >= hits + 1
    assert value("vizhooks_script_run_seconds_count") >= runs + 2
    assert value("vizhooks_script_runs_total") >= value("vizhooks_script_run_seconds_count")


@pytest.mark.slow
def test_streamlit_cached_kinds_count_hits_too(fresh_results):
    before = value("vizhooks_computations_total", kind="summary"), value("vizhooks_cache_hits_total", kind="summary")
    ok(open_page(view="table"))
    ok(open_page(view="table"))
    after = value("vizhooks_computations_total", kind="summary"), value("vizhooks_cache_hits_total", kind="summary")
    assert after[0] == before[0] + 1 and after[1] == before[1] + 1


def test_model_lock_wait_is_observed():
    from vizhooks.ops import model_lock

    model = torch.nn.Linear(2, 2)
    before = value("vizhooks_model_lock_wait_seconds_count")
    with model_lock(model):
        pass
    assert model_lock(model).acquire(blocking=False)  # a try that does not wait is not a wait
    model_lock(model).release()
    assert value("vizhooks_model_lock_wait_seconds_count") == before + 1


def test_classes_and_followers(monkeypatch):
    monkeypatch.delenv("VIZHOOKS_CLASS_STORE", raising=False)
    classes.reset()
    try:
        room = classes.classroom()
        lead = room.start()
        room.follow(lead.code, "a")
        room.follow(lead.code, "b")
        from starlette.applications import Starlette
        from starlette.testclient import TestClient

        text = TestClient(Starlette(routes=metrics.routes(classes.class_counts))).get("/metrics").text
        found = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
        assert found["vizhooks_classes"] == 1 and found["vizhooks_followers"] == 2
    finally:
        classes.reset()


def test_an_unreachable_class_store_is_a_gauge_and_one_log_line_not_zero_classes(monkeypatch, caplog):
    """Redis gone: /metrics says the store is down (vizhooks_class_store_up 0) and keeps the last counts
    instead of reporting 0 classes; the operator's detail (the address, what to do) is in the log once
    for repeated requests; a visitor's sentence names neither the address nor the setting."""
    import logging
    import socket

    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from vizhooks.classroom.store import StoreUnavailableError
    from vizhooks.page.errors import reason
    from vizhooks.page.texts import set_language

    with socket.socket() as probe:  # a localhost port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.delenv("VIZHOOKS_CLASS_STORE", raising=False)
    classes.reset()
    client = TestClient(Starlette(routes=metrics.routes(classes.class_counts)))
    try:
        classes.classroom().start()
        up = {s.name: s.value for f in text_string_to_metric_families(client.get("/metrics").text) for s in f.samples}
        assert up["vizhooks_class_store_up"] == 1 and up["vizhooks_classes"] == 1
        monkeypatch.setenv("VIZHOOKS_CLASS_STORE", f"redis://127.0.0.1:{closed}/0")
        classes.reset()
        with caplog.at_level(logging.WARNING, logger="vizhooks.page"):
            for _ in range(3):
                text = client.get("/metrics").text
        down = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
        assert down["vizhooks_class_store_up"] == 0 and down["vizhooks_classes"] == 1  # last known, not 0
        said = [r.getMessage() for r in caplog.records if "class store" in r.getMessage()]
        assert len(said) == 1 and f"127.0.0.1:{closed}" in said[0] and "VIZHOOKS_CLASS_STORE" in said[0]
        for lang in ("en", "zh"):
            set_language(lang)
            sentence = reason(StoreUnavailableError(f"The class store redis://127.0.0.1:{closed}/0 cannot be "
                                                    "reached: start Redis, or unset VIZHOOKS_CLASS_STORE."))
            assert str(closed) not in sentence and "VIZHOOKS" not in sentence and "Redis" not in sentence
        monkeypatch.delenv("VIZHOOKS_CLASS_STORE")
        classes.reset()
        with caplog.at_level(logging.WARNING, logger="vizhooks.page"):
            back = {s.name: s.value for f in text_string_to_metric_families(client.get("/metrics").text)
                    for s in f.samples}
        assert back["vizhooks_class_store_up"] == 1
        assert "class store reachable again" in caplog.text
    finally:
        set_language("en")
        classes.reset()


def test_the_route_answers_get():
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    client = TestClient(Starlette(routes=metrics.routes()))
    reply = client.get("/metrics")
    assert reply.status_code == 200 and "vizhooks_computations_total" in reply.text
    assert client.post("/metrics").status_code == 405


@pytest.mark.slow
def test_streamlit_run_app_serves_the_page_and_metrics(tmp_path):
    """`streamlit run app.py` as a person types it: the page, its health, and /metrics beside them."""
    from benchmarks.server import get_local, start, stop, wait_healthy

    env = {**os.environ, "TORCH_HOME": str(tmp_path / "torch")}
    with open(tmp_path / "server.log", "w") as log:
        proc, url = start(env, log)
        try:
            wait_healthy(url, proc)
            status, kind, body = get_local(f"{url}/metrics")
            assert status == 200 and kind.startswith("text/plain")
            names = {f.name for f in text_string_to_metric_families(body.decode())}
            assert {"vizhooks_computations", "vizhooks_script_run_seconds", "vizhooks_model_lock_wait_seconds",
                    "vizhooks_sessions", "vizhooks_classes", "vizhooks_followers"} <= names
            status, _, body = get_local(url)
            assert status == 200 and b"<div id=\"root\"" in body
        finally:
            stop(proc)
    assert "Traceback" not in (tmp_path / "server.log").read_text()
