"""Typed configs: defaults, presets, overrides, files, the core contract and every bad input."""

import json
import pathlib
import re

import pytest

import hostsim
from hostsim import presets
from hostsim._core import validate as core_validate
from hostsim.config import (
    Config,
    Loadgen,
    apply_assignments,
    known_fields,
    load_config,
    mean_frame_bytes,
    parse_size_dist,
    resolve,
)
from hostsim.msb import check_option
from hostsim.units import ConfigError

ROOT = pathlib.Path(__file__).resolve().parents[2]

CONTRACT_KEYS = {
    "seed",
    "app",
    "stack",
    "sim",
    "link",
    "loadgen",
    "reflector",
    "given",
}


def test_defaults_resolve_to_the_documented_values():
    r = resolve(Config())
    assert set(r) == CONTRACT_KEYS and r["given"] == []
    assert r["seed"] == 1 and r["app"] == "reflector" and r["stack"] == "pmd"
    assert r["sim"] == {"duration_ps": 10**9, "warmup_ps": 10**8, "drain_ps": 10**9, "fidelity": "full",
                        "settle": False, "overflow_sample": True, "core_horizon": False,
                        "dma_at_memory_time": False, "memory_limit_bytes": None}
    # The default preset is altra: 100 Gbps, 200 us one-way.
    assert r["link"] == {"rate_bps": 100 * 10**9, "propagation_ps": 200 * 10**6}
    lg = r["loadgen"]
    assert lg["rate"] == {"unit": "percent", "value": 100.0}
    assert lg["size"] == {"kind": "fixed", "bytes": 64}
    assert (lg["interarrival"], lg["protocol"], lg["flows"]) == ("constant", "udp", 1)
    assert (lg["src_mac"], lg["dst_mac"]) == ("02:00:00:00:00:01", "02:00:00:00:00:02")
    assert (lg["src_ip"], lg["dst_ip"], lg["src_port"], lg["dst_port"]) == ("10.0.0.1", "10.0.0.2", 1024, 9)
    assert lg["tag_offset"] is None and lg["capture_tx"] is None and lg["capture_rx"] is None
    assert r["reflector"] == {
        "service": "fixed",
        "service_time_ps": 100_000,
        "queue_frames": 1024,
        "drop_every": 0,
        "swap_pairs": False,
    }


def test_resolved_config_is_accepted_by_the_core_exactly():
    # Unknown fields are rejected by the core, so this checks the contract both ways.
    cfg = load_config({"loadgen": {"size": "imix", "interarrival": "poisson", "tag_offset": 44},
                       "reflector": {"service": "exponential", "swap_pairs": True}})
    core_validate(json.dumps(resolve(cfg)))
    for size in (64, [64, 128], "64:3,1518:1", "uniform:64-1518"):
        core_validate(json.dumps(resolve({"loadgen": {"size": size}})))


@pytest.mark.parametrize(
    "name, rate_bps, propagation_ps",
    [
        ("altra", 100 * 10**9, 200 * 10**6),
        ("a72-quad", 200 * 10**9, 10**6),
        ("xeon-e3-1230v2", 10 * 10**9, 10**6),
        ("i9-7940x-cx5", 100 * 10**9, 10**6),
        ("xeon-6226r-fpga", 100 * 10**9, 10**6),
    ],
)
def test_presets_set_the_link(name, rate_bps, propagation_ps):
    r = resolve({"preset": name})
    assert r["link"] == {"rate_bps": rate_bps, "propagation_ps": propagation_ps}


def test_every_preset_has_a_sourced_machine_description():
    assert presets.names()[0] == presets.DEFAULT_PRESET == "altra"
    for name in presets.names():
        p = presets.get(name)
        assert p.description
        assert p.machine, name
        for key, entry in p.machine.items():
            assert set(entry) == {"value", "source"}, (name, key)
            source = entry["source"]
            if source.startswith("docs/reference/"):
                assert (ROOT / source.split(" ")[0]).is_file(), (name, key, source)
            else:
                assert source in ("spec §4", "estimate"), (name, key)
    assert presets.get("altra").machine["llc"]["value"]["size"] == "16MiB"
    assert presets.get("xeon-e3-1230v2").machine["network_latency"]["source"] == "estimate"


def test_machine_description_never_reaches_the_core():
    assert "machine" not in resolve({"preset": "altra"})


