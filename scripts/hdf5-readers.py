"""Opens a Gadget HDF5 snapshot nbody wrote with yt and pynbody and checks what they read
against h5py's view of the same file: particle count, time, positions, velocities and
masses. Usage: python hdf5-readers.py SNAPSHOT.hdf5"""
import sys
import warnings

import h5py
import numpy as np

path = sys.argv[1]
with h5py.File(path, "r") as f:
    part = f["PartType1"]
    pos, vel, mass = part["Coordinates"][:], part["Velocities"][:], part["Masses"][:]
    ids, time = part["ParticleIDs"][:], float(f["Header"].attrs["Time"])
n = len(mass)

import yt  # noqa: E402

yt.set_log_level(40)
# Not periodic, centred on the origin: yt places a Gadget domain at [0, BoxSize] unless
# told the bounding box.
reach = float(np.abs(pos).max()) * 1.01
ds = yt.load(path, bounding_box=[[-reach, reach]] * 3)
ad = ds.all_data()
order = np.argsort(ad["PartType1", "ParticleIDs"].d)
assert ds.__class__.__name__ == "GadgetHDF5Dataset", ds.__class__.__name__
assert len(order) == n, (len(order), n)
assert np.allclose(ad["PartType1", "Coordinates"].d[order], pos[np.argsort(ids)], rtol=0, atol=1e-12 * reach)
assert np.isclose(float(ds.current_time.d), time), (ds.current_time, time)
print(f"yt {yt.__version__}: {ds.__class__.__name__}, {n} particles, t = {time}")

import pynbody  # noqa: E402

with warnings.catch_warnings():
    # No physical units in an N-body-unit snapshot: pynbody says so and assumes Gadget's.
    warnings.simplefilter("ignore")
    s = pynbody.load(path)
    assert len(s) == n, (len(s), n)
    assert np.array_equal(np.asarray(s["pos"]), pos)
    assert np.array_equal(np.asarray(s["vel"]), vel)
    assert np.allclose(np.asarray(s["mass"]), mass, rtol=1e-15, atol=0)
print(f"pynbody {pynbody.__version__}: {type(s).__name__}, {len(s)} particles")
print("yt and pynbody read the snapshot")
