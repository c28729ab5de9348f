"""``python -m vizhooks``: the command line, one subcommand per job.

``COMMANDS`` is the table: each row names a subcommand, the one line ``--help`` lists for it, the
function that declares its arguments and the function that runs it. A new subcommand is one
``_x_arguments`` / ``_x`` pair and one row. Without a subcommand the arguments are those of
``maps`` (``python -m vizhooks photo.jpg --layers conv1``), as before subcommands existed.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn, cast

from vizhooks import __version__
from vizhooks.hooks.capture import capture
from vizhooks.models.images import MAX_SIZE, MIN_SIZE, InvalidImageError, load_image
from vizhooks.models.layers import UnknownLayerError, default_layers, describe_layers, resolve_layers
from vizhooks.models.registry import family, list_models, load_model, resolve_entry, torchvision_models
from vizhooks.models.weights import WeightsError, fetch_weights
from vizhooks.render.export import npz_bytes, write_atomic
from vizhooks.render.figures import NORMS, ORDERS, feature_grid, figure_to_png, get_colormap
from vizhooks.video import DEFAULT_MAX_FRAMES, VIDEO_TYPES, InvalidVideoError

if TYPE_CHECKING:
    import torch

    from vizhooks.models.registry import ModelBundle

PROG = "python -m vizhooks"


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line instead of usage + message
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _positive_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size must be a whole number, not {text!r}") from None
    if not MIN_SIZE <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"--size must be from {MIN_SIZE} to {MAX_SIZE}, not {value}")
    return value


def _channels(text: str) -> int | None:
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--channels must be a number or 'all', not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("--channels must be at least 1")
    return value


def _cmap(text: str) -> str:
    try:
        get_colormap(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _fps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fps must be a number, not {text!r}") from None
    if not 0 < value <= 120:
        raise argparse.ArgumentTypeError(f"--fps must be above 0 and at most 120, not {text}")
    return value


def _maps_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Capture the feature maps of any torchvision (or timm) image model with forward hooks and draw one PNG "
        "grid per layer.\n"
        f"A clip ({', '.join(VIDEO_TYPES)}; a GIF of more than one frame) gives one video per layer instead: the "
        "grid over time,\nfrom --frames frames spread evenly over the clip, each channel on one scale for the whole "
        "clip.\n"
        f"This is the default command: `{PROG} photo.jpg ...` is `{PROG} maps photo.jpg ...`.")
    p.epilog = ("Examples:\n"
                f"  {PROG} sample_images/chelsea.jpg --layers all --out out/\n"
                f"  {PROG} clip.mp4 --layers layer1.0.conv1 layer3.0.conv1 --frames 32 --fps 8 --out out/\n"
                f"  {PROG} photo.jpg --model resnet50 --layers layer3.0.conv1 --npz acts.npz\n"
                f"  {PROG} photo.jpg --model vit_b_16 --layers blocks --out vit/\n"
                f"  {PROG} photo.jpg --model resnet50 --weights mine.pth --labels labels.txt\n"
                f"  {PROG} --download-weights vgg16 mobilenet_v3_large\n"
                f"  {PROG} --list-models\n"
                f"  {PROG} --list-layers --model vgg16")
    p.add_argument("image", nargs="?", help="photo to look at (png, jpg, webp, bmp, gif, tiff), or a clip "
                   f"({', '.join(VIDEO_TYPES)})")
    p.add_argument("--model", default="resnet18", metavar="NAME",
                   help="any torchvision classifier (see --list-models), timm:NAME, or an entry of "
                   "VIZHOOKS_MODELS (default: resnet18)")
    p.add_argument("--weights", default="auto",
                   help="auto | imagenet | none | PATH to your own state_dict, any head size (default: auto)")
    p.add_argument("--labels", metavar="FILE",
                   help="class names for --weights PATH: one per line, or a JSON list")
    p.add_argument("--layers", nargs="+", metavar="NAME",
                   help="module names, 'all' for every Conv2d or 'blocks' for every block "
                   "(default: a tour: the first conv and the first at each new resolution)")
    p.add_argument("--what", default="output", choices=("output", "input"),
                   help="capture the layer's output (forward hook) or input (forward pre-hook)")
    p.add_argument("--size", type=_positive_size, default=224,
                   help="shorter side of the model input in pixels (default: 224)")
    p.add_argument("--channels", type=_channels, default=16,
                   help="channels per grid, or 'all' (default: 16)")
    p.add_argument("--order", default="index", choices=ORDERS,
                   help="index, mean (most active first) or max")
    p.add_argument("--norm", default="channel", choices=NORMS,
                   help="scale each tile on its own or the whole layer on one scale (pictures only)")
    p.add_argument("--cmap", default="viridis", type=_cmap, help="matplotlib colormap (default: viridis)")
    p.add_argument("--out", default="vizhooks-out", metavar="DIR",
                   help="folder for the PNG grids, or a clip's videos (.mp4, .gif where no video encoder "
                   "works) (default: vizhooks-out)")
    p.add_argument("--npz", metavar="FILE", help="also save all activations as .npz (a clip: (T, C, H, W) "
                   "per layer and __times__)")
    p.add_argument("--frames", type=_whole_number("--frames", 1, 10_000), default=DEFAULT_MAX_FRAMES, metavar="N",
                   help=f"a clip: at most N frames, spread evenly over it (default: {DEFAULT_MAX_FRAMES})")
    p.add_argument("--fps", type=_fps, default=8.0, help="a clip: frames per second of the videos (default: 8)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--download-weights", nargs="+", metavar="MODEL",
                   help="fetch ImageNet checkpoints into the torch cache and exit")
    p.add_argument("--list-layers", action="store_true",
                   help="print the convs and blocks of --model with their output shapes and exit")
    p.add_argument("--list-models", action="store_true", help="print every model name by family and exit")
    p.add_argument("--version", action="version", version=f"vizhooks {__version__}")


def _list_layers(args: argparse.Namespace) -> int:
    from vizhooks.models.architectures import build
    from vizhooks.models.layers import reference_hw
    from vizhooks.models.registry import input_spec

    entry = resolve_entry(args.model)
    model = build(entry.arch, device="meta")
    side = input_spec(entry.arch, model).fixed_size or args.size
    infos = describe_layers(model, (side, side) if side else reference_hw(args.model))
    print(f"{'layer':<44} {'where':<26} {'in→out':>10} {'kernel':>6} {'stride':>6}  output at {side}")
    for info in infos:
        channels = f"{info.in_channels}→{info.out_channels}" if info.out_channels else f"{info.out_channels_map}"
        kernel = "x".join(map(str, info.kernel_size)) if info.kernel_size else ""
        stride = str(info.stride[0]) if info.stride else ""
        shape = f"{info.out_channels_map}×{info.out_hw[0]}×{info.out_hw[1]}" if info.out_hw else ""
        print(f"{info.name:<44} {info.where:<26} {channels:>10} {kernel:>6} {stride:>6}  {shape}")
    convs = sum(i.kind == "conv" for i in infos)
    print(f"{convs} Conv2d layers and {len(infos) - convs} blocks in {args.model}.")
    return 0


def _list_models() -> int:
    current = None
    for name in list_models():
        group = family(name)
        if group != current:
            print(f"\n{group}:" if current else f"{group}:")
            current = group
        print(f"  {name}")
    print("\nAlso: timm:NAME for any timm model (pip install timm).")
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.download_weights:
        bad = [n for n in args.download_weights if n not in torchvision_models() and not n.startswith("clip:")]
        if bad:
            raise UsageError(f"unknown model {bad[0]!r}; `{PROG} --list-models` lists the torchvision models "
                             f"(clip:ARCH or clip:ARCH:TAG fetches open_clip's weights)")
        for name in (n for n in args.download_weights if n.startswith("clip:")):  # CLIP zero-shot's weights
            from vizhooks.models.zero_shot import fetch_clip

            print(f"{name}: {fetch_clip(name.removeprefix('clip:'))}", file=sys.stderr)
        fetch_weights([n for n in args.download_weights if not n.startswith("clip:")])
        return 0
    if args.list_models:
        return _list_models()
    if args.list_layers:
        return _list_layers(args)
    if not args.image:
        raise UsageError(f"give an image file, or --download-weights / --list-layers (see `{PROG} --help`)")

    if _is_video(args.image):
        return _video(args)
    image = load_image(args.image)  # before the model: a bad file fails fast
    if args.labels and args.weights in ("auto", "imagenet", "none"):
        raise UsageError("--labels goes with --weights PATH (your own checkpoint)")
    bundle = load_model(args.model, weights=args.weights, device=args.device, labels=args.labels)
    x = bundle.preprocess(image, args.size)
    hw = cast(tuple[int, int], tuple(x.shape[-2:]))  # (N, C, H, W) input
    layers = resolve_layers(bundle.model, args.layers or default_layers(bundle.model, hw))
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)
    note = bundle.input_note(args.size)
    if note:
        print(note, file=sys.stderr)
    acts = capture(bundle.model, x, layers, what=args.what, as_maps=True)

    from pathlib import Path

    out = Path(args.out)
    for name, act in acts.items():
        fig = feature_grid(act, channels=args.channels, order=args.order, cmap=args.cmap,
                           norm=args.norm, title=f"{name} ({args.what})")
        path = write_atomic(out / f"{name}.png", figure_to_png(fig))
        print(path)
    if args.npz:
        print(write_atomic(args.npz, npz_bytes(x, acts)))
    return 0


def _is_video(path: str) -> bool:
    """A clip by its extension; a GIF only when it has more than one frame (else it is a picture)."""
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in VIDEO_TYPES:
        return False
    if ext != "gif":
        return True
    from PIL import Image

    try:
        with Image.open(path) as im:
            return getattr(im, "n_frames", 1) > 1
    except Exception:  # not readable as a GIF: load_image says why, for a picture
        return False


class _Bar:
    """``progress(done, total)`` as one rewritten line on stderr, like the exemplars command."""

    def __init__(self, what: str):
        self.what, self.shown = what, False

    def __call__(self, done: int, total: int) -> None:
        self.shown = True
        end = "\n" if done >= total else ""
        print(f"\r{self.what}: {done}/{total} frames", end=end, file=sys.stderr, flush=True)


def _video(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vizhooks.video import capture_frames, frames_npz_bytes, layer_video, read_clip

    if args.norm != "channel":
        raise UsageError("--norm layer applies to pictures; a clip scales each channel over the whole clip")
    if args.labels and args.weights in ("auto", "imagenet", "none"):
        raise UsageError("--labels goes with --weights PATH (your own checkpoint)")
    clip = read_clip(args.image, max_frames=args.frames, progress=_Bar("decoding"))  # before the model
    print(f"Clip: {clip.width} x {clip.height}, {clip.duration:.1f} s at {clip.fps:.3g} fps; "
          f"{len(clip.frames)} of {clip.frame_count} frames.", file=sys.stderr)
    bundle = load_model(args.model, weights=args.weights, device=args.device, labels=args.labels)
    x = bundle.preprocess(clip.frames[0], args.size)
    hw = cast(tuple[int, int], tuple(x.shape[-2:]))  # (N, C, H, W) input
    layers = resolve_layers(bundle.model, args.layers or default_layers(bundle.model, hw))
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)
    note = bundle.input_note(args.size)
    if note:
        print(note, file=sys.stderr)
    acts = capture_frames(bundle, clip.frames, layers, size=args.size, what=args.what, progress=_Bar("capturing"))
    out = Path(args.out)
    for name, act in acts.items():
        data, _, ext = layer_video(act, fps=args.fps, channels=args.channels, order=args.order, cmap=args.cmap,
                                   title=f"{name} ({args.what})")
        print(write_atomic(out / f"{name}.{ext}", data))
    if args.npz:
        print(write_atomic(args.npz, frames_npz_bytes(acts, clip.times)))
    return 0


def _whole_number(flag: str, low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} must be a whole number, not {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{flag} must be from {low} to {high}, not {value}")
        return value

    return parse


def _exemplars_arguments(p: argparse.ArgumentParser) -> None:
    from vizhooks.atlas import ENGINES, IMAGE_EXTENSIONS

    p.description = (
        "Dataset exemplars: run every image of a folder (recursively) through the model and keep,\n"
        "for every channel of each layer, the images with the highest maximum, where that maximum is, and a\n"
        "crop of the part of the image its receptive field covers. Writes index.parquet,\n"
        "crops/LAYER/CHANNEL_RANK.jpg and manifest.json into --out; an interrupted run continues when the\n"
        "same command is run again. Files that are not readable images are skipped and listed.\n"
        f"Image files: {' '.join(IMAGE_EXTENSIONS)}.")
    p.epilog = ("Examples:\n"
                f"  {PROG} exemplars photos/ --layers layer3.0.conv1 layer4.1.conv2 --top 9 --out atlas/\n"
                f"  {PROG} exemplars photos/ --model resnet50 --weights mine.pth --size 160 --batch 64 --out atlas50/")
    p.add_argument("folder", help="folder of images, read recursively")
    p.add_argument("--model", default="resnet18", metavar="NAME", help="model name, as for the main command "
                   "(default: resnet18)")
    p.add_argument("--weights", default="auto", help="auto | imagenet | none | PATH (default: auto)")
    p.add_argument("--layers", nargs="+", metavar="NAME",
                   help="module names, 'all' or 'blocks' (default: the tour of the main command)")
    p.add_argument("--top", type=_whole_number("--top", 1, 10_000), default=9,
                   help="images kept per channel (default: 9)")
    p.add_argument("--size", type=_positive_size, default=224,
                   help="shorter side of the model input in pixels, as on the page (default: 224)")
    p.add_argument("--out", default="atlas", metavar="DIR", help="atlas folder (default: atlas)")
    p.add_argument("--engine", default="local", choices=ENGINES,
                   help="local (default: a DataLoader in this process) or ray (Ray tasks; RAY_ADDRESS for a cluster)")
    p.add_argument("--batch", type=_whole_number("--batch", 1, 100_000), default=32,
                   help="images per forward pass, all of one input shape (default: 32)")
    workers = min(4, max((os.cpu_count() or 1) - 1, 0))
    p.add_argument("--workers", type=_whole_number("--workers", 0, 256), default=workers,
                   help="DataLoader processes that read and prepare images (default: CPU cores - 1, at most 4)")
    p.add_argument("--checkpoint-every", type=_whole_number("--checkpoint-every", 1, 1_000_000), default=20,
                   metavar="N", help="save the progress every N batches (default: 20)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--rank", default="activation", choices=("activation", "relevance"),
                   help="rank each channel's images by its peak activation (default) or by its relevance for "
                        "--target (activation x gradient of that class's logit, summed over the positions)")
    p.add_argument("--target", type=_whole_number("--target", 0, 1_000_000), metavar="CLASS",
                   help="class index the relevance is for (with --rank relevance)")


def _exemplars(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vizhooks.atlas import build_atlas, check_engine, list_images

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"{folder} is a file; give a folder of images" if folder.exists()
                         else f"there is no folder at {folder}")
    check_engine(args.engine)
    if args.rank == "relevance" and args.target is None:
        raise UsageError("--rank relevance needs the class it is for: add --target CLASS (a class index)")
    if args.rank == "activation" and args.target is not None:
        raise UsageError("--target is the class of --rank relevance: add --rank relevance or leave --target out")
    if not list_images(folder, exclude=args.out):  # before the model: a wrong folder fails fast
        raise UsageError(f"{folder} holds no image files (see `{PROG} exemplars --help`)")
    bundle = load_model(args.model, weights=args.weights, device=args.device)
    layers = args.layers or default_layers(bundle.model, (args.size, args.size))
    resolve_layers(bundle.model, layers)
    if args.target is not None and not args.target < len(bundle.categories):
        raise UsageError(f"{bundle.name} has {len(bundle.categories)} classes: give --target from 0 to "
                         f"{len(bundle.categories) - 1}, not {args.target}")
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)
    try:
        atlas = build_atlas(folder, bundle, layers, args.out, top=args.top, size=args.size, engine=args.engine,
                            batch=args.batch, workers=args.workers, checkpoint_every=args.checkpoint_every,
                            rank=args.rank, target=args.target)
    except KeyboardInterrupt:
        print(f"vizhooks: interrupted; finished work is saved in {args.out}: run the same command again to continue",
              file=sys.stderr)
        return 130
    except RuntimeError as exc:  # e.g. a DataLoader worker killed: the progress is saved
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        print(f"vizhooks: error: {first}; finished work is saved in {args.out}: run the same command again "
              "to continue", file=sys.stderr)
        return 1
    for item in atlas.manifest["skipped"]:
        print(f"skipped {item['path']}: {item['reason']}", file=sys.stderr)
    print(f"{atlas.manifest['images']} images, {len(atlas.manifest['skipped'])} skipped, "
          f"{len(atlas.layers)} layers, top {args.top}.", file=sys.stderr)
    print(atlas.path)
    return 0


def _visualize_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Feature visualization: optimise an image so that one channel of one layer responds as\n"
        "strongly as possible, for each channel asked (all in one batch), and write one PNG per channel.")
    p.epilog = ("Examples:\n"
                f"  {PROG} visualize --layer layer3.0.conv1 --channels 0 1 2 3 --out vis/\n"
                f"  {PROG} visualize --model vgg16 --layer features.28 --channels 7 --size 224 --steps 512")
    p.add_argument("--model", default="resnet18", metavar="NAME", help="model name, as for the main command")
    p.add_argument("--weights", default="auto", help="auto | imagenet | none | PATH (default: auto)")
    p.add_argument("--layer", required=True, metavar="NAME", help="the module whose channels to visualize")
    p.add_argument("--channels", nargs="+", type=_whole_number("--channels", 0, 1_000_000), default=[0],
                   metavar="N", help="channel numbers (default: 0)")
    p.add_argument("--size", type=_whole_number("--size", 16, 1024), default=128, help="image side (default: 128)")
    p.add_argument("--steps", type=_whole_number("--steps", 0, 10_000), default=256,
                   help="optimisation steps (default: 256)")
    p.add_argument("--seed", type=_whole_number("--seed", 0, 2**31 - 1), default=0, help="random seed (default: 0)")
    p.add_argument("--out", default="vizhooks-out", metavar="DIR", help="folder for the PNGs (default: vizhooks-out)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")


def _visualize(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vizhooks.atlas import visualize_channels

    bundle = load_model(args.model, weights=args.weights, device=args.device)
    resolve_layers(bundle.model, [args.layer])
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)
    channels = list(dict.fromkeys(args.channels))

    def bar(step: int, steps: int) -> None:
        filled = int(30 * step / steps)
        sys.stderr.write(f"\r{args.layer} {channels[:4]}{'...' if len(channels) > 4 else ''}: "
                         f"[{'#' * filled}{'.' * (30 - filled)}] step {step}/{steps}")
        sys.stderr.flush()

    images = visualize_channels(bundle.model, args.layer, channels, size=args.size, steps=args.steps, seed=args.seed,
                                progress=bar if args.steps else None, mean=bundle.mean, std=bundle.std)
    if args.steps:
        sys.stderr.write("\n")
    out = Path(args.out)
    for channel, image in zip(channels, images, strict=True):
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        print(write_atomic(out / f"{args.layer}_{channel}.png", buffer.getvalue()))
    return 0


def _export_path(flag: str, suffixes: tuple[str, ...]) -> Callable[[str], str]:
    """An export file to write after teaching: checked before the photos are read, so a typo costs no run."""
    def parse(text: str) -> str:
        from pathlib import Path

        path = Path(text)
        if path.is_dir():
            raise argparse.ArgumentTypeError(f"{flag} names the folder {text}; give a file in it, such as "
                                             f"{path / ('my_model' + suffixes[0])}")
        if path.suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(f"{flag} must name a {' or '.join(suffixes)} file, not {text!r}")
        folder = next((p for p in [path.parent, *path.parent.parents] if p.exists()), Path("."))
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"{flag} cannot be written: {folder} is a file, not a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{flag} cannot be written: there is no permission to write in {folder}")
        return text

    return parse


def _teach_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Teach a model your own classes: a new last layer fitted on the frozen network's features.\n"
        "FOLDER holds one sub-folder per class (its name is the class name), as torchvision's ImageFolder\n"
        "reads it. The result is measured by stratified k-fold cross-validation (every photo held out once;\n"
        "leave-one-out when a class has fewer than 10); the checkpoint and a labels file are written\n"
        "for load_model(..., weights=, labels=). --onnx and --torchscript also write the model for tools\n"
        "without vizhooks, each with its labels and a 10-line program that runs it on a photo.")
    p.epilog = ("Examples:\n"
                f"  {PROG} teach my_photos/ --model resnet18 --out my_model.pth\n"
                f"  {PROG} teach my_photos/ --onnx my_model.onnx --torchscript my_model.pt\n"
                f"  python -c \"import vizhooks; vizhooks.load_model('resnet18', weights='my_model.pth', "
                "labels='my_model.txt')\"")
    p.add_argument("folder", metavar="FOLDER", help="a folder with one sub-folder of photos per class")
    p.add_argument("--model", default="resnet18", metavar="NAME", help="the backbone (default: resnet18)")
    p.add_argument("--weights", default="auto", help="auto | imagenet | none | PATH (default: auto)")
    p.add_argument("--out", default="my_model.pth", metavar="FILE",
                   help="the checkpoint to write; the labels go beside it as .txt (default: my_model.pth)")
    p.add_argument("--onnx", type=_export_path("--onnx", (".onnx",)), metavar="FILE",
                   help="also write the taught model as ONNX, with its labels (.txt) and an ONNX Runtime program "
                        "(_onnx.py) beside it")
    p.add_argument("--torchscript", type=_export_path("--torchscript", (".pt",)), metavar="FILE",
                   help="also write it as TorchScript (.pt), with its labels and a PyTorch program (_torchscript.py)")
    p.add_argument("--size", type=_whole_number("--size", 32, 1024), default=224,
                   help="the square side photos are seen at (default: 224)")
    p.add_argument("--folds", type=_whole_number("--folds", 2, 20), default=5,
                   help="folds of the cross-validation that measures the result (default: 5)")
    p.add_argument("--seed", type=_whole_number("--seed", 0, 2**31 - 1), default=0, help="random seed (default: 0)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")


def _teach(args: argparse.Namespace) -> int:
    from pathlib import Path

    from torchvision.datasets.folder import IMG_EXTENSIONS

    from vizhooks.exporting import to_onnx, to_torchscript
    from vizhooks.teaching import teach

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(f"there is no folder at {folder}")
    if args.torchscript and Path(args.torchscript).resolve() == Path(args.out).resolve():
        raise UsageError(f"--torchscript and --out both name {args.out}; give the TorchScript file another name")
    classes = sorted(d for d in folder.iterdir() if d.is_dir() and not d.name.startswith("."))
    if len(classes) < 2:
        raise UsageError(f"{folder} has {len(classes)} class sub-folder(s); teaching needs at least 2, "
                         "one per class")
    examples: dict[str, list] = {}
    for d in classes:
        examples[d.name] = []
        for path in sorted(p for p in d.rglob("*") if p.suffix.lower() in IMG_EXTENSIONS and p.is_file()):
            try:
                examples[d.name].append(load_image(path))
            except InvalidImageError as exc:
                print(f"skipped {path}: {exc}", file=sys.stderr)
    bundle = load_model(args.model, weights=args.weights, device=args.device)
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)

    def bar(done: int, total: int, stage: str) -> None:
        unit = "photos" if stage == "features" else "fits"
        print(f"\r{stage}: {done}/{total} {unit}", end="\n" if done >= total else "", file=sys.stderr, flush=True)

    taught = teach(bundle, examples, seed=args.seed, folds=args.folds, size=args.size, progress=bar)
    print(f"cross-validated accuracy ({taught.method}, each of the {taught.heldout} photos held out once):")
    rows = taught.confusion.sum(axis=1)
    for name, accuracy, count in zip(taught.bundle.categories, taught.per_class, rows, strict=True):
        print(f"  {name}: {accuracy:.0%} of {count}" if count else f"  {name}: none held out")
    print(f"  overall: {taught.accuracy:.0%} ± {taught.spread:.0%}")
    weights, labels = taught.save(args.out)
    print(f"wrote {weights} and {labels}")
    for path, write in ((args.onnx, to_onnx), (args.torchscript, to_torchscript)):
        if path:
            exported = write(taught, path, size=args.size)
            print(f"wrote {exported.model}, {exported.labels} and {exported.program} "
                  f"(try: cd {exported.program.parent} && python {exported.program.name} photo.jpg)")
    return 0


#: What ``explain --metrics`` can write, and the CSV columns of each.
EXPLAIN_METRICS = {"deletion": ("deletion_auc",), "insertion": ("insertion_auc",), "drop": ("avg_drop", "increase")}
#: The two reference maps scored beside the methods (vizhooks.interpret.faithfulness.reference_maps).
REFERENCES = ("random", "gaussian")


def _names(flag: str, known: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in known]
        if not names or unknown:
            raise argparse.ArgumentTypeError(f"{flag} takes names from {', '.join(known)}, separated by commas, "
                                             f"not {(unknown or [text])[0]!r}")
        return list(dict.fromkeys(names))
    return parse


def _explain_arguments(p: argparse.ArgumentParser) -> None:
    from vizhooks.interpret.methods import METHODS

    p.description = (
        "Explanation methods scored on a folder of photos: for every photo (recursively) and method, the map\n"
        "of the photo's top-1 class and how faithful it is (deletion and insertion areas, Average Drop and\n"
        "Increase in Confidence), beside a random and a centred Gaussian map. One CSV row per photo and\n"
        "method, written as each photo finishes: an interrupted run continues when the same command is run\n"
        "again. At the end, the mean +/- standard deviation per method. Unreadable files are skipped.\n"
        f"Methods: {', '.join(METHODS)}.")
    p.epilog = ("Examples:\n"
                f"  {PROG} explain photos/ --methods gradcam,gradcampp,layercam,ig --out scores.csv\n"
                f"  {PROG} explain imagenette/val --model resnet18 --weights imagenet --metrics deletion,insertion "
                "--steps 20 --out imagenette.csv")
    p.add_argument("folder", metavar="FOLDER", help="folder of photos, read recursively")
    p.add_argument("--model", default="resnet18", metavar="NAME", help="model name (default: resnet18)")
    p.add_argument("--weights", default="auto", help="auto | imagenet | none | PATH (default: auto)")
    p.add_argument("--methods", type=_names("--methods", METHODS), default=["gradcam", "gradcampp", "layercam", "ig"],
                   help="comma-separated methods (default: gradcam,gradcampp,layercam,ig)")
    p.add_argument("--metrics", type=_names("--metrics", tuple(EXPLAIN_METRICS)),
                   default=list(EXPLAIN_METRICS), help="comma-separated: deletion, insertion, drop (default: all)")
    p.add_argument("--layers", nargs="+", metavar="NAME", help="CAM layers (default: the last block)")
    p.add_argument("--steps", type=_whole_number("--steps", 1, 1000), default=20,
                   help="deletion / insertion steps (default: 20)")
    p.add_argument("--baseline", default="blur", choices=("blur", "zeros"),
                   help="what removed pixels become (default: blur)")
    p.add_argument("--size", type=_positive_size, default=224, help="shorter side of the model input (default: 224)")
    p.add_argument("--batch", type=_whole_number("--batch", 1, 4096), default=16,
                   help="images per forward pass for the scores and Score-CAM (default: 16)")
    p.add_argument("--no-references", dest="references", action="store_false",
                   help="skip the random and Gaussian reference maps")
    p.add_argument("--out", default="scores.csv", metavar="FILE", help="the CSV file (default: scores.csv)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")


def _done_rows(path: os.PathLike[str], header: list[str]) -> set[tuple[str, str]]:
    """(photo, method) pairs already in ``path``, which must have ``header`` (else one sentence)."""
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        return set()
    if rows[0] != header:
        raise UsageError(f"{path} was written with other metrics or methods' columns; give another --out, or the "
                         "same --metrics as before, to continue it")
    return {(r[0], r[1]) for r in rows[1:] if len(r) == len(header)}


def _explain(args: argparse.Namespace) -> int:
    import csv
    from pathlib import Path

    from vizhooks.atlas import list_images

    folder, out = Path(args.folder), Path(args.out)
    if not folder.is_dir():
        raise UsageError(f"{folder} is a file; give a folder of photos" if folder.exists()
                         else f"there is no folder at {folder}")
    photos = list_images(folder)
    if not photos:
        raise UsageError(f"{folder} holds no image files (see `{PROG} explain --help`)")
    columns = [c for m in args.metrics for c in EXPLAIN_METRICS[m]]
    header = ["photo", "method", "target", *columns]
    done = _done_rows(out, header) if out.exists() else set()
    bundle = load_model(args.model, weights=args.weights, device=args.device)
    if args.layers:
        resolve_layers(bundle.model, args.layers)
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)
    names = [*args.methods, *(REFERENCES if args.references else ())]
    new = not out.exists() or out.stat().st_size == 0
    skipped = 0
    with open(out, "a", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(header)
        for i, key in enumerate(photos, 1):
            todo = [m for m in names if (key, m) not in done]
            if todo:
                try:
                    x = bundle.preprocess(load_image(folder / key), args.size)
                except InvalidImageError as exc:
                    print(f"{'' if i == 1 else chr(10)}skipped {key}: {exc}", file=sys.stderr)
                    skipped += 1
                else:
                    writer.writerows(_explain_rows(bundle, x, key, todo, columns, args))
                    f.flush()  # a photo's rows together: a stop keeps every finished photo
            print(f"\rphotos: {i}/{len(photos)}", end="\n" if i == len(photos) else "", file=sys.stderr, flush=True)
    if skipped == len(photos):
        raise UsageError(f"none of the {len(photos)} image files in {folder} could be read")
    _explain_summary(out, names, columns)
    if skipped:
        print(f"{skipped} file(s) skipped.", file=sys.stderr)
    print(out)
    return 0


def _explain_rows(bundle: ModelBundle, x: torch.Tensor, key: str, todo: list[str], columns: list[str],
                  args: argparse.Namespace) -> list[list[object]]:
    """One photo's CSV rows: each method's (and reference map's) scores for the photo's top-1 class."""
    import torch

    from vizhooks.interpret.faithfulness import faithfulness, reference_maps
    from vizhooks.interpret.methods import explain

    with torch.no_grad():
        target = int(bundle.model(x.to(bundle.device))[0].argmax())
    methods = [m for m in todo if m not in REFERENCES]
    maps = explain(bundle, x, target, methods, args.layers, batch_size=args.batch) if methods else {}
    maps.update({m: r for m, r in reference_maps(x.shape[-2:]).items() if m in todo})
    rows: list[list[object]] = []
    for method in todo:
        s = faithfulness(bundle, x, target, maps[method], steps=args.steps, baseline=args.baseline,
                         batch_size=args.batch)
        values = {"deletion_auc": s.deletion_auc, "insertion_auc": s.insertion_auc, "avg_drop": s.avg_drop,
                  "increase": s.increase}
        rows.append([key, method, target, *(f"{values[c]:.6g}" for c in columns)])
    return rows


def _explain_summary(out: os.PathLike[str], names: list[str], columns: list[str]) -> None:
    """Mean +/- standard deviation per method over every row of ``out`` (the shape of torch-cam's table)."""
    import csv
    import statistics

    with open(out, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f)]
    widths = [max(len(c), 17) for c in columns]
    print("method".ljust(14) + "  photos  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for method in names:
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue
        cells = []
        for c, w in zip(columns, widths, strict=True):
            values = [float(r[c]) for r in mine]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.fmean(values):.4g} +/- {spread:.2g}".rjust(w))
        print(method.ljust(14) + f"  {len(mine):6d}  " + "  ".join(cells))


def _audit_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Audit a labelled folder: every picture's prediction, the confusion matrix, the explanation map of\n"
        "each predicted class, and per class the clusters of those maps (SpRAy); a cluster whose heat sits at an\n"
        "edge or in a corner is a possible shortcut. FOLDER holds one sub-folder per true class, named after a\n"
        "class of the model, its index or its WordNet id. Writes predictions.csv, confusion.csv, clusters.csv,\n"
        "maps.parquet and skipped.txt into --out; predictions and maps as each batch finishes. Finished batches\n"
        "are also kept in --out/progress/: run the same command again after a stop and it does only the rest.")
    p.epilog = ("Examples:\n"
                f"  {PROG} audit sample_images/shortcut/ --model resnet18 --weights my_model.pth --out audit/\n"
                f"  {PROG} audit photos/ --model resnet50 --layer layer4 --clusters 3 --out audit50/")
    p.add_argument("folder", metavar="FOLDER", help="a folder with one sub-folder of pictures per true class")
    p.add_argument("--model", default="resnet18", metavar="NAME", help="the model (default: resnet18)")
    p.add_argument("--weights", default="auto", help="auto | imagenet | none | PATH (default: auto)")
    p.add_argument("--labels", metavar="FILE", help="class names of --weights PATH, one per line (default: the "
                   ".txt beside it, as teach writes it)")
    p.add_argument("--layer", metavar="NAME", help="the layer of the map (default: the last block)")
    p.add_argument("--method", default="gradcam", metavar="NAME", help="the explanation method (default: gradcam)")
    p.add_argument("--size", type=_whole_number("--size", MIN_SIZE, MAX_SIZE), default=224,
                   help="the shorter side pictures are seen at (default: 224)")
    p.add_argument("--clusters", default="auto", help="auto (2 to 8 by the eigengap) or a number per class")
    p.add_argument("--engine", default="local", choices=["local"], help="where it runs (default: local)")
    p.add_argument("--batch", type=_whole_number("--batch", 1, 1024), default=32,
                   help="pictures per pass (default: 32)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write into")


