"""Teaching your own classes (``vizhooks.teach``): features, training, and the taught model's page view.

Everything runs on random weights (``weights="none"``) on the CPU, with synthetic photos: seeded,
of varied sizes (200 x 150 to 640 x 480), each class a tint and a pattern of its own.

1. Features: ``features(bundle, photos, size=224)`` (resnet18, 6 classes x 20 photos) against a
   bare batched forward, ``bundle.model(x)`` under ``torch.inference_mode`` in batches of the same
   size (16) on tensors prepared beforehand the way ``features`` prepares them (centre-cropped
   224 squares, the model's mean and std). vizhooks' number includes everything it does: hashing
   each photo for the cache key, resizing, normalising, the pre-hook on the head; the bare one
   runs the model only. Timed in alternated pairs, medians. Target: >= 0.8 x the bare images/s.
2. Training after features: ``teach(...)`` on those 120 photos (every class has 20 >= 10, so one
   stratified hold-out split is fitted, then the final head on every photo) called twice with
   the same ``cache``; the second call is timed, and the cached ``features`` lookup (hashing the
   120 photos) is timed alone and subtracted. For resnet18 (512-dim head input),
   mobilenet_v3_small (1024), vgg16 (4096) and vit_b_16 (the class token, 768), at 224 px.
   Target: <= 5 s. The cached call is also timed once on one torch thread: the fit is hundreds of
   L-BFGS steps on small tensors, which torch's thread pool slows down many times over when other
   work shares the CPU (the load average is in the details).
3. The taught model's page view: ``analyse(bundle, photo, 224, default_layers, "output")`` on
   the plain resnet18 and on ``teach(...).bundle``, alternated, medians. Target: taught
   <= 1.1 x plain.

Part of ``benchmarks.run``'s table; alone:

    python -m benchmarks.teach [--repeat N] [--quick]

Measurements only: nothing is asserted on a duration.
"""

from __future__ import annotations

import os
import sys
import time

from .common import SAMPLE, Config, Result, Row, alternate, bench_main, fmt_s, fmt_samples, median, timed

SIZE = 224
BATCH = 16  # vizhooks.teaching.BATCH; the bare forward uses the same
#: The model families taught, and what their last Linear receives.
FAMILIES = [("resnet18", "pooled features"), ("mobilenet_v3_small", "the classifier's hidden layer"),
            ("vgg16", "the classifier's hidden layer"), ("vit_b_16", "the class token")]


def _photos(classes: int, per_class: int, seed: int = 0) -> dict[str, list]:
    """``classes`` x ``per_class`` RGB photos of random sizes from 200 x 150 to 640 x 480: each
    class a tint and a stripe frequency of its own, over seeded noise, so a head has something to
    learn even from a random backbone."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    out: dict[str, list] = {}
    for c in range(classes):
        tint = rng.uniform(0.2, 0.8, size=3)
        group = []
        for _ in range(per_class):
            w = int(rng.integers(200, 641))
            h = int(rng.integers(150, 481))
            coarse = rng.uniform(0, 1, size=(h // 16 + 1, w // 16 + 1, 3))
            noise = np.kron(coarse, np.ones((16, 16, 1)))[:h, :w]
            stripes = 0.5 + 0.5 * np.sin(np.arange(w)[None, :, None] * (0.05 + 0.04 * c) + rng.uniform(0, 6))
            pixels = 0.4 * noise + 0.35 * tint[None, None, :] + 0.25 * stripes
            group.append(Image.fromarray((np.clip(pixels, 0, 1) * 255).astype(np.uint8), "RGB"))
        out[f"class {c + 1}"] = group
    return out


def _tensors(bundle, photos: list, size: int) -> list:
    """The batches ``features`` would run, built once: ``size`` squares, the model's normalisation."""
    import dataclasses

    import torch

    from vizhooks.models.images import fit_to_model, to_tensor

    spec = dataclasses.replace(bundle.input, fixed_size=bundle.input.fixed_size or size)
    x = [to_tensor(fit_to_model(im, spec.fixed_size, spec), spec.mean, spec.std) for im in photos]
    return [torch.cat(x[i:i + BATCH]) for i in range(0, len(x), BATCH)]


