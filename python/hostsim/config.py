"""Typed configs in user units, and their resolution into the core's contract.

A :class:`Config` holds what the user wrote (``"100ns"``, ``"10Gbps"``,
``"imix"``); a field left at ``None`` takes its value from the preset, else
from the default listed beside it. :func:`resolve` turns a config into the
JSON contract of the core (``SimConfig`` in ``crates/hostsim-core/src/config.rs``):
every quantity in base units (``*_ps`` picoseconds, ``rate_bps``, bytes),
every field present, nothing else. Precedence, lowest first: defaults,
preset, config file, command-line flags, ``--set`` overrides.

``loadgen.trace`` (trace replay) is a nested table: its fields are set as
``loadgen.trace.path``, ``loadgen.trace.time_scale`` and so on (``--pcap FILE``
sets the path); it resolves to ``null`` when no trace is configured. So are
``loadgen.memcached`` (the memcached client; ``loadgen.memcached.keys``,
``loadgen.memcached.value_size.max`` ...) and ``loadgen.closed_loop``
(``loadgen.closed_loop.outstanding``, ``loadgen.closed_loop.timeout``).

The ``host`` section is different: the machine a host application runs on
belongs to the core, which hands out each preset's full host config; the
user's ``host`` overrides are a nested dict merged into it at resolution
(see :mod:`hostsim.host`).

Every value is checked here, with an error naming the field, the value and
what is allowed; the core checks again, so a config built by hand gets the
same protection.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import ipaddress
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import host as _host
from . import presets as _presets
from .units import (
    ConfigError,
    parse_bit_rate_bps,
    parse_bool,
    parse_choice,
    parse_int,
    parse_rate,
    parse_size_bytes,
    parse_time_ps,
)

def apps() -> Tuple[str, ...]:
    """Every device under test: the reflector and the core's host applications."""
    return ("reflector",) + _host.host_apps()

MIN_FRAME_BYTES = 64
MAX_FRAME_BYTES = 9216
#: Per-frame overhead on the wire besides the frame: preamble, SFD and inter-frame gap.
WIRE_OVERHEAD_BYTES = 20
#: The simple IMIX the core implements: (frame bytes, weight).
IMIX = ((64, 7), (594, 4), (1518, 1))
#: Header bytes before the load generator's tag, by protocol (Ethernet; Ethernet/IPv4/UDP).
HEADER_BYTES = {"raw": 14, "udp": 14 + 20 + 8, "tcp": 14 + 20 + 20}
TAG_BYTES = 16
FCS_BYTES = 4

ALLOWED_SIZE = (
    f"a frame size {MIN_FRAME_BYTES}..{MAX_FRAME_BYTES} B, a list like '64,128,256' or [64, 128], "
    "'imix', 'uniform:64-1518' or a table with kind fixed|list|uniform|imix"
)

Parser = Callable[[Any, str], Any]


def _opt(default: Any, parse: Parser, key: str, doc: str) -> Any:
    """A config field: ``None`` until set; ``default`` applies when neither user nor preset sets it."""
    return field(default=None, metadata={"default": default, "parse": parse, "key": key, "doc": doc})


# ---------------------------------------------------------------- parsers


def _seed(v: Any, f: str) -> int:
    return parse_int(v, f, 0, 2**64 - 1)


def _app(v: Any, f: str) -> str:
    return parse_choice(v, f, apps())


def _preset(v: Any, f: str) -> str:
    return _presets.get(v, f).name


def _time_pos(v: Any, f: str) -> int:
    return parse_time_ps(v, f, positive=True)


def _time(v: Any, f: str) -> int:
    return parse_time_ps(v, f, positive=False)


def _flows(v: Any, f: str) -> int:
    return parse_int(v, f, 1, 65536)


def _port(v: Any, f: str) -> int:
    return parse_int(v, f, 0, 65535)


def _count(v: Any, f: str) -> int:
    return parse_int(v, f, 0, 2**64 - 1)


def _queue(v: Any, f: str) -> int:
    return parse_int(v, f, 1, 2**32 - 1)


def _tag_offset(v: Any, f: str) -> Optional[int]:
    if v is None or (isinstance(v, str) and v.strip().lower() in ("auto", "none", "")):
        return None
    return parse_int(v, f, 0, MAX_FRAME_BYTES)


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


def _path(v: Any, f: str) -> Optional[str]:
    if v is None:
        return None
    if isinstance(v, os.PathLike):
        v = os.fspath(v)
    if isinstance(v, str) and v.strip():
        return v
    raise ConfigError.invalid(f, v, "a file path")


def _choice(*choices: str) -> Parser:
    return lambda v, f: parse_choice(v, f, choices)


