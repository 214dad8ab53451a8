"""The fields a user sets, read from the core's schema, and their user syntax.

Every section of a config (``sim``, ``link``, ``loadgen``, ``reflector``)
and every nested table of the load generator (``loadgen.trace``,
``loadgen.memcached``, ``loadgen.closed_loop``, ``loadgen.tcp``) is a model
of :mod:`hostsim.schema`, generated from the Rust config types. This module
reads those models, so field names, nesting, types, integer bounds,
choices, defaults and descriptions all come from the core; nothing here
lists a field.

What it adds is the user's syntax, by rule:

* a core field whose name ends in ``_ps`` or ``_bps`` is set by its stem
  with a unit string (``duration_ps`` as ``duration = "1ms"``, ``rate_bps``
  as ``rate = "100Gbps"``); ``_bytes`` fields take sizes (``"6MiB"``);
* an offered load takes ``"50%"``, ``"10Gbps"``, ``"5Mpps"``; a frame-size
  distribution ``"imix"``, ``"64,128"``, ``"uniform:64-1518"``; a size
  range a plain size; a trace's loop ``true``, ``false`` or a count;
* choices are case-insensitive; booleans take yes/no, on/off, 1/0; an
  optional field takes ``"none"`` (or ``"auto"``, ``"any"``) for none;
* MAC and IPv4 addresses are normalised (``02-00-...`` → ``02:00:...``).

Each conversion gives the core's value (base units); pydantic then checks
the whole contract against the schema, and the core checks ranges and
cross-field rules with errors that name the field.
"""

from __future__ import annotations

import copy
import difflib
import ipaddress
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple, Type, Union, get_args, get_origin

from pydantic import BaseModel, RootModel
from pydantic_core import PydanticUndefined

from . import schema
from .sizes import parse_size_dist
from .units import (
    ConfigError,
    format_bit_rate_bps,
    format_time_ps,
    parse_bit_rate_bps,
    parse_bool,
    parse_choice,
    parse_int,
    parse_rate,
    parse_size_bytes,
    parse_time_ps,
)

Converter = Callable[[Any, str], Any]

#: The config's sections: name -> model of the core's contract.
SECTIONS: Dict[str, Type[BaseModel]] = {
    "sim": schema.SimTiming,
    "link": schema.LinkConfig,
    "loadgen": schema.LoadgenConfig,
    "reflector": schema.ReflectorConfig,
}

#: Unit suffixes a user name drops: the stem takes a unit string.
STEM_SUFFIXES = ("_ps", "_bps")

#: Words that mean "none" for an optional field.
NONE_WORDS = ("", "none", "auto", "any")


@dataclass(frozen=True)
class Spec:
    """One settable field: its user name, its core key, how a user value becomes the core's."""

    name: str
    key: str
    info: Any  # pydantic FieldInfo
    convert: Converter
    #: The fields of a nested table (``loadgen.trace`` ...), else ``None``.
    table: Optional[Dict[str, "Spec"]] = None

    @property
    def required(self) -> bool:
        return self.info.is_required()

    @property
    def default(self) -> Any:
        """The core's default (base units, a fresh copy), ``None`` when the field has none."""
        return _default(self.info)

    @property
    def doc(self) -> str:
        return " ".join((self.info.description or "").split())

    def user_default(self) -> Any:
        """The default in the user's units (what :meth:`convert` turns back into :attr:`default`)."""
        return to_user(self.key, self.default)


def user_name(key: str) -> str:
    """``duration_ps`` → ``duration``; other names stay."""
    for suffix in STEM_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return key


