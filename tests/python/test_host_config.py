"""The host section: preset host models, overrides by unit stem, errors, CLI shortcuts, inspect and run tables."""

import json

import pytest

import hostsim
from hostsim import _core
from hostsim import host as _host
from hostsim.config import Config, apply_assignments, load_config, resolve
from hostsim.units import ConfigError, parse_byte_rate

ALTRA = json.loads(_core.host_preset("altra"))
FAST = ["--duration", "300us", "--warmup", "50us", "--set", "sim.drain=100us", "--set", "link.propagation=1us"]


def host_of(**cfg):
    return resolve(dict({"app": "testpmd"}, **cfg))["host"]


def test_host_app_starts_from_the_core_preset():
    assert host_of() == ALTRA
    assert host_of(preset="xeon-e3-1230v2") == json.loads(_core.host_preset("xeon-e3-1230v2"))
    assert "host" not in resolve({})  # the reflector has no host


@pytest.mark.parametrize("dotted,value,path,expected", [
    ("host.cpu.freq", "2GHz", ("cpu", "freq_hz"), 2 * 10**9),
    ("host.pcie.latency", "250ns", ("pcie", "latency_ps"), 250_000),
    ("host.app.proc_time", "1us", ("app", "proc_time_ps"), 10**6),
    ("host.nic.rx_fifo", "256KiB", ("nic", "rx_fifo_bytes"), 256 * 1024),
    ("host.mem.dram.idle_latency", "90ns", ("mem", "dram", "idle_latency_ps"), 90_000),
    ("host.mem.dram.channel_bandwidth", "25.6GB/s", ("mem", "dram", "channel_bandwidth_bytes_per_s"), 256 * 10**8),
    # The suffixed names keep working, with a base-unit number or a unit string.
    ("host.cpu.freq_hz", 2500000000, ("cpu", "freq_hz"), 25 * 10**8),
    ("host.pcie.latency_ps", "1us", ("pcie", "latency_ps"), 10**6),
    ("host.mem.llc.size_bytes", "8MiB", ("mem", "llc", "size_bytes"), 8 * 2**20),
])
def test_unit_strings_by_stem(dotted, value, path, expected):
    cfg = Config(app="testpmd").set(dotted, value)
    node = resolve(cfg)["host"]
    for key in path:
        node = node[key]
    assert node == expected
    # Everything else still comes from the preset.
    assert resolve(cfg)["host"]["pmd"] == ALTRA["pmd"]


def test_nested_host_overrides_merge_deeply_and_set_strings_parse():
    cfg = load_config({"app": "touchfwd", "host": {"mem": {"llc": {"dca": {"enabled": False}}}}})
    apply_assignments(cfg, ["host.cpu.out_of_order=false", "host.mem.dram.channels=2"])
    host = resolve(cfg)["host"]
    assert host["mem"]["llc"]["dca"] == {**ALTRA["mem"]["llc"]["dca"], "enabled": False}
    assert host["cpu"]["out_of_order"] is False and host["mem"]["dram"]["channels"] == 2
    assert host["mem"]["llc"]["size_bytes"] == ALTRA["mem"]["llc"]["size_bytes"]
    assert cfg.get("host.mem.dram.channels") == 2
    assert cfg.to_dict()["host"]["cpu"] == {"out_of_order": False}


def test_byte_rate_units():
    assert parse_byte_rate("19.2GB/s", "f") == 19_200_000_000
    assert parse_byte_rate("1GiB/s", "f") == 2**30
    with pytest.raises(ConfigError, match=r"^f: invalid value '19.2Gbps'"):
        parse_byte_rate("19.2Gbps", "f")


