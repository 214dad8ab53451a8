"""Configs in user units, and their resolution into the core's contract.

A :class:`Config` holds what the user wrote (``"100ns"``, ``"10Gbps"``,
``"imix"``); a field left at ``None`` takes its value from the preset, else
from the core's default. :func:`resolve` turns a config into the JSON
contract of the core (``SimConfig`` in ``crates/hostsim-core/src/config.rs``,
modelled in :mod:`hostsim.schema`): every quantity in base units (``*_ps``
picoseconds, ``rate_bps``, bytes), every field present. Precedence, lowest
first: defaults, preset, config file, command-line flags, ``--set``
overrides.

The fields, their types, integer bounds, choices, defaults and descriptions
are the core's: :mod:`hostsim.fields` reads them from the schema the Rust
types export, and adds only the user's syntax (unit strings, shorthands).
Nested tables of the load generator are set field by field
(``loadgen.trace.path``, ``loadgen.memcached.value_size.max``,
``loadgen.closed_loop.outstanding``, ``loadgen.tcp.rtt``) or whole; ``true``
turns on a table whose fields all have defaults (``loadgen.memcached = true``).

The ``host`` section is different: the machine a host application runs on
belongs to the core, which hands out each preset's full host config; the
user's ``host`` overrides are a nested dict merged into it at resolution
(see :mod:`hostsim.host`).

A resolved config passes the pydantic models of :mod:`hostsim.schema` and
then the core's own checks (ranges, cross-field rules); either way an error
is a :class:`ConfigError` naming the field, the value and what is allowed.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import pydantic

from . import fields as _fields
from . import host as _host
from . import presets as _presets
from . import schema
from .sizes import (  # noqa: F401  (the size helpers' long-standing home)
    ALLOWED_SIZE,
    FCS_BYTES,
    HEADER_BYTES,
    IMIX,
    MAX_FRAME_BYTES,
    MIN_FRAME_BYTES,
    TAG_BYTES,
    WIRE_OVERHEAD_BYTES,
    mean_frame_bytes,
    min_frame_bytes,
    parse_size_dist,
    size_label,
)
from .units import ConfigError, parse_choice, with_unit

SECTIONS = _fields.SECTIONS
#: Each section's fields by user name (see :mod:`hostsim.fields`).
FIELDS: Dict[str, Dict[str, _fields.Spec]] = {name: _fields.table(model) for name, model in SECTIONS.items()}
#: The top-level fields the contract has (``app`` takes its choices from the core's registry).
_SEED, _STACK = _fields.spec(schema.SimConfig, "seed"), _fields.spec(schema.SimConfig, "stack")
TOP_FIELDS = ("seed", "app", "stack", "preset")


def apps() -> Tuple[str, ...]:
    """Every device under test: the reflector and the core's host applications."""
    return ("reflector",) + _host.host_apps()


def _top_specs() -> Dict[str, Tuple[Any, str]]:
    """The top-level fields: name -> (default in user units, description)."""
    return {
        "seed": (_SEED.default, _SEED.doc),
        "app": ("reflector", schema.SimConfig.model_fields["app"].description or ""),
        "stack": (_STACK.default, _STACK.doc),
        "preset": (_presets.DEFAULT_PRESET, "machine preset the config starts from"),
    }


def _parse_top(name: str, value: Any) -> Any:
    if name == "seed":
        return _SEED.convert(value, "seed")
    if name == "app":
        return parse_choice(value, "app", apps())
    if name == "stack":
        return _STACK.convert(value, "stack")
    return _presets.get(value, "preset").name


# ---------------------------------------------------------------- sections


class Section:
    """One section of a config in user units; unset fields read ``None``.

    ``Loadgen(rate="10Gbps", size="imix")``; a name the section does not
    have is an error, so a typo is never a no-op.
    """

    _name = ""

    def __init__(self, **values: Any):
        object.__setattr__(self, "_values", {})
        #: A field set under the core's key with a bare number (``duration_ps = 0``): that key and number, to name in errors.
        object.__setattr__(self, "_by_key", {})
        for k, v in values.items():
            setattr(self, k, v)

    def _spec_name(self, name: str) -> str:
        specs = FIELDS[self._name]
        name = _fields.aliases(specs).get(name, name)
        if name not in specs:
            raise _unknown(f"{self._name}.{name}")
        return name

    def __setattr__(self, name: str, value: Any) -> None:
        spec_name = self._spec_name(name)
        converted = _fields.by_key(FIELDS[self._name][spec_name], name, value, self._name)
        self._values[spec_name] = converted
        self._by_key.pop(spec_name, None)
        if name != spec_name and isinstance(value, (int, float)) and not isinstance(value, bool):
            self._by_key[spec_name] = (name, value)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._values.get(self._spec_name(name))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._values == self._values  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Section":
        return type(self)(**copy.deepcopy(self._values, memo))

    def set_values(self) -> Dict[str, Any]:
        """The fields the user set (user units)."""
        return {k: v for k, v in self._values.items() if v is not None}