def to_user(key: str, value: Any) -> Any:
    """A core value in the user's syntax, exact: converting it back gives ``value``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if key.endswith("_ps") and isinstance(value, int):
        return format_time_ps(value)
    if key.endswith("_bps") and isinstance(value, int):
        return format_bit_rate_bps(value)
    if isinstance(value, dict) and set(value) == {"unit", "value"}:
        sign = {"percent": "%", "bps": "bps", "pps": "pps"}[value["unit"]]
        number = repr(float(value["value"]))  # the shortest text that reads back as the same float
        return (number[:-2] if number.endswith(".0") else number) + sign
    if isinstance(value, dict) and value.get("kind") == "fixed":
        return value["bytes"]
    return value


def _default(info: Any) -> Any:
    return None if info.default is PydanticUndefined else copy.deepcopy(info.default)


def spec(model: Type[BaseModel], key: str) -> Spec:
    """The user-facing field of ``model``'s field ``key`` (a nested table's fields included)."""
    info = model.model_fields[key]
    nested = _nested_model(info.annotation)
    inner = table(nested) if nested is not None else None
    convert = _converter(key, info.annotation, info.metadata, inner, _default(info))
    return Spec(user_name(key), key, info, convert, inner)


def table(model: Type[BaseModel]) -> Dict[str, Spec]:
    """The user-facing fields of ``model`` (a section or nested table), by user name."""
    return {user_name(key): spec(model, key) for key in model.model_fields}


def aliases(fields: Dict[str, Spec]) -> Dict[str, str]:
    """Core keys also accepted as names (``duration_ps`` for ``duration``): key -> user name."""
    return {s.key: s.name for s in fields.values() if s.key != s.name}


def by_key(spec: Spec, given: str, value: Any, where: str = "") -> Any:
    """A value set under the core's key (``duration_ps = 5000``): a bare number
    is in base units, so it becomes the exact unit string the stem takes. A
    whole float (``1e9``, as JSON reads it) counts as that integer. One out
    of the key's range is refused here, by the key and value as given
    (``sim.duration_ps: invalid value '-1'``), not later as its stem's text;
    ``where`` is the key's table (``sim``)."""
    if isinstance(value, float) and value.is_integer() and given == spec.key != spec.name:
        value = int(value)
    if given == spec.key != spec.name and isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < 2**64:
            unit = "ps" if spec.key.endswith("_ps") else "bit/s"
            raise ConfigError.invalid(f"{where}.{given}" if where else given, value,
                                      f"an integer from 0 to {2**64 - 1} ({unit}), or {spec.name} with a unit")
        return to_user(spec.key, value)
    return value


# ---------------------------------------------------------------- converters by type


def strip_optional(annotation: Any) -> Tuple[Any, bool]:
    """``Optional[X]`` → ``(X, True)``; anything else → ``(it, False)``."""
    if get_origin(annotation) is Union:
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def _nested_model(annotation: Any) -> Optional[Type[BaseModel]]:
    """The model of a nested table field (trace, memcached, closed_loop, tcp); not Rate or ZipfSizeConfig."""
    inner, _ = strip_optional(annotation)
    if isinstance(inner, type) and issubclass(inner, BaseModel) and not issubclass(inner, RootModel):
        if inner not in (schema.Rate, schema.ZipfSizeConfig):
            return inner
    return None


def choices(annotation: Any) -> Optional[Tuple[str, ...]]:
    """The words a choice field takes (a Literal, or a RootModel of one), else ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, RootModel):
        annotation = annotation.model_fields["root"].annotation
    if get_origin(annotation) is Literal:
        return tuple(str(a) for a in get_args(annotation))
    if get_origin(annotation) is Union and all(get_origin(a) is Literal for a in get_args(annotation)):
        return tuple(str(w) for a in get_args(annotation) for w in get_args(a))
    return None


def bounds(metadata: List[Any]) -> Tuple[Optional[int], Optional[int]]:
    """The ``ge``/``le`` bounds a field's pydantic metadata declares (``None`` where it has none)."""
    lo = next((m.ge for m in metadata if getattr(m, "ge", None) is not None), None)
    hi = next((m.le for m in metadata if getattr(m, "le", None) is not None), None)
    return lo, hi


def _converter(key: str, annotation: Any, metadata: List[Any], inner: Optional[Dict[str, Spec]], default: Any) -> Converter:
    base, optional = strip_optional(annotation)
    one = _table_converter(inner, optional) if inner is not None else _value_converter(key, base, metadata, default)
    if not optional or inner is not None:
        return one

    def convert(v: Any, f: str) -> Any:
        if v is None or (isinstance(v, str) and v.strip().lower() in NONE_WORDS):
            return None
        return one(v, f)

    return convert


def _value_converter(key: str, base: Any, metadata: List[Any], default: Any) -> Converter:
    words = choices(base)
    if words is not None:
        return lambda v, f: parse_choice(v, f, words)
    if base is schema.Rate:
        return parse_rate
    if base is schema.SizeDist:
        return parse_size_dist
    if base is schema.TraceLoop:
        return _loop
    if base is schema.ZipfSizeConfig:
        below = dict(default) if isinstance(default, dict) else {"min": 0, "max": 0, "skew": 0.0}
        return lambda v, f: _size_range(v, f, below)
    if key.endswith("_ps"):
        return lambda v, f: parse_time_ps(v, f, positive=False)
    if key.endswith("_bps"):
        return parse_bit_rate_bps
    if key.endswith("_bytes") and base is int:
        return lambda v, f: parse_size_bytes(v, f, positive=False)
    if base is bool:
        return parse_bool
    if base is int:
        lo, hi = bounds(metadata)
        return lambda v, f: parse_int(v, f, lo, hi)
    if base is float:
        return number
    if base is str:
        if key.endswith("_mac"):
            return _mac
        if key.endswith("_ip"):
            return _ipv4
        return _text
    return lambda v, f: v


