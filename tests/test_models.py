"""Weights resolution and devices, with no network: loopback servers stand in for the internet."""

from __future__ import annotations

import hashlib
import http.server
import os
import socket
import threading
import time
from pathlib import Path

import pytest
import torch
from torchvision.models import ResNet18_Weights

import vizhooks.models.registry as vm
import vizhooks.models.weights as vw
from vizhooks import WeightsError, load_model
from vizhooks.models.registry import resolve_device

EXPECTED_FILE = os.path.basename(ResNet18_Weights.IMAGENET1K_V1.url)


def _state(name: str, seed: int) -> dict[str, torch.Tensor]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        from torchvision.models import get_model

        return get_model(name, weights=None).state_dict()


def _same_weights(model, state) -> bool:
    return all(torch.equal(v, state[k]) for k, v in model.state_dict().items())


@pytest.fixture
def online(monkeypatch):
    """Downloads allowed (to loopback only), with short timeouts and no memory of failures."""
    monkeypatch.delenv("VIZHOOKS_OFFLINE", raising=False)
    monkeypatch.setattr(vw, "DOWNLOAD_TIMEOUT_S", 1.5)
    monkeypatch.setattr(vw, "_offline_since", None)


class _Server:
    """A loopback HTTP server serving ``files`` by name."""

    def __init__(self, files: dict[str, bytes]):
        files_ = files

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = files_.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_unknown_name_suggests_close_names():
    with pytest.raises(ValueError) as info:
        load_model("resnet19", weights="none", device="cpu")
    msg = str(info.value)
    assert "'resnet19'" in msg and "resnet18" in msg and "--list-models" in msg and "\n" not in msg
    with pytest.raises(ValueError, match="Unknown model"):
        load_model("not-a-model-at-all", weights="none", device="cpu")
    # every torchvision classifier is a name, not just the ResNets
    names = vm.list_models()
    assert {"vgg16", "vit_b_16", "swin_t", "convnext_tiny", "densenet121", "maxvit_t"} <= set(names)
    assert set(names[:5]) == set(vm.ARCHITECTURES)  # the ResNets come first


def test_random_weights_are_seeded_and_leave_global_rng_alone():
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    a = load_model("resnet18", weights="none", device="cpu")
    assert torch.equal(torch.rand(3), expected_next)
    b = load_model("resnet18", weights="none", device="cpu")
    assert _same_weights(a.model, b.model.state_dict())
    assert not a.pretrained and a.weights_source == "random"
    assert not a.model.training and a.device == torch.device("cpu")
    assert len(a.categories) == 1000 and "tabby" in a.categories
    assert len(a.mean) == 3 and len(a.std) == 3


@pytest.mark.slow
def test_state_dict_file_round_trips(tmp_path):
    state = _state("resnet18", seed=7)
    path = tmp_path / "mine.pth"
    torch.save(state, path)
    bundle = load_model("resnet18", weights=str(path), device="cpu")
    assert bundle.pretrained and bundle.weights_source == "file"
    assert _same_weights(bundle.model, state)
    # DataParallel prefixes and {"state_dict": ...} wrappers are accepted too
    torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}}, path)
    assert _same_weights(load_model("resnet18", weights=path, device="cpu").model, state)


@pytest.mark.slow
def test_wrong_architecture_is_one_short_sentence(tmp_path):
    path = tmp_path / "r50.pth"
    torch.save(_state("resnet50", seed=0), path)
    with pytest.raises(WeightsError) as info:
        load_model("resnet18", weights=str(path), device="cpu")
    msg = str(info.value)
    assert "resnet50" in msg and "resnet18" in msg
    assert "\n" not in msg and len(msg) < 400