@pytest.mark.parametrize("dotted,value,message", [
    ("host.cpu.frq", "2GHz", r"^host\.cpu\.frq: unknown field 'host\.cpu\.frq' \(did you mean 'host\.cpu\.freq'\?"),
    ("host.gpu.freq", "2GHz", r"^host\.gpu: unknown field 'host\.gpu'"),
    ("host.mem.dram.channel_count", 2, r"^host\.mem\.dram\.channel_count: unknown field"),
    ("host.cpu", 3, r"^host\.cpu: is a section"),
    ("host.cpu.freq", "2Gbps", r"^host\.cpu\.freq: invalid value '2Gbps'"),
    ("host.pcie.latency", "200", r"^host\.pcie\.latency: invalid value"),
    ("host.app.forward_mode", "5tuple", r"^host\.app\.forward_mode: invalid value '5tuple' \(allowed: one of io, mac"),
    ("host.cpu.out_of_order", "maybe", r"^host\.cpu\.out_of_order: invalid value"),
    ("host.pmd.burst", -1, r"^host\.pmd\.burst: invalid value"),
])
def test_bad_host_fields_are_named_before_the_core_sees_them(dotted, value, message):
    with pytest.raises(ConfigError, match=message):
        resolve(Config(app="testpmd").set(dotted, value))


def test_dram_banks_fields_take_units_and_gem5_spellings():
    c = Config(app="testpmd")
    for k, v in {"host.mem.dram.timing.t_rcd": "20ns", "host.mem.dram.address_map": "rocorabach",
                 "host.mem.dram.model": "Channel", "host.mem.dram.ranks": 1}.items():
        c = c.set(k, v)
    dram = resolve(c)["host"]["mem"]["dram"]
    assert dram["timing"]["t_rcd_ps"] == 20_000
    assert (dram["address_map"], dram["model"], dram["ranks"]) == ("RoCoRaBaCh", "channel", 1)
    # The preset's grade: DDR4-2400 17-17-17 (17 clocks of 0.833 ns).
    assert host_of(preset="altra")["mem"]["dram"]["timing"]["t_cl_ps"] == 14_167
    with pytest.raises(ConfigError, match=r"^host\.mem\.dram\.address_map: invalid value 'RoBaCh' "
                                          r"\(allowed: one of RoRaBaCoCh, RoCoRaBaCh\)"):
        resolve(Config(app="testpmd").set("host.mem.dram.address_map", "RoBaCh"))
    # An idle latency the timing cannot meet is the core's error, naming the field as given.
    with pytest.raises(ConfigError, match=r"^host\.mem\.dram\.idle_latency: invalid value '40ns' "
                                          r"\(allowed: >= 45834 ps"):
        resolve(Config(app="testpmd").set("host.mem.dram.idle_latency", "40ns"))


def test_xeon_6226r_has_a_host_model():
    host = host_of(preset="xeon-6226r-fpga")
    assert host == json.loads(_core.host_preset("xeon-6226r-fpga"))
    # SPEC §4: 2.9 GHz; 140.8 GB/s of DDR4 over six DDR4-2933 channels.
    assert (host["cpu"]["freq_hz"], host["cpu"]["cores"]) == (2_900_000_000, 16)
    dram = host["mem"]["dram"]
    assert dram["channels"] == 6
    assert abs(dram["channels"] * dram["channel_bandwidth_bytes_per_s"] - 140.8e9) < 1e6
    assert "xeon-6226r-fpga" in _host.host_presets()


def test_host_app_on_a_preset_without_host_model(monkeypatch):
    # Every preset has a host model today; a preset added without one is refused by name.
    monkeypatch.setattr(_host, "host_presets", lambda: ["altra", "i9-7940x-cx5"])
    with pytest.raises(ConfigError) as e:
        resolve({"app": "touchdrop", "preset": "xeon-6226r-fpga"})
    assert str(e.value) == ("preset: 'xeon-6226r-fpga' has no host model yet "
                            "(host applications run on: altra, i9-7940x-cx5)")


def test_reflector_refuses_host_overrides_and_bad_app_lists_the_apps():
    with pytest.raises(ConfigError, match=r"^host\.cpu\.freq: the reflector has no host model"):
        resolve({"host": {"cpu": {"freq": "2GHz"}}})
    with pytest.raises(ConfigError, match=r"^app: invalid value 'redis' .*reflector, testpmd, touchfwd, "
                                          r"touchdrop, rxptx, l2fwd"):
        resolve({"app": "redis"})


def test_cli_shortcuts_reach_the_resolved_config(cli):
    proc = cli("inspect", "--app", "rxptx", "--forward-mode", "io", "--burst", "64", "--rxd", "1024",
               "--txd", "2048", "--freq", "2.5GHz", "--proc-time", "250ns", "--set", "host.mem.dram.channels=2",
               check=True)
    host = json.loads(proc.stdout)["host"]
    assert (host["app"]["forward_mode"], host["app"]["proc_time_ps"]) == ("io", 250_000)
    assert (host["pmd"]["burst"], host["pmd"]["rxd"], host["pmd"]["txd"]) == (64, 1024, 2048)
    assert host["cpu"]["freq_hz"] == 2_500_000_000 and host["mem"]["dram"]["channels"] == 2


