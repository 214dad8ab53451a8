"""Unit strings at the edge: ``"200ns"``, ``"100Gbps"``, ``"5Mpps"``, ``"50%"``, ``"2MiB"``.

Configs are written in the units people think in; the core sees integers in
base units only (picoseconds, bits per second, bytes, hertz). Every parser
here takes the value and the dotted name of the field it came from, so a bad
value fails with a message that names the field, the value and what is
allowed::

    loadgen.rate: invalid value '10Gbsp' (allowed: a rate like '10Gbps', '5Mpps' or '50%')

Parsing goes through :class:`decimal.Decimal`, so ``"1.1us"`` is exactly
1 100 000 ps rather than whatever binary floating point makes of it.
Decimal prefixes (K, M, G, T) are powers of 1000; binary ones (Ki, Mi, Gi) are
powers of 1024 and exist for sizes only.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, ROUND_HALF_EVEN
from typing import Any, Dict, Mapping, Optional, Tuple, Union

Number = Union[int, float]

PS_PER_S = 10**12

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([^\s\d.+-][^\s]*)?\s*$")

TIME_UNITS: Dict[str, int] = {
    "ps": 1,
    "ns": 10**3,
    "us": 10**6,
    "\u00b5s": 10**6,  # micro sign
    "\u03bcs": 10**6,  # greek mu
    "ms": 10**9,
    "s": 10**12,
}

# Units are case-sensitive where case carries meaning (b is a bit, B a byte;
# M is mega, m milli); the lowercase k of SI is accepted beside K.
BIT_RATE_UNITS: Dict[str, int] = {
    "bps": 1,
    "Kbps": 10**3,
    "kbps": 10**3,
    "Mbps": 10**6,
    "Gbps": 10**9,
    "Tbps": 10**12,
}

PACKET_RATE_UNITS: Dict[str, int] = {
    "pps": 1,
    "Kpps": 10**3,
    "kpps": 10**3,
    "Mpps": 10**6,
    "Gpps": 10**9,
}

FREQUENCY_UNITS: Dict[str, int] = {
    "Hz": 1,
    "kHz": 10**3,
    "KHz": 10**3,
    "MHz": 10**6,
    "GHz": 10**9,
}

SIZE_UNITS: Dict[str, int] = {
    "B": 1,
    "KB": 10**3,
    "kB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}

BYTE_RATE_UNITS: Dict[str, int] = {
    unit + "/s": scale for unit, scale in SIZE_UNITS.items()
}

RATE_UNITS = ("bps", "pps", "percent")

ALLOWED_TIME = "a time like '200ns', '1.5us' or '1ms' (units: ps, ns, us, ms, s)"
ALLOWED_RATE = "a rate like '10Gbps', '5Mpps' or '50%'"
ALLOWED_BIT_RATE = "a bit rate like '100Gbps' (units: bps, Kbps, Mbps, Gbps, Tbps)"
ALLOWED_FREQUENCY = "a frequency like '3GHz' (units: Hz, kHz, MHz, GHz)"
ALLOWED_BYTE_RATE = "a byte rate like '19.2GB/s' (units: B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s)"
ALLOWED_SIZE = "a size like 64, '2MiB' or '1.5KB' (units: B, KB, MB, GB, KiB, MiB, GiB)"


#: The base unit of a core field by the suffix of its name (``duration_ps``), longest suffix first.
BASE_UNITS = (("_bytes_per_s", "B/s"), ("_bytes", "B"), ("_bps", "bps"), ("_hz", "Hz"), ("_ps", "ps"))


def with_unit(key: str, number: Any) -> str:
    """A number of core field ``key``'s base unit as a user reads a bound:
    ``18446744073709551615 ps (about 214 days)``; a field without a unit gives the number alone."""
    unit = next((u for suffix, u in BASE_UNITS if key.endswith(suffix)), None)
    if unit is None or not isinstance(number, int):
        return str(number)
    about = None
    if unit == "ps" and number >= PS_PER_S:
        seconds = number / PS_PER_S
        about = f"{seconds / 86400:.3g} days" if seconds >= 86400 else f"{seconds:.3g} s"
    elif unit == "B" and number >= 2**30:
        about = next(f"{number / scale:.3g} {name}" for name, scale in (("EiB", 2**60), ("PiB", 2**50),
                     ("TiB", 2**40), ("GiB", 2**30)) if number >= scale)
    return f"{number} {unit}" + (f" (about {about})" if about else "")


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the field.

    ``field`` is the dotted name (``loadgen.rate``); ``str(error)`` is the
    whole message, starting with the field.
    """

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        #: What is allowed and the value given, for an error in the standard form (else ``None``).
        self.allowed: Optional[str] = None
        self.value: Any = None
        #: For an integer outside the bounds it was checked against (which may
        #: be no more than its type's), the nearest value inside them: with
        #: it resolution asks the core for the field's real range (``config.resolve``).
        self.nearest: Optional[int] = None
        #: The other end of those bounds: asked when the nearest is taken.
        self.farthest: Optional[int] = None

    @classmethod
    def invalid(cls, field: str, value: Any, allowed: str) -> "ConfigError":
        """The standard form: ``field: invalid value 'x' (allowed: ...)``."""
        e = cls(field, f"invalid value {_show(value)} (allowed: {allowed})")
        e.allowed, e.value = allowed, value
        return e