def _check_frame(b: int, value: Any, f: str) -> int:
    if not MIN_FRAME_BYTES <= b <= MAX_FRAME_BYTES:
        raise ConfigError.invalid(f, value, f"frame sizes {MIN_FRAME_BYTES}..{MAX_FRAME_BYTES} B (FCS included)")
    return b


def _frame(v: Any, f: str) -> int:
    if isinstance(v, float) and not v.is_integer():
        raise ConfigError.invalid(f, v, ALLOWED_SIZE)
    return _check_frame(parse_size_bytes(v, f, positive=False), v, f)


def parse_size_dist(value: Any, field: str = "loadgen.size") -> Dict[str, Any]:
    """A frame-size distribution in the core's form.

    ``64`` or ``"64B"`` → fixed; ``[64, 128]`` or ``"64,128"`` → list with
    equal weights; ``"64:7,594:4"`` → list with weights; ``"imix"``;
    ``"uniform:64-1518"``; or the dict forms themselves.
    """
    if isinstance(value, Mapping):
        return _size_dict(value, field)
    if isinstance(value, (list, tuple)):
        if not value:
            raise ConfigError.invalid(field, list(value), ALLOWED_SIZE)
        sizes = [_frame(v, field) for v in value]
        return {"kind": "list", "bytes": sizes, "weights": [1.0] * len(sizes)}
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "imix":
            return {"kind": "imix"}
        m = re.fullmatch(r"uniform\s*:\s*(\S+?)\s*-\s*(\S+)", text)
        if m:
            lo, hi = _frame(m.group(1), field), _frame(m.group(2), field)
            if hi < lo:
                raise ConfigError.invalid(field, value, "uniform:MIN-MAX with MIN <= MAX")
            return {"kind": "uniform", "min": lo, "max": hi}
        if "," in text or ":" in text:
            return _size_list_text(value, field)
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return {"kind": "fixed", "bytes": _frame(value, field)}
        except ConfigError as e:
            if "frame sizes" in e.message:
                raise
    raise ConfigError.invalid(field, value, ALLOWED_SIZE)


def _size_list_text(value: str, field: str) -> Dict[str, Any]:
    sizes: List[int] = []
    weights: List[float] = []
    for part in value.split(","):
        size, _, weight = part.strip().partition(":")
        sizes.append(_frame(size.strip(), field))
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            raise ConfigError.invalid(field + ".weights", weight, "a number >= 0") from None
        if not w >= 0 or w == float("inf"):
            raise ConfigError.invalid(field + ".weights", weight, "a number >= 0")
        weights.append(w)
    if sum(weights) <= 0:
        raise ConfigError.invalid(field + ".weights", value, "weights with a positive sum")
    return {"kind": "list", "bytes": sizes, "weights": weights}


_SIZE_KEYS = {"fixed": {"bytes"}, "list": {"bytes", "weights"}, "uniform": {"min", "max"}, "imix": set()}


def _size_dict(value: Mapping, field: str) -> Dict[str, Any]:
    kind = value.get("kind")
    if kind not in _SIZE_KEYS:
        raise ConfigError.invalid(field + ".kind", kind, "one of " + ", ".join(_SIZE_KEYS))
    extra = set(value) - _SIZE_KEYS[kind] - {"kind"}
    if extra:
        name = sorted(extra)[0]
        known = ", ".join(sorted(_SIZE_KEYS[kind] | {"kind"}))
        raise ConfigError(f"{field}.{name}", f"unknown field for kind {kind} (known: {known})")
    if kind == "fixed":
        return {"kind": "fixed", "bytes": _frame(value.get("bytes"), field)}
    if kind == "imix":
        return {"kind": "imix"}
    if kind == "uniform":
        lo, hi = _frame(value.get("min"), field + ".min"), _frame(value.get("max"), field + ".max")
        if hi < lo:
            raise ConfigError.invalid(field + ".max", hi, f"{lo}..{MAX_FRAME_BYTES}")
        return {"kind": "uniform", "min": lo, "max": hi}
    sizes = value.get("bytes")
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise ConfigError.invalid(field + ".bytes", sizes, "a non-empty list of frame sizes")
    result = parse_size_dist(list(sizes), field)
    weights = value.get("weights") or []
    if weights:
        if not isinstance(weights, (list, tuple)) or len(weights) != len(sizes):
            raise ConfigError.invalid(field + ".weights", weights, "one weight per size")
        for w in weights:
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w < float("inf"):
                raise ConfigError.invalid(field + ".weights", w, "a number >= 0")
        if sum(weights) <= 0:
            raise ConfigError.invalid(field + ".weights", weights, "weights with a positive sum")
        result["weights"] = [float(w) for w in weights]
    return result


