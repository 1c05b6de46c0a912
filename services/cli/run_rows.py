"""`runs list --format csv|json|parquet`: the runs as rows for scripts, the columns of the client's
runs_frame (clients.frames: run_id ... cap_usd_micro, tags.KEY, spec.a.b, summary.KEY), through a
server or on a database file alike. CSV and JSON go to stdout (or --output FILE) and need no
extra; Parquet is binary, so it is written to --output FILE only, and needs the `frames` extra.

JSON is a list of objects, each with every column (null where the run has no value); CSV has a
header row, an empty field for no value and true/false for booleans. Times are ISO 8601 in UTC.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from services.cli.output import Failure

__all__ = ["FORMATS", "add_format_options", "as_rows", "write_rows"]

FORMATS = ("table", "csv", "json", "parquet")


def add_format_options(listed: argparse.ArgumentParser) -> None:
    """--format and --output of `runs list`."""
    listed.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table for people (default); csv, json or parquet rows for scripts (docs/frames.md)",
    )
    listed.add_argument("--output", default="", metavar="FILE", help="write the rows to FILE (parquet needs one)")


def as_rows(args: argparse.Namespace) -> bool:
    """Whether `runs list` writes rows (--format other than table) rather than a table."""
    if args.format == "table":
        if args.output:
            raise Failure("--output takes --format csv, json or parquet")
        return False
    if args.json:
        raise Failure(f"--json and --format {args.format}: choose one")
    if args.format == "parquet" and not args.output:
        raise Failure("--format parquet is binary: give --output FILE")
    if args.output and Path(args.output).is_dir():  # Said before anything is read.
        raise Failure(f"--output {args.output} is a folder: name a file")
    return True


def write_rows(args: argparse.Namespace, records: Sequence[Mapping[str, Any]], more: bool) -> None:
    """The runs' rows (clients.frames.run_record) in --format, to --output or stdout; when more runs
    matched than --limit, a line on stderr says so. A write that fails is a Failure naming where."""
    from clients.frames import columns_of

    columns = columns_of(records)
    if args.format == "parquet":
        data = _parquet(records)
    else:
        data = (_json(records, columns) if args.format == "json" else _csv(records, columns)).encode("utf-8")
    try:
        if args.output:
            Path(args.output).write_bytes(data)
        else:
            sys.stdout.write(data.decode("utf-8"))
            sys.stdout.flush()
    except BrokenPipeError:  # `runs list --format csv | head`: main's to end quietly.
        raise
    except OSError as error:  # A full disk, a folder made meanwhile, no permission: one line, not a trace.
        where = args.output or "stdout"
        raise Failure(f"cannot write the rows to {where}: {error.strerror or error}", status=1) from None
    if more:
        print(f"trainledger: more runs matched than --limit {args.limit}; raise --limit for all", file=sys.stderr)


def _parquet(records: Sequence[Mapping[str, Any]]) -> bytes:
    from clients.frames import parquet_bytes, runs_frame_of
    from clients.integrations.extras import MissingExtra

    try:
        return parquet_bytes(runs_frame_of(records))
    except MissingExtra as missing:
        raise Failure(str(missing)) from None


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _json(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    rows = [{name: _plain(record.get(name)) for name in columns} for record in records]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def _field(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(_plain(value))


def _csv(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow([_field(record.get(name)) for name in columns])
    return buffer.getvalue()
