"""The Live source in a real browser: Chromium's fake camera streams to the page over WebRTC
(localhost, no ICE server), the maps update while it plays, and Stop releases the camera."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .conftest import new_page

pytestmark = pytest.mark.browser

#: Chromium's test camera (a moving pattern and a clock) and no permission prompt.
#: Every getUserMedia stream of every frame (the component runs in an iframe), so the test can
#: see whether the camera was released.
RECORD_STREAMS = """(() => {
  const media = navigator.mediaDevices;
  if (!media || !media.getUserMedia) return;
  const original = media.getUserMedia.bind(media);
  window.__vzStreams = [];
  media.getUserMedia = async (constraints) => {
    const stream = await original(constraints);
    window.__vzStreams.push(stream);
    return stream;
  };
})();"""
PLAYING = """() => { const v = document.querySelector('video');
  return !!v && !!v.srcObject && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0.5; }"""
RELEASED = """() => (window.__vzStreams || []).length > 0 &&
  window.__vzStreams.every(s => s.getTracks().every(t => t.readyState === 'ended'))"""
STEP_MS = 60_000


@pytest.fixture
def camera_page(camera_browser):
    pg = new_page(camera_browser, 1200, RECORD_STREAMS, 120_000)
    yield pg
    pg.context.close()


def _component(page):
    """The streamlit-webrtc iframe, as a Playwright Frame."""
    page.wait_for_selector("iframe[title*='webrtc']", timeout=STEP_MS)
    for frame in page.frames:
        if "streamlit_webrtc" in frame.url:
            return frame
    raise AssertionError(f"no streamlit-webrtc frame among {[f.url for f in page.frames]}")


def test_live_camera_updates_the_maps_and_stop_releases_it(server, camera_page, artifacts):
    page = camera_page
    page.goto(server)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Live", exact=True).click()
    expect(page.get_by_text("Live camera.", exact=False)).to_be_visible(timeout=STEP_MS)
    expect(page.get_by_text(re.compile("Not streaming"))).to_be_visible(timeout=STEP_MS)

    frame = _component(page)
    frame.get_by_role("button", name=re.compile("^start$", re.I)).click(timeout=STEP_MS)
    frame.wait_for_function(PLAYING, timeout=STEP_MS)
    video = frame.locator("video")
    first = video.screenshot(timeout=STEP_MS)
    page.wait_for_timeout(1000)
    second = video.screenshot(timeout=STEP_MS)
    (artifacts / "live-1.png").write_bytes(first)
    (artifacts / "live-2.png").write_bytes(second)
    assert first != second, "the live picture did not change in a second"
    # the server's own account: frames were processed and measured
    stats = page.get_by_text(re.compile(r"frames per second processed"))
    expect(stats).to_be_visible(timeout=STEP_MS)
    expect(stats).to_contain_text(re.compile(r"[1-9]\d* frames processed"), timeout=STEP_MS)
    # the output is the composed picture (camera + 16 tiles), not the camera sent back
    width, height = frame.evaluate("() => [document.querySelector('video').videoWidth,"
                                   " document.querySelector('video').videoHeight]")
    assert width > 2 * height, (width, height)
    assert page.get_by_test_id("stException").count() == 0

    # a setting changes while it plays: the same stream (one camera, one connection) now shows one
    # channel over the whole picture
    page.get_by_text("One channel over the picture", exact=True).click()
    # (the component may draw its video element anew meanwhile: none for a moment)
    frame.wait_for_function("() => document.querySelector('video')?.videoWidth === 640", timeout=STEP_MS)
    assert frame.evaluate("() => window.__vzStreams.length") == 1
    frame.wait_for_function(PLAYING, timeout=STEP_MS)

    frame.get_by_role("button", name=re.compile("^stop$", re.I)).click(timeout=STEP_MS)
    frame.wait_for_function(RELEASED, timeout=STEP_MS)  # every camera track ended
    frame.wait_for_function("() => { const v = document.querySelector('video'); return !v || !v.srcObject; }",
                            timeout=STEP_MS)
    expect(page.get_by_text(re.compile("Not streaming"))).to_be_visible(timeout=STEP_MS)
    assert page.get_by_test_id("stException").count() == 0