def test_cli_host_errors_exit_2_naming_the_field(cli):
    proc = cli("run", "--app", "testpmd", "--set", "host.nic.rx_fifo_size=1MiB")
    assert proc.returncode == 2 and "host.nic.rx_fifo_size: unknown field" in proc.stderr
    proc = cli("run", "--app", "testpmd", "--forward-mode", "5tuple")
    assert proc.returncode == 2 and "host.app.forward_mode: invalid value '5tuple'" in proc.stderr


def test_inspect_preset_shows_the_resolved_host(cli):
    out = json.loads(cli("inspect", "--preset", "altra", check=True).stdout)
    assert out["host"] == ALTRA and "host" not in out["config"]
    out = json.loads(cli("inspect", "--preset", "altra", "--app", "testpmd", "--freq", "2GHz", check=True).stdout)
    assert out["host"] == out["config"]["host"] and out["host"]["cpu"]["freq_hz"] == 2 * 10**9
    out = json.loads(cli("inspect", "--preset", "xeon-6226r-fpga", check=True).stdout)
    assert out["host"] == json.loads(_core.host_preset("xeon-6226r-fpga"))
    assert out["host"]["cpu"]["freq_hz"] == 2_900_000_000 and out["host"]["mem"]["dram"]["channels"] == 6
    fields = cli("inspect", "--fields", check=True).stdout
    assert "host.mem.llc.dca.enabled" in fields and "host.cpu.freq_hz" in fields


def test_testpmd_runs_on_xeon_6226r(cli, tmp_path):
    proc = cli("run", "--app", "testpmd", "--preset", "xeon-6226r-fpga", *FAST, "--json", "r.json")
    assert proc.returncode == 0, proc.stderr
    assert "has no host model" not in proc.stderr and "invariant violated" not in proc.stderr, proc.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["config"]["host"]["cpu"]["freq_hz"] == 2_900_000_000
    assert not [w for w in data["warnings"] if w.startswith("invariant violated")], data["warnings"]
    assert data["nic"]["rx_packets"] > 0


def test_run_prints_host_rows_and_json_has_host_counters(cli, tmp_path):
    proc = cli("run", "--app", "testpmd", "--size", "64", "--rate", "100%", *FAST, "--json", "r.json",
               "--stats", "stats.txt", check=True)
    data = json.loads((tmp_path / "r.json").read_text())
    for label in ("NIC rx / tx", "rx_missed_errors", "DmaDrops", "CoreDrops", "TxDrops", "cycles/packet",
                  "rx_burst", "packets per call", "DCA", "leaks", "DRAM bytes", "PCIe utilisation"):
        assert label in proc.stdout, label
    d = data["drops"]
    lost = d["dma"] + d["core"] + d["tx"]
    assert lost > 0 and f"DmaDrops {d['dma']:,} ({100 * d['dma'] / lost:.1f} %)" in proc.stdout
    assert f"{data['nic']['rx_missed_errors']:,}" in proc.stdout
    assert data["config"]["host"]["cpu"]["freq_hz"] == ALTRA["cpu"]["freq_hz"]
    assert "Begin Simulation Statistics" in (tmp_path / "stats.txt").read_text()


def test_msb_curve_points_carry_the_drop_breakdown(cli, tmp_path):
    proc = cli("msb", "--app", "testpmd", "--size", "64", *FAST, "--resolution", "5%", "--no-progress",
               "--json", "m.json", check=True)
    curve = json.loads((tmp_path / "m.json").read_text())["msb"]["curve"]
    assert all(set(p["drops"]) >= {"dma", "core", "tx"} for p in curve)
    assert any(p["drops"]["dma"] + p["drops"]["core"] + p["drops"]["tx"] > 0 for p in curve)
    assert "dma/core/tx drops" in proc.stdout
    # The reflector's curve has no host breakdown.
    proc = cli("msb", "--preset", "a72-quad", "--duration", "200us", "--warmup", "50us", "--set", "sim.drain=10us",
               "--set", "reflector.service_time=100ns", "--resolution", "10%", "--no-progress", "--json", "r.json",
               check=True)
    assert all("drops" not in p for p in json.loads((tmp_path / "r.json").read_text())["msb"]["curve"])
    assert "dma/core/tx" not in proc.stdout


