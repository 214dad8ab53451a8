"""Executors: run one function over a list of tasks and hand back each answer as it arrives.

A sweep gives an executor a picklable top-level function and its tasks and
reads ``(index, answer)`` pairs in completion order; the answer is what the
function returned, or the exception it raised (or that broke the worker).
:class:`InlineExecutor` runs the tasks one after another in this process
(``--jobs 1``); :class:`ProcessExecutor` on a local process pool
(``concurrent.futures`` with the ``forkserver`` start method where the
platform has it, else ``spawn``: workers start clean, whatever state the
parent holds; a pool per call, or one kept for every call inside ``with``,
as a bandwidth test's rounds use it); :class:`hostsim.executor_ray.RayExecutor` on a Ray cluster
(``--ray ADDRESS``). :func:`make_executor` picks one from the command
line's ``--jobs`` and ``--ray``.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Dict, Iterator, Optional, Protocol, Sequence, Tuple, Union

from .units import ConfigError

Answer = Union[Any, BaseException]


class Executor(Protocol):
    """Runs ``fn`` over ``tasks``; yields ``(index, answer)`` as each task finishes."""

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Tuple[int, Answer]]:
        ...


class InlineExecutor:
    """Runs the tasks in order in this process."""

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Tuple[int, Answer]]:
        for i, task in enumerate(tasks):
            try:
                answer: Answer = fn(task)
            except Exception as e:  # the caller records the failure and goes on
                answer = e
            yield i, answer


class ProcessExecutor:
    """Runs the tasks on ``jobs`` worker processes of a local pool, at most ``jobs`` at a time.

    Each call starts a pool and stops it when done; inside ``with`` one pool
    serves every call (workers start once) until the block ends.
    """

    def __init__(self, jobs: int):
        self.jobs = check_jobs(jobs)
        methods = multiprocessing.get_all_start_methods()
        self.context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
        self._pool: Optional[ProcessPoolExecutor] = None

    def __enter__(self) -> "ProcessExecutor":
        if self._pool is None:
            self._pool = self._new_pool(self.jobs)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _new_pool(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=workers, mp_context=self.context, initializer=_die_with_parent,
                                   initargs=(os.getpid(),))

    def close(self) -> None:
        """Stops the pool kept by ``with`` (tasks not started are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Tuple[int, Answer]]:
        if not tasks:
            return
        kept = self._pool
        pool = kept if kept is not None else self._new_pool(min(self.jobs, len(tasks)))
        running: Dict[Future, int] = {}
        try:
            # Submitted as workers free up, so an interrupted sweep leaves no queue of work behind.
            pending = list(enumerate(tasks))[::-1]
            while pending or running:
                while pending and len(running) < self.jobs:
                    i, task = pending.pop()
                    try:
                        running[pool.submit(fn, task)] = i
                    except Exception as e:  # the pool broke (a worker died)
                        yield i, e
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    i = running.pop(future)
                    try:
                        answer: Answer = future.result()
                    except Exception as e:  # raised by fn, or the worker died (BrokenProcessPool)
                        answer = e
                    yield i, answer
        finally:
            if kept is None:
                pool.shutdown(wait=True, cancel_futures=True)
            else:  # the kept pool stays: an interrupted call's tasks finish there unread
                for future in running:
                    future.cancel()


def _die_with_parent(owner: int) -> None:
    """A worker's first act: a watcher thread that ends the worker as soon
    as process ``owner`` (the one that made the pool) has ended, however
    (SIGKILL included). A parent-death signal would not do: a worker's parent
    is the forkserver, which lives while any worker holds its pipe. Once the
    workers are gone the forkserver and the resource tracker end too, so no
    kill leaves a process behind."""
    import threading

    def watch() -> None:
        try:
            fd = os.pidfd_open(owner)  # Linux 5.3+: readable once the process has ended
        except (AttributeError, OSError):
            fd = None
        if fd is not None:
            import select

            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.poll()
        else:
            import time

            while True:
                try:
                    os.kill(owner, 0)
                except ProcessLookupError:
                    break
                except PermissionError:
                    pass
                time.sleep(0.2)
        os._exit(1)

    threading.Thread(target=watch, name="hostsim-owner-watch", daemon=True).start()


def check_jobs(jobs: Any, field: str = "jobs") -> int:
    """A worker count: an integer >= 1 (an error names ``field``: the command line passes ``--jobs``)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError.invalid(field, jobs, "an integer >= 1")
    return jobs


def local_executor(jobs: int) -> Executor:
    """In this process for one job, else a pool of ``jobs`` processes."""
    return InlineExecutor() if check_jobs(jobs) == 1 else ProcessExecutor(jobs)


def make_executor(jobs: int = 1, ray: Optional[str] = None) -> Executor:
    """A Ray executor when ``ray`` (an address) is given, else :func:`local_executor`.

    A Ray executor holds a connection: call its ``close()`` when done.
    """
    if ray is None:
        return local_executor(jobs)
    from .executor_ray import RayExecutor

    return RayExecutor(ray, jobs)
