#!/usr/bin/python3
"""Checks a fabric-coll results file: valid against the schema, and every
row's numbers consistent with each other (busBW = algBW x factor, time x
algBW = size, hypercube's x (n-1)/n). With rank groups (split) the table's rows take the factor of
the table group's rank count and each group's rows that of its own.
Usage: check_collective.py FILE [--ranks N] [--rows N]
[--complete|--incomplete] [--nodes N] [--groups N]. Prints one line per failed check and
exits 1 if any failed."""
import argparse
import json
import sys

import jsonschema

FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
    "alltoallv": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "hypercube": lambda n: 1.0,
}
# algBW = size / time x this (nccl-tests' hypercube counts the n-1 blocks
# a rank receives); 1 for the others.
ALG_FACTORS = {
    "hypercube": lambda n: (n - 1) / n,
}


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-12


def alg_factor(collective, n):
    return ALG_FACTORS.get(collective, lambda n: 1.0)(n)


def check_rows(rows, factor, alg, label, errors):
    """Appends what is inconsistent in rows; returns their wrong elements."""
    wrong = 0
    for row in rows:
        for name in ("out_of_place", "in_place"):
            p = row[name]
            t = p["time_us"] * 1e-6
            if not close(p["algbw_GBps"] * 1e9 * t, row["bytes"] * alg, 1e-6):
                errors.append(f"{label}{row['bytes']} {name}: time x algBW != size x {alg}")
            if not close(p["busbw_GBps"], p["algbw_GBps"] * factor):
                errors.append(f"{label}{row['bytes']} {name}: busBW != algBW x {factor}")
            if not p["time_us_min"] <= p["time_us_mean"] * (1 + 1e-9) <= p["time_us_max"] * (1 + 1e-9):
                errors.append(f"{label}{row['bytes']} {name}: min <= mean <= max broken")
            wrong += p["wrong"] or 0
    return wrong


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--schema", default="docs/schema/collective.schema.json")
    ap.add_argument("--ranks", type=int)
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--complete", action="store_true")
    ap.add_argument("--incomplete", action="store_true")
    ap.add_argument("--wrong", type=int, default=0)
    ap.add_argument("--groups", type=int)
    a = ap.parse_args()
    doc = json.load(open(a.file))
    jsonschema.validate(doc, json.load(open(a.schema)))
    errors = []
    n = doc["topology"]["ranks"]
    if a.ranks is not None and n != a.ranks:
        errors.append(f"ranks {n} != {a.ranks}")
    if a.nodes is not None and doc["topology"]["nodes"] != a.nodes:
        errors.append(f"nodes {doc['topology']['nodes']} != {a.nodes}")
    if a.rows is not None and len(doc["rows"]) != a.rows:
        errors.append(f"rows {len(doc['rows'])} != {a.rows}")
    if a.complete and not doc["complete"]:
        errors.append("not complete")
    if a.incomplete and doc["complete"]:
        errors.append("complete, expected incomplete")
    if len(doc["devices"]) != n:
        errors.append(f"{len(doc['devices'])} device records for {n} ranks")
    split = doc.get("split")
    table_n = split["groups"][split["table_group"]]["size"] if split else n
    wrong = check_rows(doc["rows"], FACTORS[doc["collective"]](table_n), alg_factor(doc["collective"], table_n), "", errors)
    if a.groups is not None and len(split["groups"] if split else []) != a.groups:
        errors.append(f"{len(split['groups']) if split else 0} groups, expected {a.groups}")
    for g in split["groups"] if split else []:
        if len(g["rows"]) != len(doc["rows"]):
            errors.append(f"group {g['color']}: {len(g['rows'])} rows for {len(doc['rows'])}")
        check_rows(g["rows"], FACTORS[doc["collective"]](g["size"]), alg_factor(doc["collective"], g["size"]), f"group {g['color']} ", errors)
    if wrong != a.wrong:
        errors.append(f"{wrong} wrong elements, expected {a.wrong}")
    if doc["summary"]["sizes_done"] != len(doc["rows"]):
        errors.append("summary.sizes_done disagrees with rows")
    for e in errors:
        print(f"{a.file}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
