"""The hostsim command end to end, in a subprocess: outputs, tables and every bad-input path."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

FAST = ["--preset", "a72-quad", "--duration", "1ms", "--warmup", "100us", "--set", "sim.drain=100us"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_msb_writes_json_stats_and_plot(cli, tmp_path):
    proc = cli("msb", "--app", "reflector", "--set", "reflector.service_time=100ns",
               "--set", "reflector.queue_frames=4", "--size", "64", *FAST, "--no-progress",
               "--json", "out.json", "--stats", "stats.txt", "--plot", "curve.png", check=True)
    data = json.loads((tmp_path / "out.json").read_text())
    m = data["msb"]
    for key in ("bps", "pps", "threshold"):
        assert isinstance(m[key], (int, float)), key
    assert m["threshold"] == 0.01
    assert m["pps"] == pytest.approx(10e6, rel=0.0101)
    assert len(m["curve"]) == m["trials"] >= 5
    for point in m["curve"]:
        for key in ("offered_bps", "achieved_bps", "drop_rate", "loss_rate"):
            assert isinstance(point[key], (int, float)), key
        assert {"p50", "p99"} <= set(point["latency_ns"])
    assert data["config"]["reflector"]["service_time_ps"] == 100_000
    assert data["sim"]["seed"] == 1

    stats = (tmp_path / "stats.txt").read_text()
    assert stats.count("---------- Begin Simulation Statistics ----------") == m["trials"]
    assert stats.count("---------- End Simulation Statistics   ----------") == m["trials"]

    png = (tmp_path / "curve.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000

    # The printed table and the MSB line.
    assert "offered Gbps" in proc.stdout and "loss %" in proc.stdout
    msb_line = [line for line in proc.stdout.splitlines() if line.startswith("MSB: ")]
    assert len(msb_line) == 1
    assert f"{m['pps'] / 1e6:.2f} Mpps = {m['bps'] / 1e9:.2f} Gbps (64 B, threshold 1%" in msb_line[0]


def test_run_json_has_every_required_key(cli, tmp_path):
    proc = cli("run", *FAST, "--rate", "5Mpps", "--json", "run.json", "--stats", "stats.txt", check=True)
    data = json.loads((tmp_path / "run.json").read_text())
    lg = data["loadgen"]
    for key in ("tx_packets", "rx_packets", "drop_rate", "offered_bps", "achieved_bps", "offered_pps",
                "achieved_pps", "line_rate_pps"):
        assert isinstance(lg[key], (int, float)), key
    assert set(lg["latency_ns"]) >= {"min", "mean", "p50", "p90", "p99", "p999", "max", "std"}
    for key in ("simulated_ps", "wall_s", "packets_per_wall_s", "seed"):
        assert isinstance(data["sim"][key], (int, float)), key
    assert data["config"]["loadgen"]["rate"] == {"unit": "pps", "value": 5e6}
    assert lg["tx_packets"] == 4500
    # The readable table.
    for label in ("tx packets", "rx packets", "lost", "reordered", "drop rate", "offered", "achieved",
                  "line rate", "p99", "simulated"):
        assert label in proc.stdout, label
    assert "4,500" in proc.stdout
    assert (tmp_path / "stats.txt").read_text().count("Begin Simulation Statistics") == 1


def test_run_prints_warnings_on_stderr(cli):
    proc = cli("run", *FAST, "--rate", "300Gbps", check=True)
    assert "warning:" in proc.stderr and "line rate" in proc.stderr
    assert "warning:" not in proc.stdout, "results on stdout, warnings on stderr"


def test_settings_nothing_reads_and_consumed_frames_are_said(cli):
    # Flags of another application, and a frame size beside the memcached client: warnings, not silence.
    proc = cli("run", "--app", "l3fwd", "--forward-mode", "io", "--proc-time", "2us", "--duration", "100us",
               "--warmup", "20us", check=True)
    assert "host.app.forward_mode, host.app.proc_time set but not read by --app l3fwd" in proc.stderr
    proc = cli("run", "--app", "memcached", "--size", "1518", "--duration", "100us", "--warmup", "20us", check=True)
    assert "loadgen.size is ignored: with the memcached client" in proc.stderr
    # A consuming application's frames count where it consumed them, one way.
    proc = cli("run", "--app", "touchdrop", "--rate", "1Mpps", "--duration", "100us", "--warmup", "20us", check=True)
    assert "(consumed by the application)" in proc.stdout and "one way, to consumption" in proc.stdout
    proc = cli("run", "--app", "testpmd", "--rate", "1Mpps", "--duration", "100us", "--warmup", "20us", check=True)
    assert "consumed" not in proc.stdout and "one way" not in proc.stdout
    assert "not read by" not in proc.stderr


def test_a_setting_given_for_another_application_is_said_whatever_its_value(cli, tmp_path):
    # macswap is testpmd's default forwarding mode: given to l2fwd, it is still ignored.
    ignored = "host.app.forward_mode set but not read by --app l2fwd"
    short = ["--duration", "100us", "--warmup", "20us"]
    assert ignored in cli("run", "--app", "l2fwd", "--forward-mode", "macswap", *short, check=True).stderr
    assert ignored in cli("run", "--app", "l2fwd", "--set", "host.app.forward_mode=macswap", *short, check=True).stderr
    (tmp_path / "c.toml").write_text('app = "l2fwd"\n[host.app]\nforward_mode = "macswap"\n')
    assert ignored in cli("run", "--config", "c.toml", *short, check=True).stderr
    assert "not read by" not in cli("run", "--app", "testpmd", "--forward-mode", "macswap", *short, check=True).stderr


def test_applications_imply_their_traffic_and_a_silent_device_says_why(cli):
    from hostsim.config import resolve

    mc = resolve({"app": "memcached"})["loadgen"]
    assert mc["memcached"] is not None and mc["memcached"]["populate"]
    iperf = resolve({"app": "iperf", "stack": "kernel"})["loadgen"]
    assert (iperf["protocol"], iperf["dst_port"]) == ("tcp", 5201)
    assert resolve({"app": "iperf", "stack": "kernel", "loadgen": {"dst_port": 7}})["loadgen"]["dst_port"] == 7
    assert resolve({"app": "testpmd"})["loadgen"]["memcached"] is None
    proc = cli("run", "--app", "udp-echo", "--stack", "kernel", "--set", "loadgen.dst_port=4000",
               "--rate", "0.2Mpps", "--duration", "300us", "--warmup", "50us", check=True)
    assert "answered none of the" in proc.stderr and "no socket listens on UDP/TCP port 4000" in proc.stderr
    proc = cli("run", "--app", "memcached", "--set", "loadgen.memcached=false", "--rate", "0.2Mpps",
               "--duration", "300us", "--warmup", "50us", check=True)
    assert "not requests it serves" in proc.stderr


def test_config_file_flags_and_set_precedence(cli, tmp_path):
    (tmp_path / "c.toml").write_text('preset = "a72-quad"\nseed = 9\n[loadgen]\nrate = "1Mpps"\nflows = 2\n')
    proc = cli("inspect", "--config", "c.toml", "--rate", "2Mpps", "--set", "loadgen.flows=3", check=True)
    cfg = json.loads(proc.stdout)
    assert cfg["seed"] == 9
    assert cfg["link"]["rate_bps"] == 200 * 10**9
    assert cfg["loadgen"]["rate"] == {"unit": "pps", "value": 2e6}  # flag beats file
    assert cfg["loadgen"]["flows"] == 3  # --set beats file


def test_inspect_with_preset_shows_machine(cli, tmp_path):
    proc = cli("inspect", "--preset", "altra", check=True)
    out = json.loads(proc.stdout)
    assert out["preset"] == "altra"
    assert out["config"]["link"] == {"rate_bps": 100 * 10**9, "propagation_ps": 200 * 10**6}
    assert out["machine"]["frequency"] == {"value": "3GHz", "source": "spec §4"}
    assert "machine" not in out["config"]
    # Fed back with --config, the file is its config member: the same config comes out.
    given = cli("inspect", "--preset", "altra", "--app", "testpmd", "--rate", "2Mpps", check=True).stdout
    (tmp_path / "whole.json").write_text(given)
    again = json.loads(cli("inspect", "--config", "whole.json", check=True).stdout)
    assert again == json.loads(given)["config"]


def test_inspect_fields_lists_every_field(cli):
    out = cli("inspect", "--fields", check=True).stdout
    for name in ("reflector.service_time", "loadgen.size", "sim.warmup", "link.propagation", "seed"):
        assert name in out


def test_presets_lists_all_with_descriptions(cli):
    lines = cli("presets", check=True).stdout.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == ["altra", "altra-gem5", "a72-quad", "xeon-e3-1230v2", "xeon-e3-1230v2-x540", "i9-7940x-cx5", "xeon-6226r-fpga"]
    assert all(len(line.split()) > 3 for line in lines)
    assert "(default)" in lines[0]
    assert all(line.endswith("[host model]") for line in lines), "every preset has a host model"


BAD = [
    (["run", "--rate", "10Gbsp"], "loadgen.rate"),
    (["run", "--rate=-1Gbps"], "loadgen.rate"),
    (["run", "--rate", "0Mpps"], "loadgen.rate"),
    (["run", "--duration", "5 parsecs"], "sim.duration"),
    (["run", "--duration", "0ms"], "sim.duration"),
    (["run", "--duration", "1e400ms"], "sim.duration: invalid value '1e400ms' (allowed: <= 18446744073709551615 ps"),
    (["run", "--size", "63"], "loadgen.size"),
    (["run", "--size", "9217"], "loadgen.size"),
    (["run", "--flows", "0"], "loadgen.flows"),
    (["run", "--app", "testpmd", "--cores", "-1"], "host.cores: invalid value '-1' (allowed: 1 to 80 (host.cpu.cores"),
    (["run", "--preset", "cray-1"], "preset"),
    (["run", "--app", "redis"], "app"),
    (["run", "--seed", "abc"], "seed"),
    (["run", "--set", "reflector.sevice_time=1"], "reflector.sevice_time"),
    (["run", "--set", "link.rate=0Gbps"], "link.rate"),
    (["run", "--set", "novalue"], "--set"),
    (["msb", "--threshold", "1.5"], "--threshold"),
    (["msb", "--threshold=-1%"], "--threshold"),
    (["msb", "--threshold", "100%"], "--threshold"),
    (["msb", "--threshold", "lots"], "--threshold"),
    (["msb", "--resolution", "0"], "--resolution"),
    (["msb", "--max-trials", "0"], "--max-trials"),
    (["msb", "--points", "1.5"], "--points"),
    (["msb", "--jobs", "0"], "--jobs"),
    (["inspect", "--set", "loadgen.size=uniform:64-99999"], "loadgen.size"),
    (["run", "--config", "missing.toml"], "missing.toml"),
    # Output files are checked before anything is simulated (a search must not lose its result).
    (["msb", "--json", "no-such-dir/x.json"], "--json"),
    (["msb", "--stats", "no-such-dir/s.txt"], "--stats"),
    (["msb", "--plot", "curve.xyz"], "--plot"),
    (["run", "--capture-rx", "no-such-dir/rx.pcap"], "--capture-rx"),
]


@pytest.mark.parametrize("args, field", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_a_clean_error(cli, args, field):
    proc = cli(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"hostsim: error: {field}"), proc.stderr
    assert proc.stdout == ""


def test_a_bandwidth_test_option_is_named_by_its_flag_and_shown_as_typed(cli):
    proc = cli("msb", "--threshold", "150%")
    assert proc.stderr == ("hostsim: error: --threshold: invalid value '150%' (allowed: a loss rate from 0 to below 1, "
                           "as a fraction (0.01) or a percentage (1%); 0 is RFC 2544 throughput)\n")
    proc = cli("msb", "--overload", "1.5")
    assert proc.stderr.startswith("hostsim: error: --overload: invalid value '1.5' (allowed: a loss rate above 0 "
                                  "and below 1"), proc.stderr


def test_unknown_field_message(cli):
    proc = cli("run", "--set", "reflector.sevice_time=1")
    assert "unknown field 'reflector.sevice_time'" in proc.stderr
    assert "reflector.service, reflector.service_time, reflector.swap_pairs" in proc.stderr


def test_unwritable_capture_is_a_clean_error(cli):
    proc = cli("run", *FAST, "--capture-tx", "no-such-dir/tx.pcap")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "no-such-dir/tx.pcap" in proc.stderr and "--capture-tx" in proc.stderr


def test_usage_errors_exit_nonzero(cli):
    proc = cli("frobnicate")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    proc = cli("run", "--rate")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_installed_entry_point_runs():
    exe = os.path.join(os.path.dirname(sys.executable), "hostsim")
    if not os.path.exists(exe):
        exe = shutil.which("hostsim")
    if exe is None:
        pytest.skip("no hostsim entry point installed next to this Python")
    proc = subprocess.run([exe, "presets"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "altra" in proc.stdout
    proc = subprocess.run([exe, "run", "--flows", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("hostsim: error: loadgen.flows")


def test_msb_shows_a_progress_bar_on_stderr(cli):
    proc = cli("msb", *FAST, "--set", "reflector.queue_frames=4", "--resolution", "5%", check=True)
    assert "msb (at most 40): " in proc.stderr and " trials [" in proc.stderr
    assert "Traceback" not in proc.stderr
    quiet = cli("msb", *FAST, "--set", "reflector.queue_frames=4", "--resolution", "5%", "--no-progress",
                check=True)
    assert quiet.stderr == ""


def test_a_reader_that_goes_away_ends_the_output_quietly(tmp_path):
    # `hostsim params | head -1`: the pipe closes after one line; no error, exit 0.
    env = dict(os.environ, PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "hostsim", "params", "--preset", "altra"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    assert proc.stdout.read(10)
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert b"Broken pipe" not in err and b"Traceback" not in err, err


def test_outputs_that_are_directories_or_one_file_twice_are_refused_by_option(cli, tmp_path):
    """Checked before simulating: a directory, or two outputs into one file (the second would overwrite the first)."""
    proc = cli("run", "--duration", "200us", "--json", str(tmp_path))
    assert proc.returncode == 2 and "--json" in proc.stderr and "not a directory" in proc.stderr, proc.stderr
    same = str(tmp_path / "x.pcap")
    proc = cli("run", "--duration", "200us", "--capture-tx", same, "--capture-rx", same)
    assert proc.returncode == 2, proc.stderr
    assert "--capture-rx" in proc.stderr and "a file other than --capture-tx's" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "x.pcap").exists()


@pytest.mark.parametrize("flag, assignment", [
    (["--rate", "5Mpps"], "loadgen.rate=1Mpps"),
    (["--freq", "2GHz"], "host.cpu.freq_hz=3000000000"),
    (["--duration", "300us"], "sim.duration_ps=300000000"),
    (["--set", "loadgen.rate=2Gbps"], "loadgen.rate=1Gbps"),
])
def test_a_field_given_by_flag_and_by_set_is_refused(cli, flag, assignment):
    proc = cli("run", "--app", "testpmd", *flag, "--set", assignment)
    assert proc.returncode == 2, proc.stderr
    name = assignment.partition("=")[0]
    assert f"{name}: given twice, as {' '.join(flag)} and as --set {assignment}: give it once" in proc.stderr


@pytest.mark.parametrize("flag, value, field", [
    ("--rate", "-5Gbps", "loadgen.rate"),
    ("--duration", "-1ms", "sim.duration"),
    ("--seed", "-1", "seed"),
])
def test_a_negative_value_reaches_its_fields_range_check(cli, flag, value, field):
    # argparse alone would take "-5Gbps" for an option ("expected one argument").
    proc = cli("run", flag, value)
    assert proc.returncode == 2 and f"{field}: invalid value '{value}'" in proc.stderr, proc.stderr


def test_per_port_and_per_core_columns_line_up_whatever_the_widths():
    from hostsim.cli import core_rows, host_rows, port_rows

    def port(i, rx, core):
        return {"port": i, "nic": i, "rx_packets": rx, "tx_packets": rx, "drops": {"dma": 0, "core": core, "tx": 0}}

    def gen(offered, achieved, drop):
        return {"offered_pps": offered, "achieved_pps": achieved, "drop_rate": drop}

    def core(i, queues, packets, idle):
        return {"core": i, "queues": [{"rx_port": p, "rx_queue": 0} for p in queues], "packets": packets,
                "cycles_per_packet": {"total": 138.3, "idle": idle}}

    data = {"ports": [port(0, 21_134, 254_917), port(1, 9_000, 0)],
            "loadgen": {"ports": [gen(297.6e6, 14.38e6, 0.95168), gen(9e6, 6.79e6, 0.0)]},
            "cores": [core(0, [0], 21_581, 0.0), core(1, [1, 2], 9_002, 12.5)]}

    def columns(rows, words):
        at = [[r[1].index(w) for w in words] for r in rows]
        assert all(a == at[0] for a in at), "\n".join(r[1] for r in rows)

    columns(port_rows(data), ["achieved", "drop", "rx/tx", "dma/core/tx"])
    columns(core_rows(data), ["packets", "cycles/packet", "(idle"])
    nics = [{"iobus": {"up_util": 0.096, "down_util": 0.108, "pio_util": 0.001}, "ports": [0]},
            {"iobus": {"up_util": 0.067, "down_util": 0.074, "pio_util": 0.001}, "ports": [1]}]
    host = {"nic": {"rx_packets": 0, "tx_packets": 0, "rx_missed_errors": 0, "rx_nombuf": 0},
            "drops": {"dma": 0, "core": 0, "tx": 0}, "cpu": {"cycles_per_packet": {k: 0.0 for k in (
                "rx", "tx", "mempool", "app", "idle", "total")}},
            "pmd": {"rx_burst_packets": [0], "empty_polls": 0}, "nics": nics, "loadgen": {}}
    columns([r for r in host_rows(host) if "utilisation" in r[0]], ["down", "MMIO"])


def test_the_cycles_per_packet_line_adds_up_to_its_total():
    # Four cores sharing one queue spend cycles on buffer and cas, outside the PMD's usual four.
    from hostsim.cli import _cycle_parts

    cpp = {"app": 32.4, "buffer": 57.0, "cas": 57.6, "join": 0.0, "idle": 14.4, "mempool": 6.0, "rx": 55.1,
           "tx": 25.5, "total": 248.0}
    line = _cycle_parts(cpp, kernel=False)
    assert line == "rx 55.1  tx 25.5  mempool 6.0  app 32.4  buffer 57.0  cas 57.6  idle 14.4  total 248.0"
    parts = [float(v) for k, v in zip(line.split()[::2], line.split()[1::2]) if k != "total"]
    assert abs(sum(parts) - cpp["total"]) < 0.1


def test_the_tcp_sender_says_segments_built_and_sent_apart(cli):
    # With a lossy receiver most segments wait in the socket: built is not sent.
    p = cli("run", "--app", "tcp-send", "--stack", "kernel", "--set", "loadgen.tcp.drop=0.1",
            "--set", "loadgen.tcp.rtt=10us", "--set", "link.propagation=1us",
            "--set", "host.app.tcp_send.writes=2", "--duration", "3ms", "--warmup", "0", check=True)
    line = next(l for l in p.stdout.splitlines() if "TCP sender" in l)
    built, sent = [int(x.replace(",", "")) for x in
                   line.split("segments built ")[1].split("  ")[0].split(", sent ")]
    nic_tx = next(l for l in p.stdout.splitlines() if "NIC rx / tx" in l).split("/")[2].split()[0]
    assert sent == int(nic_tx.replace(",", "")) and built > sent, line


def test_a_resolved_config_keeps_its_presets_name_and_refuses_another(cli, tmp_path):
    out = cli("inspect", "--preset", "a72-quad", "--app", "testpmd", check=True).stdout
    (tmp_path / "rt.json").write_text(out)
    run = cli("run", "--config", "rt.json", "--duration", "200us", "--warmup", "50us", "--json", "r.json", check=True)
    assert "preset a72-quad" in run.stdout
    assert json.loads((tmp_path / "r.json").read_text())["preset"] == "a72-quad"
    other = cli("run", "--config", "rt.json", "--preset", "xeon-e3-1230v2", "--duration", "200us")
    assert other.returncode == 2 and "would change only the result's label" in other.stderr


@pytest.mark.parametrize("fidelity", ["full", "fast"])
def test_how_the_run_was_simulated_closes_the_table(cli, fidelity):
    out = cli("run", "--app", "testpmd", "--fidelity", fidelity, "--duration", "2ms", check=True).stdout
    names = [line.split("  ")[1].strip() for line in out.splitlines()[1:] if line.strip()]
    tail = ["simulated", "fidelity fast"] if fidelity == "fast" else ["simulated"]
    assert names.index("NIC rx / tx") < names.index("simulated") and names[-len(tail):] == tail, names
