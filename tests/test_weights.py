"""vizhooks.models.weights on its own: where checkpoints live and come from, the state-dict checks and their
sentences, the time bound on a download and the memory of a failed one, and a download of a local
file (``file://``: no network). The whole chain on real models is in tests/test_models.py.

Oracles: torchvision's weights enums for names and URLs, ``hashlib`` for the checksum, the path rule
``$TORCH_HOME/hub/checkpoints`` written out here, and PyTorch's own ``load_state_dict``."""

from __future__ import annotations

import hashlib
import io
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path

import pytest
import torch
from torch import nn
from torchvision.models import ResNet18_Weights, get_model_weights

import vizhooks.models.weights as vw
from vizhooks.models.weights import WeightsError


def _tiny(out: int = 2) -> nn.Module:
    return nn.Sequential(OrderedDict(conv=nn.Conv2d(3, out, 3), bn=nn.BatchNorm2d(out)))


# --- names, places, addresses ---------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["resnet18", "vgg16", "convnext_tiny"])
def test_checkpoint_name_and_url_are_torchvisions(arch):
    url = get_model_weights(arch).DEFAULT.url
    assert vw.checkpoint_url(arch) == url
    assert vw.checkpoint_filename(arch) == url.rsplit("/", 1)[1]
    assert vw.checkpoint_filename("resnet18") == "resnet18-f37072fd.pth"  # ResNet18_Weights.IMAGENET1K_V1
    assert ResNet18_Weights.DEFAULT.url.endswith("/resnet18-f37072fd.pth")


def test_checkpoint_path_follows_torch_home(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "elsewhere"))
    assert vw.checkpoint_path("resnet18") == tmp_path / "elsewhere" / "hub" / "checkpoints" / "resnet18-f37072fd.pth"


@pytest.mark.parametrize("mirror", ["http://10.0.0.5/weights", "http://10.0.0.5/weights/", " http://10.0.0.5/weights "])
def test_a_mirror_serves_the_same_file_name(monkeypatch, mirror):
    monkeypatch.setenv("VIZHOOKS_WEIGHTS_MIRROR", mirror)
    assert vw.checkpoint_url("resnet18") == "http://10.0.0.5/weights/resnet18-f37072fd.pth"


def test_fetch_command_for_torchvision_and_timm():
    assert vw.fetch_command("resnet50") == "python -m vizhooks --download-weights resnet50"
    assert vw.fetch_command("timm:resnet10t") == (
        "python -c \"import timm; timm.create_model('resnet10t', pretrained=True)\"")


# --- state dicts ------------------------------------------------------------------------------------


def test_old_densenet_keys_get_torchvisions_new_names():
    value = torch.zeros(1)
    old = {"features.denseblock1.denselayer1.norm.1.weight": value,
           "features.denseblock2.denselayer12.conv.2.weight": value,
           "features.denseblock1.denselayer2.norm1.weight": value,  # already new
           "features.norm5.running_var": value, "classifier.weight": value}
    assert list(vw.fix_keys(old)) == ["features.denseblock1.denselayer1.norm1.weight",
                                      "features.denseblock2.denselayer12.conv2.weight",
                                      "features.denseblock1.denselayer2.norm1.weight",
                                      "features.norm5.running_var", "classifier.weight"]


@pytest.mark.parametrize("wrap", ["plain", "state_dict", "model", "dataparallel"])
def test_read_state_dict_unwraps_what_training_scripts_save(tmp_path, wrap):
    state = _tiny().state_dict()
    saved = {"plain": state, "state_dict": {"state_dict": state, "epoch": 3},
             "model": {"model": state, "optimizer": {}},
             "dataparallel": {f"module.{k}": v for k, v in state.items()}}[wrap]
    torch.save(saved, tmp_path / "w.pth")
    read = vw.read_state_dict(tmp_path / "w.pth")
    assert list(read) == list(state) and all(torch.equal(read[k], state[k]) for k in state)


