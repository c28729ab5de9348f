"""The Audit view in a real browser finds a planted shortcut (issue 30's Clever Hans): a folder whose "dog"
photos all carry a red sticker in the bottom-right corner, and an operator's model (a resnet18 checkpoint
named in ``VIZHOOKS_MODELS``) that really answers "dog" from the sticker. Opened by a link, the view audits
the operator's folder (``VIZHOOKS_AUDIT_DIRS``) on a click and shows the shortcut for "dog" with the heat of
its clusters in the sticker's corner, and none for "cat". Then a second folder, where some "dog" photos lack the
sticker (and only those are 64 x 48 px), is audited: a click on its off-diagonal cell of the confusion matrix
(true dog, predicted cat) shows exactly those photos, and a click on a diagonal cell shows that cell's.

tests/test_audit.py checks the library's clustering and flag on a planted module; tests/test_app_audit.py
the view through AppTest. This test goes through what they cannot: a checkpoint the page loads by itself, the
folder picked and the audit run by clicks, the class menu, in a real browser.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw
from playwright.sync_api import Page, expect

from benchmarks.server import start, stop, wait_healthy
from vizhooks.models.architectures import build
from vizhooks.page.texts import EN

from .conftest import new_page

pytestmark = pytest.mark.browser

STEP_MS = 180_000  # the audit runs a resnet18 over the folder on a loaded machine
SIDE, BLOB, STICKER = 64, 32, 16
PHOTOS = 8  # per class
#: The second folder: plain cats, dogs with the sticker, and dogs without it (the shortcut's victims)
CATS, STICKERED, BARE = 4, 3, 3
BARE_SIZE = (SIDE, 48)  # the only photos of that shape: how the test knows them on the page
MODEL = "Sticker net"


def sticker_net() -> dict[str, torch.Tensor]:
    """A resnet18 checkpoint (two classes, cat and dog) whose "dog" is a red-sticker detector.

    ``conv1``'s channel 0 is red minus green (centre tap), channel 1 green minus red, thresholded by
    ``bn1``'s bias so grey noise gives nothing; every residual branch is zero and each downsampling
    shortcut copies the first 64 channels, so ``layer4`` carries those two maps (sub-sampled) to the
    head. "cat" reads the green blob every photo has; "dog" reads the red sticker, 20 times as strongly:
    Grad-CAM of "dog" is the red map, its heat exactly where the sticker is.
    """
    state = {k: torch.zeros_like(v) if v.ndim == 4 else v.clone() for k, v in build("resnet18", num_classes=2)
             .state_dict().items()}
    for key, value in state.items():
        if ".bn" in key or key.startswith("bn1.") or ".downsample.1." in key:
            part = key.rsplit(".", 1)[1]
            if part in ("weight", "running_var"):
                value.fill_(1.0)
            elif part in ("bias", "running_mean"):
                value.zero_()
    conv1 = state["conv1.weight"]
    conv1[0, 0, 3, 3], conv1[0, 1, 3, 3] = 1.0, -1.0
    conv1[1, 1, 3, 3], conv1[1, 0, 3, 3] = 1.0, -1.0
    state["bn1.bias"][:2] = torch.tensor([-2.0, -1.0])
    for layer in ("layer2", "layer3", "layer4"):
        state[f"{layer}.0.downsample.0.weight"][range(64), range(64), 0, 0] = 1.0
    state["fc.weight"].zero_()
    state["fc.bias"].zero_()
    state["fc.weight"][0, 1], state["fc.weight"][1, 0] = 1.0, 20.0
    return state


def photo(seed: int, sticker: bool) -> Image.Image:
    """Grey noise with a green blob near the middle; with ``sticker``, a red square in the bottom-right
    corner (4 pixels from the edges, moved by up to 2 pixels)."""
    rng = np.random.default_rng(seed)
    image = Image.fromarray(np.clip(rng.normal(128, 25, (SIDE, SIDE, 3)), 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    at = (SIDE - BLOB) // 2 + int(rng.integers(-4, 5))
    draw.ellipse((at, at, at + BLOB, at + BLOB), fill=(0, 200, 0))
    if sticker:
        at = SIDE - 4 - STICKER + int(rng.integers(-2, 3))
        draw.rectangle((at, at, at + STICKER - 1, at + STICKER - 1), fill=(255, 0, 0))
    return image


@pytest.fixture(scope="module")
def audit_server(tmp_path_factory):
    """A server whose operator offers the sticker net and two folders: its URL, the sticker folder, its log,
    the folder with dogs that lack the sticker."""
    root = tmp_path_factory.mktemp("audit")
    folder = root / "photos"
    for n, (name, sticker) in enumerate((("cat", False), ("dog", True))):
        (folder / name).mkdir(parents=True)
        for i in range(PHOTOS):
            photo(100 * n + i, sticker).save(folder / name / f"{i}.png")
    unseen = root / "unseen"
    for name, photos in (("cat", [photo(300 + i, False) for i in range(CATS)]),
                         ("dog", [photo(400 + i, True) for i in range(STICKERED)]
                          + [photo(500 + i, False).crop((0, 8, SIDE, 8 + BARE_SIZE[1])) for i in range(BARE)])):
        (unseen / name).mkdir(parents=True)
        for i, picture in enumerate(photos):
            picture.save(unseen / name / f"{i}.png")
    torch.save(sticker_net(), root / "sticker.pth")
    (root / "labels.txt").write_text("cat\ndog\n", encoding="utf-8")
    (root / "models.toml").write_text(f'[[model]]\nname = "{MODEL}"\narch = "resnet18"\nweights = "sticker.pth"\n'
                                      'labels = "labels.txt"\n', encoding="utf-8")
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": str(root / "th"),
           "VIZHOOKS_MODELS": str(root / "models.toml"), "VIZHOOKS_AUDIT_DIRS": f"{folder}{os.pathsep}{unseen}"}
    path = root / "streamlit.log"
    with path.open("w") as log:
        proc, url = start(env, log)
        try:
            wait_healthy(url, proc)
            yield url, folder, path, unseen
        finally:
            stop(proc)


@pytest.fixture
def audit_page(browser):
    pg = new_page(browser, 2400, "", STEP_MS)
    yield pg
    pg.context.close()


def _idle(page: Page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                           timeout=STEP_MS)


def _no_errors(page: Page, log: Path) -> None:
    assert page.get_by_test_id("stException").count() == 0
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-4000:]


def _clusters(page: Page) -> list[tuple[int, str]]:
    """(size, where) of each cluster shown, read from its caption, once the captions of all the class's
    photos are there (a caption shows when its picture has arrived)."""
    caption = re.compile(re.escape(EN["audit_cluster"]).replace(r"\{id\}", r"\d+").replace(r"\{n\}", r"(\d+)")
                         .replace(r"\{where\}", "(.+)"))
    deadline = time.monotonic() + STEP_MS / 1000
    while True:
        texts = page.get_by_test_id("stMain").get_by_test_id("stImageCaption").all_inner_texts()
        found = [(int(m.group(1)), m.group(2)) for m in (caption.fullmatch(text.strip()) for text in texts) if m]
        if sum(n for n, _ in found) >= PHOTOS or time.monotonic() > deadline:
            return found
        page.wait_for_timeout(250)


def _shortcut(name: str) -> re.Pattern[str]:
    """The view's shortcut warning for class ``name`` in the bottom-right corner, any cluster and size."""
    sentence = EN["audit_shortcut"].format(where=EN["audit_where_bottom-right"], name=name, cluster="@", n="@")
    return re.compile(re.escape(sentence).replace("@", r"\d+"))