def test_user_fields_override_the_preset():
    r = resolve({"preset": "a72-quad", "link": {"rate": "25Gbps"}})
    assert r["link"] == {"rate_bps": 25 * 10**9, "propagation_ps": 10**6}


def test_a_base_unit_key_takes_a_whole_number_as_json_writes_it():
    # --set sim.duration_ps=1e9 reads 1e9 as a float; it is the integer 10**9 ps.
    assert resolve({"sim": {"duration_ps": 1e9}})["sim"]["duration_ps"] == 10**9
    assert resolve({"link": {"rate_bps": 2.5e10}})["link"]["rate_bps"] == 25 * 10**9
    with pytest.raises(ConfigError, match=r"^sim\.duration"):
        resolve({"sim": {"duration_ps": 1.5}})


@pytest.mark.parametrize("given, message", [
    # Refused by the key and the number given, not by the stem and a unit string.
    ({"sim": {"duration_ps": -1}}, "sim.duration_ps: invalid value '-1' (allowed: an integer from 0 to "
                                   "18446744073709551615 (ps), or duration with a unit)"),
    ({"sim": {"duration_ps": 0}}, "sim.duration_ps: invalid value '0' (allowed: > 0)"),
    ({"link": {"rate_bps": 0}}, "link.rate_bps: invalid value '0' (allowed: "),
    ({"loadgen": {"tcp": {"rtt_ps": -3}}}, "loadgen.tcp.rtt_ps: invalid value '-3' (allowed: an integer from 0"),
    # By the stem, as given.
    ({"sim": {"duration": "0ms"}}, "sim.duration: invalid value '0ms' (allowed: > 0)"),
])
def test_a_base_unit_key_out_of_range_is_named_as_given(given, message):
    with pytest.raises(ConfigError) as e:
        resolve(given)
    assert str(e.value).startswith(message), str(e.value)


def test_set_by_dotted_name_and_typed_sections():
    cfg = Config(loadgen=Loadgen(rate="10Gbps"))
    cfg.set("reflector.service_time", "250ns").set("seed", 7)
    r = resolve(cfg)
    assert r["loadgen"]["rate"] == {"unit": "bps", "value": 1e10}
    assert r["reflector"]["service_time_ps"] == 250_000
    assert r["seed"] == 7
    assert cfg.to_dict() == {"seed": 7, "loadgen": {"rate": "10Gbps"}, "reflector": {"service_time": "250ns"}}


def test_assignments_parse_json_values_else_strings():
    cfg = apply_assignments(Config(), ["loadgen.flows=4", "reflector.swap_pairs=true",
                                       "loadgen.size=64,128", "loadgen.size=[64, 256]",
                                       "reflector.service_time=1us"])
    r = resolve(cfg)
    assert r["loadgen"]["flows"] == 4
    assert r["reflector"]["swap_pairs"] is True
    assert r["loadgen"]["size"] == {"kind": "list", "bytes": [64, 256], "weights": [1.0, 1.0]}
    assert r["reflector"]["service_time_ps"] == 10**6


@pytest.mark.parametrize(
    "value, expected",
    [
        (64, {"kind": "fixed", "bytes": 64}),
        ("1518", {"kind": "fixed", "bytes": 1518}),
        ("9216B", {"kind": "fixed", "bytes": 9216}),
        ([64, 128], {"kind": "list", "bytes": [64, 128], "weights": [1.0, 1.0]}),
        ("64,128,256", {"kind": "list", "bytes": [64, 128, 256], "weights": [1.0, 1.0, 1.0]}),
        ("64:7,594:4,1518:1", {"kind": "list", "bytes": [64, 594, 1518], "weights": [7.0, 4.0, 1.0]}),
        ("imix", {"kind": "imix"}),
        ("IMIX", {"kind": "imix"}),
        ("uniform:64-1518", {"kind": "uniform", "min": 64, "max": 1518}),
        ({"kind": "uniform", "min": 100, "max": 200}, {"kind": "uniform", "min": 100, "max": 200}),
        ({"kind": "list", "bytes": [64, 128], "weights": [1, 3]},
         {"kind": "list", "bytes": [64, 128], "weights": [1.0, 3.0]}),
        ({"kind": "fixed", "bytes": 128}, {"kind": "fixed", "bytes": 128}),
        ({"kind": "imix"}, {"kind": "imix"}),
    ],
)
def test_size_forms(value, expected):
    assert parse_size_dist(value) == expected