class Timing(Section):
    """How long the load generator runs, what it leaves out, how long it waits (``sim``)."""

    _name = "sim"


class Link(Section):
    """The full-duplex link between load generator and device."""

    _name = "link"


class Loadgen(Section):
    """The hardware-style load generator (SPEC 2.3)."""

    _name = "loadgen"


class Reflector(Section):
    """The reference device: single server, finite queue, returns frames with swapped MACs."""

    _name = "reflector"


SECTION_CLASSES = {"sim": Timing, "link": Link, "loadgen": Loadgen, "reflector": Reflector}


@dataclass
class Config:
    """A simulation config in user units. ``None`` means "preset or default".

    Build one directly (``Config(loadgen=Loadgen(rate="10Gbps"))``), from a
    dict or file with :func:`load_config`, then adjust with :meth:`set`.
    """

    seed: Any = None
    app: Any = None
    stack: Any = None
    preset: Any = None
    sim: Timing = field(default_factory=Timing)
    link: Link = field(default_factory=Link)
    loadgen: Loadgen = field(default_factory=Loadgen)
    reflector: Reflector = field(default_factory=Reflector)
    #: Overrides of the preset's host model, nested, in user names and units (``{"cpu": {"freq": "2GHz"}}``).
    host: Dict[str, Any] = field(default_factory=dict)
    #: Contract keys a resolved contract fed back as a config set without its
    #: user having given them (not in its ``given``): not counted as given.
    _not_given: set = field(default_factory=set, repr=False, compare=False)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in TOP_FIELDS and name not in SECTIONS and name not in ("host", "_not_given"):
            raise _unknown(name)
        object.__setattr__(self, name, value)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Config":
        """A config from a nested dict in user units; unknown fields are errors."""
        cfg = cls()
        cfg.update(data)
        return cfg

    def update(self, data: Mapping[str, Any]) -> "Config":
        """Sets every field present in the nested dict ``data``."""
        if not isinstance(data, Mapping):
            raise ConfigError.invalid("config", data, "a table of fields")
        given = data.get("given")
        if given is not None and (not isinstance(given, list) or not all(isinstance(g, str) for g in given)):
            raise ConfigError.invalid("given", given, "a list of dotted field names (a resolved contract's)")
        check_spellings(data)
        for key, value in data.items():
            if key == "given":
                continue
            if key in SECTIONS:
                if not isinstance(value, Mapping):
                    raise ConfigError.invalid(key, value, f"a table of {', '.join(section_fields(key))}")
                for name, inner in value.items():
                    self.set(f"{key}.{name}", inner)
            else:
                self.set(str(key), value)
        if given is not None:
            # A resolved contract: it sets every field, its user gave only these.
            self._not_given |= _contract_keys(data) - set(given)
        return self

    def set(self, dotted: str, value: Any) -> "Config":
        """Sets one field by dotted name (``"reflector.service_time"``, ``"host.cpu.freq"``)."""
        self._not_given -= {k for k in self._not_given if _names(dotted.strip(), k)}
        path = _host_path(dotted)
        if path is not None:
            if not path and not isinstance(value, Mapping):
                raise ConfigError.invalid("host", value, "a table of host fields (cpu, mem, pcie, nic, pmd, app)")
            if path:
                _host.set_override(self.host, path, value)
            else:
                for name, inner in value.items():
                    _host.set_override(self.host, [str(name)], inner)
            return self
        section, parts = _split_field(dotted)
        given = dotted.strip().split(".")[1:]  # as written: a core key (duration_ps) takes base units
        if section is None:
            setattr(self, parts[0], value)
        elif len(parts) == 1:
            setattr(getattr(self, section), given[0], value)
        else:
            _set_in_table(getattr(self, section), [parts[0], given[1]] + parts[2:], value, dotted.strip())
        return self

    def get(self, dotted: str) -> Any:
        """The value the user set for a field (``None`` when unset)."""
        path = _host_path(dotted)
        if path is not None:
            return _host.get_override(self.host, path) if path else copy.deepcopy(self.host) or None
        section, parts = _split_field(dotted)
        if section is None:
            return getattr(self, parts[0])
        value = getattr(getattr(self, section), parts[0])
        for part in parts[1:]:
            value = value.get(part) if isinstance(value, Mapping) else (value if part in ("min", "max") else None)
        return value

    def to_dict(self) -> Dict[str, Any]:
        """The fields the user set, as a nested dict (user units)."""
        out: Dict[str, Any] = {}
        for name in TOP_FIELDS:
            if getattr(self, name) is not None:
                out[name] = copy.deepcopy(getattr(self, name))
        for section in SECTIONS:
            values = copy.deepcopy(getattr(self, section).set_values())
            if values:
                out[section] = values
        if self.host:
            out["host"] = copy.deepcopy(self.host)
        return out

    def preset_name(self) -> str:
        """The preset in effect (the default one when unset)."""
        return _parse_top("preset", self.preset if self.preset is not None else _presets.DEFAULT_PRESET)

    def effective(self) -> Dict[str, Any]:
        """Every field in user units after applying preset and defaults."""
        preset = _presets.get(self.preset_name()).config
        top = _top_specs()
        out: Dict[str, Any] = {name: _pick(getattr(self, name), None, top[name][0]) for name in TOP_FIELDS}
        implied = self._implied_traffic(out["app"])
        for section, specs in FIELDS.items():
            sect = getattr(self, section)
            below = dict(preset.get(section, {}), **(implied if section == "loadgen" else {}))
            out[section] = {
                name: _pick(getattr(sect, name), below.get(name), spec.user_default()) for name, spec in specs.items()
            }
        out["preset"] = self.preset_name()
        out["host"] = copy.deepcopy(self.host)  # overrides only: the host model itself lives in the core
        return out

    def _implied_traffic(self, app: Any) -> Dict[str, Any]:
        """The generator fields the application implies (the core's registry):
        ``--app memcached`` sends memcached requests, ``--app iperf`` its TCP
        flow; a trace given by the user replaces the implied client."""
        if not isinstance(app, str) or app == "reflector" or app not in _host.host_apps():
            return {}
        implied: Dict[str, Any] = {k: _registry_value(v) for k, v in _host.app_traffic(app).items()}
        if self.loadgen.trace is not None:
            implied.pop("memcached", None)
        return implied

    def resolve(self) -> Dict[str, Any]:
        """The core's JSON contract for this config; see :func:`resolve`."""
        return resolve(self)

    def model(self) -> schema.SimConfig:
        """The resolved config as the contract's typed pydantic model (:class:`hostsim.schema.SimConfig`)."""
        return schema.SimConfig.model_validate(resolve(self))

    def copy(self) -> "Config":
        return copy.deepcopy(self)


