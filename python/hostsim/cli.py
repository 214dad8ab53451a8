"""The ``hostsim`` command: ``run``, ``msb``, ``sweep``, ``query``, ``study``, ``report``, ``presets``,
``inspect``, ``params``, ``validate``, ``bench``.

Configs come from, lowest precedence first: defaults, the preset
(``--preset``), a config file (``--config``), the common flags (``--rate``,
``--size``...), then every ``--set dotted.key=value`` in order (the value is
read as JSON when it parses as JSON, else as a string). Bad input prints
``hostsim: error: <field>: ...`` and exits with status 2; no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import host as _host
from . import presets as _presets
from .config import (Config, apps, apply_assignments, config_file, field_docs, field_key, inspected_preset,
                     parse_assignment, resolve, size_label)
from .units import ConfigError

#: Common flags and the config field each one sets.
FLAG_FIELDS = (
    ("preset", "preset"),
    ("app", "app"),
    ("stack", "stack"),
    ("size", "loadgen.size"),
    ("rate", "loadgen.rate"),
    ("duration", "sim.duration"),
    ("warmup", "sim.warmup"),
    ("fidelity", "sim.fidelity"),
    ("seed", "seed"),
    ("flows", "loadgen.flows"),
    ("interarrival", "loadgen.interarrival"),
    ("protocol", "loadgen.protocol"),
    ("capture_tx", "loadgen.capture_tx"),
    ("capture_rx", "loadgen.capture_rx"),
    ("pcap", "loadgen.trace.path"),
    ("forward_mode", "host.app.forward_mode"),
    ("burst", "host.pmd.burst"),
    ("rxd", "host.pmd.rxd"),
    ("txd", "host.pmd.txd"),
    ("freq", "host.cpu.freq"),
    ("proc_time", "host.app.proc_time"),
    ("ports", "host.ports"),
    ("queues", "host.queues"),
    ("cores", "host.cores"),
    ("bind", "host.bind"),
    ("rx_sharing", "host.rx_sharing"),
    ("port_topology", "host.app.port_topology"),
    ("traffic", "loadgen.traffic"),
    ("flow_skew", "loadgen.flow_skew"),
    ("address", "loadgen.address"),
)

EXIT_USAGE = 2

RAY_HELP = ("run the points on a Ray cluster: HOST:PORT of a head started with `ray start --head`, auto, or "
            "local (a cluster of --jobs CPUs in this process); needs the ray package")


def _config_flags() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("configuration")
    g.add_argument("--config", metavar="FILE", help="TOML, YAML or JSON config file")
    g.add_argument("--preset", help="machine preset (see `hostsim presets`; default altra)")
    g.add_argument("--app", help="device under test: " + ", ".join(apps()))
    g.add_argument("--stack", help="network stack of a host application: pmd or kernel")
    g.add_argument("--size", help="frame size(s): 64, 64,128,256, imix or uniform:64-1518")
    g.add_argument("--rate", help="offered load: 10Gbps, 5Mpps or 50%% of line rate")
    g.add_argument("--duration", help="transmit time, warm-up included (e.g. 1ms)")
    g.add_argument("--warmup", help="unmeasured leading time (e.g. 100us)")
    g.add_argument("--fidelity", help="full (every frame, the default) or fast (a sample of the window, "
                                      "the rest predicted: see the README's 'Fast mode')")
    g.add_argument("--seed", help="random seed")
    g.add_argument("--flows", help="number of flows")
    g.add_argument("--flow-skew", dest="flow_skew", help="Zipf exponent of flow popularity (0, the default: flows in turn)")
    g.add_argument("--interarrival", help="constant or poisson")
    g.add_argument("--protocol", help="udp or raw")
    g.add_argument("--capture-tx", dest="capture_tx", metavar="FILE", help="write transmitted frames to pcap")
    g.add_argument("--capture-rx", dest="capture_rx", metavar="FILE", help="write received frames to pcap")
    g.add_argument("--pcap", metavar="FILE",
                   help="replay this pcap/pcapng trace (loadgen.trace.path; more with --set loadgen.trace.*)")
    h = p.add_argument_group("host (host applications; names as in testpmd)")
    h.add_argument("--forward-mode", dest="forward_mode", help="testpmd forwarding mode: " + ", ".join(_host.FORWARD_MODES))
    h.add_argument("--burst", help="packets per rx_burst/tx_burst (host.pmd.burst)")
    h.add_argument("--rxd", help="RX ring descriptors (host.pmd.rxd)")
    h.add_argument("--txd", help="TX ring descriptors (host.pmd.txd)")
    h.add_argument("--freq", help="core clock, e.g. 2GHz (host.cpu.freq)")
    h.add_argument("--proc-time", dest="proc_time", help="rxptx processing interval per received burst (or per packet with --set host.app.proc_per=packet), e.g. 1us (host.app.proc_time)")
    h.add_argument("--ports", help="NIC ports in use, one generator port each (host.ports)")
    h.add_argument("--queues", help="RX/TX queue pairs per port, spread by RSS (host.queues; testpmd --rxq/--txq)")
    h.add_argument("--cores", help="cores running the stack (host.cores; testpmd --nb-cores)")
    h.add_argument("--bind", help="which core serves which queue, as l3fwd --config: '(port,queue,core),...' "
                                  "(host.bind; default: testpmd's map)")
    h.add_argument("--rx-sharing", dest="rx_sharing",
                   help="how the cores share one RX queue: none, arbitration, range or parent_worker "
                        "(host.rx_sharing; needs host.nic.queue_model=connectx, as on i9-7940x-cx5)")
    h.add_argument("--port-topology", dest="port_topology",
                   help="forwarding port of each port: paired (0<->1, default), chained or loop (testpmd --port-topology)")
    g.add_argument("--traffic", help="which generator ports send: bidir (all, default), uni (0, 2, ...) or mesh")
    g.add_argument("--address", help="whose addresses the frames carry: host (default) or stations "
                                     "(the stations across the host, as a switch or router is tested)")
    g.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set any config field, e.g. reflector.service_time=100ns or host.mem.dram.channels=2 "
                        "(repeatable)")
    return p


def _output_flags() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("output")
    g.add_argument("--json", metavar="FILE", help="write the result as JSON")
    g.add_argument("--stats", metavar="FILE", help="write a gem5-style stats.txt")
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hostsim", description="Simulate a server's network datapath with a hardware-style load generator."
    )
    parser.add_argument("--version", action="version", version=f"hostsim {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    common, outputs = _config_flags(), _output_flags()

    run = sub.add_parser("run", parents=[common, outputs], help="run one simulation")
    run.set_defaults(func=cmd_run)

    msb = sub.add_parser("msb", parents=[common, outputs], help="bandwidth test: find the MSB and the curve")
    g = msb.add_argument_group("bandwidth test")
    g.add_argument("--threshold", default="1%", help="largest acceptable loss rate: 1%%, 0.01 or 0 (default 1%%)")
    g.add_argument("--resolution", default="0.5%", help="relative search resolution (default 0.5%%)")
    g.add_argument("--points", default="0", help="extra evenly spaced trials for the curve")
    g.add_argument("--overload", default="0.5%",
                   help="trials warm up until an excess of threshold + this would show as loss (default 0.5%%)")
    g.add_argument("--max-trials", dest="max_trials", default="40", help="cap on search trials (default 40)")
    g.add_argument("--plot", metavar="FILE", help="write the bandwidth-vs-drop curve (PNG or SVG)")
    g.add_argument("--jobs", "-j", default="1",
                   help="trials at once: N > 1 makes the search k-ary with k = N, on N worker processes "
                        "(default 1: a bisection in this process)")
    g.add_argument("--ray", metavar="ADDRESS",
                   help="run each round's trials on a Ray cluster: HOST:PORT of a head, auto, or local; --jobs "
                        "(2 or more) sets how many trials a round has; needs the ray package")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    msb.set_defaults(func=cmd_msb)

    pre = sub.add_parser("presets", help="list machine presets")
    pre.set_defaults(func=cmd_presets)

    ins = sub.add_parser("inspect", parents=[common], help="print the fully resolved config")
    ins.add_argument("--fields", action="store_true", help="list every config field with its default")
    ins.set_defaults(func=cmd_inspect)

    par = sub.add_parser("params", help="print every default and preset value with its unit and source")
    par.add_argument("--preset", help=f"machine preset (default {_presets.DEFAULT_PRESET})")
    par.add_argument("--missing", action="store_true", help="list only fields without a source; exit 1 if any")
    par.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    par.set_defaults(func=cmd_params)

    _sweep_parsers(sub)

    sch = sub.add_parser("schema", help="print the JSON Schema of the core's config contract (what `inspect` prints)")
    sch.set_defaults(func=cmd_schema)

    val = sub.add_parser("validate", help="run the public calibration checks and every calibration target; print simulated vs reference")
    val.add_argument("--json", metavar="FILE", help="also write the checks and targets as JSON")
    val.add_argument("--checks-only", action="store_true", help="only the core's closed-form checks (seconds), not the calibration targets")
    val.add_argument("--strict", action="store_true", help="exit 1 when a calibration target is outside its tolerance too")
    val.set_defaults(func=cmd_validate)

    cal = sub.add_parser("calibrate", help="fit the model's unknown constants to the calibration targets (seeded, re-runnable)")
    cal.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 unless the fit reproduces the built core's fitted values exactly")
    cal.add_argument("--out", metavar="FILE", help="where to write the fitted values (default: the core's host/fitted.json)")
    cal.add_argument("--report", metavar="FILE", help="where to write the report (default: docs/reference/calibration.md)")
    cal.set_defaults(func=cmd_calibrate)

    ben = sub.add_parser("bench", help="the standard workloads' simulated packets per wall-clock second, peak RSS and MSB")
    ben.add_argument("--only", action="append", metavar="TEXT", help="only workloads whose name contains TEXT (repeatable)")
    ben.add_argument("--no-msb", action="store_true", help="skip the MSB searches (speed and RSS only)")
    ben.add_argument("--rss", action="store_true", help="also TestPMD 64 B's peak RSS at 10 ms and 1 s simulated")
    ben.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    ben.add_argument("--runs", type=int, default=1, metavar="N",
                     help="run each workload N times; its row is the median run's (default 1)")
    ben.set_defaults(func=cmd_bench)
    return parser


def _sweep_parsers(sub: Any) -> None:
    """``hostsim sweep``, ``query``, ``study`` and ``report`` (the result store)."""
    from .store import DEFAULT_STORE

    store_help = f"result store, a DuckDB file (default {DEFAULT_STORE} in the working directory)"
    sw = sub.add_parser("sweep", help="run the points of a sweep file that are not in the result store")
    sw.add_argument("file", metavar="FILE", help="sweep file (TOML, YAML or JSON): base config, axes, kind")
    sw.add_argument("--store", default=DEFAULT_STORE, metavar="PATH", help=store_help)
    sw.add_argument("--jobs", "-j", default="1", help="worker processes (default 1: run in this process)")
    sw.add_argument("--ray", metavar="ADDRESS", help=RAY_HELP)
    sw.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    sw.add_argument("--dry-run", dest="dry_run", action="store_true",
                    help="list the points and which are in the store; compute nothing")
    sw.set_defaults(func=cmd_sweep)

    q = sub.add_parser("query", help="run SQL on the result store (table points); print it or export it")
    q.add_argument("sql", metavar="SQL", help="e.g. \"SELECT sweep, idx, params, msb_pps FROM points ORDER BY idx\"")
    q.add_argument("--store", default=DEFAULT_STORE, metavar="PATH", help=store_help)
    out = q.add_mutually_exclusive_group()
    q.add_argument("--limit", type=int, default=1000, metavar="N",
                   help="print at most N rows (default 1000; 0: all, streamed); the count is of every row")
    out.add_argument("--csv", metavar="FILE", help="write the rows to a CSV file (with a header) instead")
    out.add_argument("--parquet", metavar="FILE", help="write the rows to a Parquet file instead")
    q.set_defaults(func=cmd_query)

    from .studies.command import add_parser as add_study_parser

    add_study_parser(sub, DEFAULT_STORE)

    rep = sub.add_parser("report", help="write one self-contained HTML page of every sweep in the result store")
    rep.add_argument("--store", default=DEFAULT_STORE, metavar="PATH", help=store_help)
    rep.add_argument("--out", "-o", default="report.html", metavar="FILE", help="the page (default report.html)")
    rep.add_argument("--title", help="the page's title (default: hostsim report: <store file name>)")
    rep.set_defaults(func=cmd_report)


def _version() -> str:
    from . import __version__

    return __version__


def config_from_args(args: argparse.Namespace) -> Config:
    """The validated Config the flags describe."""
    made_for = inspected_preset(args.config) if args.config else None
    if made_for is not None and getattr(args, "preset", None) not in (None, made_for):
        raise ConfigError("preset", f"--preset {args.preset} would change only the result's label: {args.config} is preset "
                                    f"{made_for}'s resolved config (hostsim inspect), every host field set; drop --preset, "
                                    f"or start from hostsim inspect --preset {args.preset}")
    cfg = config_file(args.config) if args.config else Config()
    given = {}
    for flag, dotted in FLAG_FIELDS:
        value = getattr(args, flag, None)
        if value is not None:
            cfg.set(dotted, value)
            given[field_key(dotted)] = f"--{flag.replace('_', '-')} {value}"
    for text in args.set or ():
        name = parse_assignment(text)[0]
        if field_key(name) in given:
            raise ConfigError(name, f"given twice, as {given[field_key(name)]} and as --set {text}: give it once")
        given[field_key(name)] = f"--set {text}"

    apply_assignments(cfg, args.set)
    resolve(cfg)
    return cfg


def _integer_or_text(text: str) -> Any:
    """A flag's text as an integer when it is one (``--points 3``), else as typed, for the option's own check."""
    try:
        return int(text.strip())
    except ValueError:
        return text


# ---------------------------------------------------------------- commands


def _check_outputs(args: argparse.Namespace) -> None:
    """Files the command will write, checked before it simulates: a
    search of minutes must not end in an error that loses its result."""
    seen: Dict[Path, str] = {}
    for dest, option in (("json", "--json"), ("stats", "--stats"), ("plot", "--plot"),
                         ("capture_tx", "--capture-tx"), ("capture_rx", "--capture-rx")):
        path = getattr(args, dest, None)
        if not path:
            continue
        target = Path(path).expanduser().resolve()
        if target.is_dir():
            raise ConfigError.invalid(option, path, "a file name, not a directory")
        if target in seen:
            raise ConfigError.invalid(option, path, f"a file other than {seen[target]}'s (each output writes its own file)")
        seen[target] = option
        parent = target.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise ConfigError.invalid(option, path, f"a file in an existing, writable directory ({parent} is not one)")
        if dest == "plot":
            from matplotlib.backend_bases import FigureCanvasBase

            kinds = FigureCanvasBase.get_supported_filetypes()
            if Path(path).suffix.lstrip(".").lower() not in kinds:
                raise ConfigError.invalid(option, path, "a file name ending in " + ", ".join(f".{k}" for k in sorted(kinds)))


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import simulate

    _check_outputs(args)
    cfg = config_from_args(args)
    result = simulate(cfg)
    _write_outputs(result, args)
    print(format_run(result.to_dict()))
    _print_warnings(result.warnings)
    return 0


def _print_warnings(warnings: List[str]) -> None:
    """Warnings go to stderr; results to stdout and files."""
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)


def cmd_msb(args: argparse.Namespace) -> int:
    from .executor import check_jobs
    from .msb import check_option, msb

    _check_outputs(args)
    cfg = config_from_args(args)
    # Each option checked here, so that an error names the flag and shows the value as typed.
    options: Dict[str, Any] = {
        name: check_option(name, _integer_or_text(getattr(args, name)), "--" + name.replace("_", "-"))
        for name in ("threshold", "resolution", "points", "max_trials", "overload")}
    jobs = check_jobs(_integer_or_text(args.jobs), "--jobs")
    options.update(progress=args.progress, jobs=jobs)
    if args.ray is None:
        result = msb(cfg, **options)  # jobs > 1: msb's own pool, kept for every round
    else:
        if jobs == 1:  # the bisection runs in this process: nothing would go to the cluster
            raise ConfigError.invalid("--jobs", args.jobs, "an integer >= 2 with --ray: the trials a round of the "
                                                         "k-ary search sends to the cluster")
        # A round's trials are tasks on the cluster; only a local cluster takes its CPU count from --jobs.
        with executor_from_args(jobs if args.ray.strip() == "local" else 1, args.ray) as executor:
            result = msb(cfg, executor=executor, **options)
    _write_outputs(result, args)
    if args.plot:
        from .plot import plot_msb

        plot_msb(result, args.plot)
    print(format_msb(result.to_dict()))
    _print_warnings(result.warnings)
    return 0


def _console(stderr: bool = False) -> Any:
    """A rich console; unbounded when not a terminal, so tables in files and pipes are not squeezed."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 100_000)