def test_mean_frame_bytes():
    assert mean_frame_bytes({"kind": "fixed", "bytes": 64}) == 64
    assert mean_frame_bytes({"kind": "uniform", "min": 64, "max": 128}) == 96
    assert mean_frame_bytes({"kind": "list", "bytes": [64, 128], "weights": [3, 1]}) == 80
    assert mean_frame_bytes({"kind": "imix"}) == pytest.approx((7 * 64 + 4 * 594 + 1518) / 12)


def test_config_files_toml_yaml_json(tmp_path):
    (tmp_path / "c.toml").write_text(
        'preset = "a72-quad"\nseed = 3\n[loadgen]\nrate = "5Mpps"\nsize = "imix"\n'
        '[reflector]\nservice_time = "50ns"\n'
    )
    (tmp_path / "c.yaml").write_text(
        "preset: a72-quad\nseed: 3\nloadgen:\n  rate: 5Mpps\n  size: imix\nreflector:\n  service_time: 50ns\n"
    )
    (tmp_path / "c.json").write_text(json.dumps(
        {"preset": "a72-quad", "seed": 3, "loadgen": {"rate": "5Mpps", "size": "imix"},
         "reflector": {"service_time": "50ns"}}))
    resolved = [resolve(load_config(tmp_path / f"c.{ext}")) for ext in ("toml", "yaml", "json")]
    assert resolved[0] == resolved[1] == resolved[2]
    r = resolved[0]
    assert r["seed"] == 3 and r["link"]["rate_bps"] == 200 * 10**9
    assert r["loadgen"]["rate"] == {"unit": "pps", "value": 5e6}
    assert r["reflector"]["service_time_ps"] == 50_000


def test_config_file_errors(tmp_path):
    with pytest.raises(OSError, match="missing.toml"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("loadgen = [\n")
    with pytest.raises(ConfigError, match=r"^config: .*bad\.toml"):
        load_config(tmp_path / "bad.toml")
    (tmp_path / "c.ini").write_text("")
    with pytest.raises(ConfigError, match=r"^config: invalid value"):
        load_config(tmp_path / "c.ini")
    (tmp_path / "typo.yaml").write_text("reflector:\n  sevice_time: 1us\n")
    with pytest.raises(ConfigError, match=r"^reflector\.sevice_time: unknown field"):
        load_config(tmp_path / "typo.yaml")


def test_a_config_or_sweep_file_is_read_only_if_regular_and_small(tmp_path, monkeypatch):
    """/dev/zero was read until MemoryError; a file past the bound is refused unread."""
    import hostsim.config as C
    from hostsim.sweep import SweepError, load_sweep

    with pytest.raises(ConfigError, match=r"^config: invalid value '/dev/zero' \(allowed: a regular file of at most 16 MiB"):
        load_config("/dev/zero")
    with pytest.raises(SweepError, match=r"invalid file \(allowed: a regular file"):
        load_sweep("/dev/zero")
    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * 100 + "\n")
    monkeypatch.setattr(C, "MAX_FILE_BYTES", 64)
    with pytest.raises(ConfigError, match=r"at most 0 MiB \(it is larger\)"):
        load_config(big)




@pytest.mark.parametrize("name, text, where", [
    ("c.json", '{"loadgen": {"rate": "1Mpps"}, "loadgen": {"rate": "2Mpps"}}', ""),
    ("c.json", '{"loadgen": {"rate": "1Mpps", "rate": "2Mpps"}}', ""),
    ("c.yaml", "loadgen:\n  rate: 1Mpps\nloadgen:\n  rate: 2Mpps\n", " at line 3"),
    ("c.yml", "loadgen:\n  rate: 1Mpps\n  rate: 2Mpps\n", " at line 3"),
])
def test_a_key_twice_in_a_json_or_yaml_table_is_refused(tmp_path, cli, name, text, where):
    (tmp_path / name).write_text(text)
    key = "loadgen" if text.count("loadgen") == 2 else "rate"
    expected = f"config: {tmp_path / name}: duplicate key '{key}'{where} (allowed: each key once in a table"
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / name)
    assert str(e.value).startswith(expected), str(e.value)
    proc = cli("inspect", "--config", name)
    assert proc.returncode == 2 and f"hostsim: error: config: {name}: duplicate key '{key}'{where}" in proc.stderr


