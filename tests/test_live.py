"""The live camera (vizhooks.live, vizhooks.page.sources.live): what a frame turns into, checked against
independent answers (torchvision's create_feature_extractor for the maps, matplotlib's colormap
for the colours, the model bundle's own preprocess for the input); the pass stops at the layer,
leaves no hook and no changed state; frames are dropped, never queued, while another session
holds the model; settings apply from the next frame. Then the page: ICE servers (none unless
asked for: no public STUN server), the camera note for plain-HTTP hosts, the WebRTC frame
callback, and the Live source rendered by AppTest in both languages.

Random weights, frames of 120 x 160 pixels at 64 px model input: fast on two CPU cores."""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import threading
import time

import matplotlib
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image
from streamlit.testing.v1 import AppTest
from torch import nn
from torch.nn.modules.module import register_module_forward_hook
from torchvision.models.feature_extraction import create_feature_extractor

import vizhooks as vz
from tests.helpers import ROOT, allowed_names, count_hooks, english_in, open_page
from vizhooks.live import MAX_HEIGHT, MAX_WIDTH, LiveProcessor, LiveSettings, grid_geometry, limit_torch_threads_here
from vizhooks.models.architectures import build
from vizhooks.models.images import InputSpec

LAYER = "layer2.0.conv1"  # 128 channels, 1/8 of the input
SIZE = 64


@pytest.fixture(scope="module")
def bundle():
    return vz.load_model("resnet18", weights="none", device="cpu")


def _frame(seed: int = 0, hw: tuple[int, int] = (120, 160)) -> np.ndarray:
    """A camera-like frame: the sample photo, shifted by ``seed`` pixels, plus a little noise."""
    photo = Image.open(ROOT / "sample_images" / "chelsea.jpg").convert("RGB").resize((hw[1] + 16, hw[0] + 16))
    arr = np.asarray(photo)[seed % 16: seed % 16 + hw[0], seed % 16: seed % 16 + hw[1]].astype(np.int16)
    noise = np.random.default_rng(seed).integers(-8, 9, arr.shape)
    return np.clip(arr + noise, 0, 255).astype(np.uint8)


def _extract(model: nn.Module, layer: str, x: torch.Tensor) -> torch.Tensor:
    """The layer's output in an ordinary whole pass, by torchvision's graph extractor."""
    extractor = create_feature_extractor(model, return_nodes={layer: "out"})
    with torch.no_grad():
        return extractor(x)["out"]


def _unit(maps: np.ndarray) -> np.ndarray:
    lo = maps.min(axis=(1, 2), keepdims=True)
    hi = maps.max(axis=(1, 2), keepdims=True)
    return (maps - lo) / np.where(hi > lo, hi - lo, 1)


# ---------------------------------------------------------------------------------------------
# the processor


@pytest.mark.parametrize("mode", ["grid", "overlay"])
@pytest.mark.parametrize("hw", [(120, 160), (480, 640), (720, 1280), (160, 90)])
def test_output_is_an_encodable_rgb_picture(bundle, mode, hw):
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, mode=mode, size=SIZE))
    out = live.process(_frame(hw=hw))
    assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
    assert out.shape[0] <= MAX_HEIGHT and out.shape[1] <= MAX_WIDTH
    assert out.shape[0] % 2 == 0 and out.shape[1] % 2 == 0  # what a 4:2:0 video encoder wants
    if mode == "grid":  # the picture and 16 tiles side by side, using the width
        assert out.shape[1] >= min(MAX_WIDTH, hw[1]) * 0.8


def test_input_is_the_bundles_own_preprocess(bundle):
    frame = _frame(3)
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    live.process(frame)
    torch.testing.assert_close(live.last.x, bundle.preprocess(Image.fromarray(frame), SIZE), rtol=0, atol=0)


def test_maps_are_the_layer_output_of_an_ordinary_pass(bundle):
    frame = _frame(1)
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    live.process(frame)
    want = _extract(bundle.model, LAYER, bundle.preprocess(Image.fromarray(frame), SIZE))[0]
    assert live.last.channels == tuple(range(16))
    np.testing.assert_allclose(live.last.maps, want[:16].numpy(), rtol=1e-4, atol=1e-5)


