"""The simulated host: the core's preset machine plus the user's overrides.

Host applications (testpmd, touchfwd, touchdrop, rxptx, l2fwd, memcached) run on a
host model — core, caches and DRAM, PCIe, NIC, poll-mode driver and the
application's own knobs. The core owns the machine parameters: each preset's
full ``HostConfig`` comes from ``hostsim._core.host_preset(name)`` (base
units, every field, sources cited in the Rust constructors). This module
deep-merges the user's ``host`` overrides into it.

Overrides may name a field by its stem and give a unit string: a field whose
core name ends in a unit suffix (``freq_hz``, ``latency_ps``,
``rx_fifo_bytes``, ``channel_bandwidth_bytes_per_s``) is also settable as
``freq="2GHz"``, ``latency="200ns"``, ``rx_fifo="512KiB"``,
``channel_bandwidth="19.2GB/s"``; the suffixed name keeps working and takes
the same strings or a bare number in base units. A name the preset does not
have is an error naming the field, so a typo never reaches the core.
"""

from __future__ import annotations

import copy
import functools
import difflib
import json
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from pydantic import BaseModel

from . import fields as _fields
from . import schema
from .units import (
    ConfigError,
    _show,
    parse_bool,
    parse_byte_rate,
    parse_choice,
    parse_frequency_hz,
    parse_int,
    parse_size_bytes,
    parse_time_ps,
)

#: testpmd's ``--forward-mode`` choices the core implements (the schema's ``ForwardMode``).
FORWARD_MODES = _fields.choices(schema.ForwardMode) or ()

Parser = Callable[[Any, str], Any]


def _freq(v: Any, f: str) -> int:
    hz = parse_frequency_hz(v, f)
    if hz != int(hz):
        raise ConfigError.invalid(f, v, "a whole number of hertz, e.g. '2.5GHz'")
    return int(hz)


def _time(v: Any, f: str) -> int:
    return parse_time_ps(v, f, positive=False)


def _size(v: Any, f: str) -> int:
    return parse_size_bytes(v, f, positive=False)


#: Unit suffixes of core field names, longest first, and the parser of each.
SUFFIXES: Tuple[Tuple[str, Parser], ...] = (
    ("_bytes_per_s", parse_byte_rate),
    ("_bytes", _size),
    ("_hz", _freq),
    ("_ps", _time),
)

def _core() -> Any:
    from .runner import core

    return core()


@functools.lru_cache(maxsize=None)
def _registry() -> Tuple[Dict[str, Any], ...]:
    return tuple(json.loads(_core().apps()))


def host_apps() -> Tuple[str, ...]:
    """Applications that run on the host model (the core's registry, in its order)."""
    return tuple(a["name"] for a in _registry())


def app_traffic(app: str) -> Dict[str, str]:
    """The ``loadgen`` fields (user units) an application implies unless the user sets them."""
    return next((dict(a.get("traffic", {})) for a in _registry() if a["name"] == app), {})


def kernel_apps() -> Tuple[str, ...]:
    """Host applications that run on the kernel stack."""
    return tuple(a["name"] for a in _registry() if a["kernel"])


def pmd_apps() -> Tuple[str, ...]:
    """Host applications that run on the poll-mode driver."""
    return tuple(a["name"] for a in _registry() if a["pmd"])


def host_presets() -> List[str]:
    """Presets that have a host model (the core's list)."""
    return list(_core().host_presets())


def preset_host(name: str) -> Optional[Dict[str, Any]]:
    """The full host config of preset ``name`` in base units, or ``None`` if it has none."""
    if name not in host_presets():
        return None
    return json.loads(_core().host_preset(name))


def no_host_model(preset: str) -> ConfigError:
    return ConfigError("preset", f"'{preset}' has no host model yet (host applications run on: "
                                 f"{', '.join(host_presets())})")


def resolve_host(preset: str, overrides: Mapping[str, Any], given: Optional[List[str]] = None) -> Dict[str, Any]:
    """The preset's host with ``overrides`` (user names and units) merged in, in base units.

    The core keys of the fields set (``host.cpu.freq_hz``) are appended to ``given``.
    """
    base = preset_host(preset)
    if base is None:
        raise no_host_model(preset)
    _merge(base, overrides, "host", [] if given is None else given, preset)
    return base


