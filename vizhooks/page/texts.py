"""Every sentence the page shows, in one place, so another language is one more table.

``t(key, **values)`` looks a string up in the current language and fills in ``{values}``.
A missing key in another language falls back to English; a missing key in English is a bug
and raises KeyError (the tests render the page, so they would catch it).
"""

from __future__ import annotations

from vizhooks import language as core

EN: dict[str, str] = {
    # page
    "page_title": "vizhooks: inside an image network",
    "title": "vizhooks: look inside an image network",
    "subtitle": (
        "Forward hooks on the chosen layers catch every channel's feature map while the "
        "photo flows through the network once. Brighter tiles mean stronger activation."
    ),
    "language": "Language",
    # layer labels: where a layer sits, for any model
    "where_conv": "conv {index} of {count}",
    "where_block": "block {index} of {count}",
    "label_conv": "{name} · {where} · {cin}→{cout}, {k}, stride {s}",
    "label_other": "{name} · {where} · {type}{channels}",
    "label_channels": " · {n} channels",
    # sidebar: model
    "model": "Model",
    "model_help": (
        "Every torchvision image classifier, grouped by family, plus this server's own models. "
        "Bigger models take longer to load and run; ViT, Swin and MaxViT need a fixed input size."
    ),
    "model_option": "{name} · {family} · {params} parameters{size}",
    "family_operator": "this server's models",
    "model_fixed_size": " · {side}×{side} input",
    "model_params_m": "{m:.1f} M",
    "operator_warning": "{warning}",
    "model_description": "{description}",
    "device": "Running on **{device}**.",
    "loading_model": "Loading {name}…",
    "weights_random": (
        "**Random weights**: the pretrained weights could not be loaded, so predictions are "
        "meaningless and feature maps show an untrained network. Fix: run `{command}` once on this "
        "server with internet, then restart it."
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
    "pick_tour": "Tour: the first layer and the first at each new resolution",
    "pick_res_convs": "All convs at {hw}",
    "pick_res_blocks": "All blocks at {hw}",
    "pick_downsampling": "Downsampling convs (stride > 1)",
    "pick_convs": "Every Conv2d layer",
    "pick_blocks": "Every block",
    "layers": "Layers (convs and blocks)",
    "layers_help": (
        "name · conv (or block) i of n · output resolution for a {side}×{side} input · in→out "
        "channels, kernel, stride"
    ),
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
    "bad_model": "This model can't be loaded: {reason} Choose another model in the sidebar.",
    "failed": "Something went wrong while running the model. Please try again or choose other settings.",
    "out_of_memory": (
        "The server ran out of memory for this request. Choose fewer layers, fewer channels or a "
        "smaller input size and try again."
    ),
    "too_large": "{reason}",
    "still_computing": (
        "The same request is still being computed for another visitor. Please wait a moment and try again."
    ),
    "running": "Running {model} with hooks on {n} layer(s)…",
    "rendering": "Drawing layer {i} of {n}: {name}",
    "model_saw": "What the model saw: {width} × {height} pixels",
    "input_fixed": (
        "{name} needs {side} × {side} pixels: the photo was resized and its centre cropped to a "
        "square; the size setting does not apply."
    ),
    "input_min": "{name} needs at least {side} pixels, so the shorter side was set to that.",
    "top5": "Top-5 classes",
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
    # views
    "view": "View",
    "view_group": "What to do with the picture",
    "group_look": "Look",
    "group_explain": "Explain",
    "group_change": "Change",
    "group_learn": "Learn",
    "group_hood": "Under the hood",
    "view_maps": "Feature maps",
    "view_inspector": "Channel inspector",
    "view_gradients": "Gradients",
    "view_gradcam": "Grad-CAM",
    "view_backward": "Backward hooks",
    "view_table": "Layer table",
    "view_code": "How this was made",
    # class for gradients
    "target": "Class to explain",
    "target_out_of_range": (
        "Class {target} is not one of this model's {n} classes (0 to {last}), so the page shows its top-1 class."
    ),
    "target_help": "Gradients and Grad-CAM are taken of this class's score. Type to search all 1000 classes.",
    "target_top1": "Top-1 class: {label} ({index})",
    "running_backward": "Forward and backward pass for “{label}”…",
    "gradients_intro": (
        "How much the score of **{label}** ({index}) would change if one value of a feature map "
        "went up: red pushes the score up, blue pushes it down, white does nothing. Caught with a "
        "tensor hook (`output.register_hook`) registered from a forward hook."
    ),
    "grad_caption": "gradient {shape} · min {min:.3g} · max {max:.3g} · one colour scale per layer, centred at 0",
    "gradcam_intro": (
        "Grad-CAM for **{label}** ({index}): each channel is weighted by its average gradient, the "
        "weighted channels are summed, negatives are dropped, and the map is stretched over the "
        "photo. Red marks where this layer found evidence for the class. Deep layers give coarse "
        "but meaningful maps; early layers give fine, noisy ones."
    ),
    "cam_alpha": "Heat map opacity",
    "backward_intro": (
        "`register_full_backward_hook` on each top-level child of the model, then one backward "
        "pass from the score of **{label}**. Rows come in the order backward reached them."
    ),
    "backward_reading": (
        "**Reading the table.** Backward runs the network in reverse: it starts at the last layer "
        "and walks back to the first. Each module receives `grad_output`, the gradient of the score "
        "with respect to what it produced, and passes on `grad_input`, the gradient with respect to "
        "what it was given: the `grad_input` of one row is the `grad_output` of the row below it. A "
        "row with a note carries no full backward hook: its output is overwritten in place later "
        "(ResNet's `bn1`, before `relu(inplace=True)`), or it works in place itself, which full "
        "backward hooks refuse. The Gradients view gets around this with tensor hooks."
    ),
    "running_table": "Timing every module…",
    "total_outputs": "Output values (all leaf modules)",
    "total_time": "Forward time",
    "table_intro": (
        "Built in one forward pass: a forward pre-hook notes each module's input and start time, a "
        "forward hook its output and end time. Containers (Sequential stages, blocks) include their "
        "children. Click a column header to sort."
    ),
    "code_view": "Code for",
    "code_intro": (
        "Plain PyTorch, no vizhooks: paste it into a notebook next to the photo to get the same "
        "numbers (with the same weights)."
    ),
    "hooks_explained": (
        "#### The four hook kinds\n\n"
        "- **`tensor.register_hook(fn)`**, `fn(grad) -> grad or None`. Runs during backward, when "
        "the gradient for this tensor has been computed. Read it, or return a changed one (clipping). "
        "Saves keeping `retain_grad()` copies of every intermediate tensor.\n"
        "- **`module.register_forward_pre_hook(fn)`**, `fn(module, inputs) -> new inputs or None`. "
        "Runs just before `forward()`; `inputs` is a tuple. Used here for \"input\" capture and "
        "for the start time in the layer table.\n"
        "- **`module.register_forward_hook(fn)`**, `fn(module, inputs, output) -> new output or "
        "None`. Runs just after `forward()`. This is how the feature maps are caught. Clone what "
        "you keep: an in-place op later in the network may overwrite it.\n"
        "- **`module.register_full_backward_hook(fn)`**, `fn(module, grad_input, grad_output)`. "
        "Runs during backward with the gradients of the module's inputs and outputs (tuples; "
        "`None` where there is no gradient). It replaced `register_backward_hook`, which gave wrong "
        "`grad_input` for modules made of several operations. It cannot wrap modules whose output "
        "is modified in place.\n\n"
        "Every registration returns a handle; call `handle.remove()` (in a `finally:`) when done, "
        "or the hook keeps running on every later pass."
    ),
    # view: intervene
    "view_intervene": "Intervene",
    "intervene_intro": (
        "A forward hook may **return a new output**, and the rest of the network then works with "
        "it. Switch channels of one layer off or scale them, and see what changes downstream. The "
        "hook lives for one pass and is removed afterwards: the model itself is never changed."
    ),
    "iv_layer": "Layer to change",
    "iv_mode": "Change",
    "iv_mode_zero": "switch channels off (× 0)",
    "iv_mode_half": "halve channels (× 0.5)",
    "iv_mode_double": "double channels (× 2)",
    "iv_mode_top": "keep only the k most active channels",
    "iv_channels": "Channels",
    "iv_k": "k",
    "iv_no_channels": "Choose at least one channel to change.",
    "iv_running": "Two passes: one as it is, one with the edit…",
    "iv_before": "Top-5 without the edit",
    "iv_after": "Top-5 with the edit",
    "iv_logit": "Score (logit) of “{label}” with the edit",
    "iv_later": "Later layers, with the edit applied upstream:",
    "iv_change": "mean change {change:.1%} compared with the unedited pass",
    "iv_no_later": "No chosen layer comes after this one: add a later layer in the sidebar to see the change travel.",
    "clamp_header": "A tensor hook that changes a gradient",
    "clamp_at": "Clamp the gradient at",
    "clamp_limit": "Limit: a percentile of the non-zero |gradient| values at that layer, on this photo",
    "clamp_percentile": "{p}th percentile",
    # view: compare
    "view_compare": "Compare",
    "compare_intro": (
        "The same layers for two photos, each pair drawn on **one shared scale** per layer so that "
        "brightness means the same on both sides, with their difference (B − A: red where B is "
        "stronger) and the cosine similarity of the whole maps."
    ),
    "compare_source": "Second photo",
    "compare_sample": "Sample photo B",
    "compare_none": "Choose, upload or take the second photo to compare.",
    "compare_first": "A: the photo in the sidebar",
    "compare_second": "B: the second photo",
    "compare_difference": "B − A",
    "compare_caption": "cosine similarity {similarity:.3f} (1 = the same pattern)",
    "compare_resized": "B has another shape, so its maps were resampled to A's grid.",
    # view: lesson
    "view_lesson": "Lesson",
    # what a channel looks for
    "view_atlas": "Channel atlas",
    "atlas_intro": (
        "What does one channel respond to? Three answers side by side: its map for this photo, an "
        "image optimised to excite it as much as possible (feature visualization), and the "
        "crops of a photo collection where it responded most (dataset exemplars)."
    ),
    "atlas_none": (
        "No atlas for {model} in {folder} yet. Make one from a folder of photos: "
        "`python -m vizhooks exemplars PHOTOS --model {model} --layers LAYER --out {folder}/{model}`."
    ),
    "atlas_photo": "{layer}, channel {channel}, over this photo",
    "atlas_top": "Where it responded most: the top {n} of the collection",
    "atlas_source": "From {images} photos in {folder} ({weights}).",
    "atlas_exemplar": "{score:.3g} · {name}",
    "atlas_random": "random weights: the crops show structure only, not what a trained network learned",
    "fv_button": "What excites this channel?",
    "fv_running": "Optimising an image for {layer}: step {step} of {steps}",
    "fv_caption": "Optimised to excite {layer}, channel {channel} ({size} px, {steps} steps)",
    "fv_grid_button": "Draw {n} channels of this layer in one batch",
    "insp_layer": "Layer",
    "insp_channel": "Channel",
    "insp_alpha": "Overlay opacity",
    "insp_large": "{layer}, channel {channel}, upsampled from {h} × {w}",
    "insp_overlay": "Over the photo at opacity {alpha:.0%}",
    "insp_range": "Values in this channel: min {min:.4g}, mean {mean:.4g}, max {max:.4g}.",
}

from ..lesson import texts_lesson, texts_tables, texts_views  # noqa: E402  (the lesson's and the handout's)
from . import (  # noqa: E402,E501  (each source with many sentences keeps its own pair)
    texts_class,
    texts_convolution,
    texts_errors,
    texts_explain,
    texts_live,
    texts_overview,
    texts_polls,
    texts_present,
    texts_teach,
    texts_video,
)
from .texts_zh import ZH  # noqa: E402  (the table above is the reference the other follows)

for _part in (texts_video, texts_live, texts_class, texts_polls, texts_present, texts_errors, texts_tables,
              texts_teach, texts_overview, texts_convolution, texts_explain,
              texts_lesson, texts_views):
    EN.update(_part.EN)
    ZH.update(_part.ZH)

LANGUAGES: dict[str, dict[str, str]] = {"en": EN, "zh": ZH}
#: How each language names itself in the switch.
LANGUAGE_NAMES: dict[str, str] = {"en": "English", "zh": "简体中文"}


def set_language(lang: str) -> None:
    """The language of this thread's page run (Streamlit runs each session in its own thread); the
    lesson's texts (vizhooks.lesson.i18n) follow it too."""
    core.set_language(lang)


def use_session_language() -> None:
    """Set this thread's language to the session's choice, for a fragment: a fragment's run skips the
    page's main(), where the language is set."""
    import streamlit as st  # here, so the tables stay importable without Streamlit

    set_language(st.session_state.get("lang", "en"))


language = core.language
language_from_locale = core.language_from_locale


def t(key: str, **values: object) -> str:
    """The string ``key`` in the current language, formatted with ``values``. A key missing in
    English is a bug and raises KeyError; the tests check that every language has every key."""
    return core.lookup(LANGUAGES, key, None, **values)