def test_classify_names_the_frames_top_class_and_keeps_the_same_maps(bundle):
    """A taught model on the live camera: each frame's top class (a whole ordinary pass), and the
    layer's maps exactly as without classifying; no hook left, the stats say the class."""
    frame = _frame(2)
    plain = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    plain.process(frame)
    assert plain.stats().top is None
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE, classify=True))
    live.process(frame)
    with torch.no_grad():
        probs = bundle.model(bundle.preprocess(Image.fromarray(frame), SIZE)).softmax(1)[0]
    index, probability = live.stats().top
    assert index == int(probs.argmax()) and probability == pytest.approx(float(probs.max()), rel=1e-4)
    np.testing.assert_allclose(live.last.maps, plain.last.maps, rtol=1e-5, atol=1e-6)
    assert count_hooks(bundle.model) == 0
    with pytest.raises(ValueError, match="classify must be True or False"):
        LiveSettings(layer=LAYER, classify="yes")


def test_grid_tiles_are_the_colormap_of_each_channel(bundle):
    """Every activation cell of every tile, against matplotlib's colormap of the extractor's
    maps stretched to their own min..max (one of 252 levels apart at most)."""
    frame = _frame(2)
    layer = "layer3.0.conv1"  # 4 x 6 cells at 64 px: tiles enlarge them
    live = LiveProcessor(bundle, LiveSettings(layer=layer, size=SIZE, cmap="magma"))
    out = live.process(frame).astype(int)
    maps = _extract(bundle.model, layer, bundle.preprocess(Image.fromarray(frame), SIZE))[0, :16].numpy()
    want = matplotlib.colormaps["magma"](_unit(maps), bytes=True)[..., :3].astype(int)
    geo = grid_geometry(frame.shape[:2], maps.shape[1:], 16)
    th, tw = geo.tile
    h, w = maps.shape[1:]
    checked = 0
    for i, (top, left) in enumerate(geo.tiles):
        for y in range(h // 2, h):  # the lower half: the channel number sits top-left
            for x in range(w):
                pixel = out[top + int((y + 0.5) * th / h), left + int((x + 0.5) * tw / w)]
                assert np.abs(pixel - want[i, y, x]).max() <= 4, (i, y, x, pixel, want[i, y, x])
                checked += 1
    assert checked >= 16 * 2 * 6
    # the camera picture sits on the left, resized, not recoloured
    ptop, pleft, ph, pw = geo.picture
    shown = out[ptop: ptop + ph, pleft: pleft + pw]
    resized = np.asarray(Image.fromarray(frame).resize((pw, ph), Image.Resampling.BILINEAR)).astype(int)
    assert np.abs(shown - resized).mean() < 4


def test_overlay_blends_one_upsampled_channel(bundle):
    frame = _frame(4, hw=(240, 320))
    layer, channel = "layer1.0.conv1", 7
    x = bundle.preprocess(Image.fromarray(frame), SIZE)
    maps = _extract(bundle.model, layer, x)[0, channel:channel + 1]
    live = LiveProcessor(bundle, LiveSettings(layer=layer, mode="overlay", channel=channel, size=SIZE, opacity=0.0))
    plain = live.process(frame).astype(int)
    assert live.last.channels == (channel,)
    assert plain.shape == frame.shape
    below = slice(40, None)  # under the label in the top-left corner
    np.testing.assert_array_equal(plain[below], frame[below])
    live.settings = dataclasses.replace(live.settings, opacity=1.0)
    heat = live.process(frame).astype(int)
    unit = _unit(maps.numpy())
    up = F.interpolate(torch.from_numpy(unit)[None], size=frame.shape[:2], mode="bilinear", align_corners=False)
    want = matplotlib.colormaps["viridis"](up[0, 0].numpy(), bytes=True)[..., :3].astype(int)
    diff = np.abs(heat[below] - want[below])
    assert diff.mean() < 2 and np.percentile(diff, 99) <= 8, (diff.mean(), np.percentile(diff, 99))
    live.settings = dataclasses.replace(live.settings, opacity=0.25)
    mixed = live.process(frame).astype(int)
    assert np.abs(mixed[below] - (0.75 * plain[below] + 0.25 * heat[below])).max() <= 1


def test_the_pass_stops_at_the_layer(bundle):
    names = {m: n for n, m in bundle.model.named_modules()}
    ran: list[str] = []
    handle = register_module_forward_hook(lambda m, a, o: ran.append(names.get(m, "?")))
    try:
        LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE)).process(_frame())
    finally:
        handle.remove()
    assert LAYER in ran and "layer1.1.conv2" in ran
    later = [n for n in ran if n.startswith(("layer2.0.bn1", "layer2.1", "layer3", "layer4", "avgpool", "fc"))]
    assert later == [] and ran[-1] == LAYER


