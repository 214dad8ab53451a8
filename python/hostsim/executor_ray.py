"""A Ray executor: the points of a sweep as Ray tasks on a cluster (``hostsim sweep --ray ADDRESS``).

:class:`RayExecutor` implements :class:`hostsim.executor.Executor` on a Ray
cluster: a head started with ``ray start --head`` (``HOST:PORT``, or
``auto`` for the one this machine knows of), or ``local``, a cluster
started inside this process with ``jobs`` CPUs. Each task is one call of
the sweep's function (``compute_point``) as a Ray remote function of one
CPU; answers come back in completion order (``ray.wait``). A task whose
worker process dies (killed, out of memory, a crashed node) is run again,
up to ``max_retries`` times; an exception raised by the function is an
answer, not retried. Only the driver (this process) writes the store.

Workers import hostsim themselves, so they are told where this process
found it: when the package is not in a ``site-packages`` folder (a source
tree on ``PYTHONPATH``, an editable install), the workers' ``PYTHONPATH``
is the folder holding it, which must exist on every node (one machine, or
a shared file system). Before the first task, one probe task checks that
the workers run the same hostsim version.

Ray is imported only when an executor is made; a missing ``ray`` package,
a malformed address or a head that does not answer is a
:class:`~hostsim.units.ConfigError` naming ``--ray``. The reachability
check is a TCP connect to the head's port with a short timeout: Ray's own
connect waits minutes for a head that is not there.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .executor import Answer, check_jobs
from .units import ConfigError

FIELD = "--ray"
ALLOWED = ("HOST:PORT of a running Ray head, e.g. one started with `ray start --head --port=PORT`; auto, the "
           "head this machine last started; ray://HOST:PORT, Ray Client; or local, a cluster in this process")
#: How long the head's port may take to accept a connection.
CONNECT_TIMEOUT_S = 5.0
#: Test hook: the path of a marker file. The first task to create it writes its worker's PID there and
#: kills the worker (``os._exit(1)``); later tasks run as usual. Unset (always, outside tests): no effect.
KILL_ONCE_ENV = "HOSTSIM_TEST_KILL_ONCE"


def check_address(address: Any) -> str:
    """``local``, ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``, stripped; else a :class:`ConfigError`."""
    if not isinstance(address, str) or not address.strip():
        raise ConfigError.invalid(FIELD, address, ALLOWED)
    text = address.strip()
    if text in ("local", "auto"):
        return text
    host, port = _host_port(text)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError.invalid(FIELD, address, ALLOWED)
    return text


def _host_port(address: str) -> Tuple[str, str]:
    rest = address[len("ray://"):] if address.startswith("ray://") else address
    host, _, port = rest.rpartition(":")
    return host.strip("[]"), port


class RayExecutor:
    """Runs the tasks on a Ray cluster; connects on first use, :meth:`close` disconnects."""

    def __init__(self, address: str, jobs: int = 1, max_retries: int = 3):
        self.address = check_address(address)
        self.jobs = check_jobs(jobs)
        if self.address != "local" and self.jobs != 1:
            raise ConfigError.invalid("jobs", jobs, f"1 with {FIELD} {self.address} (the cluster's CPUs set how many "
                                                    f"points run at once), or any count with {FIELD} local")
        if importlib.util.find_spec("ray") is None:
            raise ConfigError(FIELD, f"{self.address}: the ray package is not installed (allowed: install it with "
                                     "`pip install 'hostsim[ray]'` or `pip install 'ray>=2.9'`, or use --jobs N)")
        self.max_retries = max_retries
        #: Where the workers found hostsim (set by the probe when connected).
        self.worker_package: Optional[str] = None
        self._ray: Any = None
        self._remote: Any = None
        self._owner = False

    def task_options(self) -> Dict[str, Any]:
        """The tasks' ``runtime_env`` option (or none): this hostsim's ``PYTHONPATH``, the test hook if set."""
        env: Dict[str, str] = {}
        parent = Path(__file__).resolve().parent.parent
        if parent.name not in ("site-packages", "dist-packages"):
            env["PYTHONPATH"] = str(parent)
        if os.environ.get(KILL_ONCE_ENV):
            env[KILL_ONCE_ENV] = os.environ[KILL_ONCE_ENV]
        return {"runtime_env": {"env_vars": env}} if env else {}

    def connect(self) -> None:
        """Joins the cluster (or starts the local one) and probes the workers' hostsim."""
        if self._ray is not None:
            return
        import ray

        # A connection this process already has (ray.init by the caller) is used, and left open.
        self._owner = not ray.is_initialized()
        if self._owner:
            self._init(ray)
        self._ray = ray
        env = self.task_options()
        self._remote = ray.remote(num_cpus=1, max_retries=self.max_retries, **env)(_run_task)
        try:
            self._probe()
        except BaseException:
            self.close()
            raise

    def _init(self, ray: Any) -> None:
        if self.address != "local":
            _check_reachable(self.address)
        options: Dict[str, Any] = dict(logging_level=logging.ERROR, log_to_driver=False)
        if self.address == "local":
            options.update(num_cpus=self.jobs, include_dashboard=False)
        try:
            ray.init(address=self.address, **options)
        except Exception as e:  # ConnectionError, ValueError, RuntimeError...: Ray's words, one line
            raise ConfigError(FIELD, f"{self.address}: cannot connect to the Ray cluster ({_one_line(e)}; a head "
                                     "that requires a token needs RAY_AUTH_MODE=token and the token here too) "
                                     f"(allowed: {ALLOWED})") from None

    def _probe(self) -> None:
        """One task, needing no CPU so a busy cluster runs it at once: the workers' hostsim version and folder."""
        from . import __version__

        ray = self._ray
        try:
            probe = ray.remote(num_cpus=0, **self.task_options())(_hostsim_here)
            version, package = ray.get(probe.remote(), timeout=300)
        except Exception as e:
            raise ConfigError(FIELD, f"{self.address}: the Ray workers cannot run hostsim ({_one_line(e)}) "
                                     "(allowed: a cluster whose nodes can import hostsim from "
                                     f"{Path(__file__).resolve().parent} or have it installed)") from None
        if version != __version__:
            raise ConfigError(FIELD, f"{self.address}: the Ray workers run hostsim {version} from {package}, this "
                                     f"process runs {__version__} (allowed: the same hostsim on every node)")
        self.worker_package = package

    def map_unordered(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[Tuple[int, Answer]]:
        if not tasks:
            return
        self.connect()
        ray = self._ray
        # Every task is submitted at once: the cluster's scheduler queues them.
        refs = {self._remote.remote(fn, task): i for i, task in enumerate(tasks)}
        pending: List[Any] = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    try:
                        answer: Answer = ray.get(ref)
                    except Exception as e:  # raised by fn (RayTaskError), or retries exhausted (WorkerCrashedError)
                        answer = e
                    yield refs[ref], answer
        finally:
            for ref in pending:  # an interrupted sweep leaves no work behind on the cluster
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    pass

    def close(self) -> None:
        """Disconnects, if this executor connected (a ``local`` cluster stops with it)."""
        if self._ray is not None:
            if self._owner:
                self._ray.shutdown()
            self._ray = self._remote = None

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _check_reachable(address: str) -> None:
    """A TCP connect to the head's port, or a :class:`ConfigError`; ``auto`` is left to Ray."""
    if address == "auto":
        return
    host, port = _host_port(address)
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise ConfigError(FIELD, f"{address}: no Ray head answers there ({e.strerror or e}) "
                                 f"(allowed: {ALLOWED})") from None


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


def _run_task(fn: Callable[[Any], Any], task: Any) -> Any:
    """One task on a Ray worker: ``fn(task)``, after the test hook (inert unless its variable is set)."""
    marker = os.environ.get(KILL_ONCE_ENV)
    if marker:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            pass  # a worker was already killed
        else:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            os._exit(1)
    return fn(task)


def _hostsim_here() -> Tuple[str, str]:
    """On a worker: the hostsim version and the folder it was imported from."""
    import hostsim

    return hostsim.__version__, str(Path(hostsim.__file__).resolve().parent)