def _cell_pictures(page: Page, guess: str, count: int) -> list[tuple[int, int]]:
    """The pixel sizes of the pictures shown for the chosen cell (captioned "guess NN%"), once ``count`` of
    them are there and loaded."""
    caption = re.compile("^" + re.escape(EN["audit_picture"]).replace(r"\{guess\}", re.escape(guess))
                         .replace(r"\{conf:\.0%\}", r"\d+%") + "$")
    pictures = page.get_by_test_id("stMain").get_by_test_id("stImage").filter(
        has=page.get_by_test_id("stImageCaption").filter(has_text=caption))
    expect(pictures).to_have_count(count, timeout=STEP_MS)
    deadline = time.monotonic() + STEP_MS / 1000
    while True:
        sizes = pictures.locator("img").evaluate_all("imgs => imgs.map(i => [i.naturalWidth, i.naturalHeight])")
        if all(w and h for w, h in sizes) or time.monotonic() > deadline:
            return [(int(w), int(h)) for w, h in sizes]
        page.wait_for_timeout(250)


def _choose_cell(page: Page, row: int, column: int, label: str) -> None:
    """Click the confusion matrix's button of cell (row, column) and wait for the page to show that cell."""
    page.locator(f".st-key-audit_cell_{row}_{column}").get_by_role("button").click()
    expect(page.locator(".st-key-audit_cell").get_by_role("combobox")).to_have_value(label, timeout=STEP_MS)
    _idle(page)