def test_simulate_says_a_given_setting_of_another_application_is_ignored_at_its_default():
    import hostsim

    sim = {"duration": "100us", "warmup": "20us", "drain": "100us"}
    ignored = "host.app.forward_mode set but not read by --app l2fwd"
    r = hostsim.simulate({"app": "l2fwd", "sim": sim, "host": {"app": {"forward_mode": "macswap"}}})
    assert any(ignored in w for w in r.warnings), r.warnings
    assert resolve({"app": "l2fwd", "host": {"app": {"forward_mode": "macswap"}}})["given"] == ["app", "host.app.forward_mode"]
    r = hostsim.simulate({"app": "l2fwd", "sim": sim})
    assert not any("not read by" in w for w in r.warnings), r.warnings


def test_a_contract_fed_back_keeps_its_record_of_what_was_given():
    contract = resolve({"app": "l2fwd", "host": {"app": {"forward_mode": "macswap"}}})
    assert resolve(contract)["given"] == ["app", "host.app.forward_mode"]
    assert resolve(dict(contract, given=[]))["given"] == [], "every field of a contract is set, none given"
    cfg = Config.from_dict(dict(contract, given=[])).set("host.app.echo_port", 7).set("sim.duration", "1ms")
    assert resolve(cfg)["given"] == ["host.app.echo_port", "sim.duration_ps"], "set afterwards: given"


@pytest.mark.parametrize("given, message", [
    # The value as written (an integer is not shown as a float), the range in words.
    ({"loadgen": {"flow_skew": -1}}, "loadgen.flow_skew: invalid value '-1' (allowed: >= 0)"),
    ({"host": {"queues": 0}}, "host.queues: invalid value '0' (allowed: 1 to 128 (host.nic.max_queues: "
                              "the RSS queues of a port))"),
    ({"host": {"ports": 0}}, "host.ports: invalid value '0' (allowed: 1 (host.nic.nics × host.nic.ports_per_nic: "
                             "1 × 1))"),
    ({"host": {"cpu": {"freq": 2000}}}, "host.cpu.freq: invalid value '2000' (allowed: 1 MHz to 100 GHz"),
    # Past the integer type (u32) too, the field's real range, not the type's.
    ({"host": {"cores": -1}}, "host.cores: invalid value '-1' (allowed: 1 to 80 (host.cpu.cores: the cores of "
                              "this machine))"),
    ({"host": {"cores": 5_000_000_000}}, "host.cores: invalid value '5000000000' (allowed: 1 to 80 (host.cpu.cores"),
    ({"host": {"queues": "-1"}}, "host.queues: invalid value '-1' (allowed: 1 to 128 (host.nic.max_queues"),
    ({"host": {"pmd": {"rxd": -1}}}, "host.pmd.rxd: invalid value '-1' (allowed: 32 to 4096, a multiple of 8"),
    # The core takes the type's bound (0 rx cores: run to completion); its answer for the other bound covers 0.
    ({"host": {"pipeline": {"rx_cores": -1}}}, "host.pipeline.rx_cores: invalid value '-1' (allowed: 0 (run to "
                                               "completion; a pipeline needs host.cores >= 2"),
    # The core's range may be a bound alone, and name the field by its stem (host.cpu.freq).
    ({"host": {"nic": {"rx_fifo_bytes": -1}}}, "host.nic.rx_fifo_bytes: invalid value '-1' (allowed: >= 9216"),
    ({"host": {"cpu": {"freq_hz": -5}}}, "host.cpu.freq_hz: invalid value '-5' (allowed: 1 MHz to 100 GHz"),
    # An item of host.bind, given as tables or as l3fwd's text, is asked within the list.
    ({"host": {"bind": [{"core": -1, "port": 0, "queue": 0}]}}, "host.bind[0].core: invalid value '-1' (allowed: "
                                                                "0 (host.cores))"),
    ({"host": {"bind": "(0,-3,0)"}}, "host.bind[0].queue: invalid value '-3' (allowed: 0 (host.queues))"),
    # Asked with 0, the core answers with another rule (queue 0 bound twice): the type's range is what is known.
    ({"host": {"bind": "(0,0,0),(0,-3,0)"}}, "host.bind[1].queue: invalid value '-3' (allowed: an integer from 0 "
                                             "to 255)"),
    # The core's answer for the stand-in (u32's largest) speaks of it, not of what was given: the type's range.
    ({"reflector": {"queue_frames": 5_000_000_000}, "app": "reflector"},
     "reflector.queue_frames: invalid value '5000000000' (allowed: an integer from 1 to 4294967295)"),
])
def test_range_errors_say_the_value_as_written_and_the_range_in_words(given, message):
    with pytest.raises(ConfigError) as e:
        resolve({"app": "testpmd", **given})
    assert str(e.value).startswith(message) and "..=" not in str(e.value) and '"' not in str(e.value)