def _audit(args: argparse.Namespace) -> int:
    import csv
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    from vizhooks.i18n import english
    from vizhooks.interpret.audit import audit, class_folders
    from vizhooks.interpret.methods import METHODS

    folder, out = Path(args.folder), Path(args.out)
    class_folders(folder)  # the folder's and the method's refusals before a model is loaded
    if args.method not in METHODS:
        raise UsageError(f"Unknown explanation method {args.method!r}; choose from {', '.join(METHODS)}")
    clusters: int | str = args.clusters
    if clusters != "auto":
        if not str(clusters).isdigit() or int(clusters) < 1:
            raise UsageError(f"--clusters must be auto or a whole number of at least 1, not {clusters!r}")
        clusters = int(clusters)
    labels = args.labels
    if labels is None and args.weights not in ("auto", "imagenet", "none") and Path(args.weights).with_suffix(
            ".txt").is_file():
        labels = str(Path(args.weights).with_suffix(".txt"))
    if labels and args.weights in ("auto", "imagenet", "none"):
        raise UsageError("--labels goes with --weights PATH (your own checkpoint)")
    bundle = load_model(args.model, weights=args.weights, device=args.device, labels=labels)
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    columns = ["path", "label", "predicted", "predicted_index", "confidence", "correct"]
    writer: list[pq.ParquetWriter] = []
    with open(out / "predictions.csv", "w", newline="", encoding="utf-8") as f:
        table = csv.writer(f)
        table.writerow(columns)

        def keep(rows: list[dict], maps: dict) -> None:
            table.writerows([r[c] if c != "confidence" else f"{r[c]:.6g}" for c in columns] for r in rows)
            f.flush()
            schema = pa.schema([("path", pa.string()), ("label", pa.string()), ("predicted", pa.string()),
                                ("map", pa.list_(pa.float32()))])
            batch = pa.table({"path": [r["path"] for r in rows], "label": [r["label"] for r in rows],
                              "predicted": [r["predicted"] for r in rows],
                              "map": [maps[r["path"]].ravel().tolist() for r in rows]}, schema=schema)
            if not writer:
                writer.append(pq.ParquetWriter(out / "maps.parquet", batch.schema))
            writer[0].write_table(batch)

        def bar(done: int, total: int) -> None:
            print(f"\rpictures: {done}/{total}", end="\n" if done >= total else "", file=sys.stderr, flush=True)

        try:
            found = audit(bundle, folder, layer=args.layer, method=args.method, size=args.size, clusters=clusters,
                          engine=args.engine, batch_size=args.batch, progress=bar, on_batch=keep,
                          store=out / "progress")
        finally:
            if writer:
                writer[0].close()
    with open(out / "confusion.csv", "w", newline="", encoding="utf-8") as f:
        table = csv.writer(f)
        table.writerow(["true", *found.columns])
        table.writerows([name, *row] for name, row in zip(found.classes, found.confusion.tolist(), strict=True))
    with open(out / "clusters.csv", "w", newline="", encoding="utf-8") as f:
        table = csv.writer(f)
        table.writerow(["class", "cluster", "rank", "path", "distance", "size", "where", "shortcut"])
        for name, groups in found.groups.items():
            for c in groups:
                table.writerows([name, c.id, rank, path, f"{d:.6g}", c.size, c.where, c.shortcut]
                                for rank, (path, d) in enumerate(zip(c.members, c.distances, strict=True)))
    (out / "skipped.txt").write_text("".join(f"{path}: {reason}\n" for path, reason in found.skipped),
                                     encoding="utf-8")
    print("per-class accuracy:")
    for name, accuracy in found.accuracy().items():
        print(f"  {name}: {accuracy:.0%} of {int(found.confusion[found.classes.index(name)].sum())}")
    for name, c in found.suspicious():
        print(english("audit_shortcut", where=english(f"audit_where_{c.where}"), name=name, cluster=c.id, n=c.size))
    if not found.suspicious():
        print("no cluster's heat sits away from the centre")
    if found.skipped:
        print(f"{len(found.skipped)} file(s) skipped (see skipped.txt)", file=sys.stderr)
    print(out)
    return 0