def test_a_yaml_merge_may_replace_the_keys_it_brings():
    from hostsim.config import load_yaml

    assert load_yaml("a: &a\n  rate: 1Mpps\nloadgen:\n  <<: *a\n  rate: 2Mpps\n")["loadgen"] == {"rate": "2Mpps"}


# A field given by its stem and by its core key in one file or dict: (file text by suffix, field, both spellings).
BOTH_SPELLINGS = [
    ({"toml": '[sim]\nduration = "2ms"\nduration_ps = 3000000000\n',
      "json": '{"sim": {"duration": "2ms", "duration_ps": 3000000000}}',
      "yaml": "sim:\n  duration: 2ms\n  duration_ps: 3000000000\n"},
     "sim.duration", 'as sim.duration = "2ms" and as sim.duration_ps = 3000000000'),
    ({"toml": 'app = "testpmd"\n[host.cpu]\nfreq_hz = 2000000000\nfreq = "2.5GHz"\n',
      "json": '{"app": "testpmd", "host": {"cpu": {"freq_hz": 2000000000, "freq": "2.5GHz"}}}',
      "yaml": "app: testpmd\nhost:\n  cpu:\n    freq_hz: 2000000000\n    freq: 2.5GHz\n"},
     "host.cpu.freq", 'as host.cpu.freq_hz = 2000000000 and as host.cpu.freq = "2.5GHz"'),
    ({"toml": '[loadgen.tcp]\nrtt = "10us"\nrtt_ps = 20000000\n',
      "json": '{"loadgen": {"tcp": {"rtt": "10us", "rtt_ps": 20000000}}}',
      "yaml": "loadgen:\n  tcp:\n    rtt: 10us\n    rtt_ps: 20000000\n"},
     "loadgen.tcp.rtt", 'as loadgen.tcp.rtt = "10us" and as loadgen.tcp.rtt_ps = 20000000'),
]


@pytest.mark.parametrize("texts, field, spellings", BOTH_SPELLINGS, ids=[b[1] for b in BOTH_SPELLINGS])
def test_a_field_given_by_stem_and_by_core_key_is_refused(tmp_path, cli, texts, field, spellings):
    for ext, text in texts.items():
        path = tmp_path / f"c.{ext}"
        path.write_text(text)
        with pytest.raises(ConfigError) as e:
            load_config(path)
        assert e.value.field == field
        assert str(e.value) == f"{field}: given twice in {path}, {spellings}: give it once"
        proc = cli("inspect", "--config", path.name)
        assert proc.returncode == 2 and f"hostsim: error: {field}: given twice in c.{ext}, {spellings}" in proc.stderr
    with pytest.raises(ConfigError, match=f"^{re.escape(field)}: given twice, {re.escape(spellings)}: give it once$"):
        hostsim.simulate(json.loads(texts["json"]))


def test_a_field_given_by_two_names_in_overrides_is_refused():
    with pytest.raises(ConfigError, match=r'^sim\.duration: given twice, as sim\.duration = "2ms" and as '
                                          r"sim\.duration_ps = 5000000000: give it once$"):
        load_config(None, {"sim.duration": "2ms", "sim.duration_ps": 5000000000})
    # One name, as the stem or as the key, is taken.
    assert resolve(load_config(None, {"sim.duration_ps": 5000000000}))["sim"]["duration_ps"] == 5000000000