def test_no_hook_left_after_success_or_error(bundle, monkeypatch):
    model = bundle.model
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    live.process(_frame())
    assert count_hooks(model) == 0

    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(model.layer1[0].conv1, "forward", broken)  # fails before the hooked layer
    with pytest.raises(RuntimeError, match="boom"):
        live.process(_frame())
    assert count_hooks(model) == 0
    monkeypatch.undo()
    live.settings = LiveSettings(layer=LAYER, mode="overlay", channel=500, size=SIZE)
    with pytest.raises(ValueError, match=r"Channel 500 is out of range .* 128 channels \(0 to 127\)"):
        live.process(_frame())
    assert count_hooks(model) == 0
    # the lock was released every time: another thread gets it at once
    got = []
    t = threading.Thread(target=lambda: got.append(vz.ops.model_lock(model).acquire(timeout=10)) or
                         vz.ops.model_lock(model).release())
    t.start()
    t.join(30)
    assert got == [True]


def test_unknown_layer_says_what_exists(bundle):
    live = LiveProcessor(bundle, LiveSettings(layer="layer2.0.conv9", size=SIZE))
    with pytest.raises(vz.UnknownLayerError, match="layer2.0.conv1"):
        live.process(_frame())
    live.settings = LiveSettings(layer="all", size=SIZE)
    with pytest.raises(ValueError, match="one layer"):
        live.process(_frame())
    assert count_hooks(bundle.model) == 0


def test_model_state_is_untouched():
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    model = bundle.model
    model.train()  # the worst case: batch norm would update its running statistics
    model.layer1.eval()
    model.conv1.weight.requires_grad_(False)
    model.fc.weight.grad = torch.ones_like(model.fc.weight)
    training = {n: m.training for n, m in model.named_modules()}
    grads = {n: (p.requires_grad, None if p.grad is None else p.grad.clone()) for n, p in model.named_parameters()}
    state = {k: v.clone() for k, v in model.state_dict().items()}
    LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE)).process(_frame())
    assert {n: m.training for n, m in model.named_modules()} == training
    for n, p in model.named_parameters():
        assert p.requires_grad == grads[n][0], n
        assert (p.grad is None) == (grads[n][1] is None), n
    torch.testing.assert_close(model.fc.weight.grad, grads["fc.weight"][1])
    for k, v in model.state_dict().items():
        torch.testing.assert_close(v, state[k], rtol=0, atol=0, msg=k)


def test_frames_are_dropped_not_queued_while_another_session_holds_the_model(bundle):
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    first = _frame(5)
    held, release = threading.Event(), threading.Event()

    def other_session():
        with vz.ops.model_lock(bundle.model):
            held.set()
            release.wait(60)  # bounded: a failing test never hangs the run

    other = threading.Thread(target=other_session, daemon=True)
    other.start()
    try:
        assert held.wait(30)
        start = time.perf_counter()
        out = live.process(first)  # before any frame was processed: the frame itself comes back
        again = live.process(_frame(6))
        elapsed = time.perf_counter() - start
        assert out is first and again is not None
        assert elapsed < 10  # returned without waiting for the model (which stays held for 60 s)
        s = live.stats()
        assert (s.dropped, s.processed) == (2, 0)
    finally:
        release.set()
        other.join(30)
    composed = live.process(first)
    assert live.stats().processed == 1
    held.clear()
    release.clear()
    other = threading.Thread(target=other_session, daemon=True)
    other.start()
    try:
        assert held.wait(30)
        assert live.process(_frame(7)) is composed  # the last picture is sent again
        assert live.stats().dropped == 3
    finally:
        release.set()
        other.join(30)