def _contract_keys(data: Mapping[str, Any]) -> set:
    """The keys a contract sets, as :func:`resolve` lists given ones: top-level
    names, section fields, host leaves."""
    keys = {k for k in data if k in TOP_FIELDS}
    for section in SECTIONS:
        keys |= {f"{section}.{k}" for k in data.get(section) or {}}
    keys |= set(_host.flatten(data["host"])) if isinstance(data.get("host"), Mapping) else set()
    return keys


def _names(dotted: str, key: str) -> bool:
    """Whether setting ``dotted`` sets contract key ``key`` (itself, by another name, or a table above it)."""
    return key.startswith(dotted + ".") or field_key(key) == field_key(dotted)


def _set_in_table(section: Section, parts: List[str], value: Any, dotted: str) -> None:
    """Sets a field inside a nested table: ``["memcached", "value_size", "max"]`` under ``loadgen``."""
    current = getattr(section, parts[0])
    new = copy.deepcopy(dict(current)) if isinstance(current, Mapping) else {}
    spec = FIELDS[section._name][parts[0]]
    inner_specs = spec.table or {}
    name = _fields.aliases(inner_specs).get(parts[1], parts[1])
    inner = inner_specs.get(name)
    if len(parts) == 2:
        new[name] = _fields.by_key(inner, parts[1], value, f"{section._name}.{parts[0]}") if inner is not None else value
    else:
        old = new.get(name)
        sub = dict(old) if isinstance(old, Mapping) else (
            {"min": old, "max": old} if old is not None else dict(inner.user_default() or {}))  # type: ignore[union-attr]
        sub[parts[2]] = value
        new[name] = sub
    setattr(section, parts[0], new)


