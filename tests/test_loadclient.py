"""The headless load client (benchmarks/loadclient.py) and the load scenarios (benchmarks/load.py)
against one real `streamlit run app.py`: the client must see what a browser sees, so its runs are
compared with the library's own answer, run here with the server's settings (offline, an empty
TORCH_HOME: the same seeded random weights). The server is started once for the module."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

from benchmarks import load
from benchmarks import server as streamlit_server
from benchmarks.loadclient import Run, Session, Widget, _match_option, percentile, widget_key

LAYERS = ["conv1", "layer2.0.conv1"]


def run_apart(coroutine):
    """``asyncio.run`` in a thread of its own: in the whole suite the browser tests' Playwright
    leaves an event loop running in this thread, where asyncio.run refuses to start."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()



@pytest.fixture(scope="module")
def page_server(tmp_path_factory):
    env = load.server_env(str(tmp_path_factory.mktemp("th")))
    log = (tmp_path_factory.mktemp("log") / "streamlit.log").open("w")
    proc, url = streamlit_server.start(env, log)
    try:
        streamlit_server.wait_healthy(url, proc)
        yield url
    finally:
        streamlit_server.stop(proc)
        log.close()


def grids(run: Run, layers: list[str]) -> dict[str, str]:
    """Each layer heading's picture: the first image element after the heading, before the next one."""
    out: dict[str, str] = {}
    current = None
    for kind, proto in run.elements:
        if kind == "heading":
            current = proto.body if proto.body in layers else None
        elif kind == "imgs" and current is not None and current not in out:
            out[current] = proto.imgs[0].url
    return out


def expected_page(data: bytes) -> tuple[str, list[str]]:
    """The caption of the picture the model saw and the top-5 lines, from the library."""
    import vizhooks as vz
    from vizhooks.analysis import analyse, top_classes
    from vizhooks.page.texts import t

    bundle = vz.load_model("resnet18", weights="auto")
    a = analyse(bundle, vz.load_image(data), 224, LAYERS)
    w, h = a.picture.size
    top5 = [f"{p.label} · {p.probability:.1%}" for p in top_classes(a.logits, bundle.categories, 5)]
    return t("model_saw", width=w, height=h), top5


def shown_page(run: Run) -> tuple[str, list[str]]:
    captions = [img.caption for kind, proto in run.elements if kind == "imgs" for img in proto.imgs if img.caption]
    return captions[0] if captions else "", run.texts("progress")


# --- without a server ------------------------------------------------------------------------------


def test_widget_key_and_option_labels():
    assert widget_key("$$ID-0a1b2c-source") == "source"
    assert widget_key("$$ID-0a1b2c-download_layer1.0.conv1") == "download_layer1.0.conv1"
    assert widget_key("$$ID-0a1b2c-None") is None and widget_key("plain") is None
    from streamlit.proto.MultiSelect_pb2 import MultiSelect

    proto = MultiSelect(id="$$ID-x-layers", options=["conv1 · conv 1 of 20", "conv10 · deep", "layer1 · block"])
    w = Widget(proto.id, "multiselect", proto)
    assert _match_option(w, "conv1") == "conv1 · conv 1 of 20"  # the first word, not conv10
    assert _match_option(w, 2) == "layer1 · block"
    with pytest.raises(ValueError, match="not one of the options"):
        _match_option(w, "layer9")
    with pytest.raises(ValueError, match="outside"):
        _match_option(w, 3)


def test_percentile_is_numpys():
    values = [0.3, 5.0, 1.2, 1.2, 9.9, 0.01, 4.4]
    for q in (0, 50, 95, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))
    assert percentile([], 50) is None


def test_judge_needs_every_number_it_judges():
    row = {"p95_s": 4.0, "errors": 0, "computations": 1}
    report = {"one": {"p50_s": 1.0}, "a": dict(row), "b": dict(row, p95_s=37.0), "c": dict(row, errors=1)}
    load.judge(report, n_b=30)
    assert [report[k]["status"] for k in ("a", "b", "c")] == ["PASS", "MISS", "MISS"]  # b: 37 > 1.2 x 30 x 1
    report = {"a": dict(row, computations=None), "b": dict(row)}
    load.judge(report, n_b=30)
    assert report["a"]["status"] == report["b"]["status"] == "UNKNOWN"  # no /metrics; no "one analysis"