def cmd_sweep(args: argparse.Namespace) -> int:
    from .executor import check_jobs
    from .sweep import counts, load_sweep, points_table, run_sweep

    jobs = check_jobs(_integer_or_text(args.jobs), "--jobs")
    sweep = load_sweep(args.file)
    with executor_from_args(jobs, args.ray) as executor:
        rows = run_sweep(sweep, store=args.store, jobs=jobs, progress=args.progress,
                         console=None if args.dry_run else _console(stderr=True), dry_run=args.dry_run,
                         executor=executor)
    n = counts(rows)
    print(f"sweep {sweep.name}: {len(rows)} points ({sweep.kind})")
    _console().print(points_table(rows, [a.key for a in sweep.axes]))
    if args.dry_run:
        print(f"{len(rows)} points: {n['cached']} cached, {n['pending']} to compute (store {args.store})")
    else:
        print(f"{len(rows)} points: {n['computed']} computed, {n['cached']} cached, {n['failed']} failed "
              f"(store {args.store})")
    return 1 if n["failed"] else 0


@contextlib.contextmanager
def executor_from_args(jobs: int, ray: Optional[str]) -> Iterator[Any]:
    """The executor of ``--jobs`` and ``--ray``, closed (a Ray connection dropped) on the way out."""
    from .executor import make_executor

    executor = make_executor(jobs, ray)
    try:
        yield executor
    finally:
        close = getattr(executor, "close", None)
        if close is not None:
            close()