@pytest.mark.parametrize("case", ["missing", "truncated", "text", "not_tensors"])
def test_unusable_files_give_clear_errors(tmp_path, case):
    path = tmp_path / "w.pth"
    if case == "truncated":
        torch.save(_state("resnet18", 0), path)
        path.write_bytes(path.read_bytes()[:5000])
    elif case == "text":
        path.write_text("hello")
    elif case == "not_tensors":
        torch.save({"a": 1, "b": [1, 2]}, path)
    with pytest.raises(WeightsError) as info:
        load_model("resnet18", weights=str(path), device="cpu")
    assert str(path) in str(info.value) and "\n" not in str(info.value)


class _Evil:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "before-1.6"])
def test_pickled_code_is_never_run(tmp_path, zipped):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pth"
    torch.save({"conv1.weight": _Evil(marker)}, path, _use_new_zipfile_serialization=zipped)
    assert not marker.exists()
    with pytest.raises(WeightsError, match="not loaded for safety"):
        load_model("resnet18", weights=str(path), device="cpu")
    assert not marker.exists()


def test_auto_offline_falls_back_and_says_how_to_fix():
    bundle = load_model("resnet18", weights="auto", device="cpu")
    assert not bundle.pretrained and bundle.weights_source == "random"
    assert EXPECTED_FILE in bundle.weights_status
    assert "--download-weights resnet18" in bundle.weights_status
    assert "VIZHOOKS_OFFLINE" in bundle.weights_status
    # the reason, kept for a page in another language (tests/test_i18n.py shows it in Chinese)
    assert bundle.weights_notes == (("downloads_off", {"variable": "VIZHOOKS_OFFLINE"}),)
    with pytest.raises(WeightsError, match="--download-weights"):
        load_model("resnet18", weights="imagenet", device="cpu")


def test_auto_uses_the_torch_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    state = _state("resnet18", seed=3)
    cached = tmp_path / "hub" / "checkpoints" / EXPECTED_FILE
    cached.parent.mkdir(parents=True)
    torch.save(state, cached)
    bundle = load_model("resnet18", weights="auto", device="cpu")
    assert bundle.pretrained and bundle.weights_source == "cache"
    assert _same_weights(bundle.model, state)
    assert str(cached) in bundle.weights_status and bundle.weights_notes == ()


@pytest.mark.slow
def test_cached_checkpoint_without_batchnorm_counters_loads(tmp_path, monkeypatch):
    # Checkpoints saved before PyTorch 0.4 have no "num_batches_tracked" buffers; PyTorch's own
    # strict loader accepts them (the oracle), so the cache must not call them damaged.
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    full = _state("resnet18", seed=4)
    state = {k: v for k, v in full.items() if not k.endswith("num_batches_tracked")}
    assert len(full) - len(state) == 20  # one per BatchNorm
    from torchvision.models import resnet18

    resnet18().load_state_dict(state, strict=True)
    cached = tmp_path / "hub" / "checkpoints" / EXPECTED_FILE
    cached.parent.mkdir(parents=True)
    torch.save(state, cached)
    bundle = load_model("resnet18", weights="auto", device="cpu")
    assert bundle.pretrained and bundle.weights_source == "cache", bundle.weights_status
    loaded = bundle.model.state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in state.items())
    assert all(int(v) == 0 for k, v in loaded.items() if k.endswith("num_batches_tracked"))


def test_damaged_cache_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    cached = tmp_path / "hub" / "checkpoints" / EXPECTED_FILE
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"\x80\x02 not a checkpoint")
    bundle = load_model("resnet18", weights="auto", device="cpu")
    assert not bundle.pretrained and "damaged" in bundle.weights_status
    assert [(code, values.get("path")) for code, values in bundle.weights_notes] == [
        ("cache_damaged", str(cached)), ("downloads_off", None)]


