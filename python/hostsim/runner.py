"""One simulation: resolve the config, hand it to the core, wrap the answer.

The core (``hostsim._core``, built from ``crates/hostsim-py``) takes the
resolved config as JSON and returns the result as JSON. It is imported on
first use, so the pure-Python parts (configs, units, presets) work even
where the core has not been built.
"""

from __future__ import annotations

import json
import re
from types import ModuleType
from typing import Any, Dict, Mapping, Optional, Union

from .config import Config, ConfigSource, load_config, resolve
from .result import Result
from .units import ConfigError


_CHECKED: Dict[str, bool] = {}


def core() -> ModuleType:
    """The compiled core module; a clear error when it has not been built,
    or was built from other sources than this package (a stale build would
    otherwise refuse new fields as unknown, or take old ones silently)."""
    try:
        from . import _core  # type: ignore[attr-defined]
    except ImportError as e:  # pragma: no cover - depends on the build
        raise RuntimeError(f"the hostsim core is not built ({e}); run scripts/setup") from None
    if not _CHECKED:
        from .schema import CORE_SCHEMA_FINGERPRINT

        built = schema_fingerprint(_core.config_schema())
        if built != CORE_SCHEMA_FINGERPRINT:
            raise RuntimeError(
                f"the compiled core (hostsim._core, version {_core.__version__}) takes another config than this "
                f"package's models (schema fingerprint {built}, the models' {CORE_SCHEMA_FINGERPRINT}): it was built "
                "from other sources. Rebuild it with scripts/setup; after changing the core's config types, "
                "regenerate the models with scripts/gen_schema.py")
        _CHECKED["schema"] = True
    return _core


def schema_fingerprint(schema_json: str) -> str:
    """What a config schema accepts, as a short hash: its fields, types,
    bounds and defaults (descriptions and titles left out, so a doc
    comment does not change it)."""
    import hashlib

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            # Annotations are strings; a field of that name would be an object.
            return {k: strip(v) for k, v in node.items() if not (k in ("description", "title") and isinstance(v, str))}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    text = json.dumps(strip(json.loads(schema_json)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def as_config(config: ConfigSource, overrides: Optional[Mapping[str, Any]] = None) -> Config:
    """A validated Config from whatever the user passed (Config, dict, path or None)."""
    return load_config(config, overrides)


def simulate_resolved(resolved: Dict[str, Any], preset: Optional[str] = None) -> Result:
    """Runs the core on an already resolved config."""
    try:
        text = core().simulate(json.dumps(resolved))
    except ValueError as e:
        raise _config_error(e) from None
    data = json.loads(text)
    data["config"] = resolved
    if preset is not None:
        data["preset"] = preset
    return Result(data)


def check_with_core(contract: Mapping[str, Any]) -> None:
    """The core's own checks of a contract (ranges, cross-field rules); raises :class:`ConfigError`."""
    try:
        core().validate(json.dumps(contract))
    except ValueError as e:
        raise _config_error(e) from None


def _config_error(e: ValueError) -> ValueError:
    """The core's config errors (``field: message``) as :class:`ConfigError`s naming the field."""
    field, sep, message = str(e).partition(": ")
    if sep and re.fullmatch(r"[a-z_][a-z0-9_]*(\.[a-z0-9_]+|\[\d+\](\.[a-z0-9_]+)?)*", field):
        if not field.startswith("host."):  # a contract key names the user's field by its stem
            field = ".".join(p[:-3] if p.endswith("_ps") else p[:-4] if p.endswith("_bps") else p for p in field.split("."))
        standard = re.fullmatch(r"invalid value '(.*)' \(allowed: (.*)\)", message, re.DOTALL)
        return ConfigError.invalid(field, standard[1], standard[2]) if standard else ConfigError(field, message)
    return e


def simulate(config: Union[ConfigSource, Config] = None, overrides: Optional[Mapping[str, Any]] = None) -> Result:
    """Runs one simulation and returns its :class:`Result`.

    ``config`` is a :class:`Config`, a nested dict in user units, a path to a
    TOML/YAML/JSON file, or ``None`` for the defaults; ``overrides`` maps
    dotted field names to values and is applied last.
    """
    cfg = as_config(config, overrides)
    return simulate_resolved(resolve(cfg), cfg.preset_name())