@pytest.mark.slow
def test_settings_changed_between_frames_apply_to_the_next(bundle):
    frame = _frame(8)
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    grid = live.process(frame)
    assert live.last.layer == LAYER and live.last.channels == tuple(range(16))
    live.settings = LiveSettings(layer="layer3.0.conv2", mode="overlay", channel=5, size=96, cmap="gray")
    overlay = live.process(frame)
    assert live.last.layer == "layer3.0.conv2" and live.last.channels == (5,)
    assert live.last.x.shape[-2] == 96 and overlay.shape != grid.shape
    live.settings = LiveSettings(layer=LAYER, channels="top", size=SIZE)
    live.process(frame)
    means = _extract(bundle.model, LAYER, live.last.x)[0].mean(dim=(1, 2))
    assert list(live.last.channels) == torch.argsort(means, descending=True, stable=True)[:16].tolist()
    live.settings = LiveSettings(layer=LAYER, channels=[9, 3, 100], size=SIZE)
    live.process(frame)
    assert live.last.channels == (9, 3, 100)
    with pytest.raises(TypeError):
        live.settings = {"layer": LAYER}


def test_settings_swapped_by_another_thread_mid_stream(bundle):
    """The page thread swaps settings while the worker processes: every frame sees one whole
    settings object (its layer and its channel count agree), and no frame fails."""
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    choices = [LiveSettings(layer=LAYER, size=SIZE), LiveSettings(layer="conv1", mode="overlay", channel=63, size=SIZE)]
    stop, errors = threading.Event(), []

    def page_thread():
        i = 0
        while not stop.is_set():
            live.settings = choices[i % 2]
            i += 1
            time.sleep(0.001)

    t = threading.Thread(target=page_thread, daemon=True)
    t.start()
    try:
        for seed in range(12):
            try:
                live.process(_frame(seed))
            except Exception as exc:  # noqa: BLE001  (any failure is the finding)
                errors.append(exc)
            last = live.last
            assert (last.layer, len(last.channels)) in ((LAYER, 16), ("conv1", 1))
    finally:
        stop.set()
        t.join(30)
    assert errors == []


def test_stats_are_sane(bundle):
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE), window_s=30)
    s = live.stats()
    assert (s.fps, s.processed, s.dropped, s.skipped, s.running) == (0.0, 0, 0, 0, False)
    start = time.perf_counter()
    for seed in range(5):
        live.process(_frame(seed))
    elapsed = time.perf_counter() - start
    live.note_skipped(3)
    s = live.stats()
    assert s.processed == 5 and s.skipped == 3 and s.dropped == 0 and s.running
    # 4 intervals between 5 frames, all inside the elapsed time
    assert 4 / elapsed <= s.fps < 1e4
    assert 0 < s.last_latency_ms <= elapsed * 1000 and 0 < s.latency_ms <= elapsed * 1000
    assert s.latency_ms * 5 <= elapsed * 1000 * 1.01
    live.stream_ended()
    s = live.stats()
    assert not s.running and s.fps == 0.0 and s.processed == 5


def test_bad_settings_and_frames_are_refused_with_a_sentence(bundle):
    for bad, match in [(dict(channels="all"), "first"), (dict(channels=list(range(17))), "1 to 16"),
                       (dict(channels=[1, -2]), "channel indices"), (dict(mode="mosaic"), "grid"),
                       (dict(channel=-1), "channel"), (dict(cmap="nope"), "colormap"),
                       (dict(size=8), "size"), (dict(opacity=1.5), "opacity"), (dict(layer=""), "layer")]:
        with pytest.raises(ValueError, match=match):
            LiveSettings(**{"layer": LAYER, **bad})
    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    for frame in (np.zeros((10, 10), np.uint8), np.zeros((10, 10, 3), np.float32), np.zeros((1, 10, 3), np.uint8)):
        with pytest.raises(ValueError, match="frame"):
            live.process(frame)
    with pytest.raises(TypeError):
        LiveProcessor(bundle, {"layer": LAYER})