def test_a_sticker_shortcut_is_found_in_its_corner(audit_server, audit_page, artifacts):
    url, folder, log, unseen = audit_server
    page = audit_page
    page.goto(f"{url}/?model={MODEL.replace(' ', '+')}&view=audit")
    expect(page.locator(".st-key-audit_source")).to_be_visible(timeout=STEP_MS)
    _idle(page)
    page.locator(".st-key-audit_source").get_by_text(EN["audit_source_dir"].format(path=str(folder)),
                                                     exact=True).click()
    _idle(page)
    page.locator(".st-key-audit_run").get_by_role("button", name=EN["audit_run"]).click()
    main = page.get_by_test_id("stMain")
    # the model is right on every photo (the sticker gives "dog" away)...
    for name in ("cat", "dog"):
        expect(main.get_by_text(EN["audit_accuracy"].format(name=name, acc=1.0, n=PHOTOS), exact=True)
               ).to_be_visible(timeout=STEP_MS)
    _idle(page)
    # ... for the wrong reason: the class chosen first is the suspicious one, flagged in the sticker's corner
    expect(page.locator(".st-key-audit_class").get_by_role("combobox")).to_have_value("dog")
    alerts = main.get_by_test_id("stAlert")
    expect(alerts.filter(has_text=_shortcut("dog")).first).to_be_visible()
    shortcuts = alerts.filter(has_text=re.compile("Possible shortcut")).count()
    assert shortcuts == alerts.filter(has_text=_shortcut("dog")).count() >= 1
    # every cluster of "dog" has its heat centre there: the sticker's corner, not the blob in the middle
    clusters = _clusters(page)
    assert clusters and all(where == EN["audit_where_bottom-right"] for _, where in clusters), clusters
    assert sum(n for n, _ in clusters) == PHOTOS, clusters
    _no_errors(page, log)
    page.screenshot(path=str(artifacts / "audit-shortcut.png"), full_page=True)
    # "cat" is read from the blob in the middle: no shortcut, no heat in the sticker's corner
    page.locator(".st-key-audit_class").get_by_role("combobox").click()
    page.get_by_role("listbox").get_by_role("option", name="cat", exact=True).click()
    expect(page.locator(".st-key-audit_class").get_by_role("combobox")).to_have_value("cat")
    _idle(page)
    expect(alerts.filter(has_text=re.compile("Possible shortcut"))).to_have_count(0)
    clusters = _clusters(page)
    assert clusters and not any(where == EN["audit_where_bottom-right"] for _, where in clusters), clusters
    assert sum(n for n, _ in clusters) == PHOTOS, clusters
    _no_errors(page, log)
    # photos the model has not seen: dogs without the sticker are taken for cats (the shortcut fails them)
    page.locator(".st-key-audit_source").get_by_text(EN["audit_source_dir"].format(path=str(unseen)),
                                                     exact=True).click()
    _idle(page)
    page.locator(".st-key-audit_run").get_by_role("button", name=EN["audit_run"]).click()
    expect(main.get_by_text(EN["audit_accuracy"].format(name="dog", acc=STICKERED / (STICKERED + BARE),
                                                        n=STICKERED + BARE), exact=True)).to_be_visible(timeout=STEP_MS)
    _idle(page)
    cell = EN["audit_cell_option"]
    # a diagonal cell first, so that the off-diagonal one (the view's default) is really reached by a click
    _choose_cell(page, 0, 0, cell.format(truth="cat", guess="cat", n=CATS))
    assert _cell_pictures(page, "cat", CATS) == [(SIDE, SIDE)] * CATS
    expect(page.locator(".st-key-audit_cell_0_1").get_by_role("button")).to_be_disabled()  # no cat taken for a dog
    # the cell (true dog, predicted cat) holds the sticker-less dogs, and only them
    _choose_cell(page, 1, 0, cell.format(truth="dog", guess="cat", n=BARE))
    assert _cell_pictures(page, "cat", BARE) == [BARE_SIZE] * BARE
    _no_errors(page, log)
    page.screenshot(path=str(artifacts / "audit-cell.png"), full_page=True)
