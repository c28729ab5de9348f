"""Run the vizhooks benchmark suite, print a table and write it to a markdown file.

    python -m benchmarks.run [--repeat N] [--quick] [--out BENCHMARKS.md] [--json FILE] [--only NAME ...]

Benchmarks (each module in this package has the details):
  grids      1. feature_grid + figure_to_png vs the tutorial's subplot-per-channel pyplot figure
  hooks      2. vizhooks.capture of all Conv2d vs a bare forward pass
  page       3. page reruns through Streamlit's AppTest: display-only vs model-running
  coldstart  4. `streamlit run app.py` launch -> first grids visible in headless Chromium
  memory     5. peak RSS of capturing every Conv2d of resnet50 / resnet152 at 224 and 512
  gpu        6. the capture on CUDA with the device -> CPU copy timed alone (skipped without CUDA)
  video      9. capture_frames in batches of 8 vs one capture per frame (resnet18, 48 frames of a clip);
             decoding and encoding reported beside
  live      10. the live camera: LiveProcessor frames/s on the server alone, and processed frames/s end
             to end (the page in Chromium with its fake camera, over WebRTC)
  teach     11. teaching your own classes: features() vs a bare batched forward (resnet18, 120 photos),
             teach() after features per model family (resnet18, mobilenet_v3_small, vgg16, vit_b_16),
             and a taught model's page view (analyse) vs the plain model's
  overview  12. the Overview view (20 convs of resnet18 x 8 channels in one picture) vs the Feature maps
             view of the five default layers
  explain   13. explanation scores: deletion + insertion of one map (resnet18, 224 px, 20 steps), and
             Score-CAM against its batch count x one batched forward
  export    14. a taught resnet18 exported as ONNX (first export in the process and the next ones) and
             as TorchScript (vizhooks.exporting)
  patching  15. activation patching: a sweep over the 20 convs of resnet18 vs 20 separate patch calls
  relevance 16. channel relevance: Taylor and LRP (resnet50 layer4) vs one forward + backward, batched
             ablation vs 512 intervene calls, 16 conditional heatmaps in one call vs 16 calls
  concepts  17. concepts: the activation pass vs a bare batched forward to the layer, discovery end to
             end, peak memory at 1,000 and 10,000 crops
  pagecpu   18. the CPU of one default-page run of a new session on a warm server, by part (AppTest)
  hf        19. the Hugging Face wrapper's forward vs the model's own (ViT, 224 px), and CLIP zero-shot
             with new class names vs the same names again (text forwards counted)
  audit     20. the folder audit: Grad-CAM + SpRAy vs a bare batched forward + backward, and the Python heap
             peak with a store at 10,000 and 20,000 pictures, extrapolated to 100,000

--repeat N (default 5) is the number of measured repetitions: A/B pairs for grids, 3N pairs for
hooks and gpu, N reruns of each kind for page, min(N, 3) launches for coldstart, min(N, 3) feature
pairs and cached teach() calls and 3N page-view pairs for teach, max(3, N) pairs and min(N, 3)
Score-CAM calls for explain, max(3, 2N) new sessions and reruns for pagecpu; memory runs each case
once in a fresh process. --quick is a smoke test (a few minutes): one repetition, two layers for
grids, one memory case, no profiles; its numbers are not measurements.

Everything runs offline: VIZHOOKS_OFFLINE=1, an empty temporary TORCH_HOME, random weights.
Targets are reported as PASS / MISS and never asserted; a benchmark that fails to run is an ERROR
row and makes the exit status 1. For each MISS (full runs) the measured operation is run once more
under cProfile and the profile goes into the markdown file.

The output file keeps everything above the line ``<!-- BEGIN GENERATED RESULTS -->`` (the
hand-written part) and replaces the rest. With ``--only``, the rows, sections and profiles of the other
benchmarks are kept from the file when it holds a run of the same kind (full with the same ``--repeat``,
or quick) on the same machine and packages: one benchmark can be measured again without a full run, and
each section says when it was recorded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

BEGIN = "<!-- BEGIN GENERATED RESULTS: written by `python -m benchmarks.run`; edit above this line only -->"
END = "<!-- END GENERATED RESULTS -->"
BENCHES = {
    "grids": "1. Grid rendering",
    "hooks": "2. Hook overhead",
    "page": "3. Page latency (AppTest)",
    "coldstart": "4. Cold start (browser)",
    "memory": "5. Memory (peak RSS)",
    "gpu": "6. GPU",
    "featurevis": "7. Feature visualization (batched vs one channel at a time)",
    "exemplars": "8. Dataset exemplars (scan vs bare batched forward)",
    "video": "9. Video (frames in batches vs one capture per frame)",
    "live": "10. Live camera (processed frames per second)",
    "teach": "11. Teaching your own classes",
    "overview": "12. Overview (the whole network vs the Feature maps view)",
    "explain": "13. Explanation scores",
    "export": "14. Taught model export (ONNX, TorchScript)",
    "patching": "15. Activation patching (sweep vs separate patch calls)",
    "relevance": "16. Channel relevance",
    "concepts": "17. Concepts (activation pass vs bare forward to the layer, discovery, memory)",
    "pagecpu": "18. Page CPU per default-page run, by part",
    "hf": "19. Hugging Face wrapper and CLIP prompt cache",
    "audit": "20. Folder audit (throughput vs bare forward + backward, heap peak extrapolated to 100,000)",
}
DEFAULT_HEADER = """# vizhooks benchmarks

