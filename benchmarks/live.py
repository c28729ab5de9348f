"""The live camera (issue 12): processed frames per second, on the server alone and end to end.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.live [--quick] [--seconds S] [--no-browser]

1. **Server alone.** ``LiveProcessor.process`` on 640 x 480 frames (the sample photo, shifted a
   few pixels each frame, with a little noise): resnet18 with random weights, 160 px model input,
   a 16-channel grid of ``layer2.0.conv1`` (the page's default layer, the middle of the tour), as
   many frames as it can for a few seconds after a warm-up. Target: at least 20 frames/s (twice the
   live target, so the server has room for the video codec and a second stream). A second row
   does the same for ``layer3.1.conv2`` (more of the network) as information. The details give
   where the milliseconds go: the model's preprocessing, the pass up to the layer, the composing,
   and what the WebRTC stream adds per frame (VP8 decode of a camera frame and the conversion to
   RGB, the conversion back and aiortc's own VP8 encoder on the composed picture).
2. **End to end.** ``streamlit run app.py`` (random weights, offline), Debian's Chromium with its
   fake camera (``--use-fake-device-for-media-stream --use-fake-ui-for-media-stream``), the Live
   source with the page's defaults, Start; after a warm-up the processed-frame counter the page
   shows (the processor's own count) is read twice, ``S`` seconds apart (10 by default). Target: at
   least 10 frames/s. The browser also counts the frames its video element presents
   (``requestVideoFrameCallback``): the stream repeats the last picture between processed frames.

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from .common import SAMPLE, Config, Result, Row, fmt_s, median, report

LAYER = "layer2.0.conv1"
DEEPER = "layer3.1.conv2"
SIZE = 160
SERVER_TARGET = 20.0
LIVE_TARGET = 10.0
CHROMIUM = "/usr/bin/chromium"
FAKE_CAMERA = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
STATS = re.compile(r"([\d.]+) frames per second processed.*?latency (\d+) ms on average.*?(\d+) frames processed, "
                   r"(\d+) dropped.*?(\d+) skipped", re.S)
COUNT_PRESENTED = """() => { const v = document.querySelector('video');
  window.__vzPresented = 0;
  const tick = () => { window.__vzPresented += 1; v.requestVideoFrameCallback(tick); };
  v.requestVideoFrameCallback(tick); }"""


def _frames(n: int = 8):
    import numpy as np
    from PIL import Image

    photo = np.asarray(Image.open(SAMPLE).convert("RGB").resize((656, 496)))
    rng = np.random.default_rng(0)
    frames = []
    for i in range(n):
        crop = photo[i: i + 480, 2 * i: 2 * i + 640].astype(np.int16)
        frames.append(np.clip(crop + rng.integers(-6, 7, crop.shape), 0, 255).astype(np.uint8))
    return frames


def _in_stream_thread(fn, threads: int | None):
    """``fn()`` in a new thread on ``threads`` torch threads, as the page runs a stream's frames
    (None: the process's setting)."""
    import threading

    from vizhooks.live import limit_torch_threads_here

    out: list = []
    errors: list[BaseException] = []

    def work():
        try:
            if threads is not None:
                limit_torch_threads_here(threads)
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001  (re-raised in the caller's thread)
            errors.append(exc)

    worker = threading.Thread(target=work, name="live-bench")
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
    return out[0]


def _server_rate(bundle, layer: str, seconds: float, threads: int | None = None) -> tuple[float, object]:
    from vizhooks.live import LiveProcessor, LiveSettings
    from vizhooks.page.sources.live import LIVE_THREADS

    return _in_stream_thread(lambda: _rate(LiveProcessor(bundle, LiveSettings(layer=layer, size=SIZE)), seconds),
                             LIVE_THREADS if threads is None else threads)


def _rate(live, seconds: float) -> tuple[float, object]:
    frames = _frames()
    for frame in frames[:3]:  # warm-up: allocator, oneDNN kernels for these shapes
        live.process(frame)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        live.process(frames[count % len(frames)])
        count += 1
    return count / (time.perf_counter() - start), live


def _breakdown(bundle, repeat: int) -> list[str]:
    """Milliseconds per frame of each step, median of ``repeat`` runs."""
    import fractions

    import av
    from aiortc.codecs import get_encoder
    from aiortc.rtcrtpparameters import RTCRtpCodecParameters

    from vizhooks.live import LiveProcessor, LiveSettings, compose
    from vizhooks.ops import model_lock

    live = LiveProcessor(bundle, LiveSettings(layer=LAYER, size=SIZE))
    frame = _frames(1)[0]
    composed = live.process(frame)
    x, seen = live.preprocess(frame)
    maps = live.last.maps
    encoder = get_encoder(RTCRtpCodecParameters(mimeType="video/VP8", clockRate=90000, payloadType=96))
    # a camera frame as the stream receives it: VP8, decoded by PyAV
    cam_encoder = av.CodecContext.create("libvpx", "w")
    cam_encoder.width, cam_encoder.height, cam_encoder.pix_fmt = 640, 480, "yuv420p"
    cam_encoder.time_base = fractions.Fraction(1, 30)
    camera = av.VideoFrame.from_ndarray(frame, format="rgb24").reformat(format="yuv420p")
    packets = [p for i in range(3) for p in cam_encoder.encode(_stamped(camera, i))]
    decoder = av.CodecContext.create("vp8", "r")
    pts = iter(range(1, 10**9))

    def run_forward():
        with model_lock(bundle.model):
            live._run_to_layer(x, LAYER)

    def encode():
        out = av.VideoFrame.from_ndarray(composed, format="rgb24")
        out.pts, out.time_base = next(pts) * 3000, fractions.Fraction(1, 90000)
        encoder.encode(out)

    def decode():
        for packet in packets[-1:]:
            for decoded in decoder.decode(packet):
                decoded.to_ndarray(format="rgb24")

    for packet in packets[:-1]:
        decoder.decode(packet)
    steps = {"preprocess (bundle.preprocess of a 640×480 frame)": lambda: live.preprocess(frame),
             f"pass up to {LAYER} (stops there)": run_forward,
             "compose (channel choice, colours, picture, labels)": lambda: compose(seen, maps, tuple(range(16)),
                                                                                   live.settings),
             "whole process()": lambda: live.process(frame),
             "stream: VP8 decode of a 640×480 camera frame + to RGB": decode,
             f"stream: to YUV + aiortc VP8 encode of the {composed.shape[1]}×{composed.shape[0]} picture": encode}
    lines = ["Where the milliseconds go (median of the step alone, same frame):", ""]
    for name, fn in steps.items():
        fn()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        lines.append(f"- {name}: {median(samples) * 1000:.1f} ms")
    lines += ["", "The stream decodes every camera frame and encodes a picture for every one (the last "
              "processed picture is sent again between processed frames), whatever the model's rate."]
    return lines


def _stamped(frame, i: int):
    import fractions

    frame.pts, frame.time_base = i, fractions.Fraction(1, 30)
    return frame


def _read_stats(page) -> tuple[float, float, int, int, int]:
    text = page.get_by_text(re.compile("frames per second processed")).first.inner_text(timeout=60_000)
    match = STATS.search(text)
    if match is None:
        raise RuntimeError(f"could not read the live numbers from the page: {text!r}")
    fps, latency, processed, dropped, skipped = match.groups()
    return float(fps), float(latency), int(processed), int(dropped), int(skipped)


def _end_to_end(seconds: float, warmup: float) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    from benchmarks import server
    from benchmarks.server import CHROMIUM_ARGS

    torch_home = tempfile.mkdtemp(prefix="vizhooks-bench-th-")
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": torch_home}
    env.pop("VIZHOOKS_WEIGHTS", None)
    env.pop("VIZHOOKS_ICE_SERVERS", None)
    log_dir = Path(tempfile.mkdtemp(prefix="vizhooks-bench-live-"))
    log = (log_dir / "streamlit.log").open("w")
    proc, url = server.start(env, log)
    try:
        server.wait_healthy(url, proc, limit=180.0)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + FAKE_CAMERA)
            try:
                page = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
                page.set_default_timeout(120_000)
                page.goto(url)
                page.get_by_test_id("stSidebar").get_by_text("Live", exact=True).click()
                page.wait_for_selector("iframe[title*='webrtc']")
                frame = next(f for f in page.frames if "streamlit_webrtc" in f.url)
                frame.get_by_role("button", name=re.compile("^start$", re.I)).click()
                frame.wait_for_function("() => { const v = document.querySelector('video');"
                                        " return !!v && v.readyState >= 2 && v.currentTime > 0; }")
                page.wait_for_timeout(warmup * 1000)
                frame.evaluate(COUNT_PRESENTED)
                _, _, before, _, _ = _read_stats(page)
                start = time.perf_counter()
                page.wait_for_timeout(seconds * 1000)
                fps_window, latency, after, dropped, skipped = _read_stats(page)
                while after <= before and time.perf_counter() - start < seconds + 60:  # a very busy machine
                    page.wait_for_timeout(1000)
                    fps_window, latency, after, dropped, skipped = _read_stats(page)
                elapsed = time.perf_counter() - start
                presented = frame.evaluate("() => window.__vzPresented")
                width, height = frame.evaluate("() => [document.querySelector('video').videoWidth,"
                                               " document.querySelector('video').videoHeight]")
                frame.get_by_role("button", name=re.compile("^stop$", re.I)).click()
            finally:
                browser.close()
    finally:
        server.stop(proc)
        log.close()
        shutil.rmtree(torch_home, ignore_errors=True)
        shutil.rmtree(log_dir, ignore_errors=True)
    # the page's numbers refresh once a second: the counts are up to a second old at both ends
    return {"processed_fps": (after - before) / elapsed, "window_fps": fps_window, "latency_ms": latency,
            "presented_fps": presented / elapsed, "dropped": dropped, "skipped": skipped, "seconds": elapsed,
            "width": width, "height": height}


def run(cfg: Config, browser: bool = True, seconds: float | None = None) -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.ops import hook_count
    from vizhooks.page.sources.live import LIVE_THREADS

    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    alone_s = 0.5 if cfg.quick else 5.0
    rows: list[Row] = []
    rate, live = _server_rate(bundle, LAYER, alone_s)
    s = live.stats()
    case = f"server alone: resnet18 at {SIZE} px, 16-channel grid of {LAYER}, 640×480 frames"
    rows.append(Row(bench="live", case=case,
                    measured=f"{rate:.1f} frames/s (latency {s.latency_ms:.0f} ms per frame)",
                    target=f"≥ {SERVER_TARGET:.0f} frames/s", status="PASS" if rate >= SERVER_TARGET else "MISS",
                    numbers={"fps": rate, "latency_ms": s.latency_ms}))
    deeper, live_deeper = _server_rate(bundle, DEEPER, alone_s)
    rows.append(Row(bench="live", case=f"server alone: the same with {DEEPER}",
                    measured=f"{deeper:.1f} frames/s (latency {live_deeper.stats().latency_ms:.0f} ms per frame)",
                    numbers={"fps": deeper, "latency_ms": live_deeper.stats().latency_ms}))
    height, width = _in_stream_thread(lambda: live.process(_frames(1)[0]).shape[:2], LIVE_THREADS)
    details = [f"Server alone: {alone_s:.1f} s of frames after 3 warm-up frames, in a thread on {LIVE_THREADS} torch "
               f"thread(s) as the page runs a stream; 16 maps of {live.last.maps.shape[1]}×{live.last.maps.shape[2]} "
               f"beside the picture make a {width}×{height} picture.", ""]
    two, _ = _server_rate(bundle, LAYER, alone_s, threads=torch.get_num_threads())
    details += [f"On the process's {torch.get_num_threads()} torch threads instead of the stream's "
                f"{LIVE_THREADS}: {two:.1f} frames/s alone (why the stream uses {LIVE_THREADS}: "
                f"vizhooks.live.limit_torch_threads_here).", ""]
    details += _in_stream_thread(lambda: _breakdown(bundle, 3 if cfg.quick else 15), LIVE_THREADS)
    if hook_count(bundle.model) != 0:
        raise RuntimeError("the live processor left hooks behind")

    case = f"end to end: Chromium fake camera → page → {LAYER} grid at {SIZE} px → browser"
    if browser and not Path(CHROMIUM).exists():
        rows.append(Row(bench="live", case=case, measured=f"skipped: {CHROMIUM} missing (make chromium)",
                        status="skipped: no chromium"))
    elif browser:
        # quick: long enough for frames to be counted (the loop below waits for the first if need be)
        window = seconds if seconds is not None else (1.5 if cfg.quick else 10.0)
        e2e = _end_to_end(window, warmup=1.0 if cfg.quick else 5.0)
        fps = e2e["processed_fps"]
        rows.append(Row(bench="live", case=case,
                        measured=f"{fps:.1f} processed frames/s over {e2e['seconds']:.0f} s "
                                 f"(server latency {e2e['latency_ms']:.0f} ms; the video shows "
                                 f"{e2e['presented_fps']:.1f} frames/s)",
                        target=f"≥ {LIVE_TARGET:.0f} frames/s", status="PASS" if fps >= LIVE_TARGET else "MISS",
                        numbers={"processed_fps": fps, "latency_ms": e2e["latency_ms"],
                                 "presented_fps": e2e["presented_fps"]}))
        details += ["", f"End to end: {e2e['seconds']:.1f} s measured after the warm-up; processed frames counted "
                    f"by the server's processor (read from the page, refreshed every second); the page's own "
                    f"2-second window said {e2e['window_fps']:.1f} frames/s at the end; {e2e['skipped']:.0f} "
                    f"frames skipped while the previous one ran, {e2e['dropped']:.0f} dropped for another "
                    f"session; video {e2e['width']:.0f}×{e2e['height']:.0f}, {fmt_s(1 / max(fps, 1e-9))} "
                    f"between processed frames."]
    frames = _frames(4)
    return Result(rows=rows, details=details, profile_thread="live-bench",
                  profilers={rows[0].case: lambda: _in_stream_thread(lambda: [live.process(f) for f in frames * 5],
                                                                     LIVE_THREADS)})


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float, default=None, help="end-to-end measuring window (default 10)")
    parser.add_argument("--no-browser", action="store_true", help="the server rows only")
    args = parser.parse_args(argv)
    os.environ.setdefault("VIZHOOKS_OFFLINE", "1")
    result = run(Config(repeat=1, quick=args.quick, profile=False), browser=not args.no_browser,
                 seconds=args.seconds)
    report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