def test_class_code_and_the_follow_target():
    from streamlit.proto.Markdown_pb2 import Markdown

    shown = [Markdown(body="Teach a class"), Markdown(body="Class code: **K7Q2AB**")]
    run = Run(started=0.0, elements=[("markdown", m) for m in shown])
    assert load.class_code(run) == "K7Q2AB" and load.class_code(Run(started=0.0)) is None
    row = {"p95_s": 1.5, "errors": 0, "computations": 1, "never_caught_up": 0, "student_computations": {}}
    report = {"d": dict(row)}
    load.judge(report, n_b=30)
    assert report["d"]["status"] == "PASS"
    for bad in ({"p95_s": 2.5}, {"never_caught_up": 1}, {"student_computations": {"analysis": 1}}):
        report = {"d": {**row, **bad}}
        load.judge(report, n_b=30)
        assert report["d"]["status"] == "MISS", bad


def test_errors_count_failed_visitors_and_runs_once_each():
    good = Run(started=0.0, seconds=1.0, status="ok")
    shown = Run(started=0.0, seconds=2.0, status="ok", errors=["error shown: x", "GET /media/a.png answered 404"])
    late = Run(started=0.0, status="timeout", errors=["no script_finished within 600 s"])
    outcome = load.Outcome()
    load._collect(outcome, [[good], [shown, late], TimeoutError("timed out during opening handshake")])
    assert outcome.errors == 3 and len(outcome.runs) == 3 and len(outcome.failures) == 5
    row = load.summary("a", 4, outcome, None, None, None, 0.0)
    assert (row["errors"], row["runs_timed"], row["max_s"], row["computations"]) == (3, 2, 2.0, None)


def test_metrics_are_read_with_prometheus_clients_own_parser(monkeypatch):
    served = {"text": "", "type": "text/plain; version=0.0.4"}

    class Answer:
        status_code = 200

        def __init__(self, url, timeout):
            self.text, self.headers = served["text"], {"content-type": served["type"]}

    monkeypatch.setattr(load.httpx2, "get", Answer)
    registry = CollectorRegistry()
    computations = Counter("vizhooks_computations", "", ["kind"], registry=registry)
    hits = Counter("vizhooks_cache_hits", "", ["kind"], registry=registry)
    served["text"] = generate_latest(registry).decode()  # declared, never used: no sample yet, and that is 0
    assert load.read_metrics("http://x") == {"computations": 0.0, "cache_hits": 0.0}
    computations.labels("analysis").inc(2)
    computations.labels("gradients").inc(5)
    hits.labels("analysis").inc(7)
    served["text"] = generate_latest(registry).decode()
    assert load.read_metrics("http://x") == {"computations": 2.0, "cache_hits": 7.0}
    served["text"] = "# TYPE other counter\nother_total 1.0\n"  # Prometheus text without our counters
    assert load.read_metrics("http://x") is None
    served["type"] = "text/html"  # Streamlit's answer to an unknown path: the page
    assert load.read_metrics("http://x") is None
    assert "no /metrics endpoint" in load.metrics_text("http://x")[1]


def test_photos_differ():
    photos = [load.photo(i)[1] for i in range(40)]
    assert len(set(photos)) == 40 and all(p[:3] == b"\xff\xd8\xff" for p in photos)


def test_command_line_refuses_what_it_cannot_run(capsys):
    for argv in (["--only", "a,z"], ["--n-c", "0"]):
        with pytest.raises(SystemExit):
            load.main(argv)
    err = capsys.readouterr().err
    assert "unknown scenario z" in err and "--n-c must be at least 1" in err


# --- against the page ------------------------------------------------------------------------------


