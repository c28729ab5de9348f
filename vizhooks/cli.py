"""``python -m vizhooks``: feature-map grids and .npz captures from the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__
from .capture import capture
from .export import npz_bytes, write_atomic
from .images import MAX_SIZE, MIN_SIZE, InvalidImageError, load_image
from .layers import UnknownLayerError, default_layers, describe_layers, resolve_layers
from .models import family, list_models, load_model, resolve_entry, torchvision_models
from .render import NORMS, ORDERS, feature_grid, figure_to_png, get_colormap
from .weights import WeightsError, fetch_weights

PROG = "python -m vizhooks"


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line instead of usage + message
        raise UsageError(f"{message} (see `{PROG} --help`)")


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


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Capture the feature maps of any torchvision (or timm) image model with forward "
        "hooks and draw one PNG grid per layer.",
        epilog="Examples:\n"
        f"  {PROG} sample_images/chelsea.jpg --layers all --out out/\n"
        f"  {PROG} photo.jpg --model resnet50 --layers layer3.0.conv1 --npz acts.npz\n"
        f"  {PROG} photo.jpg --model vit_b_16 --layers blocks --out vit/\n"
        f"  {PROG} photo.jpg --model resnet50 --weights mine.pth --labels labels.txt\n"
        f"  {PROG} --download-weights vgg16 mobilenet_v3_large\n"
        f"  {PROG} --list-models\n"
        f"  {PROG} --list-layers --model vgg16",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("image", nargs="?", help="photo to look at (png, jpg, webp, bmp, gif, tiff)")
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
                   help="scale each tile on its own or the whole layer on one scale")
    p.add_argument("--cmap", default="viridis", type=_cmap, help="matplotlib colormap (default: viridis)")
    p.add_argument("--out", default="vizhooks-out", metavar="DIR",
                   help="folder for the PNG grids (default: vizhooks-out)")
    p.add_argument("--npz", metavar="FILE", help="also save all activations as .npz")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--download-weights", nargs="+", metavar="MODEL",
                   help="fetch ImageNet checkpoints into the torch cache and exit")
    p.add_argument("--list-layers", action="store_true",
                   help="print the convs and blocks of --model with their output shapes and exit")
    p.add_argument("--list-models", action="store_true", help="print every model name by family and exit")
    p.add_argument("--version", action="version", version=f"vizhooks {__version__}")
    return p


def _list_layers(args: argparse.Namespace) -> int:
    from .layers import reference_hw

    entry = resolve_entry(args.model)
    from .models import build, input_spec

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
        bad = [n for n in args.download_weights if n not in torchvision_models()]
        if bad:
            raise UsageError(f"unknown model {bad[0]!r}; `{PROG} --list-models` lists the torchvision models")
        fetch_weights(args.download_weights)
        return 0
    if args.list_models:
        return _list_models()
    if args.list_layers:
        return _list_layers(args)
    if not args.image:
        raise UsageError(f"give an image file, or --download-weights / --list-layers (see `{PROG} --help`)")

    image = load_image(args.image)  # before the model: a bad file fails fast
    if args.labels and args.weights in ("auto", "imagenet", "none"):
        raise UsageError("--labels goes with --weights PATH (your own checkpoint)")
    bundle = load_model(args.model, weights=args.weights, device=args.device, labels=args.labels)
    x = bundle.preprocess(image, args.size)
    layers = resolve_layers(bundle.model, args.layers or default_layers(bundle.model, tuple(x.shape[-2:])))
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


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return _run(args)
    except (UsageError, InvalidImageError, WeightsError, UnknownLayerError, ValueError) as exc:
        print(f"vizhooks: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"vizhooks: error: {exc.strerror or exc} ({exc.filename or ''})".rstrip(" ()"), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("vizhooks: interrupted", file=sys.stderr)
        return 130