def _registry_value(text: str) -> Any:
    """A value the core's registry gives as text: a JSON literal (``true``,
    ``5201``) or else the text itself (``tcp``), parsed by the field as if
    the user had written it."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _pick(user: Any, preset: Any, default: Any) -> Any:
    if user is not None:
        return user
    return preset if preset is not None else default


def section_fields(section: str) -> List[str]:
    return list(FIELDS[section])


def known_fields() -> List[str]:
    """Every settable dotted field name."""
    names = list(TOP_FIELDS)
    for section, specs in FIELDS.items():
        for name, spec in specs.items():
            names.append(f"{section}.{name}")
            names += [f"{section}.{name}.{n}" for n in (spec.table or {})]
    return names


def field_docs() -> Dict[str, str]:
    """Dotted field name → one-line description with its default."""
    docs = {name: f"{' '.join(doc.split())} (default {default!r})" for name, (default, doc) in _top_specs().items()}
    for section, specs in FIELDS.items():
        for name, spec in specs.items():
            docs[f"{section}.{name}"] = f"{spec.doc} (default {spec.user_default()!r})"
            for inner, ispec in (spec.table or {}).items():
                docs[f"{section}.{name}.{inner}"] = f"{ispec.doc} (default {ispec.user_default()!r})"
    return docs


def _written(data: Mapping[str, Any], prefix: str = "") -> Iterable[Tuple[str, Any]]:
    """Every field of a nested dict as written: (dotted name, value), descending
    into sections, the host section and the load generator's nested tables."""
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and _is_table(dotted):
            yield from _written(value, dotted + ".")
        else:
            yield dotted, value


def _is_table(dotted: str) -> bool:
    """Whether ``dotted`` names a table of fields (a section, a part of ``host``, ``loadgen.trace``...)."""
    parts = dotted.split(".")
    if parts[0] == "host" or (len(parts) == 1 and parts[0] in SECTIONS):
        return True
    if len(parts) == 2 and parts[0] in SECTIONS:
        spec = FIELDS[parts[0]].get(_fields.aliases(FIELDS[parts[0]]).get(parts[1], parts[1]))
        return spec is not None and spec.table is not None
    return False


def check_spellings(data: Mapping[str, Any], origin: Optional[str] = None) -> None:
    """Refuses a nested dict that gives one field twice under two names, by
    its stem and its core key (``sim.duration`` and ``sim.duration_ps``,
    ``host.cpu.freq`` and ``host.cpu.freq_hz``): which one wins would depend
    on the order of the lines. ``origin`` (a file) is named in the error."""
    seen: Dict[str, Tuple[str, Any]] = {}
    for dotted, value in _written(data):
        key = field_key(dotted)
        if key in seen:
            first, before = seen[key]
            where = f" in {origin}" if origin else ""
            show = lambda v: json.dumps(v, default=str)  # noqa: E731  (as a JSON or TOML file writes it)
            raise ConfigError(key, f"given twice{where}, as {first} = {show(before)} and as {dotted} = "
                                   f"{show(value)}: give it once")
        seen[key] = (dotted, value)


def _host_path(dotted: Any) -> Optional[List[str]]:
    """``"host.cpu.freq"`` → ``["cpu", "freq"]``; ``None`` for a name outside the host section."""
    if not isinstance(dotted, str):
        return None
    parts = dotted.strip().split(".")
    if parts[0] != "host":
        return None
    if any(not p for p in parts[1:]):
        raise ConfigError(dotted.strip(), "empty part in a dotted field name")
    return parts[1:]


