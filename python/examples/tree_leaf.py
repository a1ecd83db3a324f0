"""The leaf call of a tree code: two clumps; each clump's particles feel their own clump
directly and the other clump as one quadrupole cell, in one `nbody.leaves` call. The
result is compared with direct summation."""
import numpy as np

import nbody

rng = np.random.default_rng(3)
a = rng.normal(scale=0.05, size=(500, 3))
b = rng.normal(scale=0.05, size=(500, 3)) + [2.0, 0.0, 0.0]
pos, m = np.vstack([a, b]), np.full(1000, 1e-3)
cells = np.stack([nbody.cell(pos[:500], m[:500]), nbody.cell(pos[500:], m[500:])])
# Clump A (particles 0..500) feels span 0 (itself) and cell 1; clump B the reverse.
pairs = np.array([[0, 500, 0, 1], [500, 1000, 1, 2]])
spans = np.array([[0, 500], [500, 1000]])
cell_ranges, cell_spans = np.array([[0, 1], [1, 2]]), np.array([[1, 2], [0, 1]])
acc, _ = nbody.leaves(pos, m, pairs, spans, cells=cells, cell_ranges=cell_ranges, cell_spans=cell_spans, eps=0.01)
want, _ = nbody.accelerations(pos, m, eps=0.01)
err = np.linalg.norm(acc - want, axis=1) / np.linalg.norm(want, axis=1)
print(f"1000 particles, 2 cells: median relative force error {np.median(err):.1e}, largest {err.max():.1e}")
assert err.max() < 1e-3