def _table_converter(fields: Dict[str, Spec], optional: bool) -> Converter:
    """A nested table: a dict of user fields → the core's dict; ``true`` means
    every default (when nothing is required), ``false``/``None``/``{}`` none."""
    required = [s.name for s in fields.values() if s.required]

    def convert(v: Any, f: str) -> Any:
        if optional and (v is None or v is False or (isinstance(v, dict) and not v)):
            return None
        if v is True and not required:
            v = {}
        if not isinstance(v, dict):
            raise ConfigError.invalid(f, v, "a table of " + ", ".join(f"{f}.{k}" for k in fields))
        names = resolve_names(fields, v, f)
        for name in required:
            if name not in names:
                raise ConfigError(f"{f}.{name}", f"required when other {f} fields are set")
        out = {}
        for name, spec in fields.items():
            value = names.get(name)
            out[spec.key] = spec.default if value is None else spec.convert(value, f"{f}.{name}")  # a fresh copy
        return out

    return convert


def resolve_names(fields: Dict[str, Spec], values: Dict[str, Any], prefix: str) -> Dict[str, Any]:
    """``values`` keyed by user name (core keys accepted); an unknown name is an error."""
    alias = aliases(fields)
    out: Dict[str, Any] = {}
    for k, v in values.items():
        name = alias.get(k, k)
        if name not in fields:
            raise unknown(f"{prefix}.{k}", [f"{prefix}.{n}" for n in fields])
        out[name] = by_key(fields[name], k, v, prefix)
    return out


def unknown(dotted: str, known: List[str], candidates: Optional[List[str]] = None) -> ConfigError:
    """An unknown field: the nearest of ``candidates`` (default ``known``) as a hint, and the ``known`` ones."""
    close = difflib.get_close_matches(dotted, known if candidates is None else candidates, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return ConfigError(dotted, f"unknown field '{dotted}' ({hint}known: {', '.join(known)})")


# ---------------------------------------------------------------- user syntax of a few types


def number(v: Any, f: str) -> float:
    """A finite number (a bool is not one)."""
    if isinstance(v, bool):
        raise ConfigError.invalid(f, v, "a number")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ConfigError.invalid(f, v, "a number") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise ConfigError.invalid(f, v, "a finite number")
    return x


#: What a trace's ``loop`` takes (the core says it so too, ``loadgen/config.rs``).
LOOP_ALLOWED = "true (loop until sim.duration), false (one pass) or a number of passes >= 1"


def _loop(v: Any, f: str) -> Union[bool, int]:
    """``true``, ``false`` or a count of passes; 0 is neither (false here, forever to ``tcpreplay --loop``)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no", "on", "off"):
        return parse_bool(v, f)
    try:
        return parse_int(v, f, 1, None)
    except ConfigError:
        raise ConfigError.invalid(f, v, LOOP_ALLOWED) from None


def _size_range(v: Any, f: str, default: Dict[str, Any]) -> Dict[str, Any]:
    """A size range ``{min, max, skew}``, what is left out taken from ``default``;
    a plain size means exactly that size."""
    if not isinstance(v, dict):
        b = parse_size_bytes(v, f, positive=False)
        return {"min": b, "max": b, "skew": 0.0}
    for k in v:
        if k not in ("min", "max", "skew"):
            raise unknown(f"{f}.{k}", [f"{f}.{n}" for n in ("min", "max", "skew")])
    hi = parse_size_bytes(v["max"], f"{f}.max", positive=False) if "max" in v else None
    lo = parse_size_bytes(v["min"], f"{f}.min", positive=False) if "min" in v else min(default["min"], hi or default["min"])
    hi = max(lo, default["max"]) if hi is None else hi
    return {"min": lo, "max": hi, "skew": number(v.get("skew", default["skew"]), f"{f}.skew")}


_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$")


def _mac(v: Any, f: str) -> str:
    if isinstance(v, str) and _MAC.match(v.strip()):
        return v.strip().lower().replace("-", ":")
    raise ConfigError.invalid(f, v, "a MAC like 02:00:00:00:00:01")


def _ipv4(v: Any, f: str) -> str:
    try:
        if isinstance(v, str):
            return str(ipaddress.IPv4Address(v.strip()))
    except ValueError:
        pass
    raise ConfigError.invalid(f, v, "a dotted IPv4 address like 10.0.0.1")


def _text(v: Any, f: str) -> str:
    if isinstance(v, os.PathLike):
        v = os.fspath(v)
    if isinstance(v, str) and v.strip():
        return v
    raise ConfigError.invalid(f, v, "a non-empty text (a file path)")