def _concepts_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Concepts (CRAFT): what one layer has learned over a folder of photos (recursively). Random square crops\n"
        "of every photo go through the model up to --layer; their activations, averaged over positions, are\n"
        "factorised by non-negative matrix factorisation into --k concepts. With --target, each concept's\n"
        "importance: how much the class's logit drops, on average over the photos, when the concept is removed.\n"
        "Writes concepts.json (bank, importance, settings, top crops) and concept_N.png (top crops, and the\n"
        "concept's map over the two photos that have most of it) into --out, and prints a summary table.\n"
        "Files are written only when everything is computed, each whole or not at all; unreadable files are\n"
        "skipped.")
    p.epilog = ("Examples:\n"
                f"  {PROG} concepts photos/ --model resnet50 --layer layer3 --k 10 --target 281 --out concepts/\n"
                f"  {PROG} concepts my_photos/ --model resnet18 --weights my_model.pth --labels my_model.txt "
                "--layer layer4 --k 5 --target mug --out mug/")
    p.add_argument("folder", metavar="FOLDER", help="folder of photos, read recursively")
    p.add_argument("--model", default="resnet18", metavar="NAME", help="model name (default: resnet18)")
    p.add_argument("--weights", default="auto", help="auto | imagenet | none | PATH (default: auto)")
    p.add_argument("--labels", metavar="FILE", help="class names for --weights PATH: one per line, or a JSON list")
    p.add_argument("--layer", required=True, metavar="NAME", help="the layer's module name, e.g. layer3")
    p.add_argument("--k", type=_whole_number("--k", 1, 1000), default=10, help="concepts to find (default: 10)")
    p.add_argument("--target", metavar="CLASS", help="a class number or name: rank the concepts by importance for it")
    p.add_argument("--crops", type=_whole_number("--crops", 1, 1000), default=16,
                   help="random crops per photo (default: 16)")
    p.add_argument("--crop", type=float, default=0.5, help="crop side as a fraction of the shorter side (default: 0.5)")
    p.add_argument("--size", type=_positive_size, default=224, help="side crops are resized to (default: 224)")
    p.add_argument("--batch", type=_whole_number("--batch", 1, 4096), default=32,
                   help="crops per forward pass (default: 32)")
    p.add_argument("--top", type=_whole_number("--top", 1, 100), default=9,
                   help="crops per concept picture (default: 9)")
    p.add_argument("--seed", type=_whole_number("--seed", 0, 2**31 - 1), default=0, help="random seed (default: 0)")
    p.add_argument("--out", default="concepts", metavar="DIR", help="the folder to write (default: concepts)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")


