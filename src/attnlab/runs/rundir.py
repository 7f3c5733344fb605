"""Run directories: what ``attnlab reproduce`` writes and ``attnlab report`` reads.

Layout (DESIGN.md, "Run directory")::

    <run>/config.json     the full resolved config and the command line (argv)
    <run>/env.json        versions, platform, device, threads, seed, git commit
    <run>/results.json    machine-readable results, rewritten after each experiment
    <run>/metrics.jsonl   one JSON object per line, streamed while work runs
    <run>/figures/        PNG figures
    <run>/report.html     self-contained report (figures inlined)
    <run>/report.md       the same report in Markdown

Every whole-file write goes to a temporary file in the same directory, is
flushed and fsync'ed, and then renamed over the target with ``os.replace``
(atomic on POSIX and Windows), so a killed run never leaves a half-written
file. ``metrics.jsonl`` is appended one fsync'ed line at a time; its reader
drops a torn last line (a line cut short by a kill).
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlab.errors import ConfigError, RunDirError
from attnlab.runs.jsonable import to_jsonable

CONFIG, ENV, RESULTS, METRICS = "config.json", "env.json", "results.json", "metrics.jsonl"
FIGURES, REPORT_HTML, REPORT_MD = "figures", "report.html", "report.md"


def default_run_dir(*names: str) -> Path:
    """A new run directory's default path, ``runs/<names joined by '+'>-<UTC time>`` (e.g.
    runs/logic-20250101T120000Z), relative to the working directory; in each name a character other
    than a letter, a digit, "-", "_" or "." becomes "_"."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe = ("".join(c if c.isalnum() or c in "-_." else "_" for c in name) for name in names)
    return Path("runs") / f"{'+'.join(safe)}-{stamp}"


def utc_now() -> str:
    """The current UTC time as ISO 8601 with a trailing Z, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()  # what open() would give; mkstemp alone gives 0o600


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory + os.replace."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def _fsync_dir(d: Path) -> None:
    # Makes the rename itself durable; not possible on every platform.
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RunDirError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RunDirError(
            f"corrupt JSON in {path} (line {e.lineno}, column {e.colno}: {e.msg}); "
            "delete or restore that file, or rerun `attnlab reproduce`"
        ) from None


@dataclass
class RunDir:
    """A run directory on disk; see the module docstring for its layout."""

    path: Path

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    # ---- creation -------------------------------------------------------------------
    @classmethod
    def create(cls, path: str | os.PathLike, *, resume: bool = False) -> "RunDir":
        """Create (or, with ``resume``, reopen) a run directory at ``path``.

        Refuses a path that is a file, an unwritable place, a non-empty directory
        that is not a run directory, and (without ``resume``) an existing run.
        """
        p = Path(path)
        if p.exists() and not p.is_dir():
            raise RunDirError(f"{p} is a file, not a directory; choose another --out")
        if p.is_dir() and any(p.iterdir()):
            if not (p / CONFIG).is_file():
                raise RunDirError(
                    f"{p} is not empty and is not an attnlab run directory; "
                    "choose a new or empty --out directory"
                )
            if not resume:
                raise RunDirError(
                    f"{p} already holds a run; pass --resume to continue it or choose another --out"
                )
        try:
            (p / FIGURES).mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=p, prefix=".write-probe.")
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            raise RunDirError(
                f"cannot write to {p}: {e.strerror or e}; choose a writable --out directory"
            ) from None
        return cls(p)

    # ---- whole-file writes (atomic) ---------------------------------------------------
    def write_json(self, name: str, obj: Any) -> Path:
        target = self.path / name
        text = json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n"
        atomic_write_bytes(target, text.encode("utf-8"))
        return target

    def write_text(self, name: str, text: str) -> Path:
        target = self.path / name
        atomic_write_bytes(target, text.encode("utf-8"))
        return target

    def write_config(self, config: dict, argv: list[str] | None) -> Path:
        """config.json: the resolved config plus the command line that produced it."""
        return self.write_json(CONFIG, {**config, "argv": list(argv or [])})

    def write_env(self, *, seed: int, device: str, extra: dict | None = None) -> Path:
        return self.write_json(ENV, {**collect_env(seed=seed, device=device), **(extra or {})})

    def write_results(self, results: dict) -> Path:
        return self.write_json(RESULTS, results)

    # ---- metrics (append-only, one fsync'ed line per record) --------------------------
    def append_metric(self, record: dict) -> None:
        line = json.dumps(to_jsonable(record), allow_nan=False)
        with open(self.path / METRICS, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict]:
        """Every complete line of metrics.jsonl; a torn last line is dropped.

        A torn line can only be the last one (appends are sequential); a bad
        line anywhere else means the file was edited, which is an error.
        """
        path = self.path / METRICS
        if not path.exists():
            return []
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        records = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                if i == len(lines) - 1:  # no trailing newline: cut short by a kill
                    break
                raise RunDirError(
                    f"corrupt line {i + 1} in {path}; delete that line or the file"
                ) from None
        return records

    # ---- reading ----------------------------------------------------------------------
    @property
    def figures_dir(self) -> Path:
        return self.path / FIGURES

    def read_json(self, name: str, default: Any = None) -> Any:
        path = self.path / name
        if not path.exists():
            return default
        return _read_json(path)


def log_metric(run_dir: "RunDir | None", record: dict) -> None:
    """Append ``record`` to the run's metrics.jsonl; nothing when there is no run directory
    (an experiment called from Python)."""
    if run_dir is not None:
        run_dir.append_metric(record)


def check_writable(out: str | os.PathLike, flag: str = "--out", what: str = "directory") -> Path:
    """``out`` (a file or directory to be written, existing or not) as a Path, if its nearest existing
    directory takes a new file; else ConfigError in one line, "cannot write to --out X: why; choose a
    writable ``what``" (a read-only or virtual file system such as /proc, no permission, a file where
    a directory must be). Checked before any work; creates nothing that outlives the call (a probe
    file, removed at once)."""
    path = Path(out)
    here = path.absolute()
    if not here.is_dir():
        here = here.parent
    while not here.exists():
        here = here.parent
    try:
        if not here.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        fd, probe = tempfile.mkstemp(dir=here, prefix=".write-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ConfigError(f"cannot write to {flag} {out}: {e.strerror or e}; choose a writable {what}") from None
    return path


def writable_dir(out: str | os.PathLike, flag: str = "--out") -> Path:
    """``out`` as a directory that exists and can be written (created if missing), checked
    before any work; ConfigError in one line otherwise. Leaves at most an empty directory."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {out} is a file; give a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ConfigError(f"cannot write to {flag} {out}: {e.strerror or e}; choose a writable directory") from None
    return path


