"""Ports, queues and cores from the Python package and the CLI: the flags,
the binding, results shaped like the machine, and clear errors."""

from __future__ import annotations

import json

import pytest

import hostsim
from hostsim import _core
from hostsim.config import resolve
from hostsim.host import host_apps, parse_bind
from hostsim.units import ConfigError

FAST = ["--duration", "1ms", "--warmup", "200us", "--set", "link.propagation=1us"]


def test_applications_and_their_stacks_come_from_the_cores_registry():
    registry = json.loads(_core.apps())
    assert [a["name"] for a in registry] == list(host_apps())
    # A stack that does not run the application names the one that does.
    with pytest.raises(ConfigError, match=r"^stack: invalid value ['\"]pmd['\"] .*kernel for app iperf"):
        resolve({"app": "iperf", "stack": "pmd"})
    with pytest.raises(ConfigError, match=r"^stack: .*the kernel stack runs ipfwd, bridge, ovs, udp-echo, memcached, iperf"):
        resolve({"app": "testpmd", "stack": "kernel"})
    with pytest.raises(ConfigError, match=r"^app: .*reflector, testpmd, .*iperf"):
        resolve({"app": "nginx"})


def test_two_ports_forward_both_ways_and_report_per_port(cli, tmp_path):
    proc = cli("run", "--app", "l2fwd", "--preset", "xeon-e3-1230v2", "--ports", "2", "--rate", "2Mpps", *FAST,
               "--json", "r.json", "--stats", "stats.txt", check=True)
    r = json.loads((tmp_path / "r.json").read_text())
    assert [p["port"] for p in r["ports"]] == [0, 1] and [p["nic"] for p in r["ports"]] == [0, 0]
    assert len(r["nics"]) == 1 and r["nics"][0]["ports"] == [0, 1]
    gen = r["loadgen"]["ports"]
    assert [g["sends"] for g in gen] == [True, True]
    # l2fwd pairs the ports: each port's frames come back on the other one.
    for g in gen:
        assert g["rx_packets"] == g["tx_packets"] > 0
    assert r["loadgen"]["tx_packets"] == sum(g["tx_packets"] for g in gen)
    assert "port 0 (NIC 0)" in proc.stdout and "port 1 (NIC 0)" in proc.stdout
    stats = (tmp_path / "stats.txt").read_text()
    for name in ("system.nic.port1.rxq0.packets", "system.nic.port0.dma_drops", "system.cpu0.cycles.rx",
                 "system.nic.dev0.pcie.writes", "system.loadgen.port1.tx_packets"):
        assert name in stats, name


def test_queues_and_cores_follow_testpmds_map_or_the_binding():
    base = {"app": "testpmd", "preset": "altra", "loadgen": {"rate": "4Mpps", "flows": 64},
            "sim": {"duration": "200us", "warmup": "0ps"}, "link": {"propagation": "1us"}}
    r = hostsim.simulate(dict(base, host={"queues": 4, "cores": 2}))
    assert [[q["rx_queue"] for q in c["queues"]] for c in r.to_dict()["cores"]] == [[0, 1], [2, 3]]
    r = hostsim.simulate(dict(base, host={"queues": 2, "cores": 2, "bind": "(0,0,1),(0,1,0)"}))
    cores = r.to_dict()["cores"]
    assert [c["queues"][0]["rx_queue"] for c in cores] == [1, 0]
    assert sum(c["packets"] for c in cores) == r.loadgen.rx_packets > 0
    assert [q["core"] for q in r.to_dict()["ports"][0]["queues"]] == [1, 0]


def test_bind_accepts_tables_and_l3fwd_text_and_names_what_is_wrong():
    assert parse_bind("(0, 1, 2)", "host.bind") == [{"port": 0, "queue": 1, "core": 2}]
    assert parse_bind([{"core": 1, "port": 0, "queue": 0}], "host.bind") == [{"core": 1, "port": 0, "queue": 0}]
    for bad in ("0,1,2", "(0,1)", "(a,b,c)", [{"core": 0}], 7):
        with pytest.raises(ConfigError, match=r"^host\.bind"):
            parse_bind(bad, "host.bind")


