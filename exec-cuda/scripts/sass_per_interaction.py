#!/usr/bin/env python3
"""Counts SASS instructions per interaction in the inner loop of each tiled kernel.

Usage: sass_per_interaction.py FATBIN > exec-cuda/sass-counts.txt

For each kernel, the inner loop is the innermost backward branch (no other backward
branch inside its body) whose body holds the most MUFU.RSQ* instructions (one
reciprocal square root per interaction); where two such loops tie (the tiled kernel's
loop over a full tile and its loop over a chunk's partly filled last tile), the one with
fewer instructions, the full tile's. The mixed kernels' tie is between their
double-single loop and the float loop they take for far source tiles; there the one
with more instructions, the double-single loop, which any order of particles can take
for every tile. Instructions per interaction = instructions in that
body (NOPs excluded) / MUFU.RSQ count. The benchmark
divides the device's issue rate by this number for its issue-bound ceiling.

The spline kernels (_s2, _s3) branch to a per-pair path inside the loop, which is counted
too: their numbers are the loop's size, not the common path's cost.
"""
import re
import subprocess
import sys

fatbin = sys.argv[1]
sass = subprocess.run(["cuobjdump", "-sass", fatbin], capture_output=True, text=True, check=True).stdout
functions = re.split(r"\n\s*Function : ", sass)[1:]
line_re = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
for body in functions:
    name = body.split("\n", 1)[0].strip()
    if not name.startswith("nbody_tiled_"):
        continue
    instrs = []
    for m in line_re.finditer(body):
        instrs.append((int(m.group(1), 16), m.group(2).strip()))
    loops = []
    for addr, text in instrs:
        b = re.search(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)", text)
        if b and int(b.group(1), 16) < addr:
            loops.append((int(b.group(1), 16), addr))
    # Mixed kernels: the double-single loop (more instructions) of a tie; others: fewer.
    sign = 1 if "_mixed_" in name else -1
    best = None
    for target, addr in loops:
        if any(target <= t and a < addr for t, a in loops if (t, a) != (target, addr)):
            continue  # an outer loop
        loop = [t for a, t in instrs if target <= a <= addr]
        # Counted by address (16 bytes an instruction): an older cuobjdump prints opcodes
        # it does not know (nvcc 11.8's VIMNMX on sm_90) without an address or a name.
        size = (addr - target) // 16 + 1 - sum(1 for t in loop if t.startswith("NOP"))
        rsq = sum(1 for t in loop if "MUFU.RSQ" in t)
        if rsq and (best is None or (rsq, sign * size) > (best[1], sign * best[0])):
            best = (size, rsq)
    if best:
        print(f"{name} {best[0] / best[1]:.3f}")