@dataclass
class StoredRun:
    """What a run directory holds, read back: config, env and results."""

    run_dir: RunDir
    config: dict
    env: dict
    results: dict = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.run_dir.path


def load_run(path: str | os.PathLike) -> StoredRun:
    """Read a run directory; RunDirError (one line) if it is missing, foreign or corrupt."""
    p = Path(path)
    if not p.exists():
        raise RunDirError(f"run directory {p} does not exist; pass a directory written by `attnlab reproduce`")
    if not p.is_dir():
        raise RunDirError(f"{p} is a file, not a run directory; pass a directory written by `attnlab reproduce`")
    if not (p / CONFIG).is_file():
        raise RunDirError(
            f"{p} is not an attnlab run directory (no {CONFIG}); "
            "pass a directory written by `attnlab reproduce`"
        )
    rd = RunDir(p)
    config = rd.read_json(CONFIG)
    env = rd.read_json(ENV, {})
    results = rd.read_json(RESULTS, {})
    for name, obj in ((CONFIG, config), (ENV, env), (RESULTS, results)):
        if not isinstance(obj, dict):
            raise RunDirError(f"{p / name} does not hold a JSON object; delete or restore that file")
    return StoredRun(rd, config, env, results)


def collect_env(*, seed: int, device: str) -> dict:
    """Versions, platform, device, threads, seed and (if available) the git commit."""
    import numpy
    import torch

    env = {
        "date": utc_now(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "seed": seed,
        "seeded": ["random.seed", "numpy.random.seed", "torch.manual_seed"],
        "git_commit": git_commit(),
        "argv0": Path(sys.argv[0]).name if sys.argv else None,
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        env["cuda_device"] = torch.cuda.get_device_name()
        env["cuda_version"] = torch.version.cuda
    return env


def git_commit() -> str | None:
    """HEAD of the source checkout attnlab runs from, or None (not a checkout, no git)."""
    src = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None
