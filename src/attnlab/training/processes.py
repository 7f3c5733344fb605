"""Independent models trained side by side in local processes, one torch thread each: :func:`map_processes`.

Small models (the logic text's §4 networks: a few ten thousand parameters, each with its own L-BFGS)
leave a second intra-op thread mostly waiting, so the cores are used by training several models at
once, one per process. Each task runs with ``torch.set_num_threads(1)`` wherever it runs, so a model's
trajectory is the same bit for bit in a worker as in this process, and the results do not depend on
the number of workers (tests).

Workers start by 'forkserver' (or 'spawn' where there is none): plain fork is unsafe once torch's
thread pools exist. Starting one costs an import of torch (a few seconds), so one worker, or one task,
runs here, in this process.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Sequence

from attnlab.config import cpu_cores
from attnlab.errors import ConfigError
from attnlab.runs.threads import num_threads, process_context


def resolve_workers(workers: int, tasks: int) -> int:
    """The processes to use: ``workers`` (0: one per available core), never more than ``tasks``."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise ConfigError(f"workers must be an integer >= 0 (0: one per core), got {workers!r}")
    return max(1, min(workers or cpu_cores(), tasks))


def _one_thread(fn: Callable[[Any], Any], item: Any) -> Any:
    with num_threads(1):
        return fn(item)


def map_processes(fn: Callable[[Any], Any], items: Sequence[Any], workers: int = 0,
                  on_done: Callable[[int, int], None] | None = None) -> list[Any]:
    """[fn(item) for item in items], each call with one torch thread, in up to ``workers`` processes
    (0: one per core); results in the order of ``items``.

    fn must be picklable (a module-level function or a ``functools.partial`` of one), and so must the
    items and results. on_done(done, total) is called here after each item finishes. An exception in
    any call is raised here after the pool is shut down."""
    items = list(items)
    n = resolve_workers(workers, len(items))
    out: list[Any] = [None] * len(items)
    if n == 1:
        for i, item in enumerate(items):
            out[i] = _one_thread(fn, item)
            if on_done:
                on_done(i + 1, len(items))
        return out
    with ProcessPoolExecutor(max_workers=n, mp_context=process_context()) as pool:
        futures = {pool.submit(_one_thread, fn, item): i for i, item in enumerate(items)}
        try:
            for done, fut in enumerate(as_completed(futures), 1):
                out[futures[fut]] = fut.result()
                if on_done:
                    on_done(done, len(items))
        except BaseException:  # a failed task or Ctrl-C: stop the others now, not after they finish
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for p in procs:
                if p.is_alive():
                    p.terminate()
            raise
    return out
