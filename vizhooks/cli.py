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
import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn, cast

from vizhooks import __version__
from vizhooks.hooks.capture import capture
from vizhooks.i18n import SOURCE, OSReason, is_plural, language, listed, nt, said, sentences, t, table
from vizhooks.models.images import MAX_SIZE, MIN_SIZE, InvalidImageError, load_image
from vizhooks.models.layers import UnknownLayerError, default_layers, describe_layers, resolve_layers
from vizhooks.models.registry import (
    display_name,
    family,
    list_models,
    load_model,
    operator_models,
    random_as_asked,
    resolve_entry,
    torchvision_models,
)
from vizhooks.models.weights import WeightsError, fetch_command, fetch_weights, said_notes
from vizhooks.render.export import npz_bytes, write_atomic
from vizhooks.render.figures import NORMS, ORDERS, feature_grid, figure_to_png, get_colormap
from vizhooks.video import DEFAULT_MAX_FRAMES, VIDEO_TYPES, InvalidVideoError

if TYPE_CHECKING:
    from collections.abc import Iterable

    import torch

    from vizhooks.models.registry import ModelBundle

PROG = "python -m vizhooks"


class UsageError(Exception):
    """Bad command-line input: reported in one line, exit status 2."""


class _Help(argparse.RawDescriptionHelpFormatter):
    """argparse's help with its own words ("usage:") in the catalogue's language too, and an argument's
    help wrapped by terminal columns (argparse counts a Chinese character as one; it takes two)."""

    def add_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                  groups: Iterable[argparse._MutuallyExclusiveGroup], prefix: str | None = None) -> None:
        super().add_usage(usage, actions, groups, t("cli_usage") if prefix is None else prefix)

    def _format_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                      groups: Iterable[argparse._MutuallyExclusiveGroup], prefix: str | None) -> str:
        # "用法：" takes three columns more than its three characters: the usage wraps that much
        # earlier, and its next lines move right by as much, under the first argument again
        extra = _width(prefix or "") - len(prefix or "")
        self._width -= extra
        try:
            text = super()._format_usage(usage, actions, groups, prefix)
        finally:
            self._width += extra
        first, *rest = text.split("\n")
        return "\n".join([first, *(" " * extra + line if line.startswith(" ") else line for line in rest)])

    def _split_lines(self, text: str, width: int) -> list[str]:
        if _width(text) == len(text):  # no wide character: argparse's own wrapping, as always
            return super()._split_lines(text, width)
        return _wrap(" ".join(text.split()), width)