def run(cfg: Config) -> Result:
    import torch

    import vizhooks as vz
    from vizhooks.analysis import analyse
    from vizhooks.models.layers import default_layers
    from vizhooks.ops import hook_count
    from vizhooks.teaching import features, teach

    classes, per_class = (2, 10) if cfg.quick else (6, 20)  # 10 a class: the hold-out split
    # the smoke run: two families (pooled features, a hidden layer) at 96 px; its numbers mean nothing
    size, families = (96, FAMILIES[:2]) if cfg.quick else (SIZE, FAMILIES)
    pairs = 1 if cfg.quick else max(1, min(cfg.repeat, 3))  # a pass over 120 photos is ~10 s on 2 cores
    examples = _photos(classes, per_class)
    photos = [im for group in examples.values() for im in group]
    n = len(photos)
    rows: list[Row] = []
    profilers: dict[str, object] = {}
    details: list[str] = [f"{classes} classes x {per_class} synthetic photos (200 x 150 to 640 x 480, seeded), "
                          f"{size} px, CPU, torch threads: {torch.get_num_threads()}.", ""]

    # 1. features against a bare batched forward -------------------------------------------------
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    t0 = time.perf_counter()
    batches = _tensors(bundle, photos, size)
    t_prep = time.perf_counter() - t0
    caches: list[dict] = []

    def ours() -> None:
        caches.append({})
        features(bundle, photos, size=size, cache=caches[-1])

    def bare() -> None:
        with torch.inference_mode():
            for x in batches:
                bundle.model(x)

    with torch.inference_mode():  # warm-up: one batch each, not a whole pass
        bundle.model(batches[0])
    features(bundle, photos[:BATCH], size=size)
    t_ours, t_bare = alternate(ours, bare, pairs, warmup=0)
    ours_ips, bare_ips = n / median(t_ours), n / median(t_bare)
    ratio = ours_ips / bare_ips
    case1 = (f"features(), resnet18, {classes} classes x {per_class} photos at {size} px, batches of {BATCH}, "
             "vs a bare batched forward")
    rows.append(Row(bench="teach", case=case1,
                    measured=f"features {ours_ips:.1f} images/s (preprocessing and hashing included), bare "
                             f"forward {bare_ips:.1f} images/s (tensors made beforehand): {ratio:.2f} x",
                    target="≥ 0.8 x", status="PASS" if ratio >= 0.8 else "MISS",
                    numbers={"features_ips": ours_ips, "bare_ips": bare_ips, "ratio": ratio}))
    profilers[case1] = lambda: features(bundle, photos, size=size)
    details += [f"1. {pairs} measured pairs (features, bare) after a one-batch warm-up of each; preparing the "
                f"{n} tensors for the bare side took {fmt_s(t_prep)} (not in its number).",
                f"- features (s): {fmt_samples(t_ours)}",
                f"- bare forward (s): {fmt_samples(t_bare)}",
                f"- load average (1 min) after: {os.getloadavg()[0]:.2f}", ""]
    cache_r18 = caches[-1]

    # 2. training after features, per model family ---------------------------------------------
    details.append("2. teach() twice with the same cache; the second call timed, less the cached features() "
                   "lookup (hashing the photos) timed alone. The fit is hundreds of L-BFGS steps on small "
                   "tensors: with other work on the CPU, torch's default threads make it many times slower "
                   "than on one thread, so the cached call is timed once more on one thread for comparison.")
    plain, taught = bundle, None
    for name, what in families:
        t0 = time.perf_counter()
        model = bundle if name == "resnet18" else vz.load_model(name, weights="none", device="cpu")
        t_build = time.perf_counter() - t0
        cache = cache_r18 if name == "resnet18" else {}
        t0 = time.perf_counter()
        first = teach(model, examples, size=size, cache=cache)
        t_first = time.perf_counter() - t0
        t_second, t_lookup = [], []
        result = []
        for _ in range(pairs):
            t_second.append(timed(lambda m=model, c=cache, r=result: r.append(teach(m, examples, size=size,
                                                                                   cache=c))))
            t_lookup.append(timed(lambda m=model, c=cache: features(m, photos, size=size, cache=c)))
        if hook_count(model.model) != 0:
            raise RuntimeError(f"teach left hooks behind on {name}")
        if not torch.isfinite(torch.stack(list(cache.values()))).all():
            raise RuntimeError(f"{name}'s features are not all finite; the training time would mean nothing")
        again = result[-1]
        if not torch.equal(again.head.weight, first.head.weight):
            raise RuntimeError(f"teach gave {name} another head from the same cached features")
        second, lookup = median(t_second), median(t_lookup)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the same call on one thread: the fit's many tiny ops, without OpenMP
        try:
            one_thread = timed(lambda m=model, c=cache: teach(m, examples, size=size, cache=c))
        finally:
            torch.set_num_threads(threads)
        training = max(second - lookup, 1e-6)
        slow = (f"; building it took {fmt_s(t_build)} on this machine" if t_build > 10 else "")
        reused = " (its features already cached by the features row)" if name == "resnet18" else " with features"
        case2 = (f"teach() after features: {name} (head input: {what}, {again.head.in_features}-dim), {n} photos, "
                 f"{again.method} split + final fit, {size} px")
        rows.append(Row(bench="teach", case=case2,
                        measured=f"{fmt_s(training)} training ({fmt_s(second)} the whole cached call, "
                                 f"{fmt_s(lookup)} of it the cache lookup; {fmt_s(one_thread)} on one torch "
                                 f"thread); first call{reused} "
                                 f"{fmt_s(t_first)}; held-out accuracy {again.accuracy:.0%} of "
                                 f"{again.heldout}{slow}",
                        target="≤ 5 s", status="PASS" if training <= 5.0 else "MISS",
                        numbers={"training_s": training, "cached_call_s": second, "lookup_s": lookup,
                                 "first_call_s": t_first, "build_s": t_build, "cached_call_1_thread_s": one_thread}))
        profilers[case2] = (lambda m=model, c=cache: teach(m, examples, size=size, cache=c))
        details += [f"- {name}: built in {fmt_s(t_build)}; first call {fmt_s(t_first)}; cached calls (s): "
                    f"{fmt_samples(t_second)}; lookups (s): {fmt_samples(t_lookup)}; the cached call on one "
                    f"torch thread: {fmt_s(one_thread)}; load average (1 min) {os.getloadavg()[0]:.2f}"]
        if name == "resnet18":
            taught = again.bundle
        del model, cache
    details.append("")

    # 3. the taught model's page view against the plain model's --------------------------------
    if taught is None:
        raise RuntimeError("resnet18 was not taught")
    layers = default_layers(plain.model, (size, size))
    photo = vz.load_image(SAMPLE)
    views = 3 if cfg.quick else max(3, 3 * cfg.repeat)
    t_plain, t_taught = alternate(lambda: analyse(plain, photo, size, layers, "output"),
                                  lambda: analyse(taught, photo, size, layers, "output"), views)
    mp, mt = median(t_plain), median(t_taught)
    view_ratio = mt / mp
    case3 = f"analyse() on the taught resnet18 vs the plain one: {len(layers)} default layers, {SAMPLE.name}, {size} px"
    rows.append(Row(bench="teach", case=case3,
                    measured=f"taught {fmt_s(mt)}, plain {fmt_s(mp)}: {view_ratio:.2f} x",
                    target="≤ 1.1 x", status="PASS" if view_ratio <= 1.1 else "MISS",
                    numbers={"taught_s": mt, "plain_s": mp, "ratio": view_ratio}))
    profilers[case3] = lambda: analyse(taught, photo, size, layers, "output")
    details += [f"3. {views} measured pairs (plain, taught) after one warm-up pair; layers: {', '.join(layers)}.",
                f"- plain (s): {fmt_samples(t_plain)}",
                f"- taught (s): {fmt_samples(t_taught)}"]
    return Result(rows=rows, details=details, profilers=profilers)


def main(argv: list[str] | None = None) -> int:
    return bench_main(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
