#!/usr/bin/env python3
"""Compares two first_regf.txt files (benches/nbody6pp/first_regf.c) of one NBODY6++GPU
input: the first regular block's lists entry by entry, and the regular forces.

  benches/nbody6pp/compare_first.py UPSTREAM NBODY
"""
import sys


def read(path):
    rows = {}
    for line in open(path):
        if line.startswith("#"):
            continue
        f = line.split()
        i = int(f[0])
        acc = [float(v) for v in f[6:9]]
        rows[i] = {"h2": float(f[1]), "acc": acc, "pot": float(f[9]), "count": int(f[11]), "list": [int(v) for v in f[12:]]}
    return rows


a, b = read(sys.argv[1]), read(sys.argv[2])
same = both_overflow = differ = 0
worst_acc = worst_pot = 0.0
extra = missing = 0
for i in sorted(a):
    x, y = a[i], b[i]
    if x["count"] < 0 and y["count"] < 0:
        both_overflow += 1
    elif x["count"] == y["count"] and x["list"] == y["list"]:
        same += 1
    else:
        differ += 1
        sx, sy = set(x["list"]), set(y["list"])
        extra += len(sy - sx)
        missing += len(sx - sy)
    if x["count"] >= 0 and y["count"] >= 0 and x["list"] == y["list"]:
        norm = sum(v * v for v in x["acc"]) ** 0.5
        worst_acc = max(worst_acc, max(abs(p - q) for p, q in zip(x["acc"], y["acc"])) / norm)
        worst_pot = max(worst_pot, abs(x["pot"] - y["pot"]) / abs(x["pot"]))
print(f"{len(a)} i-particles: {same} lists identical, {both_overflow} overflowed in both, {differ} differ "
      f"({extra} entries only in the second, {missing} only in the first)")
print(f"where the lists agree: largest relative difference of the regular acceleration {worst_acc:.2e}, potential {worst_pot:.2e}")
