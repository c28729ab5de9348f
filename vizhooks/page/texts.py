"""Every sentence the page shows, in one place, so another language is one more table.

``t(key, **values)`` looks a string up in the current language and fills in ``{values}``.
A missing key in another language falls back to English; a missing key in English is a bug
and raises KeyError (the tests render the page, so they would catch it).
"""

from __future__ import annotations

import contextvars
import os

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
    "weights_from_env": "Weights from the file named by VIZHOOKS_WEIGHTS.",
    "weights_from_cache": "Pretrained weights, from this machine's cache.",
    "weights_from_download": "Pretrained weights, downloaded once and cached.",
    "weights_from_file": "Weights from this server's own checkpoint.",
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
    "cam_caption": "{layer} → {label}",
    "backward_intro": (
        "`register_full_backward_hook` on each top-level child of the model, then one backward "
        "pass from the score of **{label}**. Rows come in the order backward reached them."
    ),
    "col_step": "step",
    "col_module": "module",
    "col_type": "type",
    "col_grad_output": "grad_output (arrives)",
    "col_grad_input": "grad_input (leaves)",
    "col_note": "note",
    "backward_reading": (
        "**Reading the table.** Backward runs the network in reverse: it starts at the last layer "
        "and walks back to the first. Each module receives `grad_output`, the gradient of the score "
        "with respect to what it produced, and passes on `grad_input`, the gradient with respect to "
        "what it was given: the `grad_input` of one row is the `grad_output` of the row below it. A "
        "row with a note carries no full backward hook: its output is overwritten in place later "
        "(ResNet's `bn1`, before `relu(inplace=True)`), or it works in place itself, which full "
        "backward hooks refuse. The Gradients view gets around this with tensor hooks."
    ),
    "backward_shapes": (
        "In this table `{deep}` receives a {deep_shape} gradient and `{shallow}` a {shallow_shape} one: "
        "the deeper layer has {deep_c} channels of {deep_hw} against {shallow_c} channels of {shallow_hw}."
    ),
    "backward_first": (
        "`{first}`'s `grad_input` is {shape}: the gradient with respect to the photo itself. It is not "
        "`None` because the page's input requires a gradient: `x.requires_grad_(True)`, with the weights "
        "frozen, is how backward reaches every layer without filling the weights' `.grad`. An input that "
        "does not require a gradient gets `None` there."
    ),
    "backward_first_none": (
        "`{first}`'s `grad_input` is `None`: its input does not require a gradient, so backward stops there."
    ),
    "running_table": "Timing every module…",
    "total_params": "Parameters",
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
    "clamp_intro": (
        "`output.register_hook(lambda grad: grad.clamp(-limit, limit))` on one layer clips the "
        "gradient flowing back through it. Backward runs from the score towards the input, so what "
        "changes is every layer **before** it (upstream, earlier in the forward pass): they receive "
        "the clipped gradient, and their Grad-CAM maps change with it. The layers after it do not."
    ),
    "clamp_at": "Clamp the gradient at",
    "clamp_limit": "Limit: a percentile of the non-zero |gradient| values at that layer, on this photo",
    "clamp_percentile": "{p}th percentile",
    "clamp_clipped": (
        "Limit **{limit:.3g}**, the {p}th percentile of the non-zero |gradient| values at `{layer}`: "
        "**{share:.1%}** of its {count:,} gradient values are clipped."
    ),
    "clamp_changed": "Its gradient changed by {change:.1%} on average (mean |clamped − as it is| / mean |as it is|).",
    "clamp_no_earlier": "No chosen layer comes before this one: choose a later layer to clamp at.",
    "clamp_before": "Gradient, as it is",
    "clamp_after": "Gradient, with the clamp at {layer} (a later layer)",
    "clamp_cam_before": "Grad-CAM, as it is",
    "clamp_cam_after": "Grad-CAM, with the clamp at {layer}",
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
    "lesson_step": "Step {n} of {total}: {title}",
    "lesson_back": "← Back",
    "lesson_next": "Next →",
    "lesson_link": "Link to this step",
    "lesson_question": "Question for the class:",
    "lesson_answer": "Answer",
    "lesson_code": (
        "This step's hooks in plain PyTorch. They run after the set-up below; the whole file runs as "
        "it is, next to the photo:"
    ),
    "lesson_code_setup": "Set-up: model, photo, preprocessing (the same in every step; runs first)",
    "lesson_code_download": "Download the whole file",
    "lesson_hello_caption": "What the hook printed during one forward pass:",
    "lesson_col_layer": "layer",
    "lesson_col_module": "module",
    "lesson_col_shape": "output shape",
    "lesson_prepost_input": "Input of {layer} (forward pre-hook)",
    "lesson_prepost_output": "Output of {layer} (forward hook)",
    "lesson_remove_forgot": "Hook calls per pass, handle never removed: {calls}",
    "lesson_remove_removed": "Hook calls per pass, handle removed after each pass: {calls}",
    "lesson_what_title": "What a hook is, and why",
    "lesson_what_text": (
        "A **hook** is a function you hand to PyTorch, and PyTorch calls it at a fixed moment: "
        "just before a module runs, just after it, or when a gradient has been computed. You can "
        "look inside a trained network **without changing one line of its code**: register the "
        "hook, run the model as usual, remove the hook. Here a forward hook on each chosen layer "
        "only prints what it sees."
    ),
    "lesson_what_q": "Why not just add a print() to the model's forward()?",
    "lesson_what_a": (
        "The model's code is torchvision's, not yours: editing it changes it for everyone and every "
        "later run. A hook is attached from the outside to one object, for as long as you need it, "
        "and removed again; the same hook works on any model."
    ),
    "lesson_forward_title": "The forward hook and a feature-map grid",
    "lesson_forward_text": (
        "`register_forward_hook(fn)` calls `fn(module, inputs, output)` right after the module's "
        "`forward()`. Keeping a copy of `output` gives the layer's **feature maps**: one 2-D map "
        "per channel, drawn here as a grid. Bright means a strong response of that channel at that "
        "place."
    ),
    "lesson_forward_q": "Why does the hook keep output.clone() and not output itself?",
    "lesson_forward_a": (
        "A later in-place operation (ResNet's `ReLU(inplace=True)`, `out += identity`) may "
        "overwrite the very same tensor after the hook has seen it. A copy keeps what the layer "
        "really produced."
    ),
    "lesson_prehook_title": "The forward pre-hook: a layer's input and output",
    "lesson_prehook_text": (
        "`register_forward_pre_hook(fn)` calls `fn(module, inputs)` just **before** `forward()`; "
        "`inputs` is a tuple. With a pre-hook and a forward hook on the same layer you see what "
        "goes in and what comes out: the input of a conv is the previous layer's output."
    ),
    "lesson_prehook_q": "The pre-hook may return something. What happens then?",
    "lesson_prehook_a": (
        "The returned value replaces the module's inputs: the module then runs on your values. "
        "Returning None leaves the inputs as they were."
    ),
    "lesson_shapes_title": "Shapes through the network",
    "lesson_shapes_text": (
        "A pre-hook and a hook on **every** module, in one pass, note each module's input and "
        "output shape and its time. That is how summary tools build their layer tables. Watch the "
        "channels grow while height and width shrink."
    ),
    "lesson_shapes_q": "Why do containers (stages, blocks) appear in the table as well as single layers?",
    "lesson_shapes_a": (
        "Containers are modules too and run their own forward(), so their hooks fire: their time "
        "includes their children's, and their output is the output of their last child."
    ),
    "lesson_conv_title": "What one convolution computes",
    "lesson_conv_text": (
        "Every value of a conv layer's feature map is one small sum. The kernel lies on a window of the "
        "input (the same place in every input channel it sees); each input value is multiplied by the "
        "weight under it, the products are added up, and the bias is added. A **forward pre-hook** hands "
        "you the window's numbers, a **forward hook** the result: below, both are taken apart for this "
        "photo. Move the place (row, column) and the window moves by the stride; BatchNorm and ReLU then "
        "scale, shift and cut the value before the next layer sees it."
    ),
    "lesson_conv_q": (
        "A Conv2d has a 3×3 kernel, 64 input channels and a bias. How many multiplications give one output "
        "value, and on how many input numbers does it depend? And for a depthwise 3×3 conv (groups = 64)?"
    ),
    "lesson_conv_a": (
        "3 × 3 × 64 = 576 multiplications, then one sum of the 576 products plus the bias; the value depends "
        "on those 576 input numbers, a 3×3 window in each of the 64 channels. In a depthwise conv each output "
        "channel sees only its own input channel: 9 multiplications and 9 input numbers."
    ),
    "lesson_tensor_title": "The tensor hook: gradients of a layer's output",
    "lesson_tensor_text": (
        "After `backward()`, PyTorch keeps `.grad` only for **leaf** tensors (the input, the "
        "parameters). A layer's output is not a leaf, so its `.grad` is `None`. "
        "`output.register_hook(fn)` calls `fn(grad)` during backward with exactly that gradient: "
        "how much the class score would change if one value of the map went up (red up, blue down)."
    ),
    "lesson_tensor_q": "What else could you do instead of a tensor hook, and what does it cost?",
    "lesson_tensor_a": (
        "`output.retain_grad()` before backward also keeps the gradient, but on every tensor you "
        "call it for and for as long as the tensor lives; a hook hands you the gradient once and "
        "you decide what to keep."
    ),
    "lesson_clamp_title": "Changing a gradient in a hook",
    "lesson_clamp_text": (
        "A tensor hook that **returns** a tensor replaces the gradient. Clamping it, "
        "`grad.clamp(-limit, limit)`, is the idea behind gradient clipping. The limit here is a "
        "percentile of the gradient's own sizes at the clamped layer, so it always clips a share you "
        "can read below. Backward then carries the clipped gradient on to the layers **before** the "
        "clamped one (upstream in the forward order): compare their gradients and Grad-CAM maps."
    ),
    "lesson_clamp_q": "Why do the layers after the clamped one not change?",
    "lesson_clamp_a": (
        "Backward runs from the score towards the input: the gradient reaches the later layers "
        "first, before the clamp happens. Only what flows on through the clamped layer, to the "
        "layers before it, is changed."
    ),
    "lesson_backward_title": "The full backward hook: grad_input and grad_output",
    "lesson_backward_text": (
        "`register_full_backward_hook(fn)` calls `fn(module, grad_input, grad_output)` during "
        "backward: the gradient arriving at the module's output, and the one it passes back to its "
        "input. Both are tuples; an entry is `None` only where no gradient flows. The first conv's "
        "`grad_input` is `None` when the input does not require a gradient; here the page (and the code "
        "below) sets `x.requires_grad_(True)`, so it is the gradient with respect to the photo, as the "
        "last row shows. Modules changed in place cannot carry this hook."
    ),
    "lesson_backward_q": "Why does backward list the modules in the reverse order of the forward pass?",
    "lesson_backward_a": (
        "The chain rule starts at the score and works back: each module needs the gradient of what "
        "it produced before it can compute the gradient of what it was given."
    ),
    "lesson_gradcam_title": "Grad-CAM: where the evidence is",
    "lesson_gradcam_text": (
        "Put the two together: a forward hook keeps a layer's maps, a tensor hook its gradients. "
        "Weight each channel by its average gradient, sum, keep the positive part and stretch it "
        "over the photo: that is **Grad-CAM**, a heat map of where this layer found evidence for "
        "the class."
    ),
    "lesson_gradcam_q": "Why are the maps of deep layers coarse, and those of early layers noisy?",
    "lesson_gradcam_a": (
        "Deep layers have few, large cells (7 × 7 for 224 pixels) that stand for whole objects; "
        "early layers have many small cells that respond to edges and textures, not to the class."
    ),
    "lesson_sanity_title": "Does the explanation depend on the model?",
    "lesson_sanity_text": (
        "A map that explains the **model** must change when the model changes. The sanity check of "
        "Adebayo et al. (2018) tests exactly that: a copy of the network has its weights re-initialised "
        "stage by stage, from the head down, and after each step Grad-CAM is drawn again for the same "
        "photo and class. The number beside each map is the Spearman rank correlation with the original "
        "map: 1 means the same pixels are ranked the same way, 0 means no relation. The hooks are the "
        "Grad-CAM ones of the previous step, on the copy."
    ),
    "lesson_sanity_q": (
        "After every layer is random, one method's map still correlates 0.9 with the original, another's "
        "0.1. Which one can tell you what the trained model looks at, and why?"
    ),
    "lesson_sanity_a": (
        "The one at 0.1: its map changed when the model was destroyed, so it depends on the weights. A map "
        "that stays the same for a random network is made by the picture (its edges and colours), not by "
        "what the model learned; Guided Backprop often fails this way, Grad-CAM passes."
    ),
    "lesson_sanity_caption": "Grad-CAM of {layer} for {label}: the original, then after each stage is re-initialised",
    "lesson_sanity_after": "{stage} random · ρ = {rho:.2f}",
    "lesson_sanity_original": "original",
    "lesson_sanity_none": "This model's layer {layer} has no spatial map for Grad-CAM; choose a conv layer.",
    "lesson_remove_title": "Removing hooks, and forgetting to",
    "lesson_remove_text": (
        "Every `register_*` call returns a **handle**; `handle.remove()` takes the hook off again. "
        "Forget it, and the hook stays on the model: register one in a loop and each pass adds "
        "another, so the calls pile up (and so does the memory they keep). Put `remove()` in a "
        "`finally:` so that it also runs when something fails."
    ),
    "lesson_remove_q": "The page's model is shared by the whole class. What would one forgotten hook do?",
    "lesson_remove_a": (
        "It would run in everybody's passes, slow them down and mix one student's copies into "
        "another's. That is why vizhooks removes every hook before it returns, even on errors."
    ),
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