def mean_frame_bytes(size: Mapping[str, Any]) -> float:
    """Mean frame size (FCS included) of a resolved size distribution."""
    kind = size["kind"]
    if kind == "fixed":
        return float(size["bytes"])
    if kind == "uniform":
        return (size["min"] + size["max"]) / 2.0
    if kind == "imix":
        pairs = IMIX
    else:
        weights = size.get("weights") or [1.0] * len(size["bytes"])
        pairs = tuple(zip(size["bytes"], weights))
    total = sum(w for _, w in pairs)
    return sum(b * w for b, w in pairs) / total


def min_frame_bytes(size: Mapping[str, Any]) -> int:
    """Smallest frame a resolved size distribution can produce."""
    kind = size["kind"]
    if kind == "fixed":
        return size["bytes"]
    if kind == "uniform":
        return size["min"]
    if kind == "imix":
        return min(b for b, _ in IMIX)
    return min(size["bytes"])


def size_label(size: Mapping[str, Any]) -> str:
    """Short human label: ``64 B``, ``64/128 B``, ``IMIX``, ``64-1518 B``."""
    kind = size["kind"]
    if kind == "fixed":
        return f"{size['bytes']} B"
    if kind == "uniform":
        return f"{size['min']}-{size['max']} B"
    if kind == "imix":
        return "IMIX"
    return "/".join(str(b) for b in size["bytes"]) + " B"


# ---------------------------------------------------------------- trace replay


def _time_scale(v: Any, f: str) -> float:
    try:
        x = float(v) if not isinstance(v, bool) else float("nan")
    except (TypeError, ValueError):
        x = float("nan")
    if not (x > 0 and x != float("inf")):
        raise ConfigError.invalid(f, v, "> 0 (a plain factor: 0.5 replays twice as fast)")
    return x


def _loop(v: Any, f: str) -> Union[bool, int]:
    allowed = "true, false or a number of passes >= 1"
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no", "on", "off"):
        return parse_bool(v, f)
    try:
        n = int(v) if isinstance(v, (int, str)) else None
    except ValueError:
        n = None
    if n is None or n < 1:
        raise ConfigError.invalid(f, v, allowed)
    return n


def _opt_port(v: Any, f: str) -> Optional[int]:
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none", "any")):
        return None
    return _port(v, f)


def _trace_frame(v: Any, f: str) -> int:
    return _check_frame(parse_size_bytes(v, f, positive=False), v, f)


#: ``loadgen.trace.*``: name -> (default, parser, doc). The core's ``TraceConfig``.
TRACE_FIELDS: Dict[str, Tuple[Any, Parser, str]] = {
    "path": (None, _path, "pcap or pcapng file to replay, Ethernet link type (--pcap FILE)"),
    "timing": ("trace", _choice("trace", "rate"),
               "trace: the file's timestamps; rate: loadgen.rate and loadgen.interarrival"),
    "time_scale": (1.0, _time_scale, "multiplies the trace's gaps (0.5 = twice as fast)"),
    "loop": (False, _loop, "false: once; true: until sim.duration; N: N passes"),
    "udp_port": (None, _opt_port, "replay only UDP datagrams to this destination port"),
    "max_frame_bytes": (1518, _trace_frame, "largest frame replayed, FCS included (captured length + 4)"),
    "on_oversize": ("skip", _choice("skip", "error"), "larger frames: skip (counted, warned) or error"),
    "rewrite_ip": (False, parse_bool, "also rewrite IPv4 destination to dst_ip and UDP port to dst_port"),
    "tag": (False, parse_bool, "write the 16 B tag where it fits in a frame's padding"),
    "pad_runts": (False, parse_bool, "pad frames under 60 B (no FCS) to the minimum, counted; false: an error"),
    "fix_checksums": (False, parse_bool, "recompute IPv4, UDP and TCP checksums (tcpreplay --fixcsum)"),
}


def _trace(v: Any, f: str) -> Optional[Dict[str, Any]]:
    """The user's ``loadgen.trace`` table resolved into the core's form (``None``: no trace)."""
    if v is None or (isinstance(v, Mapping) and not v):
        return None
    if not isinstance(v, Mapping):
        raise ConfigError.invalid(f, v, "a table of " + ", ".join(f"{f}.{k}" for k in TRACE_FIELDS))
    for name in v:
        _trace_field(f"{f}.{name}")
    if v.get("path") is None:
        raise ConfigError(f"{f}.path", "required when other loadgen.trace fields are set (--pcap FILE)")
    out: Dict[str, Any] = {}
    for name, (default, parse, _) in TRACE_FIELDS.items():
        value = v.get(name)
        out[name] = parse(default if value is None else value, f"{f}.{name}")
    return out


def _trace_field(dotted: str) -> str:
    """``"loadgen.trace.loop"`` → ``"loop"``; an unknown name is an error with a suggestion."""
    name = dotted[len("loadgen.trace."):]
    if name not in TRACE_FIELDS:
        raise _unknown(dotted)
    return name


