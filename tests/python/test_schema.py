"""The pydantic models (hostsim.schema) and the core's JSON Schema agree field for field."""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest

from hostsim import _core, schema
from hostsim.config import FIELDS, Config, Timing, load_config, resolve
from hostsim.units import ConfigError


def _shape(node: Dict[str, Any], defs: Dict[str, Any], depth: int = 0) -> Any:
    """A schema node reduced to what both generators must agree on: object
    fields (required or their default), types, integer and number bounds,
    choices, optionality; descriptions, titles and formats left out."""
    assert depth < 40, "a schema this deep is a cycle"
    while "$ref" in node:
        node = {**defs[node["$ref"].split("/")[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    alternatives = node.get("anyOf") or node.get("oneOf")
    if alternatives:
        shapes = [_shape(a, defs, depth + 1) for a in alternatives]
        non_null = [s for s in shapes if s != ("null",)]
        consts = [s[1] for s in non_null if s[0] == "const"]
        if consts and len(consts) == len(non_null):
            inner: Any = ("enum", tuple(sorted(consts)))
        elif len(non_null) == 1:
            inner = non_null[0]
        else:
            inner = ("union", tuple(sorted(map(repr, non_null))))
        return ("optional", inner) if len(non_null) < len(shapes) else inner
    if "const" in node:
        return ("const", node["const"])
    if "enum" in node:
        return ("enum", tuple(sorted(node["enum"])))
    kind = node.get("type")
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        inner = _shape({**node, "type": rest[0]}, defs, depth + 1)
        return ("optional", inner) if "null" in kind else inner
    if kind == "object" or "properties" in node:
        required = set(node.get("required", []))
        props = node.get("properties", {})
        return ("object", tuple(sorted(
            (name, name in required, json.dumps(sub.get("default"), sort_keys=True), _shape(sub, defs, depth + 1))
            for name, sub in props.items()
        )), node.get("additionalProperties", True) is False)
    if kind == "array":
        return ("array", _shape(node.get("items", {}), defs, depth + 1))
    if kind in ("integer", "number"):
        lo, hi = node.get("minimum"), node.get("maximum")
        return (kind, None if lo is None else float(lo), None if hi is None else float(hi))
    return (kind,)


def _rust() -> Dict[str, Any]:
    return json.loads(_core.config_schema())


def test_the_models_and_the_cores_schema_agree_field_for_field():
    rust = _rust()
    ours = schema.SimConfig.model_json_schema()
    assert _shape(ours, ours.get("$defs", {})) == _shape(rust, rust["$defs"])


def test_the_comparison_sees_a_difference():
    """The check above fails on a changed default, bound, field or choice (it can fail)."""
    rust = _rust()
    base = _shape(rust, rust["$defs"])
    for change in (
        lambda s: s["$defs"]["LoadgenConfig"]["properties"]["flows"].update(maximum=65535),
        lambda s: s["$defs"]["LoadgenConfig"]["properties"]["flow_skew"].update(default=1.0),
        lambda s: s["$defs"]["SimTiming"]["properties"].pop("drain_ps"),
        lambda s: s["$defs"]["Protocol"]["oneOf"].pop(),
    ):
        changed = _rust()
        change(changed)
        assert _shape(changed, changed["$defs"]) != base


def test_every_contract_field_is_a_user_field():
    """Each section's user fields are exactly the model's (stem names for unit suffixes)."""
    for section, specs in FIELDS.items():
        model = {"sim": schema.SimTiming, "link": schema.LinkConfig, "loadgen": schema.LoadgenConfig,
                 "reflector": schema.ReflectorConfig}[section]
        assert sorted(s.key for s in specs.values()) == sorted(model.model_fields)
    assert FIELDS["sim"]["duration"].key == "duration_ps"
    assert FIELDS["link"]["rate"].key == "rate_bps"


def test_defaults_come_from_the_core():
    """A config with nothing set resolves to the schema's defaults (the Rust Default impls)."""
    rust = _rust()["$defs"]
    out = resolve({})
    assert out["sim"] == {k: v["default"] for k, v in rust["SimTiming"]["properties"].items()}
    assert out["reflector"] == {k: v["default"] for k, v in rust["ReflectorConfig"]["properties"].items()}
    mc = resolve({"app": "memcached", "preset": "i9-7940x-cx5"})["loadgen"]["memcached"]
    assert mc == {k: v["default"] for k, v in rust["McClientConfig"]["properties"].items()}


@pytest.mark.parametrize("dotted, value, words", [
    ("loadgen.flows", 70000, "an integer from 1 to 65536"),
    ("loadgen.src_port", 70000, "an integer from 0 to 65535"),
    ("loadgen.memcached.get_ratio", 1.5, "loadgen.memcached.get_ratio"),
    ("loadgen.interarrival", "sometimes", "one of constant, poisson"),
    ("reflector.queue_frames", 0, "an integer from 1 to 4294967295"),
])
def test_bounds_and_choices_come_from_the_schema(dotted, value, words):
    with pytest.raises(ConfigError) as e:
        load_config(overrides={dotted: value})
    assert str(e.value).startswith(dotted + ":") and words in str(e.value)


def test_a_resolved_config_is_a_valid_model():
    for cfg in ({}, {"app": "testpmd", "preset": "i9-7940x-cx5"}, {"app": "memcached", "preset": "i9-7940x-cx5"}):
        out = resolve(cfg)
        assert schema.SimConfig.model_validate(out).model_dump(mode="json", exclude_none=False) == \
            {**out, **({"host": None} if "host" not in out else {})}


def test_a_config_gives_its_typed_model():
    m = load_config({"link": {"rate": "10Gbps"}, "loadgen": {"size": "imix"}}).model()
    assert isinstance(m, schema.SimConfig)
    assert m.link.rate_bps == 10_000_000_000 and m.sim.duration_ps == 1_000_000_000
    assert m.loadgen.size.root.kind == "imix"


def test_a_core_key_takes_base_units_and_its_stem_takes_unit_strings():
    c = Config(sim=Timing(duration_ps=5_000_000, warmup="0ps"))
    assert resolve(c)["sim"]["duration_ps"] == 5_000_000 and c.sim.duration == "5us"
    c.set("link.propagation_ps", 1000).set("link.rate", "10Gbps")
    assert resolve(c)["link"] == {"propagation_ps": 1000, "rate_bps": 10_000_000_000}
    out = resolve({"app": "memcached", "preset": "i9-7940x-cx5",
                   "loadgen": {"closed_loop": {"outstanding": 2, "timeout_ps": 5000}}})
    assert out["loadgen"]["closed_loop"] == {"outstanding": 2, "timeout_ps": 5000}
    with pytest.raises(ConfigError, match="^sim.duration: .*a bare number needs a unit"):
        resolve({"sim": {"duration": 5000}})


def test_every_field_has_a_description_from_the_core():
    from hostsim.config import field_docs

    bare = [k for k, v in field_docs().items() if v.startswith("(default") or v.startswith(" (default")]
    assert not bare, f"fields without a doc comment in the Rust config types: {bare}"


def test_the_models_carry_the_fingerprint_of_the_cores_schema():
    from hostsim.runner import schema_fingerprint

    assert schema.CORE_SCHEMA_FINGERPRINT == schema_fingerprint(_core.config_schema())
    # Descriptions do not change it; a field's default does.
    s = json.loads(_core.config_schema())
    s["description"] = "another doc comment"
    assert schema_fingerprint(json.dumps(s)) == schema.CORE_SCHEMA_FINGERPRINT
    s["properties"]["seed"]["default"] = 12345
    assert schema_fingerprint(json.dumps(s)) != schema.CORE_SCHEMA_FINGERPRINT


def test_a_core_built_from_other_sources_is_refused_by_name(monkeypatch):
    import hostsim
    from hostsim import runner

    monkeypatch.setattr(runner, "_CHECKED", {})
    monkeypatch.setattr(schema, "CORE_SCHEMA_FINGERPRINT", "0000000000000000")
    with pytest.raises(RuntimeError, match="built from other sources.*scripts/setup"):
        hostsim.simulate({"sim": {"duration": "10us"}})