def _merge(tree: Dict[str, Any], overrides: Mapping[str, Any], path: str, given: List[str], preset: str) -> None:
    for name, value in overrides.items():
        dotted = f"{path}.{name}"
        key, parse = _field(tree, str(name), dotted)
        if tree[key] is None and _table_model(f"{path}.{key}") is not None and value is not None:
            _new_table(tree, key, value, f"{path}.{key}", given, preset)
        elif isinstance(tree[key], dict):
            if not isinstance(value, Mapping):
                raise ConfigError(dotted, f"is a section; set one of its fields ({', '.join(tree[key])})")
            _merge(tree[key], value, f"{path}.{key}", given, preset)
        else:
            tree[key] = parse(value, dotted)
            given.append(f"{path}.{key}")


def _table_model(dotted: str) -> Any:
    """The model of an optional table of the host (``host.nic.memory``), else ``None``."""
    info = _schema_field(dotted.split(".", 1)[1])
    inner = _fields.strip_optional(info.annotation)[0] if info is not None else None
    return inner if isinstance(inner, type) and issubclass(inner, BaseModel) else None


def _new_table(tree: Dict[str, Any], key: str, value: Any, dotted: str, given: List[str], preset: str) -> None:
    """Fields set in an optional table the preset has none of (``host.nic.memory``
    on a NIC without on-board memory): they make one, which takes every field."""
    table: Dict[str, Any] = {k: None for k in _table_model(dotted).model_fields}
    names = ", ".join(_stem(k) for k in table)
    if not isinstance(value, Mapping):
        raise ConfigError.invalid(dotted, value, f"a table of {names}")
    _merge(table, value, dotted, given, preset)
    missing = [_stem(k) for k, v in table.items() if v is None]
    if missing:
        having = [p for p in host_presets() if _get(preset_host(p) or {}, dotted.split(".")[1:]) is not None]
        first, written = next(iter(value.items()))
        raise ConfigError(f"{dotted}.{first}", f"set to {_show(written)} on preset {preset}, which has no {dotted}: "
                                               f"the fields given make one, which needs all of {names} (missing: "
                                               f"{', '.join(missing)}" + "".join(f"; preset {p} has one" for p in having) + ")")
    tree[key] = table


def _stem(key: str) -> str:
    """A core key as a user writes it: ``idle_latency_ps`` → ``idle_latency``."""
    return next((key[: -len(x)] for x, _ in SUFFIXES if key.endswith(x)), key)


def _get(tree: Mapping[str, Any], path: List[str]) -> Any:
    for part in path:
        tree = tree.get(part) if isinstance(tree, Mapping) else None
    return tree


def _field(tree: Mapping[str, Any], name: str, dotted: str) -> Tuple[str, Parser]:
    """The core key ``name`` stands for in ``tree`` and the parser of its values."""
    section = dotted.split(".", 1)[1]
    if name in tree:
        for suffix, parse in SUFFIXES:
            if name.endswith(suffix) or name == suffix[1:]:  # nic.memory.bytes is a size too
                return name, _base_or(parse)
        return name, _typed(tree[name], section)
    for key in tree:
        for suffix, parse in SUFFIXES:
            if key.endswith(suffix) and key[: -len(suffix)] == name:
                return key, parse
            if key.endswith(suffix):
                break
    raise _unknown(tree, name, dotted)


def _base_or(parse: Parser) -> Parser:
    """A suffixed name takes a bare integer in its base unit, or a unit string."""

    def parse_raw(v: Any, f: str) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            return parse_int(v, f, 0, 2**64 - 1, key=f)
        return parse(v, f)

    return parse_raw