#: Characters a line may not start with (they close what comes before them).
_CLOSING = "，。、：；！？）》」』】…,.:;!?)"
_WIDE_OR_WORD = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]|[^\s\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]+")


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` terminal columns: breaks at spaces and between Chinese
    characters, never before a closing mark (which may then stand one character past ``width``)."""
    lines: list[str] = []
    line = ""
    for found in _WIDE_OR_WORD.finditer(text):
        piece = found.group()
        spaced = found.start() > 0 and text[found.start() - 1] == " "
        joined = line + (" " if spaced and line else "") + piece
        if not line or _width(joined) <= width or piece in _CLOSING:
            line = joined
        else:
            lines.append(line)
            line = piece
    return [*lines, line] if line else lines


class _Parser(argparse.ArgumentParser):
    """A parser whose texts, argparse's own headings and ``-h`` included, are the catalogue's (``cli_*``) in
    the current language: ``VIZHOOKS_LANG`` (vizhooks.i18n.language), English by default."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs["add_help"] = False  # added below, with its help in the current language
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._positionals.title = t("cli_positionals")
        self._optionals.title = t("cli_options")
        self.add_argument("-h", "--help", action="help", help=t("cli_help"))

    def format_help(self) -> str:
        # argparse ends a heading with an ASCII colon; a Chinese heading takes the full-width one
        text = super().format_help()
        for group in self._action_groups:
            title = group.title or ""
            if _width(title) != len(title):
                text = text.replace(f"\n{title}:\n", f"\n{title}：\n")
        return text

    def error(self, message: str) -> NoReturn:  # one line instead of usage + message
        raise UsageError(t("cli_see_help", message=_argparse_words(message), prog=self.prog))


#: argparse's own refusals (Python 3.11's wording, which its messages use in every language) and the
#: catalogue key of each; a message that matches none stays as argparse wrote it.
_ARGPARSE_WORDS = (
    (re.compile(r"argument (?P<flag>[^:]+): (?P<message>.*)", re.S), "cli_ap_argument"),
    (re.compile(r"the following arguments are required: (?P<names>.*)", re.S), "cli_ap_required"),
    (re.compile(r"unrecognized arguments: (?P<words>.*)", re.S), "cli_ap_unrecognized"),
    (re.compile(r"invalid choice: (?P<value>.*) \(choose from (?P<choices>.*)\)", re.S), "cli_ap_choice"),
    (re.compile(r"expected one argument"), "cli_ap_one"),
    (re.compile(r"expected at least one argument"), "cli_ap_at_least_one"),
    (re.compile(r"expected at most one argument"), "cli_ap_at_most_one"),
    (re.compile(r"one of the arguments (?P<names>.*) is required", re.S), "cli_ap_one_of"),
    (re.compile(r"not allowed with argument (?P<flag>.*)", re.S), "cli_ap_not_with"),
    (re.compile(r"ambiguous option: (?P<option>\S+) could match (?P<matches>.*)", re.S), "cli_ap_ambiguous"),
    (re.compile(r"ignored explicit argument (?P<value>.*)", re.S), "cli_ap_ignored"),
)


def _argparse_words(message: str) -> str:
    """argparse's ``message`` in the catalogue's language ("argument --size: ..." -> "参数 --size：...");
    the part after "argument X:" is translated too when it is argparse's own."""
    for pattern, key in _ARGPARSE_WORDS:
        found = pattern.fullmatch(message)
        if found:
            values = found.groupdict()
            if "message" in values:
                values["message"] = _argparse_words(values["message"])
                if values["message"].startswith(tuple(f"{flag} " for flag in values["flag"].split("/"))):
                    return values["message"]  # our own refusal names its flag: "--size must be from 32 ..."
            return t(key, **values)
    return message


def _positive_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(t("cli_whole_number", flag="--size", text=text)) from None
    if not MIN_SIZE <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(t("cli_from_to", flag="--size", low=MIN_SIZE, high=MAX_SIZE, value=value))
    return value


def _channels(text: str) -> int | None:
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(t("cli_channels_number", text=text)) from None
    if value < 1:
        raise argparse.ArgumentTypeError(t("cli_channels_least"))
    return value


def _cmap(text: str) -> str:
    try:
        get_colormap(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(_refusal(exc)) from None
    return text


def _fps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(t("cli_fps_number", text=text)) from None
    if not 0 < value <= 120:
        raise argparse.ArgumentTypeError(t("cli_fps_range", text=text))
    return value


def _maps_arguments(p: argparse.ArgumentParser) -> None:
    p.description = t("cli_maps_description", types=listed(VIDEO_TYPES), prog=PROG)
    p.epilog = (t("cli_examples") + "\n"
                f"  {PROG} sample_images/chelsea.jpg --layers all --out out/\n"
                f"  {PROG} clip.mp4 --layers layer1.0.conv1 layer3.0.conv1 --frames 32 --fps 8 --out out/\n"
                f"  {PROG} photo.jpg --model resnet50 --layers layer3.0.conv1 --npz acts.npz\n"
                f"  {PROG} photo.jpg --model vit_b_16 --layers blocks --out vit/\n"
                f"  {PROG} photo.jpg --model resnet50 --weights mine.pth --labels labels.txt\n"
                f"  {PROG} --download-weights vgg16 mobilenet_v3_large\n"
                f"  {PROG} --list-models\n"
                f"  {PROG} --list-layers --model vgg16")
    p.add_argument("image", nargs="?", help=t("cli_maps_image", types=listed(VIDEO_TYPES)))
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_maps_model"))
    p.add_argument("--weights", default="auto", help=t("cli_maps_weights"))
    p.add_argument("--labels", metavar="FILE", help=t("cli_labels"))
    p.add_argument("--layers", nargs="+", metavar="NAME", help=t("cli_maps_layers"))
    p.add_argument("--what", default="output", choices=("output", "input"), help=t("cli_maps_what"))
    p.add_argument("--size", type=_positive_size, default=224, help=t("cli_maps_size"))
    p.add_argument("--channels", type=_channels, default=16, help=t("cli_maps_channels"))
    p.add_argument("--order", default="index", choices=ORDERS, help=t("cli_maps_order"))
    p.add_argument("--norm", default="channel", choices=NORMS, help=t("cli_maps_norm"))
    p.add_argument("--cmap", default="viridis", type=_cmap, help=t("cli_maps_cmap"))
    p.add_argument("--out", default="vizhooks-out", metavar="DIR", help=t("cli_maps_out"))
    p.add_argument("--npz", metavar="FILE", help=t("cli_maps_npz"))
    p.add_argument("--frames", type=_whole_number("--frames", 1, 10_000), default=DEFAULT_MAX_FRAMES, metavar="N",
                   help=t("cli_maps_frames", default=DEFAULT_MAX_FRAMES))
    p.add_argument("--fps", type=_fps, default=8.0, help=t("cli_maps_fps"))
    p.add_argument("--device", default="auto", help=t("cli_device"))
    p.add_argument("--download-weights", nargs="+", metavar="MODEL", help=t("cli_maps_download"))
    p.add_argument("--list-layers", action="store_true", help=t("cli_maps_list_layers"))
    p.add_argument("--list-models", action="store_true", help=t("cli_maps_list_models"))
    p.add_argument("--version", action="version", version=f"vizhooks {__version__}", help=t("cli_version"))


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal: a Chinese character takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _row(cells: Iterable[str], widths: Iterable[int]) -> str:
    """``cells`` padded to ``widths`` terminal columns, joined by a space (a negative width aligns right)."""
    out = []
    for cell, width in zip(cells, widths, strict=True):
        pad = " " * max(abs(width) - _width(cell), 0)
        out.append(pad + cell if width < 0 else cell + pad)
    return " ".join(out)


def _list_layers(args: argparse.Namespace) -> int:
    from vizhooks.models.architectures import build
    from vizhooks.models.layers import reference_hw
    from vizhooks.models.registry import input_spec

    entry = resolve_entry(args.model)
    model = build(entry.arch, device="meta")
    side = input_spec(entry.arch, model).fixed_size or args.size
    infos = describe_layers(model, (side, side) if side else reference_hw(args.model))
    widths = (44, 26, -10, -6, -6)  # negative: right-aligned
    heads = (t("cli_col_layer"), t("cli_col_where"), t("cli_col_in_out"), t("cli_col_kernel"), t("cli_col_stride"))
    print(_row(heads, widths) + "  " + t("cli_col_output_at", side=side))
    for info in infos:
        channels = f"{info.in_channels}→{info.out_channels}" if info.out_channels else f"{info.out_channels_map}"
        kernel = "x".join(map(str, info.kernel_size)) if info.kernel_size else ""
        stride = str(info.stride[0]) if info.stride else ""
        shape = f"{info.out_channels_map}×{info.out_hw[0]}×{info.out_hw[1]}" if info.out_hw else ""
        print(_row((info.name, info.where, channels, kernel, stride), widths) + f"  {shape}")
    convs = sum(i.kind == "conv" for i in infos)
    print(t("cli_list_layers_total", convs=convs, blocks=len(infos) - convs, model=args.model))
    return 0


def _list_models() -> int:
    current = None
    for name in list_models():
        group = family(name)
        if group != current:
            print(f"\n{group}:" if current else f"{group}:")
            current = group
        print(f"  {name}")
    print("\n" + t("cli_list_models_timm"))
    for warning in operator_models()[1]:  # the VIZHOOKS_MODELS entries left out, and why (as the sidebar says)
        print(f"{PROG}: {warning}", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.download_weights:
        bad = [n for n in args.download_weights if n not in torchvision_models() and not n.startswith("clip:")]
        if bad:
            raise UsageError(t("cli_unknown_download", name=bad[0], prog=PROG))
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
        raise UsageError(t("cli_no_image", prog=PROG))

    if _is_video(args.image):
        return _video(args)
    image = load_image(args.image)  # before the model: a bad file fails fast
    if args.labels and args.weights in ("auto", "imagenet", "none"):
        raise UsageError(t("cli_labels_need_path"))
    bundle = load_model(args.model, weights=args.weights, device=args.device, labels=args.labels)
    x = bundle.preprocess(image, args.size)
    hw = cast(tuple[int, int], tuple(x.shape[-2:]))  # (N, C, H, W) input
    layers = resolve_layers(bundle.model, args.layers or default_layers(bundle.model, hw))
    print(model_line(bundle), file=sys.stderr)
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


def model_line(bundle: ModelBundle) -> str:
    """The line each command prints when its model is loaded: name, device, where the weights came from."""
    return t("cli_model_line", name=bundle.name, device=bundle.device, status=weights_words(bundle))


def weights_words(bundle: ModelBundle) -> str:
    """Where the weights came from: in English the library's own sentence (paths, each reason met on the
    way); in another language the catalogue's account of the same outcome, as the page's sidebar gives
    it, since that sentence is English built from what the loader met."""
    if language() == SOURCE:
        return bundle.weights_status
    if bundle.weights_source == "file":  # the page's words say "this server's own checkpoint"
        return t("cli_weights_from_file", name=bundle.name)
    if bundle.pretrained:
        return t(f"weights_from_{bundle.weights_source}")
    if random_as_asked(bundle.weights_status):
        return t("cli_weights_as_asked")
    why = said_notes(bundle.weights_notes)
    return sentences(t("cli_weights_random", command=fetch_command(bundle.arch)),
                     t("cli_weights_why", reasons=t("weights_note_separator").join(why)) if why else "")


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
        print("\r" + t("cli_bar_frames", what=self.what, done=done, total=total), end=end, file=sys.stderr,
              flush=True)


def _video(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vizhooks.video import capture_frames, frames_npz_bytes, layer_video, read_clip

    if args.norm != "channel":
        raise UsageError(t("cli_norm_clip"))
    if args.labels and args.weights in ("auto", "imagenet", "none"):
        raise UsageError(t("cli_labels_need_path"))
    clip = read_clip(args.image, max_frames=args.frames, progress=_Bar(t("cli_bar_decoding")))  # before the model
    print(t("cli_clip_line", width=clip.width, height=clip.height, seconds=clip.duration, fps=clip.fps,
            used=len(clip.frames), total=clip.frame_count), file=sys.stderr)
    bundle = load_model(args.model, weights=args.weights, device=args.device, labels=args.labels)
    x = bundle.preprocess(clip.frames[0], args.size)
    hw = cast(tuple[int, int], tuple(x.shape[-2:]))  # (N, C, H, W) input
    layers = resolve_layers(bundle.model, args.layers or default_layers(bundle.model, hw))
    print(model_line(bundle), file=sys.stderr)
    note = bundle.input_note(args.size)
    if note:
        print(note, file=sys.stderr)
    acts = capture_frames(bundle, clip.frames, layers, size=args.size, what=args.what,
                          progress=_Bar(t("cli_bar_capturing")))
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
            raise argparse.ArgumentTypeError(t("cli_whole_number", flag=flag, text=text)) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(t("cli_from_to", flag=flag, low=low, high=high, value=value))
        return value

    return parse


def _exemplars_arguments(p: argparse.ArgumentParser) -> None:
    from vizhooks.atlas import ENGINES, IMAGE_EXTENSIONS

    p.description = t("cli_exemplars_description", extensions=" ".join(IMAGE_EXTENSIONS))
    p.epilog = (t("cli_examples") + "\n"
                f"  {PROG} exemplars photos/ --layers layer3.0.conv1 layer4.1.conv2 --top 9 --out atlas/\n"
                f"  {PROG} exemplars photos/ --model resnet50 --weights mine.pth --size 160 --batch 64 --out atlas50/")
    p.add_argument("folder", help=t("cli_exemplars_folder"))
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_model_as_main"))
    p.add_argument("--weights", default="auto", help=t("cli_weights"))
    p.add_argument("--layers", nargs="+", metavar="NAME", help=t("cli_exemplars_layers"))
    p.add_argument("--top", type=_whole_number("--top", 1, 10_000), default=9, help=t("cli_exemplars_top"))
    p.add_argument("--size", type=_positive_size, default=224, help=t("cli_exemplars_size"))
    p.add_argument("--out", default="atlas", metavar="DIR", help=t("cli_exemplars_out"))
    p.add_argument("--engine", default="local", choices=ENGINES, help=t("cli_exemplars_engine"))
    p.add_argument("--batch", type=_whole_number("--batch", 1, 100_000), default=32, help=t("cli_exemplars_batch"))
    workers = min(4, max((os.cpu_count() or 1) - 1, 0))
    p.add_argument("--workers", type=_whole_number("--workers", 0, 256), default=workers,
                   help=t("cli_exemplars_workers"))
    p.add_argument("--checkpoint-every", type=_whole_number("--checkpoint-every", 1, 1_000_000), default=20,
                   metavar="N", help=t("cli_exemplars_checkpoint"))
    p.add_argument("--device", default="auto", help=t("cli_device"))
    p.add_argument("--rank", default="activation", choices=("activation", "relevance"), help=t("cli_exemplars_rank"))
    p.add_argument("--target", metavar="CLASS", help=t("cli_exemplars_target"))


def _exemplars(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vizhooks.atlas import build_atlas, check_engine, list_images

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(t("cli_is_file_images", folder=folder) if folder.exists()
                         else t("cli_no_folder", folder=folder))
    check_engine(args.engine)
    if args.rank == "relevance" and args.target is None:
        raise UsageError(t("cli_exemplars_rank_needs_target"))
    if args.rank == "activation" and args.target is not None:
        raise UsageError(t("cli_exemplars_target_needs_rank"))
    if not list_images(folder, exclude=args.out):  # before the model: a wrong folder fails fast
        raise UsageError(t("cli_no_images", folder=folder, prog=PROG, command="exemplars"))
    bundle = load_model(args.model, weights=args.weights, device=args.device)
    layers = args.layers or default_layers(bundle.model, (args.size, args.size))
    resolve_layers(bundle.model, layers)
    target = None
    if args.target is not None:  # a class number or name, as concepts takes it
        number = args.target.lstrip("-").isdigit()
        if number and not 0 <= int(args.target) < len(bundle.categories):
            raise UsageError(t("cli_exemplars_target_range", model=bundle.name, n=len(bundle.categories),
                               last=len(bundle.categories) - 1, target=args.target))
        target = _class_index(args.target, bundle.categories)
    print(model_line(bundle), file=sys.stderr)
    _output_folder(args.out)
    try:
        atlas = build_atlas(folder, bundle, layers, args.out, top=args.top, size=args.size, engine=args.engine,
                            batch=args.batch, workers=args.workers, checkpoint_every=args.checkpoint_every,
                            rank=args.rank, target=target)
    except KeyboardInterrupt:
        print(t("cli_exemplars_interrupted", out=args.out), file=sys.stderr)
        return 130
    except RuntimeError as exc:  # e.g. a DataLoader worker killed: the progress is saved
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        print(t("cli_exemplars_failed", first=first, out=args.out), file=sys.stderr)
        return 1
    for item in atlas.manifest["skipped"]:
        print(t("cli_skipped", path=item["path"], reason=_skip_reason(folder / item["path"], item["reason"])),
              file=sys.stderr)
    if not atlas.manifest["images"]:  # an atlas of nothing is no success (explain and concepts say the same)
        raise UsageError(t("cli_none_readable", n=len(atlas.manifest["skipped"]), folder=folder))
    print(t("cli_exemplars_done", images=atlas.manifest["images"], skipped=len(atlas.manifest["skipped"]),
            layers=len(atlas.layers), top=args.top), file=sys.stderr)
    print(atlas.path)
    return 0


def _visualize_arguments(p: argparse.ArgumentParser) -> None:
    p.description = t("cli_visualize_description")
    p.epilog = (t("cli_examples") + "\n"
                f"  {PROG} visualize --layer layer3.0.conv1 --channels 0 1 2 3 --out vis/\n"
                f"  {PROG} visualize --model vgg16 --layer features.28 --channels 7 --size 224 --steps 512")
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_visualize_model"))
    p.add_argument("--weights", default="auto", help=t("cli_weights"))
    p.add_argument("--layer", required=True, metavar="NAME", help=t("cli_visualize_layer"))
    p.add_argument("--channels", nargs="+", type=_whole_number("--channels", 0, 1_000_000), default=[0],
                   metavar="N", help=t("cli_visualize_channels"))
    p.add_argument("--size", type=_whole_number("--size", 16, 1024), default=128, help=t("cli_visualize_size"))
    p.add_argument("--steps", type=_whole_number("--steps", 0, 10_000), default=256, help=t("cli_visualize_steps"))
    p.add_argument("--seed", type=_whole_number("--seed", 0, 2**31 - 1), default=0, help=t("cli_seed"))
    p.add_argument("--out", default="vizhooks-out", metavar="DIR", help=t("cli_visualize_out"))
    p.add_argument("--device", default="auto", help=t("cli_device"))


def _visualize(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vizhooks.atlas import visualize_channels

    bundle = load_model(args.model, weights=args.weights, device=args.device)
    resolve_layers(bundle.model, [args.layer])
    print(model_line(bundle), file=sys.stderr)
    channels = list(dict.fromkeys(args.channels))

    def bar(step: int, steps: int) -> None:
        filled = int(30 * step / steps)
        sys.stderr.write(f"\r{args.layer} {channels[:4]}{'...' if len(channels) > 4 else ''}: "
                         f"[{'#' * filled}{'.' * (30 - filled)}] " + t("cli_visualize_step", step=step, steps=steps))
        sys.stderr.flush()

    _output_folder(args.out)
    size = bundle.input.fixed_size or max(args.size, bundle.input.min_size)  # a ViT's size, another's least
    if size != args.size:
        key = "cli_visualize_size_used" if bundle.input.fixed_size else "cli_visualize_size_least"
        print(t(key, name=display_name(bundle.name), side=size, asked=args.size), file=sys.stderr)
    images = visualize_channels(bundle.model, args.layer, channels, size=size, steps=args.steps, seed=args.seed,
                                progress=bar if args.steps else None, mean=bundle.mean, std=bundle.std)
    if args.steps:
        sys.stderr.write("\n")
    out = Path(args.out)
    for channel, image in zip(channels, images, strict=True):
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        print(write_atomic(out / f"{args.layer}_{channel}.png", buffer.getvalue()))
    return 0


def _export_path(flag: str, suffixes: tuple[str, ...] = ()) -> Callable[[str], str]:
    """A file to write after teaching: checked before the photos are read, so a typo costs no run. Without
    ``suffixes``, the checkpoint (``--out``): any ending but .txt, its class names' file beside it."""
    def parse(text: str) -> str:
        from pathlib import Path

        path = Path(text)
        if path.is_dir():
            raise argparse.ArgumentTypeError(t("cli_export_folder", flag=flag, text=text,
                                               example=path / ("my_model" + (suffixes or (".pth",))[0])))
        if suffixes and path.suffix.lower() not in suffixes:
            raise argparse.ArgumentTypeError(t("cli_export_suffix", flag=flag, suffixes=t("cli_or").join(suffixes),
                                               text=text))
        if not suffixes and path.suffix.lower() == ".txt":
            raise argparse.ArgumentTypeError(t("cli_teach_out_txt", text=text, example=path.with_suffix(".pth")))
        folder = next((p for p in [path.parent, *path.parent.parents] if p.exists()), Path("."))
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(t("cli_export_not_folder", flag=flag, folder=folder))
        if not os.access(folder, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(t("cli_export_no_permission", flag=flag, folder=folder))
        return text

    return parse


def _teach_arguments(p: argparse.ArgumentParser) -> None:
    p.description = t("cli_teach_description")
    p.epilog = (t("cli_examples") + "\n"
                f"  {PROG} teach my_photos/ --model resnet18 --out my_model.pth\n"
                f"  {PROG} teach my_photos/ --onnx my_model.onnx --torchscript my_model.pt\n"
                f"  python -c \"import vizhooks; vizhooks.load_model('resnet18', weights='my_model.pth', "
                "labels='my_model.txt')\"")
    p.add_argument("folder", metavar="FOLDER", help=t("cli_teach_folder"))
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_teach_model"))
    p.add_argument("--weights", default="auto", help=t("cli_weights"))
    p.add_argument("--out", type=_export_path("--out"), default="my_model.pth", metavar="FILE",
                   help=t("cli_teach_out"))
    p.add_argument("--onnx", type=_export_path("--onnx", (".onnx",)), metavar="FILE", help=t("cli_teach_onnx"))
    p.add_argument("--torchscript", type=_export_path("--torchscript", (".pt",)), metavar="FILE",
                   help=t("cli_teach_torchscript"))
    p.add_argument("--size", type=_whole_number("--size", 32, 1024), default=224, help=t("cli_teach_size"))
    p.add_argument("--folds", type=_whole_number("--folds", 2, 20), default=5, help=t("cli_teach_folds"))
    p.add_argument("--seed", type=_whole_number("--seed", 0, 2**31 - 1), default=0, help=t("cli_seed"))
    p.add_argument("--device", default="auto", help=t("cli_device"))


def _teach(args: argparse.Namespace) -> int:
    from pathlib import Path

    from torchvision.datasets.folder import IMG_EXTENSIONS

    from vizhooks.exporting import to_onnx, to_torchscript
    from vizhooks.teaching import teach

    folder = Path(args.folder)
    if not folder.is_dir():
        raise UsageError(t("err_audit_is_file", folder=folder) if folder.exists()
                         else t("cli_no_folder", folder=folder))
    if args.torchscript and Path(args.torchscript).resolve() == Path(args.out).resolve():
        raise UsageError(t("cli_teach_same_file", out=args.out))
    classes = sorted(d for d in folder.iterdir() if d.is_dir() and not d.name.startswith("."))
    if len(classes) < 2:
        raise UsageError(nt("cli_teach_few_classes", len(classes), folder=folder))
    examples: dict[str, list] = {}
    for d in classes:
        examples[d.name] = []
        for path in sorted(p for p in d.rglob("*") if p.suffix.lower() in IMG_EXTENSIONS and p.is_file()):
            try:
                examples[d.name].append(load_image(path))
            except InvalidImageError as exc:
                print(t("cli_skipped", path=path, reason=_refusal(exc)), file=sys.stderr)
    bundle = load_model(args.model, weights=args.weights, device=args.device)
    print(model_line(bundle), file=sys.stderr)

    def bar(done: int, total: int, stage: str) -> None:
        features = stage == "features"
        label = t("cli_teach_stage_features") if features else t("cli_teach_stage_training")
        unit = t("cli_teach_unit_photos") if features else t("cli_teach_unit_fits")
        print("\r" + t("cli_progress", label=label, done=done, total=total, unit=unit),
              end="\n" if done >= total else "", file=sys.stderr, flush=True)

    taught = teach(bundle, examples, seed=args.seed, folds=args.folds, size=args.size, progress=bar)
    print(t("cli_teach_accuracy", method=taught.method, n=taught.heldout))
    rows = taught.confusion.sum(axis=1)
    for name, accuracy, count in zip(taught.bundle.categories, taught.per_class, rows, strict=True):
        print(t("cli_class_accuracy", name=name, accuracy=accuracy, count=count) if count
              else t("cli_teach_none_held", name=name))
    print(t("cli_teach_overall", accuracy=taught.accuracy, spread=taught.spread))
    weights, labels = taught.save(args.out)
    print(t("cli_teach_wrote", weights=weights, labels=labels))
    for path, write in ((args.onnx, to_onnx), (args.torchscript, to_torchscript)):
        if path:
            exported = write(taught, path, size=args.size)
            print(t("cli_teach_exported", model=exported.model, labels=exported.labels, program=exported.program,
                    folder=exported.program.parent, name=exported.program.name))
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
            raise argparse.ArgumentTypeError(t("cli_names", flag=flag, known=", ".join(known),
                                               name=(unknown or [text])[0]))
        return list(dict.fromkeys(names))
    return parse


def _explain_arguments(p: argparse.ArgumentParser) -> None:
    from vizhooks.interpret.methods import METHODS

    p.description = t("cli_explain_description", methods=", ".join(METHODS))
    p.epilog = (t("cli_examples") + "\n"
                f"  {PROG} explain photos/ --methods gradcam,gradcampp,layercam,ig --out scores.csv\n"
                f"  {PROG} explain imagenette/val --model resnet18 --weights imagenet --metrics deletion,insertion "
                "--steps 20 --out imagenette.csv")
    p.add_argument("folder", metavar="FOLDER", help=t("cli_folder_photos"))
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_model"))
    p.add_argument("--weights", default="auto", help=t("cli_weights"))
    p.add_argument("--methods", type=_names("--methods", METHODS), default=["gradcam", "gradcampp", "layercam", "ig"],
                   help=t("cli_explain_methods"))
    p.add_argument("--metrics", type=_names("--metrics", tuple(EXPLAIN_METRICS)),
                   default=list(EXPLAIN_METRICS), help=t("cli_explain_metrics"))
    p.add_argument("--layers", nargs="+", metavar="NAME", help=t("cli_explain_layers"))
    p.add_argument("--steps", type=_whole_number("--steps", 1, 1000), default=20, help=t("cli_explain_steps"))
    p.add_argument("--baseline", default="blur", choices=("blur", "zeros"), help=t("cli_explain_baseline"))
    p.add_argument("--size", type=_positive_size, default=224, help=t("cli_explain_size"))
    p.add_argument("--batch", type=_whole_number("--batch", 1, 4096), default=16, help=t("cli_explain_batch"))
    p.add_argument("--no-references", dest="references", action="store_false", help=t("cli_explain_no_references"))
    p.add_argument("--out", default="scores.csv", metavar="FILE", help=t("cli_explain_out"))
    p.add_argument("--device", default="auto", help=t("cli_device"))


def _done_rows(path: os.PathLike[str], header: list[str]) -> set[tuple[str, str]]:
    """(photo, method) pairs already in ``path``, which must have ``header`` (else one sentence)."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8-sig") as f:  # -sig: the table saved again by a spreadsheet
            rows = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error):  # a photo or another binary file given as --out: left as it is
        raise UsageError(t("cli_explain_not_scores", path=path)) from None
    if not rows:
        return set()
    if rows[0][:3] != header[:3]:  # another program's table
        raise UsageError(t("cli_explain_not_scores", path=path))
    if rows[0] != header:
        raise UsageError(t("cli_explain_other_columns", path=path))
    return {(r[0], r[1]) for r in rows[1:] if len(r) == len(header)}


def _explain(args: argparse.Namespace) -> int:
    import csv
    from pathlib import Path

    from vizhooks.atlas import list_images

    folder, out = Path(args.folder), Path(args.out)
    if not folder.is_dir():
        raise UsageError(t("cli_is_file_photos", folder=folder) if folder.exists()
                         else t("cli_no_folder", folder=folder))
    photos = list_images(folder)
    if not photos:
        raise UsageError(t("cli_no_images", folder=folder, prog=PROG, command="explain"))
    columns = [c for m in args.metrics for c in EXPLAIN_METRICS[m]]
    header = ["photo", "method", "target", *columns]
    done = _done_rows(out, header) if out.exists() else set()
    bundle = load_model(args.model, weights=args.weights, device=args.device)
    if args.layers:
        resolve_layers(bundle.model, args.layers)
    print(model_line(bundle), file=sys.stderr)
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
                    print(("" if i == 1 else "\n") + t("cli_skipped", path=key, reason=_refusal(exc)), file=sys.stderr)
                    skipped += 1
                else:
                    writer.writerows(_explain_rows(bundle, x, key, todo, columns, args))
                    f.flush()  # a photo's rows together: a stop keeps every finished photo
            print("\r" + t("cli_photos_progress", done=i, total=len(photos)), end="\n" if i == len(photos) else "",
                  file=sys.stderr, flush=True)
    if skipped == len(photos):
        raise UsageError(t("cli_none_readable", n=len(photos), folder=folder))
    _explain_summary(out, names, columns)
    if skipped:
        print(nt("cli_files_skipped", skipped), file=sys.stderr)
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
    print(_row((t("cli_col_method"), t("cli_col_photos")), (14, -7)) + "  "
          + "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
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
    p.description = t("cli_audit_description")
    p.epilog = (t("cli_examples") + "\n"
                f"  {PROG} audit sample_images/shortcut/ --model resnet18 --weights my_model.pth --out audit/\n"
                f"  {PROG} audit photos/ --model resnet50 --layer layer4 --clusters 3 --out audit50/")
    p.add_argument("folder", metavar="FOLDER", help=t("cli_audit_folder"))
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_audit_model"))
    p.add_argument("--weights", default="auto", help=t("cli_weights"))
    p.add_argument("--labels", metavar="FILE", help=t("cli_audit_labels"))
    p.add_argument("--layer", metavar="NAME", help=t("cli_audit_layer"))
    p.add_argument("--method", default="gradcam", metavar="NAME", help=t("cli_audit_method"))
    p.add_argument("--size", type=_whole_number("--size", MIN_SIZE, MAX_SIZE), default=224, help=t("cli_audit_size"))
    p.add_argument("--clusters", default="auto", help=t("cli_audit_clusters"))
    p.add_argument("--engine", default="local", choices=["local", "ray"], help=t("cli_audit_engine"))
    p.add_argument("--batch", type=_whole_number("--batch", 1, 1024), default=32, help=t("cli_audit_batch"))
    p.add_argument("--device", default="auto", help=t("cli_device"))
    p.add_argument("--out", required=True, metavar="DIR", help=t("cli_audit_out"))


def _audit(args: argparse.Namespace) -> int:
    import csv
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq

    from vizhooks.interpret.audit import audit, class_folders, match_classes
    from vizhooks.interpret.methods import METHODS

    folder, out = Path(args.folder), Path(args.out)
    classes = list(class_folders(folder))  # the folder's and the method's refusals before a model is loaded
    if args.method not in METHODS:
        raise UsageError(t("cli_audit_unknown_method", method=args.method, methods=listed(METHODS)))
    clusters: int | str = args.clusters
    if clusters != "auto":
        if not str(clusters).isdigit() or int(clusters) < 1:
            raise UsageError(t("cli_audit_clusters_number", clusters=clusters))
        clusters = int(clusters)
    labels = args.labels
    if labels is None and args.weights not in ("auto", "imagenet", "none") and Path(args.weights).with_suffix(
            ".txt").is_file():
        labels = str(Path(args.weights).with_suffix(".txt"))
    if labels and args.weights in ("auto", "imagenet", "none"):
        raise UsageError(t("cli_labels_need_path"))
    bundle = load_model(args.model, weights=args.weights, device=args.device, labels=labels)
    print(model_line(bundle), file=sys.stderr)
    if args.layer:  # refusals before the output folder is made: a corrected run then starts afresh there
        resolve_layers(bundle.model, [args.layer])
    if bundle.categories:
        match_classes(classes, bundle.categories, len(bundle.categories), folder)
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
            print("\r" + t("cli_audit_pictures", done=done, total=total), end="\n" if done >= total else "",
                  file=sys.stderr, flush=True)

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
    print(t("cli_audit_per_class"))
    for name, accuracy in found.accuracy().items():
        print(t("cli_class_accuracy", name=name, accuracy=accuracy,
                count=int(found.confusion[found.classes.index(name)].sum())))
    for name, c in found.suspicious():
        print(t("audit_shortcut", where=t(f"audit_where_{c.where}"), name=name, cluster=c.id, n=c.size))
    if not found.suspicious():
        print(t("cli_audit_no_shortcut"))
    if found.skipped:
        print(nt("cli_audit_skipped", len(found.skipped)), file=sys.stderr)
    print(out)
    return 0


def _concepts_arguments(p: argparse.ArgumentParser) -> None:
    p.description = t("cli_concepts_description")
    p.epilog = (t("cli_examples") + "\n"
                f"  {PROG} concepts photos/ --model resnet50 --layer layer3 --k 10 --target 281 --out concepts/\n"
                f"  {PROG} concepts my_photos/ --model resnet18 --weights my_model.pth --labels my_model.txt "
                "--layer layer4 --k 5 --target mug --out mug/")
    p.add_argument("folder", metavar="FOLDER", help=t("cli_folder_photos"))
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_model"))
    p.add_argument("--weights", default="auto", help=t("cli_weights"))
    p.add_argument("--labels", metavar="FILE", help=t("cli_labels"))
    p.add_argument("--layer", required=True, metavar="NAME", help=t("cli_concepts_layer"))
    p.add_argument("--k", type=_whole_number("--k", 1, 1000), default=10, help=t("cli_concepts_k"))
    p.add_argument("--target", metavar="CLASS", help=t("cli_concepts_target"))
    p.add_argument("--crops", type=_whole_number("--crops", 1, 1000), default=16, help=t("cli_concepts_crops"))
    p.add_argument("--crop", type=float, default=0.5, help=t("cli_concepts_crop"))
    p.add_argument("--size", type=_positive_size, default=224, help=t("cli_concepts_size"))
    p.add_argument("--batch", type=_whole_number("--batch", 1, 4096), default=32, help=t("cli_concepts_batch"))
    p.add_argument("--top", type=_whole_number("--top", 1, 100), default=9, help=t("cli_concepts_top"))
    p.add_argument("--seed", type=_whole_number("--seed", 0, 2**31 - 1), default=0, help=t("cli_seed"))
    p.add_argument("--out", default="concepts", metavar="DIR", help=t("cli_concepts_out"))
    p.add_argument("--engine", default="local", choices=["local", "ray"], help=t("cli_concepts_engine"))
    p.add_argument("--device", default="auto", help=t("cli_device"))


def _class_index(text: str, categories: Sequence[str]) -> int:
    if text.isdigit() and int(text) < len(categories):
        return int(text)
    if text in categories:
        return list(categories).index(text)
    raise UsageError(t("cli_no_class", name=text, last=len(categories) - 1))


def _concepts(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    import numpy as np

    from vizhooks.atlas import list_images
    from vizhooks.interpret.concepts import ConceptsError, concept_maps, concept_sheet, discover, top_photos
    from vizhooks.render.figures import channel_overlay, image_to_png

    folder, out = Path(args.folder), Path(args.out)
    if not folder.is_dir():
        raise UsageError(t("cli_is_file_photos", folder=folder) if folder.exists()
                         else t("cli_no_folder", folder=folder))
    names = list_images(folder, exclude=args.out)
    if not names:
        raise UsageError(t("cli_no_images", folder=folder, prog=PROG, command="concepts"))
    kept = []
    for key in names:  # read once to skip what is not a picture; discover reads them again, one at a time
        try:
            load_image(folder / key)
        except InvalidImageError as exc:
            print(t("cli_skipped", path=key, reason=_refusal(exc)), file=sys.stderr)
        else:
            kept.append(key)
    if not kept:
        raise UsageError(t("cli_none_readable", n=len(names), folder=folder))
    if args.k > len(kept) * args.crops:  # before the model: a wrong setting fails fast
        raise ConceptsError(code="concepts_k_too_large", k=args.k, crops=len(kept) * args.crops)
    bundle = load_model(args.model, weights=args.weights, labels=args.labels, device=args.device)
    resolve_layers(bundle.model, [args.layer])
    target = None if args.target is None else _class_index(args.target, bundle.categories)
    print(model_line(bundle), file=sys.stderr)
    _output_folder(out)
    paths = [folder / key for key in kept]

    def bar(done: int, total: int, stage: str) -> None:
        crops = stage == "crops"
        unit = t("cli_concepts_unit_crops") if crops else t("cli_concepts_unit_photos")
        label = t("cli_concepts_activations") if crops else t("cli_concepts_importance")
        print("\r" + t("cli_progress", label=label, done=done, total=total, unit=unit),
              end="\n" if done >= total else "", file=sys.stderr, flush=True)

    try:
        found = discover(bundle, paths, args.layer, k=args.k, target=target, crops_per_image=args.crops,
                         crop=args.crop, size=args.size, seed=args.seed, batch_size=args.batch, progress=bar,
                         engine=args.engine)
    except KeyboardInterrupt:
        print(t("cli_concepts_interrupted", out=out), file=sys.stderr)
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
    print(t("cli_concepts_header") if target is not None else t("cli_concepts_header_plain"))
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
    #: The catalogue key (``cli_NAME_summary``) of the one line ``--help`` lists for it.
    summary: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    #: What follows ``python -m vizhooks NAME`` in the top-level help's example of this command.
    example: str = ""


#: The subcommands, in the order ``--help`` lists them; the first is the default. Summaries stay under
#: 60 characters so each is one line of an 80-column ``--help``.
COMMANDS: tuple[Command, ...] = (
    Command("maps", "cli_maps_summary", _maps_arguments, _run,
            "sample_images/chelsea.jpg --layers conv1 --out out/"),
    Command("exemplars", "cli_exemplars_summary", _exemplars_arguments, _exemplars,
            "photos/ --layers layer3.0.conv1 --rank relevance --target 281 --out atlas/"),
    Command("visualize", "cli_visualize_summary", _visualize_arguments, _visualize,
            "--layer layer3.0.conv1 --channels 0 1 2 --out vis/"),
    Command("teach", "cli_teach_summary", _teach_arguments, _teach,
            "my_photos/ --model resnet18 --out my_model.pth"),
    Command("explain", "cli_explain_summary", _explain_arguments, _explain,
            "photos/ --methods gradcam,saliency --out scores.csv"),
    Command("audit", "cli_audit_summary", _audit_arguments, _audit,
            "photos/ --model resnet18 --out audit/"),
    Command("concepts", "cli_concepts_summary", _concepts_arguments, _concepts,
            "photos/ --layer layer3 --k 10 --target 281 --out concepts/"),
)
#: First arguments the top-level parser answers itself; anything else that is not a command is maps.
_TOP_LEVEL = ("-h", "--help", "--version")


def _top_help_format(prog: str) -> argparse.HelpFormatter:
    # Help text from column 16, so a command name of up to 10 characters shares a line with its summary.
    return _Help(prog, max_help_position=16)


def _new_parser(prog: str) -> _Parser:
    return _Parser(prog=prog)


def build_parser(commands: Sequence[Command] = COMMANDS) -> argparse.ArgumentParser:
    """The top-level parser: ``--help`` lists every command of ``commands`` with its one line, ``--version``."""
    p = _Parser(prog=PROG, formatter_class=_top_help_format)
    p.description = t("cli_top_description", command=commands[0].name)
    default, *others = commands
    p.epilog = (t("cli_examples_each") + "\n"
                f"  {PROG} {default.example}   " + t("cli_default_command", name=default.name) + "\n"
                + "".join(f"  {PROG} {c.name} {c.example}\n" for c in others)
                + f"  {PROG} --list-models   |   --list-layers --model vgg16   |   --download-weights vgg16\n"
                + t("cli_each_help", prog=PROG))
    p.add_argument("--version", action="version", version=f"vizhooks {__version__}", help=t("cli_version"))
    sub = p.add_subparsers(title=t("cli_commands"), dest="command", parser_class=_Parser)
    for command in commands:
        command.arguments(sub.add_parser(command.name, help=t(command.summary)))
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
        if argv[:1] and name != argv[0]:
            _misspelt_command(argv[0], list(by_name))
        rest = argv[1:] if argv[:1] == [name] else argv
        return by_name[name].run(command_parser(name, commands).parse_args(rest))
    except (UsageError, InvalidImageError, InvalidVideoError, WeightsError, UnknownLayerError, ValueError) as exc:
        print(t("cli_error", message=_refusal(exc)), file=sys.stderr)
        return 2
    except OSError as exc:
        print(t("cli_error", message=_os_refusal(exc)), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(t("cli_interrupted"), file=sys.stderr)
        return 130


def _misspelt_command(word: str, names: list[str]) -> None:
    """Refuse a first word that is no file but close to a command's name (``explian``, ``exemplar``): the maps
    form would call it a missing photo, or an unexpected argument, without naming the command meant."""
    import difflib

    if word.startswith("-") or os.path.lexists(word) or os.path.splitext(word)[1] or os.sep in word or "/" in word:
        return  # a missing photo ("lesson.jpg", "photos/explain") is said to be missing
    close = difflib.get_close_matches(word.lower(), names, n=1, cutoff=0.75)
    if close:
        raise UsageError(t("cli_misspelt_command", word=word, name=close[0], prog=PROG))


def _os_refusal(exc: OSError) -> str:
    """``PATH: reason`` for a file the operating system refused: in English the system's own words, in another
    language the catalogue's where it has the error's number (``os_error_ENOENT``...)."""
    if not (exc.filename and exc.strerror):
        return str(exc)
    return said("cli_os_error", {"path": exc.filename, "reason": OSReason.of(exc)})


def _output_folder(path: str | os.PathLike[str]) -> None:
    """The command's --out folder, checked before its long work and made by it later (a stopped run writes
    nothing): a path that cannot be a folder (a file there, or above it; no permission) is the system's
    refusal in one line (exit 1) before the work, not after it."""
    import errno
    from pathlib import Path

    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(folder))
    above = next((p for p in [folder, *folder.parents] if p.exists()), Path("."))
    if not above.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    if not os.access(above, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))


def _skip_reason(path: os.PathLike[str], kept: str) -> str:
    """Why a file was skipped, in the current language: the atlas keeps the library's English sentence (its
    manifest is data), so in another language the file is read again for its refusal; ``kept`` otherwise."""
    if language() == SOURCE:
        return kept
    try:
        load_image(path)
    except InvalidImageError as exc:
        return _refusal(exc)
    except OSError as exc:
        return _os_refusal(exc)
    return kept


def _refusal(exc: Exception) -> str:
    """A refusal's sentence: its English ``str()``, or in another language its catalogue sentence
    (``err_CODE``) where it carries a code of the catalogue (vizhooks.errors.CodedError, and an unknown layer's
    KeyError; another library's ``code`` attribute is not one)."""
    code = getattr(exc, "code", "")
    key = f"err_{code}" if isinstance(code, str) and code else ""
    if language() != SOURCE and key and (key in table(SOURCE) or is_plural(key)):
        sentence = said(key, getattr(exc, "values", {}))
        # the library's English sentence ends with where the names are listed; the page's texts do not
        return sentence + t("cli_list_layers_hint") if code.startswith("unknown_layer") else sentence
    return str(exc)