@pytest.mark.parametrize("content,needle", [
    (None, "does not exist"),
    ({}, "does not hold a state_dict of tensors"),
    ({"conv.weight": torch.zeros(1), "note": 3}, "does not hold a state_dict of tensors"),
    (b"PK\x03\x04 not really a zip", "could not be read as a PyTorch state_dict"),
])
def test_read_state_dict_refuses_with_a_sentence(tmp_path, content, needle):
    path = tmp_path / "w.pth"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        torch.save(content, path)
    with pytest.raises(WeightsError, match=needle) as caught:
        vw.read_state_dict(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_checkpoint_that_does_not_fit_names_its_first_difference(monkeypatch):
    monkeypatch.setattr(vw, "_GUESSES", ("resnet18",))  # no known network looks like it (the guess: test_models)
    model = _tiny(out=2)
    state = _tiny(out=4).state_dict()
    with pytest.raises(WeightsError) as caught:
        vw.apply_state_dict(model, "tiny", state, "w.pth")
    # PyTorch's own loader fails on the same file: the sentence replaces its key dump
    with pytest.raises(RuntimeError, match="size mismatch"):
        model.load_state_dict(state)
    assert str(caught.value) == ("Weights file w.pth does not fit tiny: 6 tensors have the wrong shape (first: "
                                 "conv.weight, file (4, 3, 3, 3), model (2, 3, 3, 3)).")
    del state["bn.bias"]
    state["head.weight"] = torch.zeros(1)
    with pytest.raises(WeightsError, match=r"1 keys are missing \(first: bn.bias\); "
                                           r"1 keys are unexpected \(first: head.weight\)"):
        vw.apply_state_dict(model, "tiny", state, "w.pth")


def test_a_checkpoint_without_batchnorm_counters_loads_with_zero():
    model, source = _tiny(), _tiny()
    source.bn.num_batches_tracked.fill_(9)
    state = {k: v for k, v in source.state_dict().items() if not k.endswith("num_batches_tracked")}
    vw.apply_state_dict(model, "tiny", state, "old.pth")
    assert torch.equal(model.conv.weight, source.conv.weight)
    assert int(model.bn.num_batches_tracked) == 0  # what PyTorch's loader gives such files


# --- the time bound and the memory of a failure -----------------------------------------------------


def test_bounded_returns_the_work_and_passes_its_sentence_on():
    assert vw.bounded(lambda started: 42, timeout=5, what="t") == 42
    with pytest.raises(WeightsError, match="^its own sentence$"):
        vw.bounded(lambda started: (_ for _ in ()).throw(WeightsError("its own sentence")), timeout=5, what="t")
    with pytest.raises(WeightsError, match="^the disk is full$"):
        vw.bounded(lambda started: (_ for _ in ()).throw(OSError("the disk is full\nmore")), timeout=5, what="t")


def test_bounded_gives_up_on_silence_but_not_on_a_slow_moving_transfer():
    release = threading.Event()
    begun = time.monotonic()
    with pytest.raises(WeightsError, match=r"No answer from the download server within 0.2 s"):
        vw.bounded(lambda started: release.wait(30), timeout=0.2, what="silent")
    assert time.monotonic() - begun < 10  # it did not wait for the silent work
    release.set()

    def slow_but_moving(started):
        started()  # first bytes in time; the rest takes longer than the bound
        time.sleep(0.5)
        return "done"

    assert vw.bounded(slow_but_moving, timeout=0.2, what="slow") == "done"


def test_a_failed_download_is_remembered_for_a_while(monkeypatch):
    monkeypatch.delenv("VIZHOOKS_OFFLINE", raising=False)
    monkeypatch.setattr(vw, "_offline_since", None)
    monkeypatch.setattr(vw, "_offline_reason", "")
    notes: list[vw.Note] = []
    assert vw.download_allowed(notes) and notes == []
    vw.remember_download(WeightsError("No answer from the download server within 8 s."))
    assert not vw.download_allowed(notes)
    assert notes == [("failed_recently", {"reason": "No answer from the download server within 8 s"})]
    assert str(vw.gathered(notes)) == ("The download failed a moment ago (No answer from the download server "
                                       "within 8 s).")
    monkeypatch.setattr(vw, "_offline_since", time.monotonic() - vw.OFFLINE_MEMORY_S - 1)  # long ago
    assert vw.download_allowed([])
    vw.remember_download(WeightsError("x"))
    vw.remember_download(None)  # a later success forgets it
    assert vw.download_allowed([])
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")
    notes = []
    assert not vw.download_allowed(notes) and notes == [("downloads_off", {"variable": "VIZHOOKS_OFFLINE"})]
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "0")
    assert vw.download_allowed([])