@pytest.mark.slow
def test_env_file_first_and_mismatch_falls_through(tmp_path, monkeypatch):
    state = _state("resnet18", seed=5)
    path = tmp_path / "env.pth"
    torch.save(state, path)
    monkeypatch.setenv("VIZHOOKS_WEIGHTS", str(path))
    bundle = load_model("resnet18", weights="auto", device="cpu")
    assert bundle.weights_source == "env" and _same_weights(bundle.model, state)
    other = load_model("resnet34", weights="auto", device="cpu")  # a resnet18 file cannot fit
    assert other.weights_source == "random" and "VIZHOOKS_WEIGHTS" in other.weights_status
    assert [code for code, _ in other.weights_notes] == ["env_unused", "downloads_off"]
    monkeypatch.setenv("VIZHOOKS_WEIGHTS", str(tmp_path / "missing.pth"))
    gone = load_model("resnet18", weights="auto", device="cpu")
    assert gone.weights_source == "random" and "does not exist" in gone.weights_status


@pytest.mark.slow
def test_silent_server_is_bounded(online, monkeypatch, tmp_path):
    # Accepts the connection and never answers: what a network that drops packets looks like
    # to the reading side.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    monkeypatch.setenv("VIZHOOKS_WEIGHTS_MIRROR", f"http://127.0.0.1:{listener.getsockname()[1]}")
    try:
        start = time.monotonic()
        bundle = load_model("resnet18", weights="auto", device="cpu")
        elapsed = time.monotonic() - start
    finally:
        listener.close()
    assert elapsed < 10
    assert not bundle.pretrained and "download failed" in bundle.weights_status
    assert [code for code, _ in bundle.weights_notes] == ["download_failed"]
    cache = Path(os.environ["TORCH_HOME"]) / "hub" / "checkpoints"
    assert not cache.exists() or not any(cache.iterdir())
    # A second load remembers the failure instead of waiting again (the status says so; no
    # timing assert, which a busy machine could break).
    again = load_model("resnet18", weights="auto", device="cpu")
    assert "a moment ago" in again.weights_status
    assert [code for code, _ in again.weights_notes] == ["failed_recently"]


@pytest.mark.slow
def test_hung_name_lookup_is_bounded(online, monkeypatch):
    # urlopen blocked before any socket timeout applies (e.g. a DNS look-up that hangs).
    release = threading.Event()
    monkeypatch.setattr(vw.urllib.request, "urlopen", lambda *a, **k: release.wait(60))
    try:
        start = time.monotonic()
        bundle = load_model("resnet18", weights="auto", device="cpu")
        assert time.monotonic() - start < 10
        assert not bundle.pretrained and "No answer" in bundle.weights_status
    finally:
        release.set()


@pytest.mark.slow
def test_download_checks_hash_and_fills_cache(online, monkeypatch):
    buf = Path(os.environ["TORCH_HOME"]) / "served.pth"
    buf.parent.mkdir(parents=True, exist_ok=True)
    state = _state("resnet18", seed=11)
    torch.save(state, buf)
    body = buf.read_bytes()
    good = f"resnet18-{hashlib.sha256(body).hexdigest()[:8]}.pth"
    server = _Server({good: body, EXPECTED_FILE: body})  # the second name's hash cannot match
    cache = Path(os.environ["TORCH_HOME"]) / "hub" / "checkpoints"
    try:
        monkeypatch.setenv("VIZHOOKS_WEIGHTS_MIRROR", server.url)
        bundle = load_model("resnet18", weights="auto", device="cpu")
        assert not bundle.pretrained and "checksum" in bundle.weights_status
        assert not cache.exists() or not any(cache.iterdir())

        seen = []
        path = vw.download_checkpoint("resnet18", url=f"{server.url}/{good}",
                                      progress=lambda done, total: seen.append((done, total)))
        assert path == cache / EXPECTED_FILE and seen[-1] == (len(body), len(body))
        monkeypatch.setattr(vw, "_offline_since", None)
        bundle = load_model("resnet18", weights="auto", device="cpu")
        assert bundle.pretrained and bundle.weights_source == "cache"
        assert _same_weights(bundle.model, state)
    finally:
        server.close()


def test_device_choice(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="no CUDA"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="Unknown device"):
        resolve_device("tpu7")
    with pytest.raises(ValueError, match="no CUDA"):
        load_model("resnet18", weights="none", device="cuda")