def test_fixed_size_models_see_the_centre_square(bundle):
    square = dataclasses.replace(bundle, input=InputSpec(fixed_size=64))
    frame = _frame(9, hw=(120, 200))
    live = LiveProcessor(square, LiveSettings(layer=LAYER, mode="overlay", size=160))
    out = live.process(frame)
    assert tuple(live.last.x.shape) == (1, 3, 64, 64)
    torch.testing.assert_close(live.last.x, square.preprocess(Image.fromarray(frame), 160), rtol=0, atol=0)
    assert out.shape[:2] == (120, 120)  # the centre square of the frame, where the map belongs


@pytest.mark.parametrize("spec,seen", [
    (InputSpec(fixed_size=64, squash=True, resize_rule="transformers"), (120, 200)),  # squashed: the whole frame
    (InputSpec(fixed_size=64, resize_side=80, resize_rule="transformers"), (96, 96)),  # crop_pct 0.8: 64 of 80
])
def test_the_seen_part_is_where_the_models_input_comes_from(bundle, spec, seen):
    """The picture under the map is the part of the frame the model's input was cut from: a Hugging
    Face ViT squashes the whole frame; a ConvNeXt (crop_pct) crops inside the centre square."""
    frame = _frame(9, hw=(120, 200))
    live = LiveProcessor(dataclasses.replace(bundle, input=spec), LiveSettings(layer=LAYER, mode="overlay", size=160))
    assert live.process(frame).shape[:2] == seen


def test_the_input_goes_to_the_bundles_device(bundle):
    """The CUDA path, without CUDA: a copy of the model on the meta device (shapes only) must
    get its input there and give its output there."""
    meta_model = build("resnet18").to("meta")
    meta = dataclasses.replace(bundle, model=meta_model.eval(), device=torch.device("meta"))
    live = LiveProcessor(meta, LiveSettings(layer=LAYER, size=SIZE))
    x, _ = live.preprocess(_frame())
    seen = []
    handle = meta_model.conv1.register_forward_pre_hook(lambda m, args: seen.append(args[0].device))
    try:
        out = live._run_to_layer(x, LAYER)
    finally:
        handle.remove()
    assert seen == [torch.device("meta")] and out.device.type == "meta"
    assert tuple(out.shape) == (1, 128, 8, 11)
    assert count_hooks(meta_model) == 0


# ---------------------------------------------------------------------------------------------
# the page's pieces


def test_ice_servers_default_to_none_and_contact_nobody():
    from aiortc.rtcicetransport import connection_kwargs
    from streamlit_webrtc.component import _resolve_server_rtc_configuration, enhance_frontend_rtc_configuration

    from vizhooks.page.sources.live import ice_servers

    assert ice_servers(None) == [] and ice_servers("  ") == []
    config = {"iceServers": ice_servers(None)}
    # The browser gets the empty list as it is (not streamlit-webrtc's Google STUN default) ...
    assert enhance_frontend_rtc_configuration(config)["iceServers"] == []
    # ... and so does aiortc, which otherwise falls back to stun.l.google.com itself.
    server = _resolve_server_rtc_configuration(config)
    assert server.iceServers == [] and connection_kwargs(server.iceServers) == {}


def test_ice_servers_from_the_environment():
    from aiortc.rtcicetransport import connection_kwargs
    from streamlit_webrtc.component import _resolve_server_rtc_configuration

    from vizhooks.page.sources.live import ice_servers

    raw = ('[{"urls": ["stun:stun.example.org:3478"]}, '
           '{"urls": "turn:turn.example.org:3478", "username": "u", "credential": "p"}]')
    servers = ice_servers(raw)
    assert servers[1]["username"] == "u"
    kwargs = connection_kwargs(_resolve_server_rtc_configuration({"iceServers": servers}).iceServers)
    assert kwargs["stun_server"] == ("stun.example.org", 3478)
    assert kwargs["turn_server"] == ("turn.example.org", 3478) and kwargs["turn_password"] == "p"
    for bad, match in [("{", "not valid JSON"), ('{"urls": "stun:x"}', "JSON list"), ('[{"url": "stun:x"}]', "urls"),
                       ('[{"urls": "http://x"}]', "stun:"), ('[{"urls": []}]', "stun:"), ("[1]", "urls")]:
        with pytest.raises(ValueError, match=match):
            ice_servers(bad)