def _class_index(text: str, categories: Sequence[str]) -> int:
    if text.isdigit() and int(text) < len(categories):
        return int(text)
    if text in categories:
        return list(categories).index(text)
    raise UsageError(f"the model has no class {text!r}; give a class number from 0 to {len(categories) - 1} or one of "
                     "its class names")


def _concepts(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    import numpy as np

    from vizhooks.atlas import list_images
    from vizhooks.interpret.concepts import ConceptsError, concept_maps, concept_sheet, discover, top_photos
    from vizhooks.render.figures import channel_overlay, image_to_png

    folder, out = Path(args.folder), Path(args.out)
    if not folder.is_dir():
        raise UsageError(f"{folder} is a file; give a folder of photos" if folder.exists()
                         else f"there is no folder at {folder}")
    names = list_images(folder, exclude=args.out)
    if not names:
        raise UsageError(f"{folder} holds no image files (see `{PROG} concepts --help`)")
    kept = []
    for key in names:  # read once to skip what is not a picture; discover reads them again, one at a time
        try:
            load_image(folder / key)
        except InvalidImageError as exc:
            print(f"skipped {key}: {exc}", file=sys.stderr)
        else:
            kept.append(key)
    if not kept:
        raise UsageError(f"none of the {len(names)} image files in {folder} could be read")
    if args.k > len(kept) * args.crops:  # before the model: a wrong setting fails fast
        raise ConceptsError(code="concepts_k_too_large", k=args.k, crops=len(kept) * args.crops)
    bundle = load_model(args.model, weights=args.weights, labels=args.labels, device=args.device)
    resolve_layers(bundle.model, [args.layer])
    target = None if args.target is None else _class_index(args.target, bundle.categories)
    print(f"Model: {bundle.name} on {bundle.device}. {bundle.weights_status}", file=sys.stderr)
    paths = [folder / key for key in kept]

    def bar(done: int, total: int, stage: str) -> None:
        unit = "crops" if stage == "crops" else "photos"
        label = "activations" if stage == "crops" else "importance"
        print(f"\r{label}: {done}/{total} {unit}", end="\n" if done >= total else "", file=sys.stderr, flush=True)

    try:
        found = discover(bundle, paths, args.layer, k=args.k, target=target, crops_per_image=args.crops,
                         crop=args.crop, size=args.size, seed=args.seed, batch_size=args.batch, progress=bar)
    except KeyboardInterrupt:
        print(f"vizhooks: interrupted; nothing was written to {out}", file=sys.stderr)
        return 130
    order = found.order()
    shares = found.shares()
    pictures = {}
    for i in order:
        crops = [load_image(paths[index]).crop(box) for index, box in found.top(i, args.top)]
        overlays = []
        for p in top_photos(found, i, 2):
            photo = load_image(paths[p])
            maps = concept_maps(bundle, bundle.preprocess(photo, args.size), found)
            overlays.append(channel_overlay(bundle.resize(photo, args.size), maps[i]))
        pictures[f"concept_{i}.png"] = image_to_png(concept_sheet(crops, overlays))
    summary = {
        "model": bundle.name, "layer": found.layer, "folder": str(folder), "photos": kept,
        "target": target, "target_name": None if target is None else bundle.categories[target],
        "settings": found.settings, "order": order,
        "importance": None if found.importance is None else [float(v) for v in found.importance],
        "share": None if shares is None else [float(v) for v in shares],
        "bank": np.round(found.bank, 6).tolist(),
        "top": {str(i): [{"photo": kept[index], "box": list(box)} for index, box in found.top(i, args.top)]
                for i in order},
    }
    for name, data in pictures.items():  # each file whole; concepts.json last, so it says the run finished
        write_atomic(out / name, data)
    write_atomic(out / "concepts.json", json.dumps(summary, indent=1).encode())
    header = "concept  importance   share  top photos"
    print(header if target is not None else "concept  top photos")
    for i in order:
        tops = ", ".join(kept[p] for p in top_photos(found, i, 2))
        if found.importance is not None and shares is not None:
            print(f"{i:7d}  {found.importance[i]:10.4g}  {shares[i]:6.1%}  {tops}")
        else:
            print(f"{i:7d}  {tops}")
    print(out / "concepts.json")
    return 0


@dataclass(frozen=True)
class Command:
    """One subcommand: the one line ``--help`` lists for it, the function that declares its arguments
    (and sets the parser's description and examples) and the one that runs it (exit status)."""

    name: str
    summary: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    #: What follows ``python -m vizhooks NAME`` in the top-level help's example of this command.
    example: str = ""


#: The subcommands, in the order ``--help`` lists them; the first is the default. Summaries stay under
#: 60 characters so each is one line of an 80-column ``--help``.
COMMANDS: tuple[Command, ...] = (
    Command("maps", "feature-map grids of a photo, or videos of a clip (default)", _maps_arguments, _run,
            "sample_images/chelsea.jpg --layers conv1 --out out/"),
    Command("exemplars", "the images of a folder that excite each channel most", _exemplars_arguments, _exemplars,
            "photos/ --layers layer3.0.conv1 --rank relevance --target 281 --out atlas/"),
    Command("visualize", "an image optimised to excite each channel asked", _visualize_arguments, _visualize,
            "--layer layer3.0.conv1 --channels 0 1 2 --out vis/"),
    Command("teach", "teach a model your own classes from a folder", _teach_arguments, _teach,
            "my_photos/ --model resnet18 --out my_model.pth"),
    Command("explain", "explanation methods scored on a folder of photos", _explain_arguments, _explain,
            "photos/ --methods gradcam,saliency --out scores.csv"),
    Command("audit", "a labelled folder: mistakes, maps and shortcuts", _audit_arguments, _audit,
            "photos/ --model resnet18 --out audit/"),
    Command("concepts", "what a layer has learned over a folder, as concepts", _concepts_arguments, _concepts,
            "photos/ --layer layer3 --k 10 --target 281 --out concepts/"),
)
#: First arguments the top-level parser answers itself; anything else that is not a command is maps.
_TOP_LEVEL = ("-h", "--help", "--version")


def _top_help_format(prog: str) -> argparse.HelpFormatter:
    # Help text from column 16, so a command name of up to 10 characters shares a line with its summary.
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=16)