# ---------------------------------------------------------------- memcached client, closed loop


def _zipf_sizes(lo: int, hi: int) -> Parser:
    """A Zipf size table ``{min, max, skew}``; a plain size means exactly that size."""

    def parse(v: Any, f: str) -> Dict[str, Any]:
        if not isinstance(v, Mapping):
            b = parse_int(parse_size_bytes(v, f, positive=False), f, lo, hi)
            return {"min": b, "max": b, "skew": 0.0}
        for k in v:
            if k not in ("min", "max", "skew"):
                raise _unknown(f"{f}.{k}")
        mn = parse_int(parse_size_bytes(v.get("min", lo), f"{f}.min", positive=False), f"{f}.min", lo, hi)
        mx = parse_int(parse_size_bytes(v.get("max", mn), f"{f}.max", positive=False), f"{f}.max", mn, hi)
        return {"min": mn, "max": mx, "skew": _nonneg(v.get("skew", 0.0), f"{f}.skew")}

    return parse


def _nonneg(v: Any, f: str) -> float:
    try:
        x = float(v) if not isinstance(v, bool) else float("nan")
    except (TypeError, ValueError):
        x = float("nan")
    if not (0 <= x < float("inf")):
        raise ConfigError.invalid(f, v, ">= 0")
    return x


def _ratio(v: Any, f: str) -> float:
    x = _nonneg(v, f)
    if x > 1:
        raise ConfigError.invalid(f, v, "0..1")
    return x


#: ``loadgen.memcached.*``: the core's ``McClientConfig``. Defaults are estimates
#: in the range of the memcached literature (short keys, small skewed values, GET-heavy).
MEMCACHED_FIELDS: Dict[str, Tuple[Any, Parser, str]] = {
    "keys": (10000, lambda v, f: parse_int(v, f, 1, 2**32), "size of the key space"),
    "key_size": ({"min": 16, "max": 40, "skew": 0.0}, _zipf_sizes(1, 250),
                 "key lengths in bytes: a size or {min, max, skew} (Zipf, skew 0 = uniform)"),
    "value_size": ({"min": 16, "max": 512, "skew": 1.0}, _zipf_sizes(0, 1 << 20),
                   "value lengths in bytes: a size or {min, max, skew} (Zipf, skew 0 = uniform)"),
    "key_skew": (0.99, _nonneg, "Zipf popularity over the key space (0 = uniform)"),
    "get_ratio": (0.9, _ratio, "fraction of GETs after the population (0..1)"),
    "populate": (True, parse_bool, "first SET every key in order, so later GETs hit"),
    "udp_port": (11211, _port, "the server's UDP port"),
}

#: ``loadgen.closed_loop.*``: the core's ``ClosedLoopConfig``.
CLOSED_LOOP_FIELDS: Dict[str, Tuple[Any, Parser, str]] = {
    "outstanding": (None, lambda v, f: parse_int(v, f, 1, 32768), "requests in flight at once"),
    "timeout": ("1ms", _time_pos, "give up a request unanswered this long and send another"),
}

def _window(v: Any, f: str) -> int:
    return parse_int(v, f, 1500, 65535 << 7)


#: ``loadgen.tcp.*``: the core's ``TcpSinkConfig`` (its docs give the sources).
TCP_FIELDS: Dict[str, Tuple[Any, Parser, str]] = {
    "rtt": (0, _time, "round-trip time the receiver closes: each ACK leaves rtt - 2 x link.propagation after "
                      "its segment arrived (0: the links' propagation alone)"),
    "drop": (0.0, _ratio, "probability that an arriving segment is lost (0 <= p < 1)"),
    "delack_segments": (2, lambda v, f: parse_int(v, f, 1, 64), "in-order segments per delayed ACK (RFC 1122: 2)"),
    "delack_timeout": ("40ms", _time_pos, "longest an in-order segment waits for its ACK (Linux TCP_DELACK_MIN)"),
    "window_bytes": (6 << 20, _window, "receive window advertised, bytes (Linux tcp_rmem max 6 MiB)"),
}

#: Nested tables of the loadgen section: name -> (fields, field the table requires).
NESTED: Dict[str, Tuple[Dict[str, Tuple[Any, Parser, str]], Optional[str]]] = {
    "trace": (TRACE_FIELDS, "path"),
    "memcached": (MEMCACHED_FIELDS, None),
    "closed_loop": (CLOSED_LOOP_FIELDS, "outstanding"),
    "tcp": (TCP_FIELDS, None),
}