MEMORY = {"bytes": "64GiB", "channels": 2, "channel_bandwidth": "19.2GB/s", "idle_latency": "150ns"}


def test_a_nic_memory_on_a_preset_without_one_takes_every_field():
    # altra's NIC has no on-board memory: one field alone cannot change it.
    with pytest.raises(ConfigError) as e:
        resolve(Config(app="testpmd").set("host.nic.memory.channels", 0))
    assert str(e.value) == (
        "host.nic.memory.channels: set to '0' on preset altra, which has no host.nic.memory: the fields given "
        "make one, which needs all of bytes, channel_bandwidth, channels, idle_latency (missing: bytes, "
        "channel_bandwidth, idle_latency; preset xeon-6226r-fpga has one)")
    with pytest.raises(ConfigError, match=r"^host\.nic\.memory: invalid value '5' \(allowed: a table of bytes, "):
        resolve(Config(app="testpmd").set("host.nic.memory", 5))
    # Every field given, in units: a memory; the core then checks each field's range.
    memory = host_of(app="testpmd", host={"nic": {"memory": MEMORY}})["nic"]["memory"]
    assert memory == {"bytes": 64 << 30, "channels": 2, "channel_bandwidth_bytes_per_s": 19_200_000_000,
                      "idle_latency_ps": 150_000}
    with pytest.raises(ConfigError, match=r"^host\.nic\.memory\.channels: invalid value '0' \(allowed: 1 to 64\)$"):
        resolve({"app": "testpmd", "host": {"nic": {"memory": dict(MEMORY, channels=0)}}})
    # A preset's memory takes a size for its bytes.
    assert host_of(app="testpmd", preset="xeon-6226r-fpga",
                   host={"nic": {"memory": {"bytes": "32GiB"}}})["nic"]["memory"]["bytes"] == 32 << 30


def test_a_preset_pool_grows_with_the_queues_and_a_pool_the_user_set_is_kept():
    # a72-quad has 8192 mbufs a port; 100 queue pairs of 512-descriptor rings need 102 932.
    many = {"app": "testpmd", "preset": "a72-quad", "host": {"queues": 100}, "loadgen": {"rate": "1Mpps"},
            "sim": {"duration": "100us", "warmup": "20us", "drain": "100us"}}
    r = hostsim.simulate(many)
    assert r.loadgen.rx_packets == r.loadgen.tx_packets > 0
    with pytest.raises(ConfigError) as e:
        resolve(dict(many, host={"queues": 100, "pmd": {"mempool": {"mbufs": 8192}}}))
    assert str(e.value).startswith("host.pmd.mempool.mbufs: invalid value '8192' (allowed: >= 102932 per port")


def test_set_takes_a_toml_inline_array_or_table_as_a_config_file_writes_it():
    cfg = apply_assignments(Config(), ["host.bind=[{core=0,port=0,queue=0}]", "loadgen.size=[64, 128]",
                                       "host.cpu.freq=2GHz"])
    assert cfg.get("host.bind") == [{"core": 0, "port": 0, "queue": 0}]
    assert cfg.get("loadgen.size") == [64, 128] and cfg.get("host.cpu.freq") == "2GHz"
    # Not TOML either: kept as text, for the field's own parser to refuse.
    assert apply_assignments(Config(), ["host.bind=[{core=0"]).get("host.bind") == "[{core=0"
