"""vizhooks.page.results: the page's shared results. Each ``get_*`` keys its cache entry by what
decides the result, so the same request computes once (also when sessions ask at the same moment:
single flight), another class or method computes only what it changes, a failure is not kept, and
a capture over the memory budget is refused before anything runs.

The computations are replaced by counting stand-ins here: what is checked is the caching, with
counts the test makes itself (the whole page through AppTest is tests/test_app*.py)."""

from __future__ import annotations

import io
import threading
import time
from types import SimpleNamespace

import pytest
import torch
from PIL import Image

from vizhooks.hooks.budget import CaptureTooLargeError
from vizhooks.page import results


def _png(seed: int = 0) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (seed, 90, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def cache(monkeypatch):
    """An empty shared result cache of 10 MB, no model built (``get_bundle`` gives a stand-in)."""
    monkeypatch.setenv("VIZHOOKS_CACHE_MB", "10")
    results.result_cache.clear()
    monkeypatch.setattr(results, "get_bundle", lambda name: SimpleNamespace(name=name, model=f"model of {name}"))
    yield results.result_cache()
    results.result_cache.clear()


class Analyses:
    """A stand-in for vizhooks.page.analysis.analyse that counts its calls and can wait or fail."""

    def __init__(self, wait: float = 0.0, fail: int = 0) -> None:
        self.calls, self.wait, self.fail = 0, wait, fail
        self.lock = threading.Lock()

    def __call__(self, bundle, image, size, layers, what):
        with self.lock:
            self.calls += 1
            failing = self.calls <= self.fail
        time.sleep(self.wait)
        if failing:
            raise RuntimeError("out of memory in the forward pass")
        return SimpleNamespace(model=bundle.name, size=size, layers=layers, what=what, nbytes=1000,
                               x=torch.zeros(1, 3, 32, 48))


def test_the_cache_is_bounded_by_the_environment_in_bytes(cache):
    assert cache.max_bytes == 10_000_000 and len(cache) == 0
    assert results.tensor_bytes([torch.zeros(2, 3), torch.zeros(5, dtype=torch.float64)]) == 2 * 3 * 4 + 5 * 8


def test_the_same_analysis_is_computed_once_and_another_size_again(cache, monkeypatch):
    analyse = Analyses()
    monkeypatch.setattr(results, "analyse", analyse)
    data = _png()
    first = results.get_analysis("resnet18", "d1", data, 128, ("conv1",), "output")
    again = results.get_analysis("resnet18", "d1", data, 128, ("conv1",), "output")
    assert again is first and analyse.calls == 1 and (cache.computed, cache.hits) == (1, 1)
    for other in (("resnet34", "d1", 128, ("conv1",), "output"), ("resnet18", "d2", 128, ("conv1",), "output"),
                  ("resnet18", "d1", 160, ("conv1",), "output"), ("resnet18", "d1", 128, ("layer1",), "output"),
                  ("resnet18", "d1", 128, ("conv1",), "input")):
        model, digest, size, layers, what = other
        made = results.get_analysis(model, digest, data, size, layers, what)
        assert (made.model, made.size, made.layers, made.what) == (model, size, list(layers), what)
    assert analyse.calls == 6 and cache.total_bytes == 6 * 1000


def test_sessions_asking_at_once_share_one_computation(cache, monkeypatch):
    analyse = Analyses(wait=0.5)
    monkeypatch.setattr(results, "analyse", analyse)
    data, got = _png(), []
    start = threading.Barrier(4)

    def session() -> None:
        start.wait()
        got.append(results.get_analysis("resnet18", "same", data, 128, ("conv1",), "output"))

    threads = [threading.Thread(target=session) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert analyse.calls == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert cache.computed == 1 and cache.hits == 3 and cache.in_flight == 0


def test_a_failure_reaches_every_waiter_and_is_not_kept(cache, monkeypatch):
    analyse = Analyses(wait=0.5, fail=1)
    monkeypatch.setattr(results, "analyse", analyse)
    data, errors = _png(), []
    start = threading.Barrier(3)

    def session() -> None:
        start.wait()
        try:
            results.get_analysis("resnet18", "boom", data, 128, ("conv1",), "output")
        except RuntimeError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=session) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == ["out of memory in the forward pass"] * 3 and analyse.calls == 1 and len(cache) == 0
    made = results.get_analysis("resnet18", "boom", data, 128, ("conv1",), "output")  # the next one tries again
    assert analyse.calls == 2 and made.size == 128


def test_another_class_reruns_the_gradients_only_and_a_large_capture_runs_nothing(cache, monkeypatch):
    passes: list[int | None] = []

    def gradient_pass(model, x, layers, target=None, as_maps=False):
        passes.append(target)
        acts = {name: torch.ones(1, 4, 8, 12) for name in layers}
        return SimpleNamespace(activations=acts, gradients=acts, target=target)

    monkeypatch.setattr(results, "gradient_pass", gradient_pass)
    monkeypatch.setattr(results, "cams_from", lambda result, hw: {n: torch.ones(*hw) for n in result.activations})
    analysis = SimpleNamespace(x=torch.zeros(1, 3, 32, 48))
    layers = ("layer1.0.conv1", "layer4.1.conv2")
    result, cams = results.get_gradients("resnet18", ("photo",), layers, 7, analysis)
    assert result.target == 7 and cams["layer4.1.conv2"].shape == (32, 48)
    assert results.get_gradients("resnet18", ("photo",), layers, 7, analysis)[0] is result
    results.get_gradients("resnet18", ("photo",), layers, 8, analysis)
    assert passes == [7, 8]
    # the entry weighs its activations, gradients and maps
    assert cache.total_bytes == 2 * (2 * 2 * 4 * 8 * 12 * 4 + 2 * 32 * 48 * 4)

    import vizhooks.hooks.budget as vb

    monkeypatch.setattr(vb, "MAX_CAPTURE_MB", 0.001)
    with pytest.raises(CaptureTooLargeError, match="feature maps and gradients"):
        results.get_gradients("resnet18", ("photo",), layers, 9, analysis)
    assert passes == [7, 8]


def test_a_method_is_keyed_by_what_it_reads():
    settings = (("batch_size", 16), ("ig_steps", 32), ("ig_baseline", "black"))
    key = results.explain_key
    # a CAM reads its layers, not the integrated-gradients settings
    assert key("m", ("p",), 3, "gradcam", ("layer4",), settings) == ("explain", "m", ("p",), 3, "gradcam",
                                                                      ("layer4",), ())
    assert key("m", ("p",), 3, "gradcam", ("layer4",), settings) != key("m", ("p",), 3, "gradcam", ("layer3",),
                                                                         settings)
    # integrated gradients read their settings and no layer
    assert key("m", ("p",), 3, "ig", ("layer4",), settings) == ("explain", "m", ("p",), 3, "ig", (), settings)
    assert key("m", ("p",), 3, "ig", ("layer4",), settings) == key("m", ("p",), 3, "ig", ("layer1",), settings)
    assert key("m", ("p",), 3, "scorecam", ("l",), settings)[-1] == (("batch_size", 16),)
    assert key("m", ("p",), 3, "guidedgradcam", ("l",), settings)[-2] == ("l",)


def test_another_choice_of_methods_computes_only_the_new_ones(cache, monkeypatch):
    made: list[str] = []

    def explain(bundle, x, target, methods, layers, progress=None, **settings):
        (method,) = methods
        made.append(method)
        progress(1, 1, "batch")
        return {method: torch.full((32, 48), float(len(made)))}

    monkeypatch.setattr(results, "explain", explain)
    names = {"gradcam": "Grad-CAM", "ig": "IG", "smoothgrad": "SmoothGrad"}
    bar = SimpleNamespace(steps=[], progress=lambda value, text="": bar.steps.append(value))
    analysis = SimpleNamespace(x=torch.zeros(1, 3, 32, 48))
    first = results.get_explanations("m", ("p",), 1, ("gradcam", "ig"), ("layer4",), (), analysis, bar, names)
    second = results.get_explanations("m", ("p",), 1, ("ig", "smoothgrad"), ("layer4",), (), analysis, bar, names)
    assert made == ["gradcam", "ig", "smoothgrad"] and second["ig"] is first["ig"]
    assert all(0 <= s <= 1 for s in bar.steps) and bar.steps[-1] == 1.0


def test_a_model_whose_files_changed_since_the_menu_listed_it_is_its_bare_name(monkeypatch):
    """The option line asks for a model's input rules; an operator's Hugging Face entry whose processor turned
    non-square (or whose config went) after the menu listed it refuses there: the line is its name, not an error
    box, and the refusal is not kept (the line comes back once the files are right)."""
    from vizhooks.errors import CodedError
    from vizhooks.models import registry

    real = registry.input_spec

    def refused(arch, model=None):
        raise CodedError(code="model_not_square", name=arch, width=32, height=16)

    results.plain_option.cache_clear()
    monkeypatch.setattr(registry, "input_spec", refused)
    assert results.model_option("resnet18", "en") == "resnet18"
    monkeypatch.setattr(registry, "input_spec", real)
    assert results.model_option("resnet18", "en") == results.plain_option("resnet18", "en") != "resnet18"


def test_the_models_line_is_kept_per_language():
    results.plain_option.cache_clear()
    english = results.plain_option("resnet18", "en")
    chinese = results.plain_option("resnet18", "zh")
    assert "resnet18" in english and "resnet18" in chinese and english != chinese
    assert "11.7" in english  # torchvision's parameter count, in millions
    assert results.plain_option("resnet18", "en") is english
    assert results.plain_option.cache_info().hits == 1