def _split_field(dotted: Any) -> Tuple[Optional[str], List[str]]:
    """``"loadgen.memcached.keys"`` → ``("loadgen", ["memcached", "keys"])``; every part checked."""
    if not isinstance(dotted, str):
        raise ConfigError.invalid("field", dotted, "a dotted field name")
    parts = dotted.strip().split(".")
    if len(parts) == 1 and parts[0] in TOP_FIELDS:
        return None, parts
    if len(parts) == 1 and parts[0] in SECTIONS:
        raise ConfigError(dotted, f"is a section; set one of its fields ({', '.join(section_fields(parts[0]))})")
    if parts[0] not in SECTIONS or len(parts) < 2:
        raise _unknown(dotted.strip())
    specs = FIELDS[parts[0]]
    name = _fields.aliases(specs).get(parts[1], parts[1])
    spec = specs.get(name)
    if spec is None:
        raise _unknown(dotted.strip())
    rest = [name] + parts[2:]
    if len(rest) > 1:
        inner = (spec.table or {})
        iname = _fields.aliases(inner).get(rest[1], rest[1])
        ispec = inner.get(iname)
        sized = ispec is not None and len(rest) == 3 and ispec.info.annotation is schema.ZipfSizeConfig and \
            rest[2] in ("min", "max", "skew")
        if ispec is None or (len(rest) > 2 and not sized):
            raise _unknown(dotted.strip())
        rest[1] = iname
    return parts[0], rest


def _unknown(dotted: str) -> ConfigError:
    """An unknown name: the fields of the table it is in, and the nearest of all as a hint."""
    parts = dotted.split(".")
    section = parts[0]
    spec = FIELDS[section].get(parts[1]) if section in SECTIONS and len(parts) >= 3 else None
    if spec is not None and spec.table:
        known = [f"{section}.{parts[1]}.{n}" for n in spec.table]
    elif section in SECTIONS:
        known = [f"{section}.{n}" for n in section_fields(section)]
    else:
        known = list(TOP_FIELDS) + list(SECTIONS)
    return _fields.unknown(dotted, known, candidates=known_fields())


# ---------------------------------------------------------------- resolution


def resolve(config: Union[Config, Mapping[str, Any]]) -> Dict[str, Any]:
    """The fully resolved config in the core's contract (base units, every field).

    Checked against the schema's models and by the core; raises :class:`ConfigError`.
    """
    cfg = config if isinstance(config, Config) else Config.from_dict(config)
    try:
        return _resolve(cfg)
    except ConfigError as e:
        raise _real_range(e, cfg) from None


def _real_range(e: ConfigError, cfg: Config) -> ConfigError:
    """An integer past the bounds it was checked against, often only its
    type's (``--cores -1``: 0 to 4294967295), with the range the core gives
    (1 to host.cpu.cores), asked with the nearest value in them, or, when the
    core takes that (``host.pipeline.rx_cores=-1``: 0 is run to completion),
    with the farthest if the core's answer then covers the nearest too; ``e``
    if the core takes both, answers with another rule than a range (a queue
    bound twice) or words its answer by the value asked, or the name cannot
    be set."""
    for probe in (e.nearest, e.farthest):
        if probe is None:
            return e
        try:
            _resolve(_with(cfg, e.field, probe))
        except ConfigError as real:
            stand_in = probe != 0 and re.search(rf"\b{probe}\b", real.allowed or "")
            covers = probe == e.nearest or re.search(rf"(?<![\d-]){e.nearest}\b", real.allowed or "")
            ranged = re.match(r"([<>]=? ?)?-?\d", real.allowed or "")  # a range, not another rule the probe broke
            if field_key(real.field) == field_key(e.field) and ranged and not stand_in and covers:
                return ConfigError.invalid(e.field, e.value, real.allowed)
            return e
        except Exception:  # a name set() does not take
            return e
    return e


def _with(cfg: Config, field: str, value: int) -> Config:
    """A copy of ``cfg`` with ``field`` set to ``value``; an item of
    ``host.bind`` (``host.bind[0].core``) is set within the list given."""
    m = re.fullmatch(r"host\.bind\[(\d+)\]\.(core|port|queue)", field)
    if m is None:
        return cfg.copy().set(field, value)
    items = _host.bind_items(cfg.get("host.bind"))
    items[int(m.group(1))][m.group(2)] = value
    return cfg.copy().set("host.bind", items)


def _resolve(cfg: Config) -> Dict[str, Any]:
    values = cfg.effective()
    out: Dict[str, Any] = {name: _parse_top(name, values[name]) for name in ("seed", "app", "stack")}
    for section, specs in FIELDS.items():
        try:
            out[section] = {spec.key: spec.convert(values[section][name], f"{section}.{name}") for name, spec in specs.items()}
        except ConfigError as e:
            raise _as_written(e, cfg) from None
    given = [name for name in ("seed", "app", "stack") if getattr(cfg, name) is not None]
    for section, specs in FIELDS.items():
        given += [f"{section}.{specs[name].key}" for name in getattr(cfg, section).set_values()]
    _resolve_host(out, cfg, values["preset"], given)
    out["given"] = sorted(set(given) - cfg._not_given)
    try:
        check_contract(out)
    except ConfigError as e:
        raise _as_written(e, cfg) from None
    return out