def test_a_refusal_keeps_its_notes_through_a_pickle():
    """A WeightsError met in a Ray worker comes back pickled: its notes still let a Chinese page say each
    reason in its own words (said_notes), not the English sentence."""
    import pickle

    error = vw.gathered([("downloads_off", {"variable": "VIZHOOKS_OFFLINE"}), ("timm_not_cached", {"name": "x"})])
    error.add_note("seen in a worker")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is WeightsError and str(again) == str(error)
    assert again.notes == error.notes and again.__notes__ == ["seen in a worker"]
    assert vw.said_notes(again.notes) == vw.said_notes(error.notes)


def test_short_reason_is_one_line_of_at_most_160_characters():
    assert vw.short_reason(OSError("first line\nsecond")) == "first line"
    assert vw.short_reason(TimeoutError()) == "TimeoutError"
    assert vw.short_reason(ValueError("x" * 500)) == "x" * 160

    class WithReason(OSError):
        reason = "Name or service not known"

    assert vw.short_reason(WithReason("ignored")) == "Name or service not known"


# --- a download of a local file ---------------------------------------------------------------------


def _served(folder: Path, name: str, data: bytes) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return (folder / name).as_uri()


def _checkpoint_bytes() -> bytes:
    buffer = io.BytesIO()
    torch.save(_tiny().state_dict(), buffer)
    return buffer.getvalue()


def test_download_checks_the_hash_in_the_name_and_only_then_fills_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where the partial file is written
    (tmp_path / "tmp").mkdir()
    data = _checkpoint_bytes()
    digest = hashlib.sha256(data).hexdigest()
    seen: list[tuple[int, int | None]] = []
    dest = vw.download_checkpoint("resnet18", url=_served(tmp_path / "mirror", f"resnet18-{digest[:8]}.pth", data),
                                  progress=lambda done, total: seen.append((done, total)))
    assert dest == vw.checkpoint_path("resnet18") and dest.read_bytes() == data
    assert seen[-1] == (len(data), len(data))
    dest.unlink()

    with pytest.raises(WeightsError, match="is corrupt"):
        vw.download_checkpoint("resnet18", url=_served(tmp_path / "bad", f"resnet18-{'0' * 8}.pth", data))
    with pytest.raises(WeightsError, match=r"^Could not download .*nothing-here"):
        vw.download_checkpoint("resnet18", url=(tmp_path / "nothing-here.pth").as_uri())
    assert not dest.exists()  # neither failure left a file where torchvision would trust it
    assert list((tmp_path / "tmp").iterdir()) == []  # nor a partial one behind


def test_fetch_weights_keeps_a_cached_file(tmp_path):
    dest = vw.checkpoint_path("resnet18")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(b"already here")
    stream = io.StringIO()
    assert vw.fetch_weights(["resnet18"], stream=stream) == [dest]
    assert stream.getvalue() == f"resnet18: already cached at {dest}\n" and dest.read_bytes() == b"already here"


def test_a_refusal_keeps_its_reasons_for_another_language(monkeypatch):
    """The Hugging Face chain offline: one English sentence as before, and the reasons it met, which the
    catalogue says in Chinese (the page's sidebar shows them so) with each value as given."""
    from vizhooks.lesson.i18n import in_language

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(WeightsError) as info:
        vw.hf_download("someone/some_model")
    assert str(info.value) == ("Downloads are switched off (HF_HUB_OFFLINE is set), and Hugging Face model "
                               "someone/some_model is not in the Hugging Face cache.")
    assert info.value.notes == (("downloads_off", {"variable": "HF_HUB_OFFLINE"}),
                                ("hf_not_cached", {"ref": "someone/some_model"}))
    said = in_language("zh", lambda: vw.said_notes(info.value.notes))
    assert said == ["下载已关闭（设置了环境变量 `HF_HUB_OFFLINE`）", "Hugging Face 缓存中没有模型 `someone/some_model`"]