from . import (  # noqa: E402,E501  (each source with many sentences keeps its own pair)
    texts_class,
    texts_convolution,
    texts_errors,
    texts_explain,
    texts_handout,
    texts_live,
    texts_overview,
    texts_polls,
    texts_present,
    texts_tables,
    texts_teach,
    texts_video,
)
from .texts_zh import ZH  # noqa: E402  (the table above is the reference the other follows)

for _part in (texts_video, texts_live, texts_class, texts_polls, texts_present, texts_errors, texts_tables,
              texts_teach, texts_overview, texts_convolution, texts_explain,
              texts_handout):
    EN.update(_part.EN)
    ZH.update(_part.ZH)

LANGUAGES: dict[str, dict[str, str]] = {"en": EN, "zh": ZH}
#: How each language names itself in the switch.
LANGUAGE_NAMES: dict[str, str] = {"en": "English", "zh": "简体中文"}

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("vizhooks_language", default=None)


def set_language(lang: str) -> None:
    """The language of this thread's page run (Streamlit runs each session in its own thread)."""
    _current.set(lang if lang in LANGUAGES else "en")


def use_session_language() -> None:
    """Set this thread's language to the session's choice, for a fragment: a fragment's run skips the
    page's main(), where the language is set."""
    import streamlit as st  # here, so the tables stay importable without Streamlit

    set_language(st.session_state.get("lang", "en"))


def language() -> str:
    lang = _current.get() or os.environ.get("VIZHOOKS_LANG", "en")
    return lang if lang in LANGUAGES else "en"


def language_from_locale(locale: str | None) -> str:
    """``"zh-CN"``, ``"zh_TW"``, ``"zh"`` -> "zh"; anything else (or nothing) -> "en"."""
    return "zh" if (locale or "").lower().replace("_", "-").split("-")[0] == "zh" else "en"


def t(key: str, **values: object) -> str:
    """The string ``key`` in the current language, formatted with ``values``. A key missing in
    English is a bug and raises KeyError; the tests check that every language has every key."""
    text = LANGUAGES[language()].get(key) or EN[key]
    return text.format(**values) if values else text