def _as_written(e: ConfigError, cfg: Config) -> ConfigError:
    """A range error on a field the user set, named and showing the value as
    the user wrote it (``-1``, ``2GHz``; ``host.nic.rx_fifo`` for the core's
    ``host.nic.rx_fifo_bytes``), not as resolved (``-1.0``, ``2000000000``)."""
    if e.allowed is None:
        return e
    names = [e.field]
    if _host_path(e.field) is not None:  # a host field may have been given by its stem
        names += [e.field[: -len(x)] for x, _ in _host.SUFFIXES if e.field.endswith(x)]
    for name in names:
        section, _, stem = name.partition(".")
        by_key = getattr(cfg, section)._by_key.get(stem) if section in SECTIONS else None
        if by_key is not None:  # given under the core's key, as a bare number in its base unit
            return ConfigError.invalid(f"{section}.{by_key[0]}", by_key[1], e.allowed)
        try:
            written = cfg.get(name)
        except ConfigError:  # a field of the contract's own (a host key the user did not name)
            continue
        if written is not None and not isinstance(written, (Mapping, list)):
            return ConfigError.invalid(name, written, e.allowed)
    return e


def check_contract(contract: Mapping[str, Any]) -> None:
    """Validates a contract with the schema's pydantic models, then with the core."""
    try:
        schema.SimConfig.model_validate(contract)
    except pydantic.ValidationError as e:
        raise _schema_error(e) from None
    from .runner import check_with_core

    check_with_core(contract)


def _schema_error(e: pydantic.ValidationError) -> ConfigError:
    """The first error of a pydantic validation, named by the user's dotted field."""
    first = e.errors()[0]
    loc = [str(p) for p in first["loc"] if not isinstance(p, int)]
    # Unions report each alternative under the branch's model name: keep the field path.
    loc = [p for p in loc if not p[:1].isupper() and "[" not in p and p not in ("bool", "int", "str", "float")]
    name = ".".join(_fields.user_name(p) if i else p for i, p in enumerate(loc)) or "config"
    bound = _BOUNDS.get(first["type"])
    ctx = first.get("ctx") or {}
    limit = ctx.get(bound[1]) if bound else None
    if isinstance(limit, float) and limit.is_integer():
        limit = int(limit)
    # In the field's unit: the core key's suffix says it (``duration_ps``: ps).
    allowed = f"{bound[0]} {with_unit(loc[-1] if loc else '', limit)}" if bound and limit is not None else first["msg"]
    return ConfigError.invalid(name, first.get("input"), allowed)


#: pydantic's range errors, said as the core says its ranges (``>= 0``, ``< 1``).
_BOUNDS = {"greater_than_equal": (">=", "ge"), "greater_than": (">", "gt"),
           "less_than_equal": ("<=", "le"), "less_than": ("<", "lt")}


def _resolve_host(out: Dict[str, Any], cfg: Config, preset: str, given: List[str]) -> None:
    """Adds ``host`` for a host application; the reflector takes no host overrides.
    The host fields the user set are appended to ``given``."""
    if out["app"] in _host.host_apps():
        out["host"] = _host.resolve_host(preset, cfg.host, given)
    elif cfg.host:
        # The first field set, or the first table when every one set is empty ({}).
        first = next(iter(_host.flatten(cfg.host)), None) or _first_table(cfg.host)
        raise ConfigError(first, f"the {out['app']} has no host model; host fields apply to the host "
                                 f"applications ({', '.join(_host.host_apps())})")


def _first_table(tree: Mapping[str, Any], prefix: str = "host") -> str:
    """The dotted name of the first innermost table of ``tree`` (``host.app.bridge.ageing_time_ps``)."""
    for key, value in tree.items():
        return _first_table(value, f"{prefix}.{key}") if isinstance(value, Mapping) and value else f"{prefix}.{key}"
    return prefix


# ---------------------------------------------------------------- loading


ConfigSource = Union[Config, Mapping[str, Any], str, "os.PathLike[str]", None]


class DuplicateKey(ValueError):
    """A key given twice in one table of a JSON or YAML file (``line`` when the parser knows it)."""

    def __init__(self, key: Any, line: Optional[int] = None):
        self.key, self.line = key, line
        at = f" at line {line}" if line else ""
        super().__init__(f"duplicate key {str(key)!r}{at} (allowed: each key once in a table; "
                         "a second one would silently replace the first)")