def cmd_query(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table as RichTable

    from .store import Store

    if args.limit < 0:
        raise ConfigError.invalid("--limit", args.limit, "0 (every row) or more")
    with Store(args.store, read_only=True) as db:
        target, fmt = (args.csv, "csv") if args.csv else (args.parquet, "parquet")
        if target:
            print(f"wrote {db.export(args.sql, target, fmt)} rows to {target}")
            return 0
        # Read and printed a block at a time: a huge result is never held whole.
        columns, blocks = db.query_blocks(args.sql, block=QUERY_BLOCK)
        shown = total = 0
        for rows in blocks:
            total += len(rows)
            room = len(rows) if args.limit == 0 else max(0, min(len(rows), args.limit - shown))
            if room:
                table = RichTable(box=box.SIMPLE_HEAD, show_edge=False, show_header=shown == 0)
                for name in columns:
                    table.add_column(name, overflow="ellipsis", no_wrap=True, max_width=64)
                for row in rows[:room]:
                    table.add_row(*("NULL" if v is None else str(v) for v in row))
                _console().print(table)
                shown += room
        if shown == 0 and columns:
            table = RichTable(box=box.SIMPLE_HEAD, show_edge=False)
            for name in columns:
                table.add_column(name)
            _console().print(table)
    more = f" ({shown} shown: --limit N shows N, --limit 0 all, --csv FILE writes them)" if shown < total else ""
    print(f"{total} rows{more}")
    return 0


#: Rows ``hostsim query`` fetches and prints at a time.
QUERY_BLOCK = 1000


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    s = write_report(args.store, args.out, title=args.title)
    print(f"wrote {s.path}: {s.sweeps} sweeps, {s.points} points, {s.figures} figures, {s.bytes} bytes "
          f"(store {s.store})")
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    width = max(len(n) for n in _presets.names())
    hosts = set(_host.host_presets())
    for name in _presets.names():
        mark = " (default)" if name == _presets.DEFAULT_PRESET else ""
        mark += " [host model]" if name in hosts else ""
        print(f"{name:<{width}}  {_presets.PRESETS[name].description}{mark}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from . import validate

    _check_outputs(args)
    return validate.main(args.json, targets=not args.checks_only, strict=args.strict)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from . import calibration

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    for option, path in (("--out", args.out), ("--report", args.report)):
        if path and (Path(path).is_dir() or not Path(path).expanduser().resolve().parent.is_dir()):
            raise ConfigError.invalid(option, path, "a file in an existing directory")
    return calibration.calibrate(out=Path(args.out) if args.out else None,
                                 report=Path(args.report) if args.report else None, check=args.check, log=log)


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench

    _check_outputs(args)
    return bench.main(args.only, not args.no_msb, args.rss, args.json, args.runs)


def cmd_params(args: argparse.Namespace) -> int:
    from . import params

    _check_outputs(args)
    return params.main(args.preset, args.missing, args.json)


def cmd_schema(args: argparse.Namespace) -> int:
    from .runner import core

    print(json.dumps(json.loads(core().config_schema()), indent=2))
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    if args.fields:
        docs = field_docs()
        width = max(len(k) for k in docs)
        for name, doc in docs.items():
            print(f"{name:<{width}}  {doc}")
        _print_host_fields(_presets.DEFAULT_PRESET if args.preset is None else args.preset)
        return 0
    cfg = config_from_args(args)
    resolved = resolve(cfg)
    if args.preset is not None:
        preset = _presets.get(cfg.preset_name())
        out: Dict[str, Any] = {"preset": preset.name, "config": resolved, "machine": preset.machine_dict()}
        if "host" in resolved:
            out["host"] = resolved["host"]
        elif preset.name in _host.host_presets():
            out["host"] = _host.resolve_host(preset.name, cfg.host)
        print(json.dumps(out, indent=2))
    else:
        print(json.dumps(resolved, indent=2))
    return 0


def _print_host_fields(preset: str) -> None:
    """The host model's fields with the preset's values (the core owns them)."""
    host = _host.preset_host(preset)
    if host is None:
        print(f"(preset {preset} has no host model; host fields: see a preset among {', '.join(_host.host_presets())})")
        return
    print(f"host fields (values of preset {preset}; a *_hz/_ps/_bytes/_bytes_per_s field also takes its stem "
          "and a unit string, e.g. host.cpu.freq=2GHz):")
    fields = _host.flatten(host)
    width = max(len(k) for k in fields)
    for name, value in fields.items():
        print(f"{name:<{width}}  {value!r}")


def _write_outputs(result: Any, args: argparse.Namespace) -> None:
    if args.json:
        result.write_json(args.json)
    if args.stats:
        result.write_stats(args.stats)


# ---------------------------------------------------------------- tables


def _rows(rows: List[List[str]], right: Sequence[bool]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _predicted_drops(sample: Dict[str, Any]) -> str:
    """The fast run's predicted drops by fate, and whether an overflow sample saw them."""
    p = sample["predicted"]
    parts = [f"{k} {v:,}" for k, v in sorted(p.get("drops", {}).items(), key=lambda kv: -kv[1]) if v]
    if p.get("unclassified_drops"):
        parts.append(f"unclassified {p['unclassified_drops']:,}")
    if not parts:
        return ""
    o = sample.get("overflow") or {}
    seen = (f"; an overflow sample of {o['window_ps'] / 1e9:.4f} ms saw the buffers full" if o.get("sampled") and o.get("dropped")
            else "; no sample saw the buffers full" if o and not o.get("sampled") else "")
    return f", drops {', '.join(parts)}{seen}"


def _links(sending: int, rate_gbps: float) -> str:
    """The links a line rate is over: one, or the sending ports' links together."""
    return f"{rate_gbps:g} Gbps link" if sending == 1 else f"{sending} × {rate_gbps:g} Gbps links"


def _ns(value: Any) -> str:
    return "-" if value is None else f"{value:,.1f}"


def format_run(data: Dict[str, Any]) -> str:
    """The readable table ``hostsim run`` prints."""
    lg, sim, cfg = data["loadgen"], data["sim"], data["config"]
    lat = lg["latency_ns"]
    rate_gbps = cfg["link"]["rate_bps"] / 1e9
    # Frames an application consumed (touchdrop, rxonly) count as received
    # where they were consumed, and their latency is one way.
    measured = (data.get("accounting") or {}).get("measured") or {}
    consumed, returned = measured.get("consumed", 0), measured.get("returned", 0)
    how = ("" if not consumed else f"  (consumed by the application{'' if not returned else f' {consumed:,}, returned {returned:,}'})")
    one_way = "" if not consumed else ("  one way, to consumption" if not returned else "  one way for consumed frames")
    rows = [
        ["tx packets", f"{lg['tx_packets']:,}"],
        ["rx packets", f"{lg['rx_packets']:,}{how}"],
        ["lost", f"{lg['lost_packets']:,}"],
        ["in flight", f"{lg['in_flight_packets']:,}"],
        ["reordered", f"{lg['reordered_packets']:,}"],
        ["drop rate", f"{lg['drop_rate'] * 100:.4f} %  (loss rate {lg['loss_rate'] * 100:.4f} %: dropped or in flight)"],
        ["offered", f"{lg['offered_bps'] / 1e9:.4f} Gbps  {lg['offered_pps'] / 1e6:.4f} Mpps"],
        ["achieved", f"{lg['achieved_bps'] / 1e9:.4f} Gbps  {lg['achieved_pps'] / 1e6:.4f} Mpps"],
        ["line rate", f"{lg['line_rate_pps'] / 1e6:.4f} Mpps ({_links(lg.get('sending_ports', 1), rate_gbps)})"],
        ["latency (ns)", f"min {_ns(lat.get('min'))}  mean {_ns(lat.get('mean'))}  max {_ns(lat.get('max'))}"
                         f"  std {_ns(lat.get('std'))}{one_way}"],
        ["percentiles (ns)", f"p50 {_ns(lat.get('p50'))}  p90 {_ns(lat.get('p90'))}  p99 {_ns(lat.get('p99'))}"
                             f"  p99.9 {_ns(lat.get('p999'))}"],
    ]
    # How the run was simulated closes the table, whatever comes between.
    tail = [["simulated", f"{sim['simulated_ps'] / 1e9:.4f} ms in {sim['wall_s']:.3f} s wall"
                          f" ({sim['packets_per_wall_s'] / 1e6:.2f} M packets/s)"]]
    sample = sim.get("sample") or {}
    if sample.get("sampled"):
        p = sample["predicted"]
        tail.append(["fidelity fast", f"warm-up {sample['warmup_ps'] / 1e9:.4f} ms, then a {sample['window_ps'] / 1e9:.4f} ms "
                     f"sample of the {sample['represented_window_ps'] / 1e9:.4f} ms window: the counts above are the "
                     f"sample's; predicted for the window: {p['tx_packets']:,} sent, loss rate {p['loss_rate'] * 100:.4f} %, "
                     f"buffers +{p['backlog_growth_frames']:,} frames{_predicted_drops(sample)} "
                     f"({sample['represented_packets_per_wall_s'] / 1e6:.2f} M packets of the run per wall-s)"])
    elif sample:
        tail.append(["fidelity fast", f"not sampled, every frame simulated: {sample['why']}"])
    if "trace_frames" in lg:
        rows += [["trace", f"{lg['trace_frames_sent']:,} frames sent ({lg['trace_frames']:,} in the trace, "
                                 f"{lg['trace_passes']:,} complete passes)  oversize {lg['trace_oversize_frames']:,}"
                                 f"  filtered {lg['trace_filtered_frames']:,}  rx untagged {lg['rx_untagged_packets']:,}"]]
    if "memcached" in lg:
        m = lg["memcached"]
        rows += [["memcached", f"{m['requests']:,} requests  {m['replies']:,} replies  hits {m['hits']:,}"
                                     f"  misses {m['misses']:,}  stored {m['stored']:,}  errors {m['errors']:,}"
                                     f"  timeouts {m['timeouts']:,}  {m['rps'] / 1e6:.4f} M requests/s"]]
    if "tcp" in lg:
        rows += tcp_send_rows(data)
    if "drops" in data:
        rows += host_rows(data)
    rows += tail
    trace = cfg["loadgen"].get("trace")
    traffic = f"trace {os.path.basename(trace['path'])}" if trace else size_label(cfg["loadgen"]["size"])
    if cfg["loadgen"].get("tcp"):
        traffic = "TCP receiver (ACKs)"
    if cfg["loadgen"].get("memcached"):
        closed = cfg["loadgen"].get("closed_loop")
        traffic = "memcached client" + (f", closed loop of {closed['outstanding']}" if closed else "")
    head = (f"hostsim run: {cfg['app']}, {traffic}, "
            f"preset {data.get('preset', '?')}, seed {sim['seed']}")
    body = "\n".join("  " + line for line in _rows(rows, [False, False]).splitlines())
    return "\n".join([head, body])


def _dist_us(d: Mapping[str, Any], what: str) -> str:
    if not d.get("count"):
        return f"no {what} after the warm-up"
    return (f"mean {d['mean_ps'] / 1e6:.1f}  p50 {d['p50_ps'] / 1e6:.1f}  p99 {d['p99_ps'] / 1e6:.1f}"
            f"  max {d['max_ps'] / 1e6:.1f} us ({d['count']:,} {what})")


def tcp_send_rows(data: Mapping[str, Any]) -> List[List[str]]:
    """Table rows for ``--app tcp-send``: the receiver's goodput and the writer's figures."""
    s = data["loadgen"]["tcp"]
    # The receiver counts the measured window's arrivals; the sender from the
    # warm-up's end to the run's (the drain included).
    rows = [["TCP receiver", f"in the measured window: goodput {s['goodput_bps'] / 1e9:.3f} Gbps  segments {s['segments']:,}"
                             f"  lost {s['dropped_segments']:,}  out of order {s['out_of_order_segments']:,}"
                             f"  duplicates {s['duplicate_segments']:,}  ACKs {s['acks']:,}"]]
    t = (data.get("kernel") or {}).get("tcp_send")
    if t:
        rows += [
            ["TCP sender", f"after the warm-up, drain included: writes completed {t['writes']:,} ({t['writes_total']:,} in all"
                           + (f", {t['writes_unfinished']:,} unfinished" if t.get("writes_unfinished") else "")
                           + f") of {t['buffer_bytes']:,} B  acked {t['bytes_acked']:,} B"
                           f"  segments built {t['segments']:,}, sent {t['transmissions']:,}"
                           f"  retransmissions {t['retransmissions']:,}"
                           f"  (fast {t['fast_retransmits']:,}, timeouts {t['timeouts']:,})"],
            ["write() time", _dist_us(t["write_time"], "writes")],
            ["buffer held", _dist_us(t["hold_time"], "buffers")],
        ]
    return rows


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def host_rows(data: Dict[str, Any]) -> List[List[str]]:
    """Table rows for a host application: NIC, drop breakdown, cycles, memory and PCIe."""
    nic, drops, cpu, pmd = data["nic"], data["drops"], data["cpu"], data["pmd"]
    mem, nics = data.get("mem", {}), data.get("nics", [])
    lost = drops["dma"] + drops["core"] + drops["tx"]
    cpp = cpu["cycles_per_packet"]
    kernel = data.get("kernel")
    calls = pmd["rx_burst_packets"]
    burst_calls = sum(calls)
    burst_mean = sum(i * n for i, n in enumerate(calls)) / burst_calls if burst_calls else 0.0
    dram = mem.get("dram", {})
    return [
        ["NIC rx / tx", f"{nic['rx_packets']:,} / {nic['tx_packets']:,} packets"
                        f"  rx_missed_errors {nic['rx_missed_errors']:,}  rx_nombuf {nic['rx_nombuf']:,}"],
        ["drops", f"DmaDrops {drops['dma']:,} ({_pct(drops['dma'], lost)})  CoreDrops {drops['core']:,} "
                  f"({_pct(drops['core'], lost)})  TxDrops {drops['tx']:,} ({_pct(drops['tx'], lost)})"],
        ["cycles/packet", _cycle_parts(cpp, kernel is not None)],
    ] + ([
        ["kernel", f"irqs {kernel['irqs']:,}  NAPI polls {kernel['napi_polls']:,}  ksoftirqd rounds "
                   f"{kernel['ksoftirqd_rounds']:,}  context switches {kernel['context_switches']:,}  syscalls "
                   f"{kernel['syscalls']:,}"],
        ["kernel drops", f"socket (RcvbufErrors) {drops['socket']:,}  no port {drops['no_port']:,}"
                         f"  qdisc {drops['qdisc']:,}"],
    ] if kernel else []) + ([
        # Two spans: the goodput is the window's segments (the generator's); the bytes are the device's
        # count, from the first measured frame's arrival to the end of the drain.
        ["TCP", f"goodput {_goodput_gbps(data):.3f} Gbps (segments sent in the measured window)  "
                f"{kernel['tcp_payload_bytes']:,} payload bytes read by the application (device span, drain "
                f"included)  GRO skbs {kernel['gro_skbs']:,} ({kernel['datagrams_received'] / kernel['gro_skbs']:.1f} "
                f"segments each)  ACKs {kernel['tcp_acks_sent']:,}"],
    ] if kernel and kernel.get("gro_skbs") else []) + [
        ["NAPI poll" if kernel else "rx_burst", f"{burst_mean:.1f} packets per call (mean of {burst_calls:,} calls, "
                     f"{pmd['empty_polls']:,} empty polls"
                     + (f"; {pmd['polls_per_packet']:.2f} polls per packet" if pmd.get("polls_per_packet") else "")
                     + ")"],
        ["DCA", f"allocs {mem.get('dca_allocs', 0):,} (for lines a core held {mem.get('dca_held_writes', 0):,})"
                f"  updates {mem.get('dca_updates', 0):,}  leaks {mem.get('dca_leaks', 0):,}"
                f"  write hit rate {mem.get('dca_write_hit_rate', 0.0) * 100:.1f} %"],
        ["DRAM bytes", f"device read {dram.get('bytes_read_device', 0):,} written {dram.get('bytes_written_device', 0):,}"
                       f"  core read {dram.get('bytes_read_core', 0):,} written {dram.get('bytes_written_core', 0):,}"],
    ] + [
        [_pcie_label(d, n, len(nics)), line]
        for d, (n, line) in enumerate(zip(nics, _aligned([_io_util(n) for n in nics]) if nics else []))
    ] + port_rows(data) + core_rows(data)


def _pcie_label(d: int, nic: Dict[str, Any], count: int) -> str:
    what = "I/O crossbar utilisation" if "iobus" in nic else "PCIe utilisation"
    if count < 2:
        return what
    ports = nic.get("ports", [])
    return f"{what} (NIC {d}, port{'s' if len(ports) != 1 else ''} {','.join(str(p) for p in ports)})"


def _io_util(nic: Dict[str, Any]) -> List[Tuple[str, str, str]]:
    """Per-direction utilisation of the NIC's PCIe link, or of gem5's I/O crossbar layers (fields for :func:`_aligned`)."""
    x = nic.get("iobus", nic.get("pcie", {}))
    names = (("up", "up_util"), ("down", "down_util")) + ((("MMIO", "pio_util"),) if "iobus" in nic else ())
    out = [(name, f"{x.get(k, 0.0) * 100:.1f}", "%") for name, k in names]
    # Each DMA read's latency, issue to last byte at the device (pcie-bench's LAT_DMA_RD span).
    lat = x.get("read_latency", {})
    out += [(f"{kind} read", f"{lat[kind]['mean_ns']:.0f}", "ns") for kind in ("descriptor", "payload") if kind in lat]
    return out


def port_rows(data: Dict[str, Any]) -> List[List[str]]:
    """One row per port, per-port generator figures beside the NIC's, when there are several."""
    ports, gen = data.get("ports", []), data["loadgen"].get("ports", [])
    if len(ports) < 2:
        return []
    fields = []
    for p, g in zip(ports, gen):
        d = p["drops"]
        fields.append([("offered", f"{g['offered_pps'] / 1e6:.4f}", "Mpps"),
                       ("achieved", f"{g['achieved_pps'] / 1e6:.4f}", "Mpps"),
                       ("drop", f"{g['drop_rate'] * 100:.3f}", "%"),
                       ("rx/tx", f"{p['rx_packets']:,}/{p['tx_packets']:,}", ""),
                       ("dma/core/tx drops", f"{d['dma']:,}/{d['core']:,}/{d['tx']:,}", "")])
    labels = [f"port {p['port']} (NIC {p['nic']})" for p in ports]
    return [[label, line] for label, line in zip(labels, _aligned(fields))]


def core_rows(data: Dict[str, Any]) -> List[List[str]]:
    """One row per core (its queues, packets, cycles per packet), when there are several."""
    cores = data.get("cores", [])
    if len(cores) < 2:
        return []
    fields, labels = [], []
    roles = [(c.get("pmd") or {}).get("role", "") for c in cores]
    shared = [role in ("claimant", "area", "parent", "worker") for role in roles]
    for c, role, own in zip(cores, roles, shared):
        # port/queue, as testpmd's streams print them (RX P=0/Q=1), not read as a decimal
        queues = " ".join(f"{q['rx_port']}/{q['rx_queue']}" for q in c["queues"])
        cpp = c["cycles_per_packet"]
        parts = "".join(f", {k} {cpp[k]:.1f}" for k in ("rx", "buffer", "cas", "join") if own and cpp.get(k, 0) > 0)
        row = [("", role if own else "", "", False)] if any(shared) else []
        row += [("queues", queues, "", False), ("", f"{c['packets']:,}", "packets"),
                ("", f"{cpp['total']:.1f}", f"cycles/packet (idle {cpp['idle']:.1f}{parts})")]
        fields.append(row)
        labels.append(f"core {c['core']}")
    return [[label, line] for label, line in zip(labels, _aligned(fields))]


def _cycle_parts(cpp: Dict[str, float], kernel: bool) -> str:
    """The cycles per packet by category: the stack's usual ones always, any
    other that is not zero (a shared queue's buffer, cas and join, the
    pipeline's ring), then idle and the total, so the parts add up to it."""
    usual = (("irq", "rx", "skb", "mempool", "proto", "sched", "syscall", "copy", "app", "qdisc", "tx") if kernel
             else ("rx", "tx", "mempool", "app"))
    others = tuple(k for k, v in cpp.items() if k not in usual + ("idle", "total") and v > 0)
    return "  ".join(f"{k} {cpp[k]:.1f}" for k in usual + others + ("idle", "total"))


def _aligned(rows: List[List[Tuple[Any, ...]]]) -> List[str]:
    """Rows of fields ``(name, value, unit[, right])`` as lines whose columns line
    up: each value padded to the widest in its column (right-aligned unless
    ``right`` is False), names and units padded likewise, fields two spaces apart."""
    cols = len(rows[0])
    width = [[max(len(r[i][k]) for r in rows) for k in range(3)] for i in range(cols)]
    lines = []
    for r in rows:
        cells = []
        for (name, value, unit, *right), (wn, wv, wu) in zip(r, width):
            value = value.rjust(wv) if (right or [True])[0] else value.ljust(wv)
            cells.append(" ".join(t for t, w in ((name.ljust(wn), wn), (value, wv), (unit.ljust(wu), wu)) if w))
        lines.append("  ".join(cells).rstrip())
    return lines


def _goodput_gbps(data: Dict[str, Any]) -> float:
    """TCP payload of the window's segments delivered to the application, per second of the window."""
    return data["loadgen"].get("goodput_bps", 0.0) / 1e9


def _curve_cells(p: Dict[str, Any], host: bool, kernel: bool = False) -> List[str]:
    cells = [
        f"{p['offered_bps'] / 1e9:.4f}",
        f"{p['offered_pps'] / 1e6:.4f}",
        f"{p['achieved_bps'] / 1e9:.4f}",
        f"{p['loss_rate'] * 100:.3f}",
        _ns(p["latency_ns"].get("p50")),
        _ns(p["latency_ns"].get("p99")),
    ]
    if host:
        d = p.get("drops", {})
        cell = f"{d.get('dma', 0)}/{d.get('core', 0)}/{d.get('tx', 0)}"
        if kernel:
            cell += f"/{d.get('socket', 0) + d.get('no_port', 0) + d.get('qdisc', 0)}"
        cells.append(cell)
    verdict = "pass" if p["passed"] else "fail"
    if not p["passed"] and p.get("backlog_growth_rate", 0.0) > 0:
        verdict += f" (backlog +{p['backlog_growth_rate'] * 100:.2f} %)"
    return cells + [verdict]


def _confirmations_clause(checks: Optional[List[Dict[str, Any]]]) -> str:
    """The trials line's clause on a fast search's confirmations (none at the full fidelity)."""
    if not checks:
        return ""
    passed = sum(c["passed"] for c in checks)
    warm = [c["warmup_ps"] / 1e9 for c in checks]
    span = f"{min(warm):.3g} ms" if min(warm) == max(warm) else f"{min(warm):.3g}-{max(warm):.3g} ms"
    return (f"; {len(checks)} confirmation{'s' if len(checks) > 1 else ''} with the full rule's warm-up "
            f"({span}): {passed} passed, {len(checks) - passed} failed")


def format_msb(data: Dict[str, Any]) -> str:
    """The curve table and MSB line ``hostsim msb`` prints."""
    from .msb import TABLES_REASON
    m, cfg = data["msb"], data["config"]
    host = any("drops" in p for p in m["curve"])
    rows = [["offered Gbps", "offered Mpps", "achieved Gbps", "loss %", "p50 ns", "p99 ns", ""]]
    kernel = cfg.get("stack") == "kernel"
    if host:
        rows[0][-1:-1] = ["dma/core/tx/kernel drops" if kernel else "dma/core/tx drops"]
    for p in m["curve"]:
        rows.append(_curve_cells(p, host, kernel))
    trace = cfg["loadgen"].get("trace")
    size = f"trace {os.path.basename(trace['path'])}, {m['mean_frame_bytes']:.1f} B mean" if trace else size_label(cfg["loadgen"]["size"])
    if cfg["loadgen"].get("memcached"):
        size = f"memcached requests, {m['mean_frame_bytes']:.1f} B mean"
    if cfg.get("stack") == "kernel":
        size += ", kernel stack"
    search = m.get("search")
    # A k-ary search's trials overlap: their wall times add up to more than the test took.
    n = f"{m['trials']} trial{'' if m['trials'] == 1 else 's'}"
    trials = (f"{n}, k-ary search: {search['rounds']} rounds of {search['k']}, "
              f"{data['sim']['wall_s']:.2f} s wall summed over trials" if search else
              f"{n}, {data['sim']['wall_s']:.2f} s wall")
    found = m["knee"]["below"] is not None
    above = m["bracket"]["above_pps"]
    # No trial passed: the MSB is only bounded above (by the lowest failing rate).
    value = (f"{m['pps'] / 1e6:.2f} Mpps = {m['bps'] / 1e9:.2f} Gbps" if found or not above else
             f"below {above / 1e6:.4g} Mpps (no trial passed)")
    line = f"MSB: {value} ({size}, threshold {m['threshold'] * 100:g}%, {trials})"
    out = [_rows(rows, [True] * (len(rows[0]) - 1) + [False]), line]
    trial = m.get("trial")
    if trial:
        # The search's trials; a fast search's confirmations have their own clause.
        points = [p for p in m["curve"] if "warmup_ps" in p and not p.get("confirmation")]
        lo, hi = (f(p["warmup_ps"] / 1e9 for p in points) for f in (min, max))
        warm = f"{lo:.3g} ms" if lo == hi else f"{lo:.3g}-{hi:.3g} ms"
        # Say why only when a rule lengthened some trial beyond sim.warmup.
        fast = trial.get("fidelity") == "fast"
        lengthened = any(p["warmup_reason"] != "sim.warmup" for p in points)
        tables = any(p["warmup_reason"].startswith(TABLES_REASON) for p in points)
        why = ("" if not lengthened else
               f" (until {trial['warmup_frames']} frames, one per buffer, flow and populated key, were sent"
               + (", or longer until the application's tables stopped growing)" if tables else ")")
               if fast else f" (until {trial['buffer_frames']} buffered frames are full)")
        windows = [p.get("window_ps", trial["window_ps"]) / 1e9 for p in points]
        window = (f"{windows[0]:.3g} ms" if min(windows) == max(windows) else f"{min(windows):.3g}-{max(windows):.3g} ms")
        sampled = (f" (fidelity fast: each trial simulates {trial['sample_frames']} frames of its window "
                   f"and predicts any rest)") if fast else ""
        out.append(f"trials: warm-up {warm}{why}, window {window}{sampled}; "
                   f"bracket {m['bracket']['below_pps'] / 1e6:.4f}-"
                   + (f"{m['bracket']['above_pps'] / 1e6:.4f} Mpps" if m["bracket"]["above_pps"] else "line rate")
                   + ("" if m.get("monotonic", True) else "; NOT monotonic")
                   + _confirmations_clause(m.get("confirmations")))
    for p in m.get("ports", []):
        d = p["drops"]
        out.append(f"  port {p['port']} (NIC {p['nic']}): offered {p['offered_pps'] / 1e6:.2f} Mpps, "
                   f"achieved {p['achieved_pps'] / 1e6:.2f} Mpps, loss {p['loss_rate'] * 100:.3f} %, "
                   f"dma/core/tx drops {d['dma']}/{d['core']}/{d['tx']}")
    return "\n".join(out)


def _negative_values_joined(argv: Sequence[str]) -> List[str]:
    """``--rate -5Gbps`` → ``--rate=-5Gbps``: argparse takes a value that
    starts with ``-`` and a digit for an option and says only "expected one
    argument"; joined, the value reaches its field's own range check. No
    option of the command starts with a digit."""
    out: List[str] = []
    for tok in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and re.match(r"-\.?\d", tok):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``hostsim`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(_negative_values_joined(sys.argv[1:] if argv is None else argv))
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # The reader went away (`hostsim params | head`): stop quietly, as other
        # command-line tools do; stdout is pointed at /dev/null so the
        # interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ConfigError, ValueError, OSError, RuntimeError) as e:
        print(f"hostsim: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("hostsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