Generated by `python -m benchmarks.run`; see `benchmarks/run.py` for what each benchmark measures.
"""


def _offline_env() -> str:
    """Never the network, never a cached checkpoint: the numbers must not depend on the machine's
    torch cache. Returns the temporary TORCH_HOME (removed at the end)."""
    torch_home = tempfile.mkdtemp(prefix="vizhooks-bench-torch-")
    os.environ["VIZHOOKS_OFFLINE"] = "1"
    os.environ["TORCH_HOME"] = torch_home
    os.environ.pop("VIZHOOKS_WEIGHTS", None)
    os.environ.setdefault("MPLBACKEND", "Agg")
    return torch_home


def _cmd(args: list[str]) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _meminfo() -> dict[str, float]:
    info = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, value = line.split(":", 1)
            if key in ("MemTotal", "MemAvailable"):
                info[key] = int(value.split()[0]) / 2**20  # GiB
    except OSError:
        pass
    return info


def machine() -> dict[str, str]:
    import matplotlib
    import numpy
    import streamlit
    import torch
    import torchvision

    cpu = ""
    for line in _cmd(["lscpu"]).splitlines():
        if line.startswith("Model name:"):
            cpu = line.split(":", 1)[1].strip()
    mem = _meminfo()
    try:
        from importlib.metadata import version

        playwright = version("playwright")
    except Exception:
        playwright = "not installed"
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return {
        "CPU": f"{cpu or platform.processor()} ({_cmd(['nproc']) or os.cpu_count()} CPUs online "
               f"by nproc; torch uses {torch.get_num_threads()} threads)",
        "Memory": f"{mem.get('MemTotal', 0):.1f} GiB total, {mem.get('MemAvailable', 0):.1f} GiB available at start",
        "GPU": cuda,
        "OS": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "Python": platform.python_version(),
        "Packages": f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
                    f"streamlit {streamlit.__version__}, matplotlib {matplotlib.__version__}, "
                    f"numpy {numpy.__version__}, playwright {playwright}",
        "Chromium": _cmd(["/usr/bin/chromium", "--version"]) or "not found",
        "Load average (1 min) at start": f"{os.getloadavg()[0]:.2f}",
    }


def _module(name: str):
    import importlib

    return importlib.import_module(f"benchmarks.{name}")


def _cell(text: object) -> str:
    """A table cell: one line, its bars escaped (an ERROR row's message may hold both)."""
    return " ".join(str(text).split("\n")).replace("|", "\\|")


def table(rows: list[dict]) -> list[str]:
    lines = ["| Benchmark | Case | Measured (median) | Target | Result |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [BENCHES[r["bench"]], *(_cell(r[k]) for k in ("case", "measured", "target", "status"))]
        lines.append(f"| {' | '.join(cells)} |")
    return lines


def kind_of(args: argparse.Namespace) -> str:
    """The first words of the results: which kind of run wrote them (only runs of one kind are merged)."""
    return ("QUICK smoke run (`--quick`): tiny workloads and one repetition; these numbers are not measurements."
            if args.quick else f"Full run, `--repeat {args.repeat}`.")


def stamp() -> str:
    return f"{dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}"


def render(rows: list[dict], details: dict[str, list[str]], profiles: dict[str, str], info: dict[str, str],
           args: argparse.Namespace, seconds: float, merged: bool = False) -> str:
    """The generated part of the file; ``merged``: an ``--only`` run whose other rows were kept from the file
    (the results line then names what this run measured)."""
    when = (f"Recorded {stamp()}; the whole run took {seconds / 60:.1f} min" if not merged else
            f"{'; '.join(BENCHES[b] for b in args.only)} measured again {stamp()} (`--only`, {seconds / 60:.1f} "
            f"min); the other rows are kept from an earlier run of the same kind, and each section below says "
            f"when it was recorded")
    out = [BEGIN, "", "## Results", "",
           f"{kind_of(args)} {when}; load average (1 min) at the end: {os.getloadavg()[0]:.2f}.", "",
           "### Machine", ""]
    out += [f"- **{k}**: {v}" for k, v in info.items()]
    out += ["", "### Table", "", *table(rows), ""]
    for bench, lines in details.items():
        if lines:
            out += [f"### {BENCHES[bench]}", "", *lines, ""]
    if profiles:
        out += ["### Profiles of the MISS rows", "",
                "cProfile of one more run of the measured operation (top functions by own time, then by "
                "cumulative time). Profiling slows Python code down, so read the shares, not the seconds.", ""]
        for case, text in profiles.items():
            out += [f"<details><summary>{case}</summary>", "", "```", text, "```", "", "</details>", ""]
    out += [END, ""]
    return "\n".join(out)


#: The lines of the Machine section that must agree for rows of two runs to stand in one table.
SAME_MACHINE = ("CPU", "GPU", "Python", "Packages")


def earlier(path: Path, args: argparse.Namespace,
            info: dict[str, str]) -> tuple[list[dict], dict[str, list[str]], dict[str, str]]:
    """The rows, sections and profiles of ``path``'s generated part, of benchmarks other than ``args.only``'s,
    when the file holds a run of the same kind (:func:`kind_of`) on the same machine and packages as ``info``
    (:data:`SAME_MACHINE`); else nothing, said on stderr. Sections written before they carried a date get the
    date of the run that wrote them; a table row or profile that cannot be read is left out, with a warning."""
    try:
        text = path.read_text()
    except OSError:
        return [], {}, {}
    part = text.split(BEGIN, 1)[1].split(END, 1)[0] if BEGIN in text else ""
    if not part.strip():  # no results yet: nothing to keep, nothing to say
        return [], {}, {}
    results, _, rest = part.partition("### Machine")
    machine_lines = rest.split("### Table", 1)[0]
    other = [k for k in SAME_MACHINE if f"- **{k}**: {info.get(k, '')}\n" not in machine_lines]
    if kind_of(args) not in results or other:
        why = f"another {', '.join(other)}" if other and kind_of(args) in results else "another kind of run"
        print(f"{path} holds {why}: it is replaced by this run's rows only.", file=sys.stderr)
        return [], {}, {}
    recorded = results.split("Recorded ", 1)[1].split(";", 1)[0] if "Recorded " in results else ""
    titles = {title: bench for bench, title in BENCHES.items()}
    rows: list[dict] = []
    details: dict[str, list[str]] = {}
    section: str | None = None
    body, _, profile_part = part.partition("### Profiles of the MISS rows")
    for line in body.split("### Table", 1)[-1].splitlines():
        if line.startswith("### "):
            section = titles.get(line[4:].strip(), "")
            if section and section not in args.only:
                details[section] = []
        elif section is None and line.startswith("| ") and not line.startswith(("| Benchmark |", "|---")):
            cells = line[2:-2].split(" | ")
            if len(cells) != 5:
                print(f"{path}: a table row that cannot be read is left out: {line[:120]}", file=sys.stderr)
                continue
            title, case, measured, target, status = (cell.replace("\\|", "|") for cell in cells)  # as _cell wrote
            if title in titles and titles[title] not in args.only:
                rows.append({"bench": titles[title], "case": case, "measured": measured, "target": target,
                             "status": status, "numbers": {}})
        elif section in details:
            if line.startswith("_Benchmark wall time:") and "recorded" not in line and recorded:
                line = f"{line.removesuffix('._')}; recorded {recorded}._"
            details[section].append(line)
    details = {bench: "\n".join(lines).strip().splitlines() for bench, lines in details.items()}
    cases = {row["case"] for row in rows}
    profiles = {}
    for block in profile_part.split("<details><summary>")[1:]:
        case, _, rest = block.partition("</summary>")
        fenced = rest.split("```", 2)
        if case in cases and len(fenced) == 3:
            profiles[case] = fenced[1].strip("\n")
    return rows, details, profiles


def write(path: Path, generated: str) -> None:
    header = DEFAULT_HEADER
    if path.exists():
        old = path.read_text()
        if BEGIN in old:
            header = old.split(BEGIN, 1)[0].rstrip() + "\n"
    path.write_text(header + "\n" + generated)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description="vizhooks benchmark suite")
    parser.add_argument("--repeat", type=int, default=None, help="measured repetitions (default 5; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="smoke test: tiny workloads, a few minutes")
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS.md"), help="markdown file to write")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--only", nargs="+", choices=list(BENCHES), default=None,
                        help="run only these; the output file keeps the rows of the others from a run of the same kind")
    parser.add_argument("--no-profile", action="store_true", help="do not profile MISS rows")
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 5
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    torch_home = _offline_env()
    from .common import Config, profile_call

    cfg = Config(repeat=args.repeat, quick=args.quick, profile=not (args.quick or args.no_profile))
    started = time.perf_counter()
    try:
        info = machine()
        # read before the benchmarks run: a file that cannot be merged is said now, not after 25 minutes
        kept_rows, kept_details, kept_profiles = earlier(args.out, args, info) if args.only else ([], {}, {})
        rows: list[dict] = []
        details: dict[str, list[str]] = {}
        profiles: dict[str, str] = {}
        failed = False
        for bench in args.only or list(BENCHES):
            print(f"== {BENCHES[bench]} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                result = _module(bench).run(cfg)
            except Exception as exc:  # reported as an ERROR row
                failed = True
                tb = traceback.format_exc()
                print(tb, file=sys.stderr)
                rows.append({"bench": bench, "case": "—", "measured": f"ERROR: {type(exc).__name__}: {exc}"[:300],
                             "target": "—", "status": "ERROR", "numbers": {}})
                details[bench] = ["```", tb.strip(), "```"]
                continue
            for row in result.rows:
                rows.append(vars(row))
                print(f"   {row.case}: {row.measured}  [{row.status}]", file=sys.stderr, flush=True)
            details[bench] = [*result.details, "",
                              f"_Benchmark wall time: {time.perf_counter() - t0:.0f} s; recorded {stamp()}._"]
            if cfg.profile:
                done: dict[object, str] = {}
                for row in result.rows:
                    fn = result.profilers.get(row.case)
                    if row.status != "MISS" or fn is None:
                        continue
                    if fn in done:
                        profiles[row.case] = f"(the same operation as “{done[fn]}”, profiled above)"
                    else:
                        profiles[row.case] = profile_call(fn, thread=result.profile_thread)
                        done[fn] = row.case
        seconds = time.perf_counter() - started
        order = list(BENCHES)  # the table and the sections in the benchmarks' order, kept and new alike
        sections = {**kept_details, **details}
        text = render(sorted([*kept_rows, *rows], key=lambda row: order.index(row["bench"])),
                      {b: sections[b] for b in order if b in sections}, {**kept_profiles, **profiles}, info, args,
                      seconds, merged=bool(kept_rows))
        write(args.out, text)
        if args.json:
            args.json.write_text(json.dumps({"quick": args.quick, "repeat": args.repeat, "machine": info,
                                             "seconds": seconds, "rows": rows}, indent=2))
        print("\n".join(table(rows)))
        print(f"\nwrote {args.out} ({seconds:.0f} s)")
        return 1 if failed else 0
    finally:
        shutil.rmtree(torch_home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
