"""One run through the three front ends: `nbody run`, the C ABI's run object (through
ctypes) and Python's Simulation drive the library's one run loop, so the same settings
give the same energy rows, bit for bit.

The command and the C library are the ones `cargo build` (or `cargo test`) leaves in
target/debug; NBODY_BIN and NBODY_CAPI name others. Their absence fails the test: it
is not skipped."""

import ctypes
import os
import pathlib
import subprocess

import numpy as np
import pytest

import nbody

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("NBODY_BIN", ROOT / "target" / "debug" / "nbody"))
CAPI = pathlib.Path(os.environ.get("NBODY_CAPI", ROOT / "target" / "debug" / "libnbody_c.so"))

N, SEED, EPS, ETA, DT, T_END, EVERY = 64, 1, 0.01, 0.01, 1 / 64, 0.25, 1 / 32


class RunSettings(ctypes.Structure):
    _fields_ = [
        ("integrator", ctypes.c_char_p),
        ("gravity", ctypes.c_char_p),
        ("theta", ctypes.c_double),
        ("alpha", ctypes.c_double),
        ("softening", ctypes.c_int32),
        ("eps", ctypes.c_double),
        ("dt", ctypes.c_double),
        ("eta", ctypes.c_double),
        ("tolerance", ctypes.c_double),
    ]


class Diagnostics(ctypes.Structure):
    _fields_ = [
        ("kinetic", ctypes.c_double),
        ("potential", ctypes.c_double),
        ("total", ctypes.c_double),
        ("momentum", ctypes.c_double * 3),
        ("angular_momentum", ctypes.c_double * 3),
        ("centre_of_mass", ctypes.c_double * 3),
        ("virial_ratio", ctypes.c_double),
    ]


def built(path):
    assert path.exists(), f"{path} is missing: run `cargo build` at the repository root first"
    return path


def aligned(rows):
    """(N, 4) float64 records at a 32-byte boundary, as the C ABI takes doubles."""
    buf = np.zeros(rows.size + 4)
    skip = (-buf.ctypes.data % 32) // 8
    out = buf[skip : skip + rows.size].reshape(rows.shape)
    out[:] = rows
    assert out.ctypes.data % 32 == 0
    return out


def row(t, steps, kinetic, potential, total, momentum, angular, virial):
    return [t, float(steps), kinetic, potential, total, *momentum, *angular, virial]


def through_the_command(tmp, integrator, gravity):
    out = tmp / "cli"
    args = [str(built(BIN)), "run", "--ic", "plummer", "-n", str(N), "--seed", str(SEED)]
    args += ["--integrator", integrator, "--gravity", gravity, "--eps", str(EPS), "--eta", str(ETA)]
    args += ["--dt", repr(DT), "--t-end", repr(T_END), "--energy-every", repr(EVERY)]
    args += ["--executor", "cpu:1", "--precision", "f64", "--out", str(out), "--quiet"]
    subprocess.run(args, check=True, capture_output=True, text=True)
    lines = (out / "energy.csv").read_text().splitlines()
    header = lines[0].split(",")
    rows = [[float(x) for x in line.split(",")] for line in lines[1:]]
    # time, steps, kinetic, potential, total, (the relative error,) momentum, angular
    # momentum, virial ratio
    keep = [i for i, name in enumerate(header) if name != "rel_energy_error"]
    return [[r[i] for i in keep] for r in rows]


def times():
    return [k * EVERY for k in range(1, round(T_END / EVERY) + 1)]


def through_python(integrator, gravity):
    sim = nbody.Simulation(
        ic="plummer", n=N, seed=SEED, integrator=integrator, gravity=gravity, eps=EPS, eta=ETA, dt=DT, executor="cpu:1"
    )
    assert not sim.on_device  # the CPU steps on the host
    rows, start = [], (sim.positions, sim.velocities, sim.masses)
    for t in [0.0, *times()]:
        if t > 0:
            sim.evolve(t)
        d = sim.diagnostics()
        rows.append(row(sim.time, sim.steps, d["kinetic"], d["potential"], d["total"], d["momentum"],
                        d["angular_momentum"], d["virial_ratio"]))
    return rows, start


def through_c(integrator, gravity, start):
    lib = ctypes.CDLL(str(built(CAPI)))
    lib.nbody_run_settings_default.restype = RunSettings
    lib.nbody_last_error.restype = ctypes.c_char_p
    pos, vel, m = start
    particles = aligned(np.column_stack([pos, m]))
    velocities = aligned(np.column_stack([vel, np.zeros(len(m))]))
    exec_, run = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.nbody_open(b"cpu:1", ctypes.byref(exec_)) == 0, lib.nbody_last_error()
    s = lib.nbody_run_settings_default()
    s.integrator, s.gravity, s.eps, s.eta, s.dt = integrator.encode(), gravity.encode(), EPS, ETA, DT
    status = lib.nbody_run_new_f64(
        exec_, particles.ctypes.data_as(ctypes.c_void_p), velocities.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_size_t(N), ctypes.byref(s), ctypes.byref(run),
    )
    assert status == 0, lib.nbody_last_error()
    rows = []
    try:
        for t in [0.0, *times()]:
            if t > 0:
                assert lib.nbody_run_evolve(run, ctypes.c_double(t)) == 0, lib.nbody_last_error()
            d, now, steps = Diagnostics(), ctypes.c_double(), ctypes.c_uint64()
            assert lib.nbody_run_diagnostics(run, ctypes.byref(d)) == 0, lib.nbody_last_error()
            assert lib.nbody_run_time(run, ctypes.byref(now), ctypes.byref(steps)) == 0
            rows.append(row(now.value, steps.value, d.kinetic, d.potential, d.total, list(d.momentum),
                            list(d.angular_momentum), d.virial_ratio))
    finally:
        lib.nbody_run_free(run)
    return rows


@pytest.mark.parametrize(
    "integrator, gravity",
    [("leapfrog", "direct"), ("hermite", "direct"), ("block-hermite", "direct"), ("hermite6", "direct"),
     ("rk", "direct"), ("leapfrog", "tree")],
)
def test_the_command_c_and_python_give_the_same_energy_rows(tmp_path, integrator, gravity):
    python, start = through_python(integrator, gravity)
    command = through_the_command(tmp_path, integrator, gravity)
    c = through_c(integrator, gravity, start)
    assert len(python) == len(command) == len(c) == round(T_END / EVERY) + 1
    # Bit for bit: the same loop, the same executor, the same order of sums.
    assert python == command, f"{integrator}, {gravity}: Python and the command differ"
    assert c == command, f"{integrator}, {gravity}: C and the command differ"
    # And the run did something: time went on and the energy moved by rounding at most.
    assert command[-1][0] == pytest.approx(T_END) and command[-1][1] > 0
    assert abs(command[-1][4] / command[0][4] - 1) < 1e-2
