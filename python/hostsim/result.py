"""Results: the core's JSON answer wrapped for attribute access and export.

A :class:`Result` is one simulation (``loadgen``, ``reflector``, ``sim``,
``stats``, ``warnings``, plus the resolved ``config`` and the ``preset``
name); an :class:`MsbResult` is a bandwidth test (``msb``, ``sim``,
``config``, ``preset``, ``warnings``) that also keeps every trial's
:class:`Result`. Both read like the dict they wrap (``r["loadgen"]``) and
like objects (``r.loadgen.drop_rate``), and convert with ``.to_dict()``,
``.to_json()`` and ``.stats_txt()`` (gem5-style).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, Iterator, List, Mapping, Optional


class AttrView(Mapping[str, Any]):
    """A read-only view of a dict whose keys are also attributes."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]):
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(f"no field {name!r} (fields: {', '.join(self._data)})") from None

    def __getitem__(self, key: str) -> Any:
        return _wrap(self._data[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __dir__(self) -> List[str]:
        return sorted(set(self._data) | set(super().__dir__()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def to_dict(self) -> Dict[str, Any]:
        """A deep copy of the wrapped data as plain dicts and lists."""
        return copy.deepcopy(dict(self._data))

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self._data, indent=indent, sort_keys=False)


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return AttrView(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


#: How the core marks a warning about a broken invariant.
VIOLATION = "invariant violated: "


class Result(AttrView):
    """One simulation's result."""

    __slots__ = ()

    @property
    def warnings(self) -> List[str]:
        return list(self._data.get("warnings", []))

    @property
    def violations(self) -> List[str]:
        """The invariants this result breaks (conservation, rates, utilisation,
        latency), as the core checked them; empty when all hold."""
        return [w[len(VIOLATION):] for w in self.warnings if w.startswith(VIOLATION)]

    def write_json(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())
            f.write("\n")

    def stats_txt(self) -> str:
        """gem5-style ``stats.txt`` text: one block."""
        from .stats import format_stats

        return format_stats([self._data])

    def write_stats(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.stats_txt())


    def typed(self) -> Any:
        """This result validated into the typed model :class:`hostsim.models.RunResult`."""
        from .models import RunResult

        return RunResult.model_validate(self._data)

    def to_frame(self) -> Any:
        """This result as a one-row pandas DataFrame of dotted columns (:func:`hostsim.frames.result_frame`)."""
        from .frames import result_frame

        return result_frame(self)


class MsbResult(Result):
    """A bandwidth test: the MSB, its knee and the curve, plus every trial."""

    __slots__ = ("_trials",)

    def __init__(self, data: Mapping[str, Any], trials: List[Result]):
        super().__init__(data)
        object.__setattr__(self, "_trials", list(trials))

    @property
    def trials(self) -> List[Result]:
        """Every trial's full result, in the order they ran."""
        return list(self._trials)

    def typed(self) -> Any:
        """This test validated into the typed model :class:`hostsim.models.MsbResult`."""
        from .models import MsbResult as Typed

        return Typed.model_validate(self._data)

    def to_frame(self) -> Any:
        """The curve as a pandas DataFrame, a row per trial point (:func:`hostsim.frames.msb_frame`)."""
        from .frames import msb_frame

        return msb_frame(self)

    def stats_txt(self) -> str:
        """gem5-style ``stats.txt``: one block per trial, in the order they ran."""
        from .stats import format_stats

        return format_stats([t._data for t in self._trials])
