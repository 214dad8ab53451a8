"""``hostsim study NAME`` and ``hostsim study --list``."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any, store_default: str) -> None:
    """Adds the ``study`` subcommand to the CLI's subparsers."""
    from ..cli import RAY_HELP

    st = sub.add_parser("study", help="run a packaged study: its sweeps, table and figures (--list names them)")
    st.add_argument("name", metavar="NAME", nargs="?", help="the study (see --list)")
    st.add_argument("--list", dest="list", action="store_true", help="list the studies and their point counts")
    st.add_argument("--out", "-o", default="study-out", metavar="DIR",
                    help="folder for the table and figures, one subfolder per study (default study-out)")
    st.add_argument("--store", default=store_default, metavar="PATH",
                    help=f"result store, a DuckDB file (default {store_default})")
    st.add_argument("--jobs", "-j", default="1", help="worker processes (default 1: run in this process)")
    st.add_argument("--ray", metavar="ADDRESS", help=RAY_HELP)
    st.add_argument("--quick", action="store_true",
                    help="first and last value of each axis, short trials (a smoke run, not a result)")
    st.add_argument("--fidelity", default="full",
                    help="full (every frame, the default) or fast (every run and trial a sample, the rest predicted; "
                         "the README's 'Fast mode')")
    st.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    st.set_defaults(func=cmd_study)


def cmd_study(args: argparse.Namespace) -> int:
    from ..cli import _console, _integer_or_text, executor_from_args
    from ..executor import check_jobs
    from ..units import ConfigError
    from . import format_table, get, names, run_study

    if args.list or not args.name:
        if not args.list:
            raise ConfigError("study", "name a study (allowed: " + ", ".join(names()) + "; --list describes them)")
        for name in names():
            s = get(name)
            print(f"{name:<18} {s.points():>3} points  {s.title}")
        return 0
    jobs = check_jobs(_integer_or_text(args.jobs), "--jobs")
    with executor_from_args(jobs, args.ray) as executor:
        run = run_study(args.name, out=args.out, store=args.store, jobs=jobs, progress=args.progress,
                        console=_console(stderr=True), quick=args.quick, executor=executor,
                        fidelity=args.fidelity)
    n = run.counts
    tags = [t for t, on in (("quick", args.quick), ("fidelity fast", args.fidelity == "fast")) if on]
    print(f"study {args.name}{' (' + ', '.join(tags) + ')' if tags else ''}: {run.study.title}")
    print(format_table(run.table))
    for path in run.figures:
        print(f"wrote {path}")
    print(f"{sum(n.values())} points: {n['computed']} computed, {n['cached']} cached, {n['failed']} failed "
          f"(store {args.store}); {run.wall_s:.1f} s wall")
    return 1 if n["failed"] else 0