# Each bad input: (overrides, field the message must start with, text it must contain).
BAD = [
    ({"loadgen": {"rate": "10Gbsp"}}, "loadgen.rate", "'10Gbsp'"),
    ({"loadgen": {"rate": "10 parsecs"}}, "loadgen.rate", "allowed"),
    ({"loadgen": {"rate": "0Gbps"}}, "loadgen.rate", "> 0"),
    ({"loadgen": {"rate": "-5Mpps"}}, "loadgen.rate", "'-5Mpps'"),
    ({"loadgen": {"rate": "0%"}}, "loadgen.rate", "'0%'"),
    ({"loadgen": {"rate": "1e400Gbps"}}, "loadgen.rate", "a finite number"),
    ({"link": {"rate": "0Gbps"}}, "link.rate", "> 0"),
    ({"link": {"rate": "-100Gbps"}}, "link.rate", "'-100Gbps'"),
    ({"sim": {"duration": "0ms"}}, "sim.duration", "> 0"),
    ({"sim": {"duration": "-1ms"}}, "sim.duration", "'-1ms'"),
    ({"sim": {"duration": "5 fortnights"}}, "sim.duration", "allowed"),
    ({"sim": {"warmup": "2ms"}}, "sim.warmup", "less than sim.duration"),
    ({"loadgen": {"size": 63}}, "loadgen.size", "64 to 9216"),
    ({"loadgen": {"size": 9217}}, "loadgen.size", "64 to 9216"),
    ({"loadgen": {"size": "64,10000"}}, "loadgen.size", "64 to 9216"),
    ({"loadgen": {"size": "uniform:32-128"}}, "loadgen.size", "64 to 9216"),
    ({"loadgen": {"size": "uniform:64"}}, "loadgen.size", "uniform:MIN-MAX, e.g. 'uniform:64-1518'"),
    ({"loadgen": {"tcp": {"drop": 1.0}}}, "loadgen.tcp.drop", "(allowed: < 1)"),
    ({"loadgen": {"flow_skew": -1}}, "loadgen.flow_skew", "(allowed: >= 0"),
    ({"loadgen": {"size": "jumbo"}}, "loadgen.size", "imix"),
    ({"loadgen": {"size": {"kind": "gaussian"}}}, "loadgen.size.kind", "uniform"),
    ({"loadgen": {"flows": 0}}, "loadgen.flows", "1 to 65536"),
    ({"loadgen": {"flows": -3}}, "loadgen.flows", "1 to 65536"),
    ({"loadgen": {"interarrival": "bursty"}}, "loadgen.interarrival", "constant, poisson"),
    ({"loadgen": {"protocol": "sctp"}}, "loadgen.protocol", "raw, udp, tcp"),
    ({"loadgen": {"src_mac": "02:00:00:00:00"}}, "loadgen.src_mac", "MAC"),
    ({"loadgen": {"dst_ip": "10.0.0.256"}}, "loadgen.dst_ip", "IPv4"),
    ({"loadgen": {"dst_port": 70000}}, "loadgen.dst_port", "0 to 65535"),
    ({"loadgen": {"tag_offset": 10}}, "loadgen.tag_offset", ">= 42 (end of headers)"),
    ({"loadgen": {"tag_offset": 45}}, "loadgen.tag_offset", "tag end + 4 B FCS <= smallest frame (64 B), i.e. <= 44"),
    # The tag left where it goes: a frame too small for the headers and the tag names the size.
    ({"loadgen": {"protocol": "tcp"}}, "loadgen.size", "74 B and up with loadgen.protocol tcp: 54 B of headers, the 16 B tag"),
    ({"reflector": {"queue_frames": 0}}, "reflector.queue_frames", "an integer from 1 to"),
    ({"reflector": {"service": "erlang"}}, "reflector.service", "fixed, exponential"),
    ({"preset": "cray-1"}, "preset", "altra"),
    ({"app": "redis"}, "app", "reflector"),
    ({"seed": -1}, "seed", "integer"),
    ({"reflector": {"sevice_time": 1}}, "reflector.sevice_time", "did you mean 'reflector.service_time'"),
    ({"loadgen": {"rat": "1Gbps"}}, "loadgen.rat", "unknown field"),
    ({"machine": {"cores": 4}}, "machine", "unknown field"),
    ({"sim": "1ms"}, "sim", "a table of core_horizon, dma_at_memory_time, drain, duration, fidelity, memory_limit_bytes, overflow_sample, settle, warmup"),
    # A trace's loop is true, false or a count: a number it does not take is told all three.
    ({"loadgen": {"trace": {"path": "t.pcap", "loop": 0}}}, "loadgen.trace.loop",
     "invalid value '0' (allowed: true (loop until sim.duration), false (one pass) or a number of passes >= 1)"),
    ({"loadgen": {"trace": {"path": "t.pcap", "loop": "often"}}}, "loadgen.trace.loop", "true (loop until sim.duration)"),
    # Past the field's integer type: the limit in the field's unit, the field and value as given.
    ({"sim": {"duration": "1e400ms"}}, "sim.duration", "'1e400ms' (allowed: <= 18446744073709551615 ps (about 214 days))"),
    ({"app": "testpmd", "host": {"nic": {"rx_fifo": "1e30KiB"}}}, "host.nic.rx_fifo",
     "'1e30KiB' (allowed: <= 18446744073709551615 B (about 16 EiB))"),
    ({"app": "testpmd", "host": {"cpu": {"freq": "1e30GHz"}}}, "host.cpu.freq", "(allowed: <= 18446744073709551615 Hz)"),
    ({"app": "testpmd", "host": {"pcie": {"latency_ps": -5}}}, "host.pcie.latency_ps",
     "(allowed: an integer from 0 to 18446744073709551615 ps (about 214 days))"),
]


