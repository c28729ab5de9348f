"""Ray for the engines that run on it (exemplars, concepts, the audit): one way to join or start a
Ray session and to size its pool of model actors, so the three engines behave alike."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: The package's folder, shipped with each job: a cluster without vizhooks installed can run the actors.
PACKAGE = str(Path(__file__).resolve().parent)


def connect(workers: int, missing: Callable[[], Exception]) -> tuple[Any, bool]:
    """``(ray, started_here)``: the caller's session (with its own runtime environment), the cluster
    of ``RAY_ADDRESS``, or a Ray of this machine only with ``workers`` CPUs (0: all of them).
    ``missing()`` is the error raised when Ray is not installed."""
    try:
        import ray
    except ImportError:
        raise missing() from None
    if ray.is_initialized():
        return ray, False
    env = {"py_modules": [PACKAGE]}
    address = os.environ.get("RAY_ADDRESS")
    # Ray's own lines (its token set-up, for one) are not the command's: the engines say their progress and
    # their failures themselves. Ray's hint says int, but it takes level names.
    if address:
        ray.init(address=address, runtime_env=env, logging_level="ERROR")  # type: ignore[arg-type]
    else:
        ray.init(num_cpus=workers or None, include_dashboard=False, runtime_env=env,
                 logging_level="ERROR",  # type: ignore[arg-type]
                 _node_ip_address="127.0.0.1")  # a Ray of this machine only
    return ray, True


def pool(ray: Any, count: int) -> dict[str, Any]:
    """Ray Data's ``map_batches`` arguments for a fixed pool of ``count`` model actors, each on one CPU."""
    return {"compute": ray.data.ActorPoolStrategy(size=count), "num_cpus": 1}


def actors(ray: Any, workers: int) -> tuple[int, int]:
    """``(gpus, count)``: the cluster's GPUs and how many model actors to run: ``workers``, or with
    0 one per GPU of the cluster, else one per CPU."""
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    return gpus, max(1, workers or (gpus or int(resources.get("CPU", 1))))


@contextlib.contextmanager
def session(workers: int, missing: Callable[[], Exception]) -> Iterator[Any]:
    """:func:`connect` for a ``with`` block, with Ray Data's own progress bars off (each engine
    reports its progress itself); a Ray started here is shut down when the block ends."""
    ray, started_here = connect(workers, missing)
    from ray.data import DataContext

    _QUIET.enter(DataContext.get_current())
    try:
        yield ray
    finally:
        _QUIET.leave(DataContext.get_current())
        if started_here:
            ray.shutdown()


class _Quiet:
    """Ray Data's progress bars and its lines on stderr ("Starting execution of Dataset ...", "Progress bars
    disabled ...") off while any session block runs, in any thread; the caller's settings back after the last."""

    def __init__(self) -> None:
        self.lock, self.depth, self.saved = threading.Lock(), 0, (True, logging.NOTSET)

    def enter(self, context: Any) -> None:
        logger = logging.getLogger("ray.data")
        with self.lock:
            if self.depth == 0:
                self.saved = (context.enable_progress_bars, logger.level)
                context.enable_progress_bars = False
                logger.setLevel(logging.ERROR)
            self.depth += 1

    def leave(self, context: Any) -> None:
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                context.enable_progress_bars = self.saved[0]
                logging.getLogger("ray.data").setLevel(self.saved[1])


_QUIET = _Quiet()