@pytest.mark.parametrize("url, note", [
    ("http://localhost:8501/", None), ("http://127.0.0.1:8501/", None), ("http://[::1]:8501/", None),
    ("http://app.localhost:8501/", None), ("https://class.example.org/", None), (None, None),
    ("http://192.168.1.20:8501/", ("192.168.1.20", "http://192.168.1.20:8501")),
    ("http://lab-server:8501/vizhooks", ("lab-server", "http://lab-server:8501")),
])
def test_camera_note_only_for_plain_http_away_from_localhost(url, note):
    from vizhooks.page.sources.live import insecure_origin

    assert insecure_origin(url) == note


def _in_a_worker(callback, frames):
    """The callback as streamlit-webrtc runs it: in its own thread (which it sets to one torch
    thread for good), with an event loop."""
    out = []
    worker = threading.Thread(target=lambda: out.append(asyncio.run(callback(frames))))
    worker.start()
    worker.join(60)
    return out[0]


def test_frame_callback_counts_skipped_frames_and_turns_errors_into_sentences(bundle):
    import av

    from vizhooks.page.sources.live import _frames_callback, _Stream

    stream = _Stream(LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE)))
    callback = _frames_callback(stream)
    frames = [av.VideoFrame.from_ndarray(_frame(i), format="rgb24") for i in range(3)]
    out = _in_a_worker(callback, frames)
    assert len(out) == 1 and out[0].width > frames[0].width and stream.error is None
    s = stream.processor.stats()
    assert (s.processed, s.skipped) == (1, 2)
    stream.processor.settings = LiveSettings(layer="layer9", size=SIZE)
    out = _in_a_worker(callback, frames[:1])
    assert out == frames[:1]  # the camera picture comes back unchanged
    assert stream.error.startswith("The live view cannot show this:") and "layer9" in stream.error
    assert count_hooks(bundle.model) == 0


# ---------------------------------------------------------------------------------------------
# the page (AppTest)