def _nested(table: str) -> Parser:
    fields, required = NESTED[table]
    keys = {"timeout": "timeout_ps", "rtt": "rtt_ps", "delack_timeout": "delack_timeout_ps"}

    def parse(v: Any, f: str) -> Optional[Dict[str, Any]]:
        if v is None or v is False or (isinstance(v, Mapping) and not v):
            return None
        if v is True and required is None:
            v = {}
        if not isinstance(v, Mapping):
            raise ConfigError.invalid(f, v, "a table of " + ", ".join(f"{f}.{k}" for k in fields))
        for name in v:
            _nested_field(f"{f}.{name}")
        if required is not None and v.get(required) is None:
            raise ConfigError(f"{f}.{required}", f"required when other {f} fields are set")
        out: Dict[str, Any] = {}
        for name, (default, parse_one, _) in fields.items():
            value = v.get(name)
            out[keys.get(name, name)] = parse_one(default if value is None else value, f"{f}.{name}")
        return out

    return parse


def _nested_table(dotted: Any) -> Optional[str]:
    """``"loadgen.memcached.keys"`` → ``"memcached"``; ``None`` outside the nested tables."""
    if not isinstance(dotted, str):
        return None
    parts = dotted.strip().split(".")
    if len(parts) >= 3 and parts[0] == "loadgen" and parts[1] in NESTED:
        return parts[1]
    return None


def _nested_field(dotted: str) -> Tuple[str, List[str]]:
    """``"loadgen.memcached.value_size.max"`` → ``("memcached", ["value_size", "max"])``."""
    parts = dotted.strip().split(".")
    table = parts[1]
    fields = NESTED[table][0]
    rest = parts[2:]
    sized = table == "memcached" and rest[0] in ("key_size", "value_size")
    if rest[0] not in fields or (len(rest) > 1 and not (sized and len(rest) == 2 and rest[1] in ("min", "max", "skew"))):
        raise _unknown(dotted.strip())
    return table, rest


# ---------------------------------------------------------------- sections


class _Strict:
    """Refuses attributes that are not fields, so a typo is an error, not a no-op."""

    _section: str = ""

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in {f.name for f in dataclasses.fields(self)}:  # type: ignore[arg-type]
            raise _unknown(f"{self._section}.{name}" if self._section else name)
        object.__setattr__(self, name, value)


@dataclass
class Timing(_Strict):
    """How long the load generator runs, what it leaves out, how long it waits."""

    _section = "sim"

    duration: Any = _opt("1ms", _time_pos, "duration_ps", "time the load generator transmits, warm-up included")
    warmup: Any = _opt("100us", _time, "warmup_ps", "leading part of the duration that is not measured")
    drain: Any = _opt("1ms", _time, "drain_ps", "longest wait for replies after the last transmission (plus 2 x propagation)")


@dataclass
class Link(_Strict):
    """The full-duplex link between load generator and device."""

    _section = "link"

    rate: Any = _opt("100Gbps", parse_bit_rate_bps, "rate_bps", "line rate of each direction")
    propagation: Any = _opt("200us", _time, "propagation_ps", "one-way propagation delay")


@dataclass
class Loadgen(_Strict):
    """The hardware-style load generator (SPEC 2.3)."""

    _section = "loadgen"

    rate: Any = _opt("100%", parse_rate, "rate", "offered load: bps (frame bits), pps or % of line rate")
    size: Any = _opt(64, parse_size_dist, "size", "frame size(s) in bytes, FCS included")
    interarrival: Any = _opt("constant", _choice("constant", "poisson"), "interarrival", "constant or poisson")
    protocol: Any = _opt("udp", _choice("udp", "raw", "tcp"), "protocol",
                         "udp (Ethernet/IPv4/UDP), raw Ethernet, or tcp (bulk TCP segments, for --app iperf)")
    flows: Any = _opt(1, _flows, "flows", "number of flows (distinct UDP source ports)")
    flow_skew: Any = _opt(0.0, _nonneg, "flow_skew",
                          "flow popularity: 0 sends the flows in turn; s > 0 draws each frame's flow from a Zipf "
                          "distribution with exponent s (rank r weighs 1/r^s)")
    tag_offset: Any = _opt(None, _tag_offset, "tag_offset", "byte offset of the 16 B tag (default: after the headers)")
    src_mac: Any = _opt("02:00:00:00:00:01", _mac, "src_mac", "load generator MAC")
    dst_mac: Any = _opt("02:00:00:00:00:02", _mac, "dst_mac", "device MAC")
    src_ip: Any = _opt("10.0.0.1", _ipv4, "src_ip", "load generator IPv4 address")
    dst_ip: Any = _opt("10.0.0.2", _ipv4, "dst_ip", "device IPv4 address")
    src_port: Any = _opt(1024, _port, "src_port", "first UDP source port (flow i uses src_port + i)")
    dst_port: Any = _opt(9, _port, "dst_port", "UDP destination port")
    capture_tx: Any = _opt(None, _path, "capture_tx", "pcap file for transmitted frames")
    capture_rx: Any = _opt(None, _path, "capture_rx", "pcap file for received frames")
    capture_limit: Any = _opt(0, _count, "capture_limit", "frames per capture file (0 = no limit)")
    keep_samples: Any = _opt(0, _count, "keep_samples", "keep the first N raw (seq, latency) samples")
    trace: Any = _opt(None, _trace, "trace", "trace replay: a table of loadgen.trace.* fields (none: synthetic traffic)")
    memcached: Any = _opt(None, _nested("memcached"), "memcached",
                          "memcached client: a table of loadgen.memcached.* fields, or true for the defaults (none: tagged frames)")
    closed_loop: Any = _opt(None, _nested("closed_loop"), "closed_loop",
                            "closed loop: a table of loadgen.closed_loop.* fields (none: open loop at loadgen.rate)")
    tcp: Any = _opt(None, _nested("tcp"), "tcp",
                    "TCP receiver for --app tcp-send: a table of loadgen.tcp.* fields, or true for the defaults "
                    "(the port then sends only ACKs)")
    traffic: Any = _opt("bidir", _choice("bidir", "uni", "mesh"), "traffic",
                        "which generator ports send when the host has several (one per host port): bidir (all), "
                        "uni (ports 0, 2, ...: one direction of each pair), mesh (all, to every other port in turn); "
                        "loadgen.rate is each sending port's rate")
    address: Any = _opt("host", _choice("host", "stations"), "address",
                        "whose addresses the frames carry: host (the host port each generator port is wired to) or "
                        "stations (the stations behind the host's other ports, in turn: what a bridge or router forwards; "
                        "mesh traffic always does)")