def _show(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"'{value}'"
    return repr(value)


def split_quantity(value: Any, field: str, allowed: str) -> Tuple[Decimal, str]:
    """Splits ``"1.5 GHz"`` into ``(Decimal("1.5"), "GHz")``; a bare number has unit ``""``."""
    if isinstance(value, bool):
        raise ConfigError.invalid(field, value, allowed)
    if isinstance(value, int):
        return Decimal(value), ""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError.invalid(field, value, allowed)
        return Decimal(repr(value)), ""
    if not isinstance(value, str):
        raise ConfigError.invalid(field, value, allowed)
    match = _QUANTITY.match(value)
    if not match:
        raise ConfigError.invalid(field, value, allowed)
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:  # pragma: no cover - the regex admits only valid numbers
        raise ConfigError.invalid(field, value, allowed) from None
    return number, match.group(2) or ""


def _to_int(number: Decimal) -> int:
    return int(number.to_integral_value(rounding=ROUND_HALF_EVEN))


def _check_sign(number: Decimal, value: Any, field: str, allowed: str, positive: bool) -> None:
    if number < 0 or (positive and number == 0):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError.invalid(field, value, f"{allowed}, {bound}")


def parse_time_ps(value: Any, field: str, positive: bool = True) -> int:
    """A duration in integer picoseconds: ``"200ns"`` → 200 000.

    A bare number is ambiguous and rejected, except 0 where zero is allowed
    (``positive=False``). Negative values are always errors.
    """
    number, unit = split_quantity(value, field, ALLOWED_TIME)
    if unit == "":
        if number != 0:
            raise ConfigError.invalid(field, value, ALLOWED_TIME + "; a bare number needs a unit")
        scale = 1
    else:
        scale = TIME_UNITS.get(unit)
        if scale is None:
            raise ConfigError.invalid(field, value, ALLOWED_TIME)
    _check_sign(number, value, field, ALLOWED_TIME, positive)
    ps = _to_int(number * scale)
    if positive and ps == 0:
        raise ConfigError.invalid(field, value, ALLOWED_TIME + ", at least 1ps")
    return ps


def parse_rate(value: Any, field: str) -> Dict[str, Any]:
    """An offered load: ``{"unit": "bps"|"pps"|"percent", "value": float}``.

    ``"10Gbps"`` is Ethernet frame bits per second, ``"5Mpps"`` frames per
    second, ``"50%"`` half the line rate. The dict form is accepted as is
    (after checking). Zero and negative rates are errors.
    """
    if isinstance(value, Mapping):
        return _parse_rate_dict(value, field)
    number, unit = split_quantity(value, field, ALLOWED_RATE)
    if unit == "%":
        kind, scale = "percent", 1
    elif unit in BIT_RATE_UNITS:
        kind, scale = "bps", BIT_RATE_UNITS[unit]
    elif unit in PACKET_RATE_UNITS:
        kind, scale = "pps", PACKET_RATE_UNITS[unit]
    else:
        raise ConfigError.invalid(field, value, ALLOWED_RATE)
    _check_sign(number, value, field, ALLOWED_RATE, positive=True)
    rate = float(number * scale)
    if rate == float("inf"):
        raise ConfigError.invalid(field, value, f"{ALLOWED_RATE}, a finite number")
    return {"unit": kind, "value": rate}


def _parse_rate_dict(value: Mapping, field: str) -> Dict[str, Any]:
    allowed = f"{{'unit': one of {', '.join(RATE_UNITS)}, 'value': a number > 0}}"
    if set(value) != {"unit", "value"} or value["unit"] not in RATE_UNITS:
        raise ConfigError.invalid(field, dict(value), allowed)
    number = value["value"]
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        raise ConfigError.invalid(field, dict(value), allowed)
    number = float(number)
    if not (number > 0 and number != float("inf")):
        raise ConfigError.invalid(field, dict(value), allowed)
    return {"unit": value["unit"], "value": number}


def parse_bit_rate_bps(value: Any, field: str) -> int:
    """A link rate in integer bits per second: ``"100Gbps"`` → 100 000 000 000."""
    number, unit = split_quantity(value, field, ALLOWED_BIT_RATE)
    scale = BIT_RATE_UNITS.get(unit)
    if scale is None:
        raise ConfigError.invalid(field, value, ALLOWED_BIT_RATE)
    _check_sign(number, value, field, ALLOWED_BIT_RATE, positive=True)
    bps = _to_int(number * scale)
    if bps == 0:
        raise ConfigError.invalid(field, value, ALLOWED_BIT_RATE + ", at least 1bps")
    return bps


def parse_frequency_hz(value: Any, field: str) -> float:
    """A clock frequency in hertz: ``"3GHz"`` → 3e9; a bare number is hertz."""
    number, unit = split_quantity(value, field, ALLOWED_FREQUENCY)
    scale = FREQUENCY_UNITS.get(unit) if unit else 1
    if scale is None:
        raise ConfigError.invalid(field, value, ALLOWED_FREQUENCY)
    _check_sign(number, value, field, ALLOWED_FREQUENCY, positive=True)
    return float(number * scale)


def parse_byte_rate(value: Any, field: str) -> int:
    """A memory bandwidth in integer bytes per second: ``"19.2GB/s"`` → 19 200 000 000.

    A bare number is bytes per second; GB/s is decimal, GiB/s binary.
    """
    number, unit = split_quantity(value, field, ALLOWED_BYTE_RATE)
    scale = BYTE_RATE_UNITS.get(unit) if unit else 1
    if scale is None:
        raise ConfigError.invalid(field, value, ALLOWED_BYTE_RATE)
    _check_sign(number, value, field, ALLOWED_BYTE_RATE, positive=True)
    total = number * scale
    if total != total.to_integral_value() or total == 0:
        raise ConfigError.invalid(field, value, ALLOWED_BYTE_RATE + ", a whole number of bytes per second above 0")
    return int(total)


def parse_size_bytes(value: Any, field: str, positive: bool = True) -> int:
    """A size in integer bytes: ``64``, ``"64B"``, ``"2MiB"`` → 2 097 152.

    KB/MB/GB are decimal (powers of 1000), KiB/MiB/GiB binary; a bare number
    is bytes. The result must be a whole number of bytes.
    """
    number, unit = split_quantity(value, field, ALLOWED_SIZE)
    scale = SIZE_UNITS.get(unit) if unit else 1
    if scale is None:
        raise ConfigError.invalid(field, value, ALLOWED_SIZE)
    _check_sign(number, value, field, ALLOWED_SIZE, positive)
    total = number * scale
    if total != total.to_integral_value():
        raise ConfigError.invalid(field, value, ALLOWED_SIZE + ", a whole number of bytes")
    return int(total)


def parse_int(value: Any, field: str, lo: Optional[int] = None, hi: Optional[int] = None, key: str = "") -> int:
    """An integer within ``[lo, hi]``; accepts ints and integer strings. The
    bounds are said in the unit of core field ``key`` (``latency_ps``: ps), if it has one."""
    allowed = _range_text(lo, hi, key)
    result: Optional[int] = None
    if isinstance(value, bool):
        result = None
    elif isinstance(value, int):
        result = value
    elif isinstance(value, float) and value.is_integer():
        result = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        result = int(value)
    if result is None or (lo is not None and result < lo) or (hi is not None and result > hi):
        e = ConfigError.invalid(field, value, allowed)
        if result is not None:
            e.nearest, e.farthest = (lo, hi) if lo is not None and result < lo else (hi, lo)
        raise e
    return result


def _range_text(lo: Optional[int], hi: Optional[int], key: str = "") -> str:
    if lo is not None and hi is not None:
        return f"an integer from {lo} to {with_unit(key, hi)}"
    if lo is not None:
        return f"an integer >= {with_unit(key, lo)}"
    if hi is not None:
        return f"an integer <= {with_unit(key, hi)}"
    return "an integer"


def parse_bool(value: Any, field: str) -> bool:
    """``true``/``false`` (also ``1``/``0``, ``yes``/``no``, ``on``/``off``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
    raise ConfigError.invalid(field, value, "true or false")


def parse_choice(value: Any, field: str, choices: Tuple[str, ...]) -> str:
    """One of a fixed set of words, case-insensitive; returned as the set spells it."""
    if isinstance(value, str):
        word = value.strip().lower()
        for c in choices:
            if c.lower() == word:
                return c
    raise ConfigError.invalid(field, value, "one of " + ", ".join(choices))


def format_rate_bps(bps: float) -> str:
    """``6.4e9`` → ``"6.4 Gbps"``, for human-readable output."""
    return _format_scaled(bps, "bps")


def format_rate_pps(pps: float) -> str:
    """``1.488e8`` → ``"148.8 Mpps"``."""
    return _format_scaled(pps, "pps")


def _format_scaled(value: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def format_time_ps(ps: int) -> Any:
    """Exact inverse of :func:`parse_time_ps`: ``1_000_000_000`` → ``"1ms"`` (0 stays 0)."""
    if ps == 0:
        return 0
    for unit in ("s", "ms", "us", "ns"):
        if ps % TIME_UNITS[unit] == 0:
            return f"{ps // TIME_UNITS[unit]}{unit}"
    return f"{ps}ps"


def format_bit_rate_bps(bps: int) -> str:
    """Exact inverse of :func:`parse_bit_rate_bps`: ``10**11`` → ``"100Gbps"``."""
    for unit in ("Tbps", "Gbps", "Mbps", "Kbps"):
        scale = BIT_RATE_UNITS[unit]
        if bps and bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bps"


def parse_fraction(text: Any, field: str) -> Any:
    """``"1%"`` → 0.01, ``"0.01"`` → 0.01; anything but text is returned as it is (for the caller's range check)."""
    if not isinstance(text, str):
        return text
    s = text.strip()
    try:
        return float(s[:-1]) / 100 if s.endswith("%") else float(s)
    except ValueError:
        raise ConfigError.invalid(field, text, "a fraction like 0.01 or a percentage like 1%") from None