@pytest.fixture
def streamer_calls(monkeypatch) -> list[dict]:
    """What the page passes to streamlit-webrtc, call by call (the real component still runs)."""
    import streamlit_webrtc

    calls: list[dict] = []
    real = streamlit_webrtc.webrtc_streamer

    def recording(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(streamlit_webrtc, "webrtc_streamer", recording)
    return calls


@pytest.fixture
def page(monkeypatch, streamer_calls):
    # streamlit-webrtc asks the Streamlit runtime for the session, which AppTest only mocks:
    # without a session it works as in a bare run (no rerun bookkeeping).
    monkeypatch.setattr("streamlit_webrtc.component.get_this_session_info", lambda: None)
    monkeypatch.delenv("VIZHOOKS_ICE_SERVERS", raising=False)

    def live_page(lang: str) -> AppTest:
        return open_page(lang=lang).radio(key="source").set_value("live").run()

    return live_page


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_live_source_renders(page, streamer_calls, lang):
    from streamlit_webrtc import WebRtcMode

    at = page(lang)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    call = streamer_calls[-1]
    assert call["key"] == "live" and call["mode"] == WebRtcMode.SENDRECV and call["async_processing"]
    assert call["rtc_configuration"] == {"iceServers": []}  # explicit: nobody's STUN server
    assert call["media_stream_constraints"] == {"video": True, "audio": False}
    assert call["translations"]["start"] == ("Start" if lang == "en" else "开始")
    intro = at.markdown[0].value
    assert ("Live camera" if lang == "en" else "实时摄像头") in intro and "resnet18" in intro
    assert at.selectbox(key="live_layer").value == "layer2.0.conv1"  # the middle of the tour
    assert at.session_state["_live_stream"].processor.settings.layer == "layer2.0.conv1"
    at.radio(key="live_mode").set_value("overlay").run()
    assert not at.exception
    at.number_input(key="live_channel").set_value(63).run()
    settings = at.session_state["_live_stream"].processor.settings
    assert (settings.mode, settings.channel) == ("overlay", 63)
    # the widgets swap the settings of the one processor; the callback is the same stream's
    assert len({id(c["queued_video_frames_callback"].__closure__[0].cell_contents) for c in streamer_calls}) == 1
    if lang == "zh":
        allowed = allowed_names(at) | set(at.selectbox(key="live_layer").options)
        assert english_in(at, allowed) == []


def test_the_stream_thread_runs_on_one_torch_thread_and_nobody_else(bundle):
    """The frame callback puts its own (worker) thread on one torch thread: the codecs and the
    browser need the other cores. This thread, and threads started later, keep the process's
    setting."""
    import av

    from vizhooks.page.sources.live import _frames_callback, _Stream

    default = torch.get_num_threads()  # 2 on our machines; with 1 the test still holds, weaker
    inside: list[tuple[str, int]] = []
    handle = bundle.model.conv1.register_forward_pre_hook(
        lambda m, a: inside.append((threading.current_thread().name, torch.get_num_threads())))
    stream = _Stream(LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE)))
    frame = av.VideoFrame.from_ndarray(_frame(), format="rgb24")
    worker = threading.Thread(target=lambda: [asyncio.run(_frames_callback(stream)([frame])) for _ in range(2)],
                              name="webrtc-worker")  # what _in_a_worker does, twice in one thread
    try:
        worker.start()
        worker.join(60)
        LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE)).process(_frame())  # in this thread
    finally:
        handle.remove()
    assert inside == [("webrtc-worker", 1), ("webrtc-worker", 1), (threading.current_thread().name, default)]
    assert torch.get_num_threads() == default
    later = []
    t = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    t.start()
    t.join(30)
    assert later == [default]
    with pytest.raises(ValueError, match="threads"):
        limit_torch_threads_here(0)


def test_ice_servers_from_the_environment_reach_the_stream_or_a_sentence(page, streamer_calls, monkeypatch):
    monkeypatch.setenv("VIZHOOKS_ICE_SERVERS", '[{"urls": "turn:turn.example.org:3478", "username": "u", '
                                               '"credential": "p"}]')
    at = page("en")
    assert not at.exception and not [w for w in at.warning if "VIZHOOKS_ICE_SERVERS" in w.value]
    assert streamer_calls[-1]["rtc_configuration"]["iceServers"][0]["urls"] == "turn:turn.example.org:3478"
    monkeypatch.setenv("VIZHOOKS_ICE_SERVERS", "stun:nope")
    at = page("en")
    assert not at.exception
    assert [w for w in at.warning if w.value.startswith("VIZHOOKS_ICE_SERVERS is not valid JSON")
            and "local network" in w.value]
    assert streamer_calls[-1]["rtc_configuration"] == {"iceServers": []}


def test_a_live_failure_on_the_chinese_page_is_a_chinese_sentence(bundle):
    """The worker thread speaks the page's language (taken when the stream's callback was made)."""
    import av

    from vizhooks.page.sources.live import _frames_callback, _Stream
    from vizhooks.page.texts import ZH, set_language

    stream = _Stream(LiveProcessor(bundle, LiveSettings(layer="layer9", size=SIZE)))
    set_language("zh")
    try:
        callback = _frames_callback(stream)
    finally:
        set_language("en")
    _in_a_worker(callback, [av.VideoFrame.from_ndarray(_frame(0), format="rgb24")])
    # the unknown layer is said in Chinese, with the names difflib finds close to it, listed as Chinese lists them
    close = difflib.get_close_matches("layer9", [n for n, _ in bundle.model.named_modules() if n], n=4, cutoff=0.6)
    reason = ZH["err_unknown_layer_close"].format(name="layer9", close="、".join(close))
    assert close and stream.error == ZH["live_failed"].format(reason=reason)
