#!/usr/bin/env python3
"""Compares two NBODY6++ runs of one input (stdout of `make standard`'s nbody6 and of
nbody6.gpu on libnbody_c): prints a table and exits 1 when one of these fails.

- The model: the scaling line and the energy at T = 0 are the same text.
- The first KS regularization: the same time, pair and orbit (the neighbour counts NBODY6++
  prints after them come from two different neighbour searches and are not compared).
- The block steps to T = 1: irregular and regular step counts within 2%.
- Energy errors of the same order: each run's largest |DE| over the adjust intervals below
  1e-4, and the two within a factor 10 of each other.
- Lagrangian radii at T = 1 (10% of the mass and above): within 2%.

  scripts/nbody6_compare.py STANDARD_OUT LIBNBODY_OUT
"""
import re
import sys


def num(text):
    return float(text.replace("D", "E"))


def parse(path):
    run = {"adjust": [], "ks": [], "rlagr": {}, "steps": {}, "scaling": None, "e0": None}
    for line in open(path, errors="replace"):
        if "SCALING:" in line and "PHYSICAL" not in line:
            run["scaling"] = line.strip()
        m = re.search(r"ADJUST:\s+TIME =\s+(\S+).*?DE =\s+(\S+).*?\bE =\s+(\S+)", line)
        if m:
            run["adjust"].append((num(m[1]), num(m[2]), m[3]))
        m = re.match(r"\s*NEW KSREG\s+TIME =\s+(.*)", line)
        if m:
            run["ks"].append(m[1].split()[:9])
        m = re.match(r"\s*(\S+) RLAGR:\s+(.*)", line)
        if m:
            run["rlagr"][num(m[1])] = [num(v) for v in m[2].split()]
        m = re.search(r"\bT =\s+(\S+)\s+N =.*NSTEPS =\s+(\d+)\s+(\d+)\s+(\d+)", line)
        if m:
            run["steps"][num(m[1])] = (int(m[2]), int(m[4]))
    if run["adjust"]:
        run["e0"] = run["adjust"][0][2]
    return run


def main(standard, ours):
    a, b = parse(standard), parse(ours)
    failed = []

    def check(name, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")
        if not ok:
            failed.append(name)

    check("model", a["scaling"] is not None and a["scaling"] == b["scaling"] and a["e0"] == b["e0"],
          f"E0 {a['e0']} / {b['e0']}")
    first = (a["ks"][:1], b["ks"][:1])
    check("first KS regularization", bool(first[0]) and first[0] == first[1],
          f"{' '.join(first[0][0]) if first[0] else 'none'} / {' '.join(first[1][0]) if first[1] else 'none'}"
          f" ({sum(x == y for x, y in zip(a['ks'], b['ks']))} of the first {min(len(a['ks']), len(b['ks']))} the same)")
    sa, sb = a["steps"].get(1.0), b["steps"].get(1.0)
    ok = sa is not None and sb is not None and all(abs(x - y) <= 0.02 * x for x, y in zip(sa, sb))
    check("block steps to T = 1", ok, f"irregular, regular {sa} / {sb}")
    da = max((abs(de) for t, de, _ in a["adjust"] if t > 0), default=None)
    db = max((abs(de) for t, de, _ in b["adjust"] if t > 0), default=None)
    ok = da is not None and db is not None and max(da, db) < 1e-4 and max(da, db) <= 10 * max(min(da, db), 1e-12)
    check("energy errors", ok, f"largest |DE| {da:.3e} / {db:.3e}" if ok or (da and db) else "missing")
    ra, rb = a["rlagr"].get(1.0), b["rlagr"].get(1.0)
    ok = ra is not None and rb is not None and all(abs(x - y) <= 0.02 * x for x, y in zip(ra[3:11], rb[3:11]))
    worst = max((abs(x - y) / x for x, y in zip(ra[3:11], rb[3:11])), default=float("nan")) if ra and rb else float("nan")
    check("Lagrangian radii at T = 1 (10% to 100%)", ok, f"largest relative difference {worst:.2e}")
    if failed:
        print(f"NBODY6++ check FAILED: {', '.join(failed)}")
        return 1
    print("NBODY6++ check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
