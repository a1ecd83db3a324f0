"""On the GPU: device-tree simulations (either opening criterion) saved, loaded and
pickled continue bit for bit. Run beside the unpacked wheel (pylib/), also under
compute-sanitizer:

    compute-sanitizer --print-limit 5 python3 gpu_save_check.py

A restored run's first build (a fresh node array) once read nodes that a build out of
room had left unwritten; the split kernel now stops once a level has overflowed."""
import os
import pickle
import sys
import tempfile

sys.path.insert(0, "pylib")  # the wheel unpacked beside this script
import numpy as np  # noqa: E402

import nbody  # noqa: E402

d = tempfile.mkdtemp()
for kw in (dict(gravity="tree", theta=0.6), dict(gravity="tree", alpha=0.002)):
    sim = nbody.Simulation(n=1024, seed=12, dt=1 / 64, executor="cuda", precision="f32", **kw)
    sim.evolve(0.0625)
    sim.save(os.path.join(d, "run.nbody"))
    loaded = nbody.Simulation.load(os.path.join(d, "run.nbody"))
    pickled = pickle.loads(pickle.dumps(sim))
    for s in (sim, loaded, pickled):
        s.evolve(0.125)
    same = all(np.array_equal(o.positions, sim.positions) and o.steps == sim.steps for o in (loaded, pickled))
    print(kw, "steps", sim.steps, "bit for bit after load and pickle:", same)
    assert same
print("all saved GPU simulations continue bit for bit")