@pytest.mark.slow
def test_default_run_finishes_with_its_grids(page_server):
    async def visit() -> Session:
        async with Session(page_server, query="layers=" + ",".join(LAYERS), assets=True) as s:
            return s

    s = run_apart(visit())
    run = s.first_run
    assert run.ok, (run.status, run.errors)
    assert run.seconds is not None and run.seconds > 0
    shown = grids(run, LAYERS)
    assert sorted(shown) == sorted(LAYERS), f"grids after the headings: {shown}"
    assert all(run.media_bytes.get(url, 0) > 1000 for url in shown.values()), run.media_bytes  # fetched PNGs
    assert {"", "favicon.png"} < set(s.assets_fetched) and any(p.endswith(".js") for p in s.assets_fetched)
    assert "layers=" in s.query and "view=" in s.query, f"the address bar follows the page: {s.query}"
    assert {"source", "layers", "view", "model"} <= set(s.widgets)
    assert s.widget("source").options[:2] == ["Sample", "Upload"]


@pytest.mark.slow
def test_upload_shows_the_photos_own_predictions(page_server):
    photos = [load.photo(i) for i in (3, 4)]

    async def visit() -> list[Run]:
        async with Session(page_server, query="layers=" + ",".join(LAYERS)) as s:
            switched = await s.set_widget("source", "Upload")
            assert switched.ok and not switched.images, "the Upload source shows no picture before an upload"
            return [await s.upload("upload", name, data, "image/jpeg") for name, data in photos]

    runs = run_apart(visit())
    for run, (name, data) in zip(runs, photos, strict=True):
        assert run.ok, (name, run.status, run.errors)
        assert shown_page(run) == expected_page(data), name
    assert shown_page(runs[0])[1][0] != shown_page(runs[1])[1][0], "two photos, one top-1: the upload was not used"


@pytest.mark.slow
def test_simultaneous_visitors_all_finish_and_share_one_computation(page_server):
    # a picture and layers no other test asks for: this request is new to the server's caches
    query = "sample=brick.png&layers=conv1,layer1.1.conv1"
    before = load.read_metrics(page_server)
    outcome = run_apart(load.at_once(page_server, 3, query=query))
    after = load.read_metrics(page_server)
    assert not outcome.failures and len(outcome.runs) == 3
    assert all(grids(run, ["conv1", "layer1.1.conv1"]).keys() == {"conv1", "layer1.1.conv1"} for run in outcome.runs)
    assert before is not None and after is not None, load.metrics_text(page_server)[1]  # the page's /metrics
    assert after["computations"] - before["computations"] == 1


@pytest.mark.slow
def test_scenarios_at_small_n(page_server):
    spread = run_apart(load.spread(page_server, 3, 1.0))
    uploads = run_apart(load.uploads(page_server, 2))
    assert not spread.failures and len(spread.runs) == 3
    assert not uploads.failures and len(uploads.runs) == 2
    report = {"c": load.summary("c", 3, spread, None, None, None, 0.0)}
    assert report["c"]["errors"] == 0 and report["c"]["p95_s"] > 0



@pytest.mark.slow
def test_students_follow_the_teacher_without_computing(page_server):
    # the teacher opens the lesson: each student's page must show its step by a run the server started
    # itself (the follower's run_every check, sent by the client as a browser does), computing nothing
    heading = load.step_heading(1)
    outcome = run_apart(load.follow(page_server, 3, changes=load.CHANGES[:1], gap=0.0, catch_up=20.0))
    assert not outcome.failures, outcome.failures
    assert outcome.extra["never_caught_up"] == 0 and outcome.delays is not None and len(outcome.delays) == 3
    shown = [run for run in outcome.runs if heading in run.texts("heading")]
    assert len(shown) >= 3 and all(run.origin == "server" and run.ok for run in shown)
    assert outcome.extra["auto_reruns_sent"] >= 3
    assert load.read_counters(page_server) is not None, load.metrics_text(page_server)[1]
    assert outcome.extra["student_computations"] == {}, "a student's page computed what the teacher's had"
