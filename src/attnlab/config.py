"""Configs and the one validation path every setting goes through.

Every experiment's config is a frozen dataclass on :class:`RunConfig`::

    @dataclass(frozen=True)
    class SaturationConfig(RunConfig):
        PRESETS = {"quick": {"n_samples": 256, "n_values": (3, 11)},
                   "paper": {"n_samples": 4000, "n_values": (2, 3, 11, 64)}}
        n_samples: int | None = None          # None: taken from PRESETS[scale]
        n_values: tuple[int, ...] | None = None

        @classmethod
        def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
            v = super().normal_form(values)   # scale, seed, device checked; presets filled
            v["n_values"] = check_ints("n_values", v["n_values"], minimum=2)  # a list: its tuple
            return v

        def validate(self) -> None:
            check_int("n_samples", self.n_samples, minimum=1)

Constructing a config (``SaturationConfig(...)``, ``cfg.replace(...)``,
``dataclasses.replace``) goes through :class:`ConfigMeta`: the arguments, defaults
applied, pass through ``normal_form`` (``RunConfig``'s checks ``scale``, ``seed`` and
``device`` and fills every field left ``None`` from ``PRESETS[scale]``; a subclass's
own follows), and the dataclass's ``__init__`` stores the normal values once. Then
``__post_init__`` calls ``validate()``, which only checks: no config writes a field
after construction. The same ``check_*`` functions validate constructions' parameters
and every command-line option, so one rule (and one message) holds for a value
wherever it is given.

Values written as text (``--set key=value``, ``--grid key=v1,v2``) are converted
with the type annotation of the field they set (:func:`coerce`):

    int            "3"                 float   "0.5", "1e-3", "inf"
    bool           true/false/1/0/yes/no (any case)
    str            as written          X | None   "none" or "null" gives None
    tuple[T, ...]  "3,11,64" or "3;11;64" ("" is the empty tuple; in ``--grid``, where ","
                   separates the grid's values, ";"); list[T] the same
    Literal[...]   one of the listed values

and a message names the type in words (:func:`plain_type`: "integers separated by commas (e.g.
3,11,64) or none"), never as Python writes it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Sequence

from attnlab.errors import AttnlabError, ConfigError

SCALES = ("quick", "paper")
SEED_LIMIT = 2**32  # NumPy's legacy seed takes 0 <= seed < 2**32
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


# ---- values in messages: big numbers in scientific form, never thousands of digits -----------
FULL_DIGITS = 12  # integers up to this many digits print in full; longer ones in scientific form
LONG_TEXT = 200  # text longer than this is cut in a message (with its length)
LONG_NUMBER = 24  # numbers longer than this in any error line are shortened (a path's digits stay)


def format_int(n: int, full_digits: int = FULL_DIGITS) -> str:
    """An integer for a message: in full up to ``full_digits`` digits ("10000"), else in scientific
    form with three significant digits, truncated ("1.00e+3000"); never thousands of digits, and never
    Python's error for converting a huge int to text.

    >>> format_int(4096), format_int(10 ** 3000), format_int(-123456789012345)
    ('4096', '1.00e+3000', '-1.23e+14')
    """
    m = abs(n)
    if m < 10 ** full_digits:
        return str(n)
    e = int(math.log10(m))
    lead = m // 10 ** (e - 2)  # three leading digits; log10's rounding can be one off either way
    while lead >= 1000:
        e, lead = e + 1, m // 10 ** (e - 1)
    while lead < 100:
        e, lead = e - 1, m // 10 ** (e - 3)
    return f"{'-' if n < 0 else ''}{lead // 100}.{lead % 100:02d}e+{e}"


def format_power(base: int, exponent: int) -> str:
    """``base ** exponent`` (both >= 1) for a message, without computing it when it is huge:
    :func:`format_int` of the power, the mantissa from logarithms beyond FULL_DIGITS digits.

    >>> format_power(10, 4), format_power(1000, 1000), format_power(10 ** 6, 10 ** 9)
    ('10000', '1.00e+3000', '1.00e+6000000000')
    """
    digits = exponent * math.log10(base)
    if digits < FULL_DIGITS + 1:
        return format_int(base ** exponent)
    e = math.floor(digits)
    mantissa = math.floor(10 ** (digits - e + 2) + 1e-9) / 100  # truncated, as format_int
    if mantissa >= 10:
        e, mantissa = e + 1, mantissa / 10
    return f"{mantissa:.2f}e+{e}"


def power_exceeds(base: int, exponent: int, limit: int) -> bool:
    """``base ** exponent > limit`` (base, exponent >= 1), in constant time when the power is huge."""
    if exponent * math.log2(base) > math.log2(limit) + 1:
        return True
    return base ** exponent > limit


def shorten_numbers(text: str, digits: int = LONG_NUMBER) -> str:
    """``text`` with every number of more than ``digits`` digits (one computed from a user's huge
    value, e.g. a matrix's size in an estimate) in :func:`format_int`'s scientific form.

    >>> shorten_numbers("A (8 x " + "9" * 30 + ")")
    'A (8 x 9.99e+29)'
    """
    return re.sub(r"(?<![\w.])\d{%d,}(?![\w.])" % (digits + 1),
                  lambda m: format_int(int(m.group()), full_digits=digits), text)


def shown(v: Any, *, quote: bool = True) -> str:
    """``v`` as a message shows it: ``repr`` (``str`` with ``quote=False``), with integers in
    :func:`format_int`'s form and text longer than LONG_TEXT cut to its start and its length."""
    if isinstance(v, int) and not isinstance(v, bool):
        return format_int(v)
    if isinstance(v, str) and len(v) > LONG_TEXT:
        start = repr(v[:40]) if quote else v[:40]
        return f"{start}... ({len(v):,} characters)"
    return repr(v) if quote else str(v)


# ---- checks: one message per rule -----------------------------------------------------
def check_int(name: str, v: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """``v`` if it is an int (not a bool) in [minimum, maximum]; else ConfigError naming ``name``."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{name} must be an integer{_range(minimum, maximum)}, got {shown(v)}")
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        raise ConfigError(f"{name} must be an integer{_range(minimum, maximum)}, got {shown(v)}")
    return v


def check_ints(name: str, values: Any, minimum: int | None = None) -> tuple[int, ...]:
    """A non-empty tuple of ints >= minimum (a list, tuple or other iterable is accepted)."""
    message = f"{name} must be a non-empty list of integers{_range(minimum, None)}, got {shown(values)}"
    try:
        values = tuple(values)
    except TypeError:
        raise ConfigError(message) from None
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or (minimum is not None and v < minimum)
                         for v in values):
        raise ConfigError(message)
    return values


def check_number(name: str, v: Any, minimum: float | None = None, maximum: float | None = None, *,
                 open_min: bool = False, open_max: bool = False) -> float:
    """``v`` as a float if it is a finite real number in the given (closed or open) interval."""
    lo = "" if minimum is None else ("(" if open_min else "[") + f"{minimum:g}"
    hi = "" if maximum is None else f"{maximum:g}" + (")" if open_max else "]")
    where = f" in {lo or '(-inf'}, {hi or 'inf)'}" if (lo or hi) else ""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ConfigError(f"{name} must be a finite number{where}, got {shown(v)}")
    if minimum is not None and (v <= minimum if open_min else v < minimum):
        raise ConfigError(f"{name} must be a finite number{where}, got {shown(v)}")
    if maximum is not None and (v >= maximum if open_max else v > maximum):
        raise ConfigError(f"{name} must be a finite number{where}, got {shown(v)}")
    return float(v)


def check_choice(name: str, v: Any, choices: Sequence[Any]) -> Any:
    """``v`` if it is one of ``choices``."""
    if v not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(map(str, choices))}, got {shown(v)}")
    return v


def check_bool(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"{name} must be true or false, got {shown(v)}")
    return v


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed every generator takes: an int in [0, 2**32) (NumPy's legacy seeding bounds it)."""
    return check_int(name, seed, 0, SEED_LIMIT - 1)


def cpu_cores() -> int:
    """Cores this process may use (the affinity mask where the OS has one)."""
    import os

    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def device_memory(device: str = "cpu") -> int | None:
    """Bytes the device can give: free memory on CUDA, physical memory on the CPU (None if unknown)."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    import os

    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(what: str, need_bytes: float, *, device: str = "cpu", change: str,
               available: int | None = None) -> None:
    """ConfigError before any work when ``need_bytes`` exceed what ``device`` has: one line with
    both sizes and ``change`` (what to lower)."""
    available = device_memory(device) if available is None else available
    if available is not None and need_bytes > available:
        raise ConfigError(f"{what} needs at least {_gib(need_bytes)} GiB on {device}; it has "
                          f"{_gib(available)} GiB: {change}")


def _gib(n: float) -> str:
    """Bytes in GiB for a message: "152.6", and "1.40e+05" from a million GiB on."""
    g = n / 2 ** 30
    return f"{g:.1f}" if g < 1e6 else f"{g:.2e}"


def check_device(device: Any, name: str = "device") -> str:
    """'cpu', 'cuda' or 'cuda:N' (N an existing GPU); CUDA only where it is available."""
    where = "" if name == "device" else f"{name}: "
    if not isinstance(device, str):
        raise ConfigError(f"{where}device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if device == "cpu":
        return device
    kind, colon, index = device.partition(":")
    if kind != "cuda" or (colon and not index.isdigit()):
        raise ConfigError(f"{where}unknown device {device!r}; use cpu, cuda or cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(f"{where}device {device}: CUDA is not available on this machine; use cpu")
    if colon and int(index) >= torch.cuda.device_count():
        raise ConfigError(f"{where}device {device}: this machine has {torch.cuda.device_count()} CUDA "
                          "device(s), numbered from 0")
    return device


def _range(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" in [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    if maximum is not None:
        return f" <= {maximum}"
    return ""


# ---- the bases of every config -----------------------------------------------------------
def param(default: Any, help: str) -> Any:
    """A config field with a default and a one-line description (shown by --help, `attnlab list`
    and the docs)::

        H: int = param(4, "number of heads H")
    """
    if isinstance(default, (list, dict, set)):
        raise TypeError("param() defaults must be immutable; use a tuple")
    return dataclasses.field(default=default, metadata={"help": help})


def describe_fields(config_cls: type) -> list[dict[str, Any]]:
    """[{name, type, default, help}] for every field of ``config_cls``, in order."""
    types_ = field_types(config_cls)
    return [{"name": f.name, "type": type_name(types_[f.name]),
             "default": f.default if f.default is not dataclasses.MISSING else None,
             "help": f.metadata.get("help", "")} for f in dataclasses.fields(config_cls)]


class ConfigMeta(type):
    """The metaclass of every config: ``Cls(...)`` makes the normal form before the instance exists.

    A call binds the arguments to the dataclass's fields (defaults applied), passes them to
    :meth:`Config.normal_form`, which returns the normal values (a list made a sorted tuple, a
    field left ``None`` filled from a preset or from another field), and then calls the
    dataclass's own ``__init__`` once, with those values. So every field is written once, by
    ``__init__``, and ``__post_init__`` only checks. ``dataclasses.replace`` calls the class,
    so a replaced config is normalised again. A call that does not fit the fields (a missing
    or unknown argument) raises the dataclass's own TypeError.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            given = _init_signature(cls).bind(None, *args, **kwargs).arguments
        except TypeError:
            super().__call__(*args, **kwargs)  # raises the dataclass's own message for the call
            raise
        values = {f.name: given[f.name] if f.name in given else _default(f)
                  for f in dataclasses.fields(cls) if f.init}
        return super().__call__(**cls.normal_form(values))


@functools.lru_cache(maxsize=None)
def _init_signature(cls: type) -> inspect.Signature:
    """The signature of ``cls``'s dataclass ``__init__`` (its first parameter is ``self``)."""
    return inspect.signature(cls.__init__)


def _default(f: dataclasses.Field) -> Any:
    """The value field ``f`` takes when a call leaves it out."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


@dataclass(frozen=True)
class Config(metaclass=ConfigMeta):
    """Base of every frozen config. Constructing one (``Cls(...)``, :meth:`replace`,
    ``dataclasses.replace``) goes through :class:`ConfigMeta`: the arguments are first brought
    into one normal form by :meth:`normal_form` (a field given as a list is stored as the tuple,
    sorted where order does not matter; a value left to follow another field takes it), then the
    dataclass's ``__init__`` stores them, and ``__post_init__`` runs :meth:`validate`, which only
    checks. Nothing writes a field after that, so two configs that mean the same thing compare
    and serialise equal, and an instance always holds valid values."""

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The normal form of ``values`` (field name -> value, every field present): a NEW dict,
        ``values`` left unchanged. An override starts with ``v = super().normal_form(values)`` and
        sets its own fields in ``v``; where a normal form needs a check first (``check_ints``
        returns the tuple it checked), the check raises ConfigError here, with its usual message."""
        return dict(values)

    def validate(self) -> None:
        """Check the fields; raise ConfigError with a message a user can act on. Writes nothing:
        the fields already hold their normal form (:meth:`normal_form`)."""

    def estimate(self) -> Any:
        """The peak memory and the work of what this config runs, from its fields alone: an
        ``attnlab.estimates.Estimate``, or None where nothing is estimated (the default).
        :class:`RunConfig` refuses, before anything runs or is written, a config whose
        estimate needs more memory than its device has."""
        return None

    def replace(self, **changes: Any) -> "Config":
        """A copy with ``changes`` (normalised and validated again)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class RunConfig(Config):
    """What every experiment config has.

    scale:  "quick" (minutes on a laptop CPU) or "paper" (the paper's sizes)
    seed:   every random draw of the run derives from it; an int in [0, 2**32)
    device: "cpu", "cuda" or "cuda:N"

    ``PRESETS[scale]`` maps field names to the values a field left ``None`` takes at
    that scale: :meth:`normal_form` checks ``scale``, ``seed`` and ``device`` and fills them
    (:meth:`preset` says which preset applies), before a subclass's own normal forms.
    Subclasses check their own fields in :meth:`validate`, and may say what
    their run needs in :meth:`Config.estimate`: after ``validate()``, a config whose estimated
    peak memory exceeds what ``device`` has (:func:`device_memory`) is a ConfigError, so
    ``attnlab reproduce --set n=HUGE`` stops before writing anything.
    """

    PRESETS: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    scale: str = "quick"
    seed: int = 0
    device: str = "cpu"

    @classmethod
    def normal_form(cls, values: dict[str, Any]) -> dict[str, Any]:
        """``scale``, ``seed`` and ``device`` checked, then every field left None that
        :meth:`preset` names takes the preset's value."""
        v = super().normal_form(values)
        check_choice("scale", v["scale"], SCALES)
        check_seed(v["seed"])
        check_device(v["device"])
        preset = cls.preset(v)
        return {name: preset[name] if value is None and name in preset else value for name, value in v.items()}

    @classmethod
    def preset(cls, values: Mapping[str, Any]) -> Mapping[str, Any]:
        """The values fields left None take: ``PRESETS[scale]`` (a subclass may choose by other fields)."""
        return cls.PRESETS.get(values["scale"], {})

    def __post_init__(self) -> None:
        self.validate()
        estimate = self.estimate()
        if estimate is not None:
            estimate.require("the run", device=self.device)


# ---- values written as text --------------------------------------------------------------
def field_types(config_cls: type) -> dict[str, Any]:
    """Field name -> resolved type annotation (string annotations evaluated)."""
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # unresolvable annotation: fall back to no conversion
        hints = {}
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(config_cls)}


def type_name(tp: Any) -> str:
    """``tp`` as Python writes it ("tuple[int, ...] | None"), for JSON and the docs (messages: :func:`plain_type`)."""
    return getattr(tp, "__name__", None) if isinstance(tp, type) else str(tp).replace("typing.", "")


_WORDS = {int: ("an integer", "integers"), float: ("a number", "numbers"), str: ("text", "names"),
          bool: ("true or false", "true/false values")}  # a value, and several
LIST_EXAMPLE = {int: "3,11,64", float: "0.5,0.25", bool: "true,false", str: "a,b"}


def plain_type(tp: Any, plural: bool = False) -> str:
    """``tp`` in the words a message gives what a value must be.

    >>> plain_type(int), plain_type(float | None), plain_type(tuple[int, ...] | None)
    ('an integer', 'a number or none', 'integers separated by commas (e.g. 3,11,64) or none')
    """
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        words = " or ".join(plain_type(a, plural) for a in args if a is not type(None))
        return words + (" or none" if type(None) in args else "")
    if origin is typing.Literal:
        return ("values among " if plural else "one of ") + ", ".join(map(str, args))
    if origin in (tuple, list):
        if origin is tuple and args and args[-1] is not Ellipsis:  # tuple[A, B]: a fixed number of items
            return f"{len(args)} values separated by commas ({', '.join(plain_type(a) for a in args)})"
        item = args[0] if args else Any
        example = f" (e.g. {LIST_EXAMPLE[item]})" if item in LIST_EXAMPLE else ""
        return f"{plain_type(item, plural=True)} separated by commas{example}"
    if tp in _WORDS:
        return _WORDS[tp][plural]
    return "values" if plural else "a value"


def coerce(value: Any, tp: Any) -> Any:
    """``value`` (text from the command line, or a Python value) as type ``tp``.

    Raises ValueError with a short reason when it does not fit.
    """
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and (value is None or (isinstance(value, str) and value.lower() in ("none", "null"))):
            return None
        for a in (a for a in args if a is not type(None)):
            try:
                return coerce(value, a)
            except ValueError:
                continue
        raise ValueError(f"expected {plain_type(tp)}")
    if origin is typing.Literal:
        for a in args:
            try:
                if coerce(value, type(a)) == a:
                    return a
            except ValueError:
                continue
        raise ValueError(f"expected one of {', '.join(map(str, args))}")
    if origin in (tuple, list):
        return _coerce_sequence(value, origin, args)
    if tp is bool:
        return _coerce_bool(value)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise ValueError("expected an integer")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise ValueError("expected a number")
    if tp is str:
        if isinstance(value, str):
            return value
        raise ValueError("expected a string")
    return value  # other annotations: the config's own checks judge


def _coerce_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError("expected true or false (or 1/0)")


def _coerce_sequence(value: Any, origin: type, args: tuple) -> Any:
    """A tuple or list from text whose items are separated by "," or ";" (module docstring), or from a
    Python sequence; ValueError in :func:`plain_type`'s words when an item does not fit."""
    expected = ValueError(f"expected {plain_type(origin[args] if args else origin)}")
    if isinstance(value, str):
        items = [v.strip() for v in re.split("[,;]", value)] if value.strip() else []
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise expected
    try:
        if origin is tuple and args and args[-1] is not Ellipsis:  # fixed length tuple[A, B]
            if len(items) != len(args):
                raise expected
            return tuple(coerce(v, a) for v, a in zip(items, args))
        item_tp = args[0] if args else Any
        return origin(coerce(v, item_tp) for v in items)
    except ValueError:
        raise expected from None


def format_value(value: Any) -> Any:
    """A config value as one table cell: sequences as "a;b;c" (what --set and --grid both read, and a CSV
    cell keeps whole)."""
    if isinstance(value, (list, tuple)):
        return ";".join(str(format_value(v)) for v in value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def coerce_field(owner: str, config_cls: type, key: str, value: Any, flag: str = "--set",
                 reserved: Mapping[str, str] | None = None, noun: str = "config field") -> Any:
    """``value`` for field ``key`` of ``config_cls``; ConfigError naming the flag and the fields.

    ``reserved`` maps fields that other options set to those options (e.g. seed -> --seed).
    """
    types_ = field_types(config_cls)
    reserved = reserved or {}
    if key in reserved:
        raise ConfigError(f"{flag} {key}: {key} is set by {reserved[key]}, not by {flag}")
    if key not in types_:
        allowed = ", ".join(k for k in types_ if k not in reserved)
        raise ConfigError(f"{flag} {key}: {owner} has no {noun} {key!r}; {noun.split()[-1]}s: {allowed}")
    try:
        return coerce(value, types_[key])
    except ValueError as e:
        raise ConfigError(f"{flag} {key}={shown(value, quote=False)}: {e} for {key}") from None


def build_config(config_cls: type, values: Mapping[str, Any], *, what: str = "") -> Any:
    """``config_cls(**values)``; any failure becomes a ConfigError that names the values."""
    where = what or ("config " + " ".join(f"{k}={shown(format_value(v), quote=False)}" for k, v in values.items())
                     if values else "the default config")
    try:
        return config_cls(**values)
    except AttnlabError as e:
        raise ConfigError(f"{where}: {e}") from None
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}; check the values given with --set/--grid") from None


def config_fields(config_cls: type) -> list[dataclasses.Field]:
    """The dataclass fields of ``config_cls`` (ClassVars such as PRESETS excluded)."""
    return list(dataclasses.fields(config_cls))
