"""On the GPU: device-tree simulations saved, loaded and pickled continue bit for bit; a
direct-summation CUDA simulation too. Run beside the unpacked wheel (pylib/).

Known failure (H100, commit after 3a1f69bf): the first case (theta 0.6) passes; the second
(alpha 0.002), run while the first case's three simulations are being dropped, fails with
device error 700 while building the device tree. The same case alone passes bit for bit,
as do two or three device-tree simulations created, restored and stepped in one process:
several CUDA executors alive and dropped in one process still have a fault somewhere
(compare the CUDA conformance suite's failures with --test-threads 8)."""
import os, pickle, sys, tempfile
sys.path.insert(0, "pylib")  # the wheel unpacked beside this script
import numpy as np
import nbody

d = tempfile.mkdtemp()
for kw in (dict(gravity="tree", theta=0.6), dict(gravity="tree", alpha=0.002), dict(integrator="hermite")):
    sim = nbody.Simulation(n=4096, seed=12, dt=1 / 64, executor="cuda", precision="f32", **kw)
    sim.evolve(0.125)
    sim.save(os.path.join(d, "run.nbody"))
    loaded = nbody.Simulation.load(os.path.join(d, "run.nbody"))
    pickled = pickle.loads(pickle.dumps(sim))
    for s in (sim, loaded, pickled):
        s.evolve(0.25)
    same = all(np.array_equal(o.positions, sim.positions) and o.steps == sim.steps for o in (loaded, pickled))
    print(kw, "steps", sim.steps, "bit for bit after load and pickle:", same)
    assert same
print("all saved GPU simulations continue bit for bit")