@pytest.mark.parametrize("flags, message", [
    (["--ports", "0"], r"host\.ports: invalid value '0' \(allowed: 1 to 2 "),
    (["--ports", "3"], r"host\.ports: invalid value '3' \(allowed: 1 to 2 \(host\.nic\.nics × host\.nic\.ports_per_nic"),
    (["--queues", "17"], r"host\.queues: invalid value '17' \(allowed: 1 to 16 "),
    (["--cores", "5"], r"host\.cores: invalid value '5' \(allowed: 1 to 4 \(host\.cpu\.cores"),
    (["--cores", "2"], r"host\.cores: invalid value '2' \(allowed: 1 \(one queue pair per core"),
    (["--queues", "2", "--bind", "(0,0,0),(0,2,0)"], r"host\.bind\[1\]\.queue: invalid value '2' \(allowed: 0 to 1 \(host\.queues\)"),
    (["--queues", "2", "--bind", "(0,0,0)"], r"host\.bind: .*port 0 queue 1 is not"),
    (["--traffic", "mesh"], r"loadgen\.traffic: invalid value 'mesh' .*host\.ports >= 2"),
    (["--traffic", "both"], r"loadgen\.traffic: invalid value 'both'"),
    (["--port-topology", "ring"], r"host\.app\.port_topology: invalid value 'ring'"),
])
def test_impossible_topologies_exit_2_naming_the_field(cli, flags, message):
    proc = cli("run", "--app", "l2fwd", "--preset", "xeon-e3-1230v2", *FAST, *flags)
    assert proc.returncode == 2, proc.stdout
    assert __import__("re").search(message, proc.stderr), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.long
def test_msb_on_two_ports_reports_the_aggregate_and_each_port(cli, tmp_path):
    cli("msb", "--app", "l2fwd", "--preset", "xeon-e3-1230v2", "--ports", "2", "--size", "1518",
        "--duration", "2ms", "--warmup", "500us", "--set", "link.propagation=1us", "--resolution", "5%",
        "--no-progress", "--json", "m.json", check=True)
    m = json.loads((tmp_path / "m.json").read_text())["msb"]
    assert m["sending_ports"] == 2
    assert m["line_rate_pps"] == pytest.approx(2 * 10e9 / (1538 * 8))
    assert [p["port"] for p in m["ports"]] == [0, 1]
    assert m["pps"] == pytest.approx(sum(p["offered_pps"] for p in m["ports"]))
    assert all("ports" in p for p in m["curve"])


def test_uni_traffic_sends_from_the_first_port_of_each_pair():
    r = hostsim.simulate({"app": "testpmd", "preset": "a72-quad", "host": {"ports": 4, "cores": 4},
                          "loadgen": {"rate": "1Mpps", "traffic": "uni"},
                          "sim": {"duration": "200us", "warmup": "0ps"}}).to_dict()
    assert [g["sends"] for g in r["loadgen"]["ports"]] == [True, False, True, False]
    assert [p["rx_packets"] > 0 for p in r["ports"]] == [True, False, True, False]
    assert len(r["nics"]) == 4


def test_presets_carry_their_machines_ports_and_cores():
    for preset, cores, ports in [("altra", 80, 1), ("a72-quad", 4, 4), ("xeon-e3-1230v2", 4, 2),
                                 ("xeon-e3-1230v2-x540", 4, 2), ("i9-7940x-cx5", 14, 2),
                                 ("xeon-6226r-fpga", 16, 1)]:
        h = resolve({"app": "testpmd", "preset": preset})["host"]
        assert h["cpu"]["cores"] == cores, preset
        assert h["nic"]["nics"] * h["nic"]["ports_per_nic"] == ports, preset
        assert (h["cores"], h["ports"], h["queues"]) == (1, 1, 1)


def test_polls_per_packet_counts_every_rx_burst_and_falls_with_load():
    """Each rx_burst call is a poll, empty or not; a core with little to do
    polls many times per packet (here PCIe, not the core, limits the rate:
    even near it the core finds one packet per call)."""
    def pmd(rate: str) -> dict:
        r = hostsim.simulate({"preset": "xeon-e3-1230v2", "app": "l2fwd",
                              "host": {"ports": 2, "cores": 1},
                              "loadgen": {"size": 64, "rate": rate}, "sim": {"duration": "1ms"}})
        p = r["pmd"]
        calls = sum(p["rx_burst_packets"])
        received = sum(n * c for n, c in enumerate(p["rx_burst_packets"]))
        assert p["polls"] == calls + p["empty_polls"]
        assert p["polls_per_packet"] == pytest.approx(p["polls"] / received)
        return p
    light, heavy = pmd("1Mpps"), pmd("9Mpps")
    assert light["polls_per_packet"] > 10 * heavy["polls_per_packet"] > 10
