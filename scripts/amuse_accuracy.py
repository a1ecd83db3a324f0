"""Energy error at t = 1 and wall time of nbody's AMUSE code, AMUSE's ph4 and AMUSE's
Hermite on one 256-body Plummer sphere (eps^2 = 0.01, sockets channel), by each code's
accuracy parameter: the table of docs/embedding.md. Run where AMUSE, ph4, Hermite and
the nbody package are installed (scripts/amuse-check.sh runs it when AMUSE_ACCURACY_TABLE
names an output file):
    python3 scripts/amuse_accuracy.py
"""

import os
import time

import numpy as np
from amuse.community.hermite.interface import Hermite
from amuse.community.ph4.interface import ph4
from amuse.ic.plummer import new_plummer_model
from amuse.units import nbody_system

from nbody.amuse import Nbody

os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

# Each code's name for its accuracy parameter (the criteria differ: nbody's and Hermite's
# step goes as the square root of theirs, ph4's as its parameter).
CODES = [("nbody", Nbody, "timestep_parameter"), ("ph4", ph4, "timestep_parameter"), ("hermite", Hermite, "dt_param")]


def energy(code):
    return (code.kinetic_energy + code.potential_energy).value_in(nbody_system.energy)


def run(make, parameter, value, stars):
    """(dE/E at t = 1, wall seconds of evolve_model)."""
    code = make(channel_type="sockets")
    try:
        code.parameters.epsilon_squared = 0.01 | nbody_system.length**2
        setattr(code.parameters, parameter, value)
        code.particles.add_particles(stars)
        e0 = energy(code)
        start = time.perf_counter()
        code.evolve_model(1.0 | nbody_system.time)
        wall = time.perf_counter() - start
        return (energy(code) - e0) / abs(e0), wall
    finally:
        code.stop()


def main():
    np.random.seed(3)
    stars = new_plummer_model(256)
    print("| parameter | " + " | ".join(f"{name} (`{parameter}`)" for name, _, parameter in CODES) + " |")
    print("|---" * (len(CODES) + 1) + "|")
    for value in (0.02, 0.05, 0.1, 0.14):
        cells = []
        for _, make, parameter in CODES:
            de, wall = run(make, parameter, value, stars.copy())
            cells.append(f"{de:.1e}, {wall:.2f} s")
        print(f"| {value} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