def _new_parser(prog: str) -> _Parser:
    return _Parser(prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser(commands: Sequence[Command] = COMMANDS) -> argparse.ArgumentParser:
    """The top-level parser: ``--help`` lists every command of ``commands`` with its one line, ``--version``."""
    p = _Parser(prog=PROG, formatter_class=_top_help_format)
    p.description = ("Look inside image models with PyTorch hooks: feature maps, dataset exemplars, feature "
                     "visualization,\nteaching a model your own classes, explanation methods scored, and the "
                     "lesson to take home.\n"
                     f"Without a command, the arguments are those of `{commands[0].name}`.")
    default, *others = commands
    p.epilog = ("Examples (one per command):\n"
                f"  {PROG} {default.example}   ({default.name}, the default)\n"
                + "".join(f"  {PROG} {c.name} {c.example}\n" for c in others)
                + f"  {PROG} --list-models   |   --list-layers --model vgg16   |   --download-weights vgg16\n"
                f"Each command has its own help: {PROG} COMMAND --help")
    p.add_argument("--version", action="version", version=f"vizhooks {__version__}")
    sub = p.add_subparsers(title="commands", dest="command", parser_class=_Parser)
    for command in commands:
        command.arguments(sub.add_parser(command.name, help=command.summary,
                                         formatter_class=argparse.RawDescriptionHelpFormatter))
    return p


def command_parser(name: str, commands: Sequence[Command] = COMMANDS) -> argparse.ArgumentParser:
    """The parser of ``python -m vizhooks NAME``, built alone (only that command's imports).

    Raises:
        KeyError: not a command name.
    """
    command = {c.name: c for c in commands}[name]
    p = _new_parser(f"{PROG} {command.name}")
    command.arguments(p)
    return p


def build_exemplars_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m vizhooks exemplars``."""
    return command_parser("exemplars")


def build_visualize_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m vizhooks visualize``."""
    return command_parser("visualize")


def main(argv: Sequence[str] | None = None, commands: Sequence[Command] = COMMANDS) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) over ``commands`` (default: this
    module's; ``vizhooks/__main__.py`` adds the commands of the layers above) and return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    by_name = {c.name: c for c in commands}
    try:
        if argv[:1] and argv[0] in _TOP_LEVEL:
            build_parser(commands).parse_args(argv)  # prints the help or the version and exits
        # A command name first selects it; any other first word (a file, an option) is the maps form.
        name = argv[0] if argv[:1] and argv[0] in by_name else commands[0].name
        rest = argv[1:] if argv[:1] == [name] else argv
        return by_name[name].run(command_parser(name, commands).parse_args(rest))
    except (UsageError, InvalidImageError, InvalidVideoError, WeightsError, UnknownLayerError, ValueError) as exc:
        print(f"vizhooks: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"vizhooks: error: {exc.strerror or exc} ({exc.filename or ''})".rstrip(" ()"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vizhooks: interrupted", file=sys.stderr)
        return 130
