"""Where fleet evaluations run: in this process, on a local process pool, or as Ray tasks.

Every runner maps a list of jobs to their points in the jobs' order, so the search
(partitioner.fleets.search), which hands out jobs in fixed waves and reads the answers in order,
gives the same result whatever runs them and however many workers there are. Ray is optional
(`pip install '.[ray]'`): `RayRunner(address)` joins an existing cluster (`ray.init(address=...)`,
or a local instance when the address is "local").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from partitioner.errors import InputError
from partitioner.fleets.evaluate import Job, Point, evaluate

__all__ = ["Runner", "SerialRunner", "PoolRunner", "RayRunner", "make_runner"]


class Runner(Protocol):
    def map(self, jobs: list[Job]) -> list[Point]: ...

    def close(self) -> None: ...


class SerialRunner:
    """Each job in turn, in this process."""

    workers = 1

    def map(self, jobs: list[Job]) -> list[Point]:
        return [evaluate(j) for j in jobs]

    def close(self) -> None:
        return None


class PoolRunner:
    """A local process pool of `workers` processes (default: the CPU count)."""

    def __init__(self, workers: int | None = None) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.workers = max(1, workers or os.cpu_count() or 1)
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx)

    def map(self, jobs: list[Job]) -> list[Point]:
        return list(self._pool.map(evaluate, jobs))

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayRunner:
    """Ray tasks on the cluster at `address` ("local" starts a local instance)."""

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise InputError("--ray needs Ray: pip install 'partitioner[ray]' (or pip install '.[ray]')") from None
        self._ray = ray
        self._own = not ray.is_initialized()
        if self._own:
            try:
                ray.init(address=None if address == "local" else address, include_dashboard=False,
                         log_to_driver=False, configure_logging=False)
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise InputError(f"--ray {address}: cannot join the Ray cluster ({exc})") from None
        self._task: Any = ray.remote(evaluate)
        self.workers = int(ray.cluster_resources().get("CPU", 1))

    def map(self, jobs: list[Job]) -> list[Point]:
        refs = [self._task.remote(j) for j in jobs]
        return list(self._ray.get(refs))

    def close(self) -> None:
        if self._own:
            self._ray.shutdown()


def _check_address(address: str) -> str:
    """"local", "auto", HOST:PORT or ray://HOST:PORT; InputError otherwise (before Ray is touched)."""
    import re

    if address in ("local", "auto") or re.fullmatch(r"(ray://)?[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}", address):
        return address
    raise InputError(f"--ray: expected 'local', 'auto', HOST:PORT or ray://HOST:PORT (got {address!r})")


def make_runner(workers: int | None, ray_address: str | None) -> Runner:
    """Ray if an address is given (or RAY_ADDRESS is set), else serial for one worker, else a pool
    (serial too inside a daemonic process, e.g. a worker of another pool, which may not fork)."""
    import multiprocessing

    address = ray_address or os.environ.get("RAY_ADDRESS")
    if address:
        return RayRunner(_check_address(address))
    if workers == 1 or multiprocessing.current_process().daemon:
        return SerialRunner()
    return PoolRunner(workers)


ProgressFn = Callable[[int, int, float], None]