@dataclass
class Reflector(_Strict):
    """The reference device: single server, finite queue, returns frames with swapped MACs."""

    _section = "reflector"

    service: Any = _opt("fixed", _choice("fixed", "exponential"), "service", "service-time distribution")
    service_time: Any = _opt("100ns", _time, "service_time_ps", "mean service time per frame")
    queue_frames: Any = _opt(1024, _queue, "queue_frames", "frames held at once, the one in service included")
    drop_every: Any = _opt(0, _count, "drop_every", "fault injection: drop every N-th frame (0 = never)")
    swap_pairs: Any = _opt(False, parse_bool, "swap_pairs", "fault injection: return frames in swapped pairs")


SECTIONS: Dict[str, type] = {"sim": Timing, "link": Link, "loadgen": Loadgen, "reflector": Reflector}
TOP_FIELDS = ("seed", "app", "stack", "preset")
STACKS = ("pmd", "kernel")


@dataclass
class Config(_Strict):
    """A simulation config in user units. ``None`` means "preset or default".

    Build one directly (``Config(loadgen=Loadgen(rate="10Gbps"))``), from a
    dict or file with :func:`load_config`, then adjust with :meth:`set`.
    """

    seed: Any = _opt(1, _seed, "seed", "seed of every random stream")
    app: Any = _opt("reflector", _app, "app", "device under test")
    stack: Any = _opt("pmd", _choice(*STACKS), "stack", "network stack of a host application: pmd (DPDK-style poll-mode "
                      "driver) or kernel (the Linux stack model)")
    preset: Any = _opt(_presets.DEFAULT_PRESET, _preset, "preset", "machine preset the config starts from")
    sim: Timing = field(default_factory=Timing)
    link: Link = field(default_factory=Link)
    loadgen: Loadgen = field(default_factory=Loadgen)
    reflector: Reflector = field(default_factory=Reflector)
    #: Overrides of the preset's host model, nested, in user names and units (``{"cpu": {"freq": "2GHz"}}``).
    host: Dict[str, Any] = field(default_factory=dict)

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
        for key, value in data.items():
            if key in SECTIONS:
                if not isinstance(value, Mapping):
                    raise ConfigError.invalid(key, value, f"a table of {', '.join(section_fields(key))}")
                for name, inner in value.items():
                    self.set(f"{key}.{name}", inner)
            elif key == "host":
                self.set("host", value)
            else:
                self.set(str(key), value)
        return self

    def set(self, dotted: str, value: Any) -> "Config":
        """Sets one field by dotted name (``"reflector.service_time"``, ``"host.cpu.freq"``)."""
        table = _nested_table(dotted)
        if table is not None:
            _, rest = _nested_field(dotted)
            current = getattr(self.loadgen, table)
            new = copy.deepcopy(dict(current)) if isinstance(current, Mapping) else {}
            if len(rest) == 2:
                inner = new.get(rest[0])
                inner = dict(inner) if isinstance(inner, Mapping) else (
                    {"min": inner, "max": inner} if inner is not None else dict(MEMCACHED_FIELDS[rest[0]][0]))
                inner[rest[1]] = value
                value = inner
            new[rest[0]] = value
            setattr(self.loadgen, table, new)
            return self
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
        section, name = _split_field(dotted)
        target = self if section is None else getattr(self, section)
        setattr(target, name, value)
        return self

    def get(self, dotted: str) -> Any:
        """The value the user set for a field (``None`` when unset)."""
        table = _nested_table(dotted)
        if table is not None:
            _, rest = _nested_field(dotted)
            current = getattr(self.loadgen, table)
            value = current.get(rest[0]) if isinstance(current, Mapping) else None
            if len(rest) == 2:
                return value.get(rest[1]) if isinstance(value, Mapping) else value
            return value
        path = _host_path(dotted)
        if path is not None:
            return _host.get_override(self.host, path) if path else copy.deepcopy(self.host) or None
        section, name = _split_field(dotted)
        return getattr(self if section is None else getattr(self, section), name)

    def to_dict(self) -> Dict[str, Any]:
        """The fields the user set, as a nested dict (user units)."""
        out: Dict[str, Any] = {}
        for name in TOP_FIELDS:
            if getattr(self, name) is not None:
                out[name] = copy.deepcopy(getattr(self, name))
        for section in SECTIONS:
            values = {
                f.name: copy.deepcopy(getattr(getattr(self, section), f.name))
                for f in dataclasses.fields(SECTIONS[section])
                if getattr(getattr(self, section), f.name) is not None
            }
            if values:
                out[section] = values
        if self.host:
            out["host"] = copy.deepcopy(self.host)
        return out

    def preset_name(self) -> str:
        """The preset in effect (the default one when unset)."""
        return _preset(self.preset if self.preset is not None else _presets.DEFAULT_PRESET, "preset")

    def effective(self) -> Dict[str, Any]:
        """Every field in user units after applying preset and defaults."""
        preset = _presets.get(self.preset_name()).config
        out: Dict[str, Any] = {}
        for name in TOP_FIELDS:
            out[name] = _pick(getattr(self, name), None, _meta(Config, name)["default"])
        implied = self._implied_traffic(out["app"])
        for section, kind in SECTIONS.items():
            sect = getattr(self, section)
            below = dict(preset.get(section, {}), **(implied if section == "loadgen" else {}))
            out[section] = {
                f.name: _pick(getattr(sect, f.name), below.get(f.name), f.metadata["default"])
                for f in dataclasses.fields(kind)
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

    def copy(self) -> "Config":
        return copy.deepcopy(self)


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


def _meta(kind: type, name: str) -> Mapping[str, Any]:
    return {f.name: f for f in dataclasses.fields(kind)}[name].metadata


def section_fields(section: str) -> List[str]:
    return [f.name for f in dataclasses.fields(SECTIONS[section])]


def known_fields() -> List[str]:
    """Every settable dotted field name."""
    names = list(TOP_FIELDS)
    for section in SECTIONS:
        names += [f"{section}.{n}" for n in section_fields(section)]
    return names + [f"loadgen.{t}.{n}" for t, (fields, _) in NESTED.items() for n in fields]


def field_docs() -> Dict[str, str]:
    """Dotted field name → one-line description with its default."""
    docs = {}
    for name in TOP_FIELDS:
        m = _meta(Config, name)
        docs[name] = f"{m['doc']} (default {m['default']!r})"
    for section, kind in SECTIONS.items():
        for f in dataclasses.fields(kind):
            docs[f"{section}.{f.name}"] = f"{f.metadata['doc']} (default {f.metadata['default']!r})"
    for table, (fields, _) in NESTED.items():
        for name, (default, _, doc) in fields.items():
            docs[f"loadgen.{table}.{name}"] = f"{doc} (default {default!r})"
    return docs


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


def _split_field(dotted: Any) -> Tuple[Optional[str], str]:
    if not isinstance(dotted, str):
        raise ConfigError.invalid("field", dotted, "a dotted field name")
    parts = dotted.strip().split(".")
    if len(parts) == 1 and parts[0] in TOP_FIELDS:
        return None, parts[0]
    if len(parts) == 2 and parts[0] in SECTIONS and parts[1] in section_fields(parts[0]):
        return parts[0], parts[1]
    if len(parts) == 1 and parts[0] in SECTIONS:
        raise ConfigError(dotted, f"is a section; set one of its fields ({', '.join(section_fields(parts[0]))})")
    raise _unknown(dotted.strip())


def _unknown(dotted: str) -> ConfigError:
    section = dotted.split(".")[0]
    table = _nested_table(dotted)
    if table is not None:
        known = [f"loadgen.{table}.{n}" for n in NESTED[table][0]]
    elif section in SECTIONS:
        known = [f"{section}.{n}" for n in section_fields(section)]
    else:
        known = list(TOP_FIELDS) + list(SECTIONS)
    close = difflib.get_close_matches(dotted, known_fields(), n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return ConfigError(dotted, f"unknown field '{dotted}' ({hint}known: {', '.join(known)})")


# ---------------------------------------------------------------- resolution


def resolve(config: Union[Config, Mapping[str, Any]]) -> Dict[str, Any]:
    """The fully resolved config in the core's contract (base units, every field)."""
    cfg = config if isinstance(config, Config) else Config.from_dict(config)
    values = cfg.effective()
    out: Dict[str, Any] = {}
    for name in ("seed", "app", "stack"):
        out[name] = _meta(Config, name)["parse"](values[name], name)
    if out["app"] != "reflector":
        runs_on = {"pmd": _host.pmd_apps(), "kernel": _host.kernel_apps()}
        if out["app"] not in runs_on[out["stack"]]:
            other = "kernel" if out["stack"] == "pmd" else "pmd"
            raise ConfigError.invalid("stack", out["stack"], f"{other} for app {out['app']} (the {out['stack']} "
                                                             f"stack runs {', '.join(runs_on[out['stack']])})")
    for section, kind in SECTIONS.items():
        out[section] = {}
        for f in dataclasses.fields(kind):
            dotted = f"{section}.{f.name}"
            out[section][f.metadata["key"]] = f.metadata["parse"](values[section][f.name], dotted)
    _resolve_host(out, cfg, values["preset"])
    _cross_checks(out, values)
    return out


def _resolve_host(out: Dict[str, Any], cfg: Config, preset: str) -> None:
    """Adds ``host`` for a host application; the reflector takes no host overrides."""
    if out["app"] in _host.host_apps():
        out["host"] = _host.resolve_host(preset, cfg.host)
    elif cfg.host:
        first = next(iter(_host.flatten(cfg.host)))
        raise ConfigError(first, f"the {out['app']} has no host model; host fields apply to the host "
                                 f"applications ({', '.join(_host.host_apps())})")


def _cross_checks(out: Dict[str, Any], values: Dict[str, Any]) -> None:
    sim = out["sim"]
    if sim["warmup_ps"] >= sim["duration_ps"]:
        raise ConfigError.invalid(
            "sim.warmup", values["sim"]["warmup"], f"less than sim.duration ({values['sim']['duration']})"
        )
    lg = out["loadgen"]
    header = HEADER_BYTES[lg["protocol"]]
    smallest = min_frame_bytes(lg["size"])
    offset = lg["tag_offset"]
    if offset is not None:
        latest = smallest - FCS_BYTES - TAG_BYTES
        if offset < header or offset > latest:
            raise ConfigError.invalid(
                "loadgen.tag_offset",
                offset,
                f"{header}..{latest} (after the {header} B of headers, tag of {TAG_BYTES} B and FCS inside "
                f"the smallest frame of {smallest} B)",
            )


# ---------------------------------------------------------------- loading


ConfigSource = Union[Config, Mapping[str, Any], str, "os.PathLike[str]", None]


def read_config_file(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Reads a TOML, YAML or JSON config file into a nested dict."""
    p = Path(path)
    suffix = p.suffix.lower()
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise OSError(f"{path}: cannot read config file ({e.strerror or e})") from None
    try:
        if suffix == ".toml":
            try:
                import tomllib  # type: ignore[import-not-found]
            except ModuleNotFoundError:  # Python < 3.11
                import tomli as tomllib  # type: ignore[no-redef]
            data = tomllib.loads(raw.decode("utf-8"))
        elif suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(raw.decode("utf-8")) or {}
        elif suffix == ".json":
            data = json.loads(raw.decode("utf-8"))
        else:
            raise ConfigError.invalid("config", str(path), "a .toml, .yaml, .yml or .json file")
    except ConfigError:
        raise
    except Exception as e:  # each parser has its own error type; all mean "malformed file"
        raise ConfigError("config", f"{path}: cannot parse: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError.invalid("config", str(path), "a file holding a table of fields")
    return data


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
        cfg = Config.from_dict(read_config_file(source))
    else:
        raise ConfigError.invalid("config", source, "a Config, a dict or a path to a TOML/YAML/JSON file")
    if kwargs:
        cfg.update(kwargs)
    for dotted, value in (overrides or {}).items():
        cfg.set(dotted, value)
    resolve(cfg)
    return cfg


def parse_assignment(text: str) -> Tuple[str, Any]:
    """``"reflector.service_time=100ns"`` → (name, value); the value is JSON if it parses."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise ConfigError.invalid("--set", text, "dotted.key=value, e.g. reflector.service_time=100ns")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return name.strip(), value


def apply_assignments(cfg: Config, assignments: Iterable[str]) -> Config:
    """Applies ``--set`` style ``key=value`` strings in order."""
    for text in assignments:
        cfg.set(*parse_assignment(text))
    return cfg
