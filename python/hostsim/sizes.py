"""Frame sizes: the user's syntax for size distributions, and their statistics.

``loadgen.size`` takes ``64`` or ``"64B"`` (fixed), ``[64, 128]`` or
``"64,128"`` (equal weights), ``"64:7,594:4"`` (weighted), ``"imix"``,
``"uniform:64-1518"``, or the core's own table form; :func:`parse_size_dist`
turns each into the core's ``SizeDist``.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping

from .units import ConfigError, parse_size_bytes

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
    f"a frame size from {MIN_FRAME_BYTES} to {MAX_FRAME_BYTES} B, a list like '64,128,256' or [64, 128], "
    "'imix', 'uniform:64-1518' or a table with kind fixed|list|uniform|imix"
)



def _check_frame(b: int, value: Any, f: str) -> int:
    if not MIN_FRAME_BYTES <= b <= MAX_FRAME_BYTES:
        raise ConfigError.invalid(f, value, f"frame sizes from {MIN_FRAME_BYTES} to {MAX_FRAME_BYTES} B (FCS included)")
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
        if text.startswith("uniform"):
            raise ConfigError.invalid(field, value, "uniform:MIN-MAX, e.g. 'uniform:64-1518'")
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
            raise ConfigError.invalid(field + ".max", hi, f"{lo} to {MAX_FRAME_BYTES}")
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
