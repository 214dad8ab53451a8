"""The result store: computed points in an embedded DuckDB file, keyed by what determines them.

A point is one simulation (``kind = "run"``) or one bandwidth test
(``kind = "msb"``) of a fully resolved config. Its key is the SHA-256 of
the canonical JSON (sorted keys, no spaces) of the resolved config, the
seed, the kind, the bandwidth-test options and the model version
(``hostsim.__version__``): the same key means the same answer, so a sweep
run again computes only the points whose key is absent.

One table, ``points``, one row per key (columns in :data:`SCHEMA`). The
JSON columns hold the sweep's axis values of the point (``params``), the
resolved config, the bandwidth-test options and the result; the result
leaves out the config (it is in ``config``) and the wall-clock figures
(``wall_s``, ``packets_per_wall_s``), which live in the ``wall_s`` column,
so the stored result is the same on every machine and in every process.
``sweep``, ``idx`` and ``params`` are those of the sweep that computed the
point first. The summary columns (``msb_pps``, ``achieved_pps``, ...) make
the common queries one-liners::

    hostsim query "SELECT params, msb_pps / 1e6 AS mpps FROM points WHERE sweep = 'sizes' ORDER BY idx"

Each row is written by one ``INSERT`` (its own transaction) as the point
finishes, so a process killed at any moment leaves whole rows only; DuckDB
replays its write-ahead log on the next open. Only one process may open a
store for writing at a time (DuckDB's file lock); workers return results
to the process that owns the store. While it is open for writing no other
process can open it at all, not even to read: ``query`` and ``report``
during a sweep are refused with an error saying so.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple, Union

from .units import ConfigError

#: Where the store lives unless ``--store`` / ``Store(path)`` says otherwise (relative to the working directory).
DEFAULT_STORE = "hostsim.duckdb"

#: The ``points`` table, column by column.
SCHEMA: Tuple[Tuple[str, str, str], ...] = (
    ("key", "VARCHAR PRIMARY KEY", "SHA-256 of the canonical JSON of {config, seed, kind, options, model_version}"),
    ("sweep", "VARCHAR", "name of the sweep that computed the point"),
    ("idx", "INTEGER", "index of the point in that sweep"),
    ("kind", "VARCHAR", "run (one simulation) or msb (bandwidth test)"),
    ("params", "JSON", "the sweep's axis values of this point, dotted key to value"),
    ("config", "JSON", "the fully resolved config (the core's contract)"),
    ("options", "JSON", "bandwidth-test options (threshold, resolution, points, overload, max_trials); {} for run"),
    ("seed", "BIGINT", "the config's seed"),
    ("model_version", "VARCHAR", "hostsim version that computed the point"),
    ("result", "JSON", "the result without config and wall-clock figures"),
    ("msb_pps", "DOUBLE", "msb: MSB in packets/s (aggregate of the sending ports)"),
    ("msb_gbps", "DOUBLE", "msb: MSB in Gbit/s of Ethernet frames"),
    ("loss_rate", "DOUBLE", "run: loss rate; msb: the loss rate of the trial at the MSB"),
    ("achieved_pps", "DOUBLE", "run: achieved packets/s; msb: of the trial at the MSB"),
    ("achieved_gbps", "DOUBLE", "run: achieved Gbit/s; msb: of the trial at the MSB"),
    ("p99_ns", "DOUBLE", "run: p99 latency in ns; msb: of the trial at the MSB"),
    ("wall_s", "DOUBLE", "wall-clock seconds the point took to compute"),
    ("created", "TIMESTAMP", "when the row was written (UTC)"),
)
COLUMNS: Tuple[str, ...] = tuple(name for name, _, _ in SCHEMA)
JSON_COLUMNS = frozenset(name for name, kind, _ in SCHEMA if kind == "JSON")
SUMMARY_COLUMNS = ("msb_pps", "msb_gbps", "loss_rate", "achieved_pps", "achieved_gbps", "p99_ns")

#: Result fields that measure the machine, not the model; kept out of the stored result.
WALL_FIELDS = frozenset({"wall_s", "packets_per_wall_s", "represented_packets_per_wall_s"})

ALLOWED_STORE = "a path where a DuckDB file can be created or opened for writing, like the default hostsim.duckdb"


class StoreError(ConfigError):
    """The store cannot be opened or used; the message names the path and why."""

    def __init__(self, path: Union[str, "os.PathLike[str]"], message: str):
        super().__init__("store", f"{os.fspath(path)!r}: {message}")
        self.path = os.fspath(path)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: one text per value, the input of :func:`point_key`."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


# Settings of the resolved config that bound what a run may use, not what
# it computes: a point run under another limit is the same point.
RESOURCE_FIELDS = (("sim", "memory_limit_bytes"),)


def point_key(config: Mapping[str, Any], kind: str, options: Mapping[str, Any], model_version: str) -> str:
    """The store key of a point: SHA-256 over its resolved config (with
    :data:`RESOURCE_FIELDS` as if unset), seed, kind, options and model version."""
    config = dict(config)
    for section, name in RESOURCE_FIELDS:
        # As if unset (None, and not among the fields given), so the keys
        # of points stored without one stay.
        if isinstance(config.get(section), Mapping) and config[section].get(name) is not None:
            config[section] = {**config[section], name: None}
        if isinstance(config.get("given"), list):
            config["given"] = [g for g in config["given"] if g != f"{section}.{name}"]
    identity = {"config": config, "seed": config.get("seed"), "kind": kind,
                "options": dict(options), "model_version": model_version}
    return hashlib.sha256(canonical_json(identity).encode("utf-8")).hexdigest()


def stored_result(result: Mapping[str, Any]) -> Dict[str, Any]:
    """The result as stored: without ``config`` and without wall-clock fields, at any depth."""

    def strip(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: strip(v) for k, v in value.items() if k not in WALL_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip({k: v for k, v in result.items() if k != "config"})


def summary(kind: str, result: Mapping[str, Any]) -> Dict[str, Optional[float]]:
    """The summary columns of a result (``None`` where the kind has no such figure)."""
    out: Dict[str, Optional[float]] = {name: None for name in SUMMARY_COLUMNS}
    if kind == "msb":
        m = result["msb"]
        out["msb_pps"], out["msb_gbps"] = float(m["pps"]), float(m["bps"]) / 1e9
        point = (m.get("knee") or {}).get("below")
    else:
        point = result["loadgen"]
    if point:
        out["loss_rate"] = float(point["loss_rate"])
        out["achieved_pps"] = float(point["achieved_pps"])
        out["achieved_gbps"] = float(point["achieved_bps"]) / 1e9
        p99 = (point.get("latency_ns") or {}).get("p99")
        out["p99_ns"] = None if p99 is None else float(p99)
    return out


@dataclass
class Table:
    """What a query returned: column names and rows of plain values."""

    columns: List[str]
    rows: List[Tuple[Any, ...]]

    def dicts(self) -> List[Dict[str, Any]]:
        """The rows as dicts, column name to value."""
        return [dict(zip(self.columns, row)) for row in self.rows]


class Store:
    """An open result store (a DuckDB file); use as a context manager or call :meth:`close`.

    ``read_only`` opens an existing store without creating or changing it
    (a missing file is then an error).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"] = DEFAULT_STORE, read_only: bool = False):
        import duckdb

        self.path = os.fspath(path)
        self.read_only = read_only
        if read_only and not Path(self.path).is_file():
            raise StoreError(self.path, "no store here (a sweep creates it; pass --store PATH for another)")
        if not read_only:
            _check_writable(Path(self.path))
        try:
            self._db = duckdb.connect(self.path, read_only=read_only)
        except duckdb.Error as e:
            raise StoreError(self.path, _open_error(e, self.path, read_only)) from None
        try:
            if not read_only:
                columns = ", ".join(f"{name} {kind}" for name, kind, _ in SCHEMA)
                self._db.execute(f"CREATE TABLE IF NOT EXISTS points ({columns})")
            self._check_columns()
        except BaseException:
            self._db.close()
            raise

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the file (DuckDB checkpoints its log into it)."""
        self._db.close()

    # ------------------------------------------------------------ reading

    def keys(self, candidates: Optional[Iterable[str]] = None) -> Set[str]:
        """The stored keys, or those of ``candidates`` that are stored."""
        if not self._has_table():
            return set()
        if candidates is None:
            return {k for (k,) in self._read("SELECT key FROM points", []).fetchall()}
        wanted = sorted(set(candidates))
        if not wanted:
            return set()
        found = self._read("SELECT key FROM points WHERE list_contains(?, key)", [wanted]).fetchall()
        return {k for (k,) in found}

    def count(self) -> int:
        """The number of stored points."""
        if not self._has_table():
            return 0
        return int(self._read("SELECT count(*) FROM points", []).fetchone()[0])

    def rows(self, sweep: Optional[str] = None, keys: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
        """Stored points as dicts (JSON columns decoded), of one sweep or with the given keys; all by default."""
        if not self._has_table():
            return []
        where, args = [], []  # type: Tuple[List[str], List[Any]]
        if sweep is not None:
            where.append("sweep = ?")
            args.append(sweep)
        if keys is not None:
            where.append("list_contains(?, key)")
            args.append(list(keys))
        sql = "SELECT * FROM points" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY sweep, idx, key"
        cursor = self._read(sql, args)
        table = Table([d[0] for d in cursor.description], cursor.fetchall())
        return [{k: json.loads(v) if k in JSON_COLUMNS and v is not None else v for k, v in row.items()}
                for row in table.dicts()]

    def query(self, sql: str) -> Table:
        """Runs any SQL on the store and returns its columns and rows (JSON columns as text)."""
        return self._table(sql, [])

    def query_blocks(self, sql: str, block: int = 1000) -> Tuple[List[str], Iterator[List[Tuple[Any, ...]]]]:
        """Runs any SQL on the store; returns its columns and its rows in blocks
        of at most ``block``, fetched as they are read (a large result is never
        held whole)."""
        statement = _strip_sql(sql)
        if not statement:
            raise ConfigError.invalid("query", sql, "one SQL statement, e.g. \"SELECT sweep, count(*) FROM points GROUP BY sweep\"")
        cursor = self._run(statement, [])
        columns = [d[0] for d in cursor.description] if cursor is not None and cursor.description else []

        def blocks() -> Iterator[List[Tuple[Any, ...]]]:
            import duckdb

            while columns:
                try:
                    rows = cursor.fetchmany(block)
                except duckdb.Error as e:
                    raise ConfigError("query", f"{e} (in: {statement[:200]})") from None
                if not rows:
                    return
                yield rows

        return columns, blocks()

    def export(self, sql: str, path: Union[str, "os.PathLike[str]"], fmt: str) -> int:
        """Writes what ``sql`` returns to ``path`` as ``csv`` (with a header) or ``parquet``; returns the row count."""
        options = {"csv": "FORMAT CSV, HEADER", "parquet": "FORMAT PARQUET"}
        if fmt not in options:
            raise ConfigError.invalid("format", fmt, "csv or parquet")
        target = os.fspath(path).replace("'", "''")
        written = self._run(f"COPY ({_strip_sql(sql)}) TO '{target}' ({options[fmt]})", []).fetchone()
        return int(written[0]) if written else 0

    # ------------------------------------------------------------ writing

    def insert(self, row: Mapping[str, Any]) -> bool:
        """Writes one point in its own transaction; False when its key was already stored.

        ``row`` has every column of :data:`SCHEMA` but ``created`` (set here,
        UTC); JSON columns are given as Python values.
        """
        values = []
        for name in COLUMNS:
            if name == "created":
                values.append(datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None))
            elif name in JSON_COLUMNS:
                values.append(canonical_json(row[name]))
            else:
                values.append(row[name])
        marks = ", ".join("?" for _ in COLUMNS)
        changed = self._run(f"INSERT OR IGNORE INTO points ({', '.join(COLUMNS)}) VALUES ({marks})", values).fetchone()
        return bool(changed and changed[0])

    # ------------------------------------------------------------ helpers

    def _has_table(self) -> bool:
        found = self._read("SELECT count(*) FROM information_schema.tables WHERE table_name = 'points'", []).fetchone()
        return bool(found and found[0])

    def _check_columns(self) -> None:
        """A ``points`` table with other columns is another program's, not a store."""
        if not self._has_table():
            return
        have = [name for (name,) in self._read(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'points' ORDER BY ordinal_position", []).fetchall()]
        if have != list(COLUMNS):
            missing = [c for c in COLUMNS if c not in have]
            extra = [c for c in have if c not in COLUMNS]
            said = "; ".join(part for part in (f"missing {', '.join(missing)}" if missing else "",
                                               f"not a store's: {', '.join(extra)}" if extra else "") if part) or "in another order"
            raise StoreError(self.path, f"its points table has other columns than a hostsim store's ({said}) "
                                        f"(allowed: {ALLOWED_STORE})")

    def _read(self, sql: str, args: Sequence[Any]) -> Any:
        """The store's own statements: an error is a damaged file's, named by the store."""
        import duckdb

        try:
            return self._db.execute(sql, list(args))
        except duckdb.Error as e:
            raise StoreError(self.path, f"cannot be read ({str(e).splitlines()[0]}): the file is damaged or not a "
                                        f"hostsim store (allowed: {ALLOWED_STORE})") from None

    def _run(self, sql: str, args: Sequence[Any]) -> Any:
        import duckdb

        try:
            return self._db.execute(sql, list(args))
        except duckdb.Error as e:
            raise ConfigError("query", f"{e} (in: {sql.strip()[:200]})") from None

    def _table(self, sql: str, args: Sequence[Any]) -> Table:
        statement = _strip_sql(sql)
        if not statement:
            raise ConfigError.invalid("query", sql, "one SQL statement, e.g. \"SELECT sweep, count(*) FROM points GROUP BY sweep\"")
        cursor = self._run(statement, args)
        # A statement that returns no result set (DuckDB gives no cursor, or one without columns).
        columns = [d[0] for d in cursor.description] if cursor is not None and cursor.description else []
        return Table(columns, cursor.fetchall() if columns else [])


def _strip_sql(sql: str) -> str:
    """The statement without surrounding blanks and a trailing semicolon."""
    return sql.strip().rstrip(";").strip()


def _check_writable(path: Path) -> None:
    """A clear error before DuckDB's own when the store cannot be created at ``path``."""
    if path.is_dir():
        raise StoreError(path, f"is a directory (allowed: {ALLOWED_STORE})")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise StoreError(path, f"{os.fspath(parent)!r} is a file, not a directory (allowed: {ALLOWED_STORE})")
            break
    if not path.parent.exists():
        raise StoreError(path, f"directory {os.fspath(path.parent)!r} does not exist (allowed: {ALLOWED_STORE})")
    target = path if path.exists() else path.parent
    if not os.access(target, os.W_OK):
        raise StoreError(path, f"{os.fspath(target)!r} is not writable (allowed: {ALLOWED_STORE})")


#: DuckDB's words when another process holds the file ("Could not set lock
#: on file ...: Conflicting lock is held in ... (PID n)"); not any "lock"
#: (a damaged file's error may say "block").
_LOCKED = re.compile(r"could not set lock|conflicting lock", re.IGNORECASE)


def _open_error(e: Exception, path: str, read_only: bool) -> str:
    text = str(e)
    locked = _LOCKED.search(text) is not None
    if locked and read_only:
        # DuckDB's file lock keeps every other process out while one writes, readers included.
        pid = re.search(r"\(PID (\d+)\)", text)
        who = f"another process ({f'PID {pid.group(1)}, ' if pid else ''}such as a running sweep)"
        return (f"being written by {who}: DuckDB lets no other process open a store, "
                "not even to read it, until the writer ends; wait until it ends, or query a copy "
                f"(cp {shlex.quote(path)} copy.duckdb, then --store copy.duckdb), which may lack the latest points")
    if locked:
        return ("in use by another process (DuckDB lets one process write a store at a time; "
                "wait for it to finish or pass another --store)")
    return f"cannot open ({text.splitlines()[0]}) (allowed: {ALLOWED_STORE})"
