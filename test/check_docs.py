#!/usr/bin/env python3
"""Fails on drift between the source and the docs (issue 35, point 18).

- the version the README and docs/operations.md call current is
  partheal.control's default_version;
- every SQLSTATE the source raises (pg::fail, errcode, the error constants of
  src/errors.hpp, the extension script's RAISE ... USING ERRCODE) has a row in
  docs/reference.md's SQLSTATE table, and every row there is raised by the
  source or is named below as PostgreSQL's own, passed through unchanged;
- every log code (PHLnn) the source writes has a row in the log-code table,
  and back; and docs/operations.md's summary of the ranges is the source's.

The columns of the views are checked against reference.md by 013_readme.pl,
which has a server to ask.
"""
import glob
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
failures = []


def read(path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def check(ok, what):
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        failures.append(what)


# PostgreSQL's include of this build, for the codes behind ERRCODE_* names.
def errcodes():
    include = os.environ.get("PG_INCLUDEDIR_SERVER") or os.popen(
        "pg_config --includedir-server").read().strip()
    codes = {}
    for m in re.finditer(r"#define (ERRCODE_\w+) MAKE_SQLSTATE\('(.)','(.)','(.)','(.)','(.)'\)",
                         open(os.path.join(include, "utils", "errcodes.h")).read()):
        codes[m.group(1)] = "".join(m.group(2, 3, 4, 5, 6))
    return codes


control = read("partheal.control")
version = re.search(r"^default_version = '([^']+)'", control, re.M).group(1)
for doc in ["README.md", "docs/operations.md"]:
    said = re.findall(r"current version is (?:\*\*)?`?(\d+\.\d+)", read(doc))
    check(said and all(v == version for v in said),
          f"{doc} calls {', '.join(sorted(set(said))) or 'no version'} current, partheal.control {version}")
check("id-range" not in control, "partheal.control's comment does not say the tables are id-range only")

sources = {p: read(p) for p in glob.glob("src/**/*.[ch]pp", root_dir=root, recursive=True)}
names = errcodes()
own = {}  # partheal's constants, from src/errors.hpp
for m in re.finditer(r"constexpr int (k\w+) = MAKE_SQLSTATE\('(.)', '(.)', '(.)', '(.)', '(.)'\)",
                     sources["src/errors.hpp"]):
    own[m.group(1)] = "".join(m.group(2, 3, 4, 5, 6))

# Codes the source raises, not the ones it only compares a caught error with.
raised = {}
for path, text in sources.items():
    for m in re.finditer(r"(?:\bfail|\berrcode|\bPgError|make_errordata)\s*\(\s*(ERRCODE_\w+|k[A-Z]\w+)", text):
        code = names.get(m.group(1)) or own.get(m.group(1))
        if code:
            raised.setdefault(code, path)
scripts = sorted(glob.glob("sql/partheal--*.sql", root_dir=root))
for path in scripts:
    for m in re.finditer(r"ERRCODE\s*=\s*'([0-9A-Z]{5})'", read(path)):
        raised.setdefault(m.group(1), path)
for code in own.values():
    raised.setdefault(code, "src/errors.hpp")

# Raised but for no user to see: each says why.
internal = {
    "XX000": "internal errors (SPI failures, a C++ exception caught at the boundary)",
    "53200": "out of memory",
    "22012": "partheal_test_error(), the test hook that raises a PostgreSQL error on purpose",
}
# In the table but raised by PostgreSQL itself, under partheal's calls.
passed_through = {
    "40P01": "PostgreSQL's deadlock detector",
    "55P03": "a lock timeout in the worker's DDL",
    "25006": "PreventCommandIfReadOnly, which partheal calls",
}

reference = read("docs/reference.md")
section = reference.split("## SQLSTATEs and log codes", 1)[1]
documented = set(re.findall(r"^\| `([0-9A-Z]{5})`", section, re.M)) - set(re.findall(r"PHL\d\d", section))
for code, where in sorted(raised.items()):
    if code in internal:
        continue
    check(code in documented, f"SQLSTATE {code} ({where}) has a row in docs/reference.md")
for code in sorted(documented):
    check(code in raised or code in passed_through,
          f"SQLSTATE {code} of docs/reference.md is raised by the source")

logs = set()
for text in sources.values():
    logs |= set(re.findall(r"\bPHL\d\d\b", text))
documented_logs = set(re.findall(r"^\| `(PHL\d\d)`", section, re.M))
check(logs == documented_logs,
      "the log codes of the source are reference.md's: "
      f"undocumented {sorted(logs - documented_logs)}, unused {sorted(documented_logs - logs)}")

operations = read("docs/operations.md")
for kind, found in [("PHL", logs), ("PH0", set(own.values()))]:
    top = max(found)
    for m in re.finditer(rf"`?{kind}\w*`?\s*(?:–|-|to)\s*`?({kind}\w+)", operations):
        check(m.group(1) == top, f"docs/operations.md's range ending {m.group(1)} ends at {top}")

sys.exit(1 if failures else 0)