def parse_bind(value: Any, field: str) -> List[Dict[str, int]]:
    """``host.bind``: a list of ``{core, port, queue}`` tables, or l3fwd's
    ``--config`` text ``"(port,queue,core),(port,queue,core)"``."""
    value = bind_items(value, field)
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or set(item) != {"core", "port", "queue"}:
            raise ConfigError.invalid(f"{field}[{i}]", item, "a table with exactly core, port and queue")
        out.append({k: parse_int(item[k], f"{field}[{i}].{k}", 0, 255) for k in ("core", "port", "queue")})
    return out


def bind_items(value: Any, field: str = "host.bind") -> List[Any]:
    """``host.bind``'s items as given, l3fwd's text split into ``{port,
    queue, core}`` tables, each still unchecked."""
    allowed = "a list of {core, port, queue} tables, or '(port,queue,core),...' as l3fwd --config"
    if isinstance(value, str):
        text = value.replace(" ", "")
        groups = re.findall(r"\(([^()]*)\)", text)
        if not groups or re.sub(r"\([^()]*\),?", "", text):
            raise ConfigError.invalid(field, value, allowed)
        items: List[Any] = []
        for g in groups:
            parts = g.split(",")
            if len(parts) != 3:
                raise ConfigError.invalid(field, value, allowed)
            items.append({"port": parts[0], "queue": parts[1], "core": parts[2]})
        value = items
    if not isinstance(value, list):
        raise ConfigError.invalid(field, value, allowed)
    return [dict(item) if isinstance(item, Mapping) else item for item in value]


def _schema_field(section: str) -> Any:
    """The pydantic field of ``host.<section>`` in the core's schema (``None`` if it has none)."""
    model: Any = schema.HostConfig
    info = None
    for part in section.split("."):
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        info = model.model_fields[part]
        model, _ = _fields.strip_optional(info.annotation)
    return info


def _typed(default: Any, section: str) -> Parser:
    """A parser for a field without a unit suffix: the schema's choices and
    integer bounds, else the type of the preset's value."""
    if section == "bind":
        return parse_bind
    info = _schema_field(section)
    words = _fields.choices(info.annotation) if info is not None else None
    if words is not None:
        return lambda v, f: parse_choice(v, f, words)
    # The preset's value's type, or the schema's where it has none (a field of a new table).
    kind = type(default) if default is not None or info is None else _fields.strip_optional(info.annotation)[0]
    if kind is bool:
        return parse_bool
    if kind is int:
        lo, hi = _fields.bounds(info.metadata) if info is not None else (None, None)
        lo, hi = 0 if lo is None else lo, 2**64 - 1 if hi is None else hi
        return lambda v, f: parse_int(v, f, lo, hi)
    if kind is float:
        return _fields.number
    return lambda v, f: v


def user_names(tree: Mapping[str, Any]) -> List[str]:
    """The names a user may write for the keys of ``tree``: stems beside suffixed names."""
    names = []
    for key in tree:
        names.append(key)
        for suffix, _ in SUFFIXES:
            if key.endswith(suffix):
                names.append(key[: -len(suffix)])
                break
    return names


def _unknown(tree: Mapping[str, Any], name: str, dotted: str) -> ConfigError:
    known = user_names(tree)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean '{dotted.rsplit('.', 1)[0]}.{close[0]}'? " if close else ""
    return ConfigError(dotted, f"unknown field '{dotted}' ({hint}known: {', '.join(known)})")


def set_override(overrides: Dict[str, Any], path: List[str], value: Any) -> None:
    """Sets ``value`` at ``path`` in a nested overrides dict; a mapping value merges."""
    node = overrides
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    leaf = path[-1]
    if isinstance(value, Mapping):
        if not isinstance(node.get(leaf), dict):
            node[leaf] = {}
        for k, v in value.items():
            set_override(node, [leaf, str(k)], v)
    else:
        node[leaf] = copy.deepcopy(value)


def get_override(overrides: Mapping[str, Any], path: List[str]) -> Any:
    node: Any = overrides
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return copy.deepcopy(node)


def flatten(tree: Mapping[str, Any], prefix: str = "host") -> Dict[str, Any]:
    """``{"cpu": {"freq_hz": 3}}`` → ``{"host.cpu.freq_hz": 3}``."""
    out: Dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}.{key}"))
        else:
            out[f"{prefix}.{key}"] = value
    return out