def _unique_pairs(pairs: List[Tuple[Any, Any]]) -> Dict[Any, Any]:
    """``json``'s ``object_pairs_hook``: a dict, or :class:`DuplicateKey` (``json`` keeps the last)."""
    out: Dict[Any, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def load_json(text: str) -> Any:
    """JSON text; a key twice in one object is :class:`DuplicateKey`."""
    return json.loads(text, object_pairs_hook=_unique_pairs)


def load_yaml(text: str) -> Any:
    """YAML text (safe types only); a key twice in one mapping is :class:`DuplicateKey`
    (PyYAML keeps the last). Keys a merge (``<<: *base``) brings in may be replaced."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=deep)
                    try:
                        if key in seen:
                            raise DuplicateKey(key, key_node.start_mark.line + 1)
                        seen.add(key)
                    except TypeError:  # an unhashable key: the base loader names it
                        pass
            return super().construct_mapping(node, deep)

    return yaml.load(text, Loader=UniqueKeyLoader)


#: The largest config or sweep file read (a config is kilobytes; a device
#: such as /dev/zero, or a file of gigabytes, is refused before it is read).
MAX_FILE_BYTES = 16 << 20


class FileRefused(ValueError):
    """A file :func:`read_bounded` will not read: what it must be instead."""


def read_bounded(path: Union[str, "os.PathLike[str]"]) -> bytes:
    """The bytes of a regular file of at most ``MAX_FILE_BYTES``. Raises
    ``OSError`` when it cannot be read, :class:`FileRefused` (saying what
    is allowed) for a device, pipe or directory or a larger file: neither is
    read to its end."""
    import stat

    allowed = f"a regular file of at most {MAX_FILE_BYTES >> 20} MiB"
    if not stat.S_ISREG(Path(path).stat().st_mode):
        raise FileRefused(f"{allowed} (not a device, pipe or directory)")
    with open(path, "rb") as f:
        raw = f.read(MAX_FILE_BYTES + 1)
    if len(raw) > MAX_FILE_BYTES:
        raise FileRefused(f"{allowed} (it is larger)")
    return raw


def read_config_file(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Reads a TOML, YAML or JSON config file into a nested dict; a key twice in a table is an error."""
    p = Path(path)
    suffix = p.suffix.lower()
    try:
        raw = read_bounded(path)
    except OSError as e:
        raise OSError(f"{path}: cannot read config file ({e.strerror or e})") from None
    except FileRefused as e:
        raise ConfigError.invalid("config", os.fspath(path), str(e)) from None
    try:
        if suffix == ".toml":
            data = load_toml(raw.decode("utf-8"))
        elif suffix in (".yaml", ".yml"):
            data = load_yaml(raw.decode("utf-8")) or {}
        elif suffix == ".json":
            data = load_json(raw.decode("utf-8"))
        else:
            raise ConfigError.invalid("config", str(path), "a .toml, .yaml, .yml or .json file")
    except ConfigError:
        raise
    except DuplicateKey as e:
        raise ConfigError("config", f"{path}: {e}") from None
    except Exception as e:  # each parser has its own error type; all mean "malformed file"
        raise ConfigError("config", f"{path}: cannot parse: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError.invalid("config", str(path), "a file holding a table of fields")
    if _is_inspect_output(data):
        # The config is its `config` member, the machine P's, every host field resolved.
        data = {**data["config"], "preset": data["preset"]}
    check_spellings(data, os.fspath(path))
    return data


def inspected_preset(path: Union[str, "os.PathLike[str]"]) -> Optional[str]:
    """The preset of a file ``hostsim inspect --preset P`` wrote (JSON whose
    config sets every host field to P's), or None for any other file."""
    if not str(path).endswith(".json"):
        return None
    try:
        data = json.loads(read_bounded(path))
    except (OSError, ValueError):
        return None
    return data["preset"] if _is_inspect_output(data) else None


def _is_inspect_output(data: Any) -> bool:
    """Whether ``data`` is what ``hostsim inspect --preset P`` prints: P, the resolved config, the machine."""
    return (isinstance(data, dict) and {"preset", "config", "machine"} <= set(data)
            and isinstance(data["config"], dict) and isinstance(data["preset"], str))


#: Fields that name a file the simulation reads. In a config or sweep file a
#: relative path is relative to that file's directory (:func:`resolve_paths`).
INPUT_PATHS = ("loadgen.trace.path",)


def resolve_paths(cfg: Config, root: Union[str, "os.PathLike[str]"]) -> Config:
    """Makes each relative input path of ``cfg`` (:data:`INPUT_PATHS`) absolute,
    relative to ``root``, the directory of the file that gave it: the file
    works from any working directory, and a stored point's key names one file."""
    for dotted in INPUT_PATHS:
        value = cfg.get(dotted)
        if isinstance(value, str) and value.strip() and not os.path.isabs(value):
            cfg.set(dotted, str((Path(root) / value).resolve()))
    return cfg


def config_file(path: Union[str, "os.PathLike[str]"]) -> Config:
    """The :class:`Config` a file holds, its relative input paths taken from the file's directory."""
    return resolve_paths(Config.from_dict(read_config_file(path)), Path(path).parent)


def check_input_files(resolved: Mapping[str, Any]) -> None:
    """Refuses a resolved config whose input files (a trace) cannot be opened for reading,
    before a run finds it out; relative paths are taken from the working directory, as the core does."""
    trace = resolved.get("loadgen", {}).get("trace") or {}
    path = trace.get("path")
    if not path:
        return
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise ConfigError("loadgen.trace.path", f"cannot read {path!r} ({e.strerror or e}) "
                                                "(allowed: a readable pcap or pcapng file)") from None


def load_config(source: ConfigSource = None, overrides: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> Config:
    """A validated :class:`Config` from a file path, a dict, a Config or nothing.

    ``overrides`` maps dotted names to values (``{"loadgen.rate": "10Gbps"}``)
    and is applied last; keyword arguments are a shortcut for top-level and
    section overrides (``preset="a72-quad"``, ``loadgen={"rate": "50%"}``).
    Raises :class:`ConfigError` naming the first bad field.
    """
    if source is None:
        cfg = Config()
    elif isinstance(source, Config):
        cfg = source.copy()
    elif isinstance(source, Mapping):
        cfg = Config.from_dict(source)
    elif isinstance(source, (str, os.PathLike)):
        cfg = config_file(source)
    else:
        raise ConfigError.invalid("config", source, "a Config, a dict or a path to a TOML/YAML/JSON file")
    if kwargs:
        cfg.update(kwargs)
    check_spellings(overrides or {})
    for dotted, value in (overrides or {}).items():
        cfg.set(dotted, value)
    resolve(cfg)
    return cfg


def parse_assignment(text: str) -> Tuple[str, Any]:
    """``"reflector.service_time=100ns"`` → (name, value); the value is JSON
    if it parses, else a TOML inline array or table if it is one
    (``host.bind=[{core=0,port=0,queue=0}]``, as in a config file), else
    the text."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise ConfigError.invalid("--set", text, "dotted.key=value, e.g. reflector.service_time=100ns")
    try:
        return name.strip(), json.loads(raw)
    except ValueError:
        pass
    if raw.strip()[:1] in ("[", "{"):
        try:
            return name.strip(), load_toml(f"v = {raw}")["v"]
        except ValueError:  # tomllib.TOMLDecodeError
            pass
    return name.strip(), raw


def load_toml(text: str) -> Dict[str, Any]:
    """TOML text as a dict (tomllib, or tomli before Python 3.11)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


def field_key(dotted: str) -> str:
    """One name per field, for telling whether two names set the same one:
    aliases and unit suffixes resolved (``sim.duration_ps`` → ``sim.duration``,
    ``host.cpu.freq_hz`` → ``host.cpu.freq``). A name that is not a field is
    returned as given (setting it reports the error)."""
    try:
        host = _host_path(dotted)
        if host is not None:
            # The host model's own unit suffixes (`hostsim.host.SUFFIXES`).
            stem = lambda p: next((p[: -len(x)] for x, _ in _host.SUFFIXES if p.endswith(x)), p)  # noqa: E731
            return "host." + ".".join(stem(p) for p in host)
        section, parts = _split_field(dotted)
    except ConfigError:
        return dotted.strip()
    return ".".join(([section] if section else []) + parts)


def apply_assignments(cfg: Config, assignments: Iterable[str]) -> Config:
    """Applies ``--set`` style ``key=value`` strings in order."""
    for text in assignments:
        cfg.set(*parse_assignment(text))
    return cfg