@pytest.mark.parametrize("overrides, field, text", BAD, ids=[b[1] + ":" + str(i) for i, b in enumerate(BAD)])
def test_bad_input_names_the_field(overrides, field, text):
    with pytest.raises(ConfigError) as e:
        load_config(overrides)
    msg = str(e.value)
    assert msg.startswith(field + ": "), msg
    assert text in msg, msg
    assert e.value.field == field


def test_unknown_field_lists_known_ones():
    with pytest.raises(ConfigError) as e:
        Config().set("reflector.sevice_time", 1)
    assert str(e.value).startswith("reflector.sevice_time: unknown field 'reflector.sevice_time'")
    assert "reflector.service, reflector.service_time, reflector.swap_pairs" in str(e.value)


def test_typo_in_attribute_assignment_is_an_error():
    cfg = Config()
    with pytest.raises(ConfigError, match=r"^loadgen\.sise: unknown field"):
        cfg.loadgen.sise = 128


@pytest.mark.parametrize("bad", [-0.01, 1, 1.5, "100%", "1 pct", None, True])
def test_threshold_outside_0_1(bad):
    with pytest.raises(ConfigError, match=r"^threshold: invalid value"):
        check_option("threshold", bad)


def test_threshold_bounds_accepted():
    assert check_option("threshold", 0) == 0.0
    assert check_option("threshold", 0.999) == 0.999


def test_known_fields_cover_the_contract():
    names = set(known_fields())
    for section, keys in resolve(Config()).items():
        if isinstance(keys, dict):
            for key in keys:
                assert f"{section}.{key.replace('_ps', '').replace('_bps', '')}" in names, key


def test_top_level_api_is_exported():
    for name in ("simulate", "msb", "load_config", "presets", "__version__", "Config", "Result", "MsbResult"):
        assert hasattr(hostsim, name), name
    assert hostsim.__version__ == hostsim._core.version()


@pytest.mark.parametrize("field, value, words", [
    # The memory budget (half the 1 GiB limit) refuses it before the pool's own bound.
    ("host.pmd.mempool.mbufs", 1_000_000_000, "most for the mempools 3.725 GiB"),
    ("link.rate", "1e15bps", "<= 1.6 Tbps"),
    ("link.propagation", "1ms", "minimum-size frames in flight on a link"),
    ("host.nic.rx_fifo_bytes", "1000GB", "64 B frames buffered by the device"),
    ("loadgen.keep_samples", 10**12, "<= 10000000"),
])
def test_size_knobs_are_bounded_before_anything_is_allocated(field, value, words):
    # In a process of its own, under a 1 GiB address-space limit: before these
    # checks, 1e9 mbufs allocated 3.9 GB and a 1e15 bps link 9.2 GB before
    # any error, which such a limit turns into a crash.
    import subprocess
    import sys

    overrides = {field: value}
    if field == "link.propagation":
        overrides["link.rate"] = "1.6e12bps"
    code = (
        "import resource, sys, hostsim\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        f"try:\n    hostsim.simulate({{'app': 'testpmd', 'sim': {{'duration': '100us', 'warmup': '10us'}}}}, {overrides!r})\n"
        "except hostsim.ConfigError as e:\n    print(e)\n    sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert field in proc.stdout and words in proc.stdout, proc.stdout


def test_size_weights_whose_sum_overflows_are_refused():
    # Each weight is finite, their sum is not: the sampler would draw only the
    # last size and the mean frame size would be 0.
    with pytest.raises(ConfigError) as e:
        hostsim.simulate({"loadgen": {"size": {"kind": "list", "bytes": [64, 128], "weights": [1e308, 1e308]}},
                          "sim": {"duration": "10us", "warmup": "0ns"}})
    assert str(e.value).startswith("loadgen.size.weights: ") and "a finite sum" in str(e.value), str(e.value)
