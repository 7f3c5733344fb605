"""Where a sweep's runs execute: in-process, a local process pool, or a Dask cluster.

An executor is opened before the sweep writes anything (so an unreachable Dask
scheduler fails fast, with nothing written) and yields one outcome dict per run as
runs complete (see :func:`attnlab.sweeps.worker.execute_run`). Closing it, also on
Ctrl-C, cancels runs not yet started and terminates running workers.

- ``inline``: runs one after another in this process; the easiest to debug.
- ``process``: a local pool of ``workers`` processes started with 'forkserver' (or
  'spawn' where there is none; plain fork is unsafe once torch's thread pools exist); each run sets
  ``torch.set_num_threads(max(1, cores // workers))`` so torch threads x workers never
  exceed the cores. Workers ignore SIGINT: the sweep process handles Ctrl-C and
  terminates them. A worker that dies (killed, out of memory) breaks the pool: the
  runs not yet finished are recorded as failed, and ``--resume`` runs them again.
- ``dask``: ``scheduler="tcp://host:port"`` connects to a running cluster; without a
  scheduler a LocalCluster of ``workers`` processes with one thread each is started.
  Dask workers write each run's files into ``out/runs/<run_id>/`` themselves, so every
  worker must see ``out`` at the same path as this process (a shared filesystem).
  On an external cluster the workers' torch thread count is left as configured there;
  runs cancelled by Ctrl-C that already started there may still finish and write
  their result.json (atomically), which a later ``--resume`` then keeps. Python's
  global ``random`` is shared with the Dask worker's own threads (tornado and
  distributed draw from it), so runs that use it are not reproducible on Dask;
  torch and NumPy generators (global or explicit) are.
"""

from __future__ import annotations

import signal
import uuid
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Iterator, Sequence

from attnlab.config import cpu_cores
from attnlab.errors import ConfigError
from attnlab.runs.threads import process_context
from attnlab.sweeps.worker import RunItem, error_line, execute_run

EXECUTORS = ("inline", "process", "dask")
CONNECT_TIMEOUT_S = 3


def _failed(item: RunItem, e: BaseException, what: str = "") -> dict:
    return {"run_id": item.run_id, "status": "failed", "seconds": None,
            "error": what + error_line(e), "record": None}


class InlineExecutor:
    """Runs one after another in this process."""

    kind, threads = "inline", None

    def run(self, items: Sequence[RunItem]) -> Iterator[dict]:
        for item in items:
            try:
                yield execute_run(item)
            except Exception as e:  # e.g. the result could not be written
                yield _failed(item, e)

    def close(self) -> None:
        pass


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class ProcessExecutor:
    """A pool of ``workers`` local processes."""

    kind = "process"

    def __init__(self, workers: int):
        self.workers = workers
        self.threads = max(1, cpu_cores() // workers)
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=process_context(["attnlab.sweeps.preload"]),
                                        initializer=_ignore_sigint)

    def run(self, items: Sequence[RunItem]) -> Iterator[dict]:
        futures = {self.pool.submit(execute_run, it): it for it in items}
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except Exception as e:  # a worker process died (BrokenProcessPool) or could not write
                yield _failed(futures[fut], e, "worker: ")

    def close(self) -> None:
        """Cancel queued runs and terminate running workers (no-op after a clean finish)."""
        # ProcessPoolExecutor has no public terminate before Python 3.14: its process table
        procs = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()


class DaskExecutor:
    """Runs as Dask futures, on an existing cluster or on a LocalCluster started here."""

    kind = "dask"

    def __init__(self, workers: int, scheduler: str | None):
        from distributed import Client, LocalCluster

        self.cluster = None
        if scheduler is None:
            self.threads = max(1, cpu_cores() // workers)
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            self.threads = None
            self.client = connect(scheduler)
        self.futures: list = []

    def run(self, items: Sequence[RunItem]) -> Iterator[dict]:
        from distributed import as_completed as dask_completed

        token = uuid.uuid4().hex[:8]
        by_key = {}
        for it in items:
            fut = self.client.submit(execute_run, it, key=f"attnlab-run-{it.run_id}-{token}", pure=False)
            by_key[fut.key] = it
            self.futures.append(fut)
        for fut in dask_completed(self.futures):
            try:
                yield fut.result()
            except Exception as e:
                yield _failed(by_key[fut.key], e, "dask: ")

    def close(self) -> None:
        try:
            if self.futures:
                self.client.cancel(self.futures)
            self.client.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()


def connect(scheduler: str):
    """A Dask Client for ``scheduler``; ConfigError within seconds if it cannot be reached.

    The address is parsed and (for tcp/tls) a plain TCP connection is tried first: a
    Client that fails to connect lingers and retries its own shutdown at exit.
    """
    import socket

    from distributed import Client
    from distributed.comm import parse_address, parse_host_port
    from distributed.comm.registry import backends

    def unreachable(reason: str) -> ConfigError:
        reason = " ".join(str(reason).split())[:160]
        return ConfigError(f"cannot reach Dask scheduler at {scheduler} ({reason}); check the address "
                           "or start one with `dask scheduler`")

    try:
        scheme, loc = parse_address(scheduler)
        if scheme not in backends:
            raise ValueError(f"unknown scheme {scheme!r}; use tcp://host:port")
        if scheme in ("tcp", "tls"):
            host, port = parse_host_port(loc)
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except (OSError, ValueError, TypeError) as e:
        raise unreachable(e.strerror if isinstance(e, OSError) and e.strerror else e or type(e).__name__) from None
    try:
        return Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
    except Exception as e:  # a listening port that does not speak the Dask protocol
        raise unreachable(f"the port is open but no Dask scheduler answered: {type(e).__name__}") from None


def check_executor(executor: str, scheduler: str | None, workers: int | None) -> str:
    """The executor kind to use; ConfigError for an unknown kind or a bad --workers."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r}; use --executor inline, process or dask")
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise ConfigError(f"--workers must be an integer >= 1, got {workers!r}")
    if scheduler is not None:
        if executor == "inline":
            raise ConfigError("--scheduler runs on Dask; drop --executor inline or use --executor dask")
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ConfigError("--scheduler needs an address such as tcp://127.0.0.1:8786")
        return "dask"
    return executor


def open_executor(kind: str, workers: int, scheduler: str | None):
    if kind == "inline":
        return InlineExecutor()
    if kind == "process":
        return ProcessExecutor(workers)
    return DaskExecutor(workers, scheduler)
