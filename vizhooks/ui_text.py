"""Every sentence the page shows, in one place, so another language is one more table.

``t(key, **values)`` looks a string up in the current language and fills in ``{values}``.
A missing key in another language falls back to English; a missing key in English is a bug
and raises KeyError (the tests render the page, so they would catch it).
"""

from __future__ import annotations

import os

EN: dict[str, str] = {
    # page
    "page_title": "vizhooks: inside a CNN",
    "title": "vizhooks: look inside a convolutional network",
    "subtitle": (
        "Forward hooks on the chosen Conv2d layers catch every channel's feature map while the "
        "photo flows through the network once. Brighter tiles mean stronger activation."
    ),
    # sidebar: model
    "model": "Model",
    "model_help": "A torchvision ResNet. Deeper models have more layers and take longer.",
    "device": "Running on **{device}**.",
    "loading_model": "Loading {name}…",
    "weights_ok": "{status}",
    "weights_random": (
        "**Random weights**: the ImageNet weights could not be loaded, so predictions are meaningless "
        "and feature maps show an untrained network. Fix: run `make weights` or `{command}` once on "
        "this server with internet, then restart it."
    ),
    "weights_details": "Why, and where the file goes",
    # sidebar: image
    "image_source": "Image",
    "source_sample": "Sample",
    "source_upload": "Upload",
    "source_camera": "Camera",
    "sample": "Sample photo",
    "upload": "Your photo",
    "upload_help": "PNG, JPEG, WebP, BMP, GIF or TIFF, up to 20 MB and 40 megapixels.",
    "camera": "Take a photo",
    "size": "Input size (shorter side, pixels)",
    "size_help": "The photo is resized so its shorter side has this many pixels; nothing is cropped.",
    # sidebar: layers
    "layers_header": "Layers",
    "quick_pick": "Quick pick",
    "quick_pick_placeholder": "Choose a group of layers…",
    "pick_tour": "Tour: conv1 + first conv of each stage",
    "pick_stage1": "All convs of stage 1 (layer1)",
    "pick_stage2": "All convs of stage 2 (layer2)",
    "pick_stage3": "All convs of stage 3 (layer3)",
    "pick_stage4": "All convs of stage 4 (layer4)",
    "pick_shortcuts": "Shortcut (downsample) convs",
    "pick_all": "Every Conv2d layer",
    "layers": "Conv2d layers",
    "layers_help": "name · position in the network · in→out channels, kernel, stride",
    "what": "Capture",
    "what_output": "output (forward hook)",
    "what_input": "input (forward pre-hook)",
    # sidebar: display
    "display_header": "Display",
    "channels": "Channels per layer",
    "order": "Channel order",
    "order_index": "by index",
    "order_mean": "most active first (mean)",
    "order_max": "strongest peak first (max)",
    "cmap": "Colormap",
    "norm": "Brightness scale",
    "norm_channel": "per channel",
    "norm_layer": "per layer (with colorbar)",
    "columns": "Grid columns (0 = automatic)",
    "share_hint": "The address bar holds these settings: copy it to share this exact view.",
    # main
    "url_notice": "Ignored from the link: {items}.",
    "no_upload": "Upload a photo in the sidebar to start (or pick a sample).",
    "no_camera": "Take a photo with the camera in the sidebar to start (or pick a sample).",
    "no_layers": "Choose at least one layer in the sidebar.",
    "bad_image": "This file can't be used: {reason} The rest of the page still works; try another file.",
    "bad_input": "This can't be done: {reason}",
    "failed": "Something went wrong while running the model. Please try again or choose other settings.",
    "running": "Running {model} with hooks on {n} layer(s)…",
    "rendering": "Drawing layer {i} of {n}: {name}",
    "model_saw": "What the model saw: {width} × {height} pixels",
    "top5": "Top-5 ImageNet classes",
    "top5_random": "The weights are random, so these guesses are meaningless.",
    "tab_maps": "Feature maps",
    "tab_inspector": "Channel inspector",
    "layer_caption": (
        "{where} · {what} {shape} · min {min:.3g} · mean {mean:.3g} · max {max:.3g} · {shown}"
    ),
    "shown_some": "{shown} of {total} channels",
    "shown_all": "all {total} channels",
    "download_png": "PNG",
    "download_npz": "Download all activations (.npz)",
    "download_npz_help": "One float32 array per layer (C, H, W) plus __input__, the same format as the CLI's --npz.",
    "insp_layer": "Layer",
    "insp_channel": "Channel",
    "insp_alpha": "Overlay opacity",
    "insp_large": "{layer}, channel {channel}, upsampled from {h} × {w}",
    "insp_overlay": "Over the photo at opacity {alpha:.0%}",
    "insp_range": "Values in this channel: min {min:.4g}, mean {mean:.4g}, max {max:.4g}.",
}

LANGUAGES: dict[str, dict[str, str]] = {"en": EN}


def language() -> str:
    lang = os.environ.get("VIZHOOKS_LANG", "en")
    return lang if lang in LANGUAGES else "en"


def t(key: str, **values: object) -> str:
    """The string ``key`` in the current language, formatted with ``values``."""
    text = LANGUAGES[language()].get(key) or EN[key]
    return text.format(**values) if values else text
