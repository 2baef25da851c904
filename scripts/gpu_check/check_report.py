#!/usr/bin/env python3
"""Compares a trace's report with expectations written beside this script.

    check_report.py --tracer build/tools/tracer --trace run.trace \\
        --expect scripts/gpu_check/expect_nvtx_kernels.txt [--groups FILE]

An expectation file holds one check per line ('#' starts a comment):

    TABLE KEY COLUMN OP VALUE

TABLE is summary, ranges, kernels, range-kernels or groups; KEY picks the row
('-' for the summary's first process; a range or group name, exactly; a
kernel name, as a substring of the short name; RANGE/KERNEL for
range-kernels); OP is one of = >= <= >; VALUE is an integer or TABLE.KEY.COLUMN
of another row (e.g. summary.-.kernels). A row that is missing counts as 0
for '=' checks of 0, else as a difference.

Prints every difference, then the facts a developer records when comparing
real CUPTI with the fake (counts, attribution sources, drops, the launch API
callbacks seen). Exit status: 0 when everything matched, 1 otherwise.
Without --expect it prints the facts only (for the fake's scenarios).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

TABLES = {
    "summary": "summary",
    "ranges": "ranges",
    "kernels": "kernels",
    "range-kernels": "range-kernels",
    "groups": "groups",
}


def report(tracer: str, trace: str, table: str, fmt: str, extra: list[str]) -> str:
    cmd = [tracer, "report", trace, "--table", table, "--format", fmt, "--top", "0"] + extra
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def rows_of(text: str) -> list[dict]:
    data = json.loads(text)
    if isinstance(data, dict):  # several tables: {name: rows}
        data = next(iter(data.values()), [])
    return data


def find_row(rows: list[dict], table: str, key: str) -> dict | None:
    if table == "summary":
        return rows[0] if rows else None
    if table in ("ranges", "groups"):
        col = "range" if table == "ranges" else "group"
        return next((r for r in rows if r.get(col) == key), None)
    if table == "kernels":
        return next((r for r in rows if key in str(r.get("kernel", ""))), None)
    if table == "range-kernels":
        rng, _, kernel = key.partition("/")
        return next((r for r in rows
                     if r.get("range") == rng and kernel in str(r.get("kernel", ""))), None)
    raise ValueError(f"unknown table {table}")


class Checker:
    def __init__(self, tracer: str, trace: str, groups: str | None) -> None:
        self.tracer, self.trace, self.groups = tracer, trace, groups
        self.cache: dict[str, list[dict]] = {}

    def rows(self, table: str) -> list[dict]:
        if table not in self.cache:
            extra = ["--groups", self.groups] if table == "groups" and self.groups else []
            self.cache[table] = rows_of(report(self.tracer, self.trace, TABLES[table], "json", extra))
        return self.cache[table]

    def value(self, table: str, key: str, column: str) -> float | None:
        row = find_row(self.rows(table), table, key)
        if row is None:
            return None
        v = row.get(column)
        return 0 if v is None or v == "" else float(v)

    def resolve(self, token: str) -> float | None:
        if re.fullmatch(r"-?\d+(\.\d+)?", token):
            return float(token)
        table, key, column = token.split(".", 2)
        return self.value(table, key, column)


OPS = {
    "=": lambda a, b: a == b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
}


def fmt(v: float | None) -> str:
    if v is None:
        return "(no row)"
    return str(int(v)) if float(v).is_integer() else f"{v:.3f}"


def run_checks(checker: Checker, expect_path: str) -> tuple[int, int]:
    checked = differ = 0
    with open(expect_path, encoding="utf-8") as f:
        for line_no, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 5 or parts[0] not in TABLES or parts[3] not in OPS:
                print(f"  {expect_path}:{line_no}: cannot read '{line}'")
                differ += 1
                continue
            table, key, column, op, want_text = parts
            checked += 1
            got = checker.value(table, key, column)
            want = checker.resolve(want_text)
            if got is None and op == "=" and want == 0:
                continue  # no row: nothing of that kind, as expected
            if got is None or want is None or not OPS[op](got, want):
                differ += 1
                print(f"  DIFFERS {table} {key} {column}: got {fmt(got)}, expected {op} "
                      f"{want_text}" + (f" ({fmt(want)})" if want_text != fmt(want) else "")
                      + f"   [{expect_path.rsplit('/', 1)[-1]}:{line_no}]")
    return checked, differ


def print_facts(checker: Checker, label: str) -> None:
    s = checker.rows("summary")
    if s:
        r = s[0]
        print(f"  {label}: " + ", ".join(
            f"{c} {r.get(c)}" for c in ("ranges", "kernels", "memcpys", "memsets", "api_calls",
                                        "unattributed_ops", "ops_outside_ranges",
                                        "inherited_ops", "dropped")))
    # The attribution sources and drop causes are in the summary's notes.
    text = report(checker.tracer, checker.trace, "summary", "text", [])
    for line in text.splitlines():
        if line.startswith(("Process", "---")):
            continue  # the table's header, not a note
        if re.search(r"attributed by|dropped|CUPTI|unavailable|warning", line, re.I):
            print(f"  {label} note: " + line.strip())
    # Which launch callbacks real CUPTI raised (the fake assumes nvcc's <<<>>>
    # arrives as __cudaLaunchKernel_v13000 and graphs as cudaGraphLaunch).
    try:
        api = rows_of(report(checker.tracer, checker.trace, "api", "json", []))
    except RuntimeError:
        api = []
    for r in api:
        name = str(r.get("function", ""))
        if re.search(r"Launch|Graph|Memcpy|Memset", name):
            print(f"  {label} api: {name} ({r.get('api', '?')}) x{r.get('calls', '?')}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tracer", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--expect", help="expectations file; none: print the facts only")
    p.add_argument("--groups")
    p.add_argument("--label", default="facts", help="prefix of the fact lines")
    args = p.parse_args()
    checker = Checker(args.tracer, args.trace, args.groups)
    try:
        if not args.expect:
            print_facts(checker, args.label)
            return 0
        checked, differ = run_checks(checker, args.expect)
        print_facts(checker, args.label)
    except (RuntimeError, ValueError, json.JSONDecodeError) as e:
        print(f"  ERROR {e}")
        return 1
    print(f"  {checked} checks, {differ} differ")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
