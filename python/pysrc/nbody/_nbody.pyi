"""Type stubs of the compiled extension (see nbody/__init__.py)."""

import os
from typing import Dict, List, Literal, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

# A backend string of the registry: "cpu", "cpu:8", "mixed", "mixed:8", "reference",
# "cuda", "cuda:1", "cuda-mixed", "cuda-mixed:1", "cuda:0,1", "cuda:all".
Executor = str
Precision = Literal["f32", "f64"]
# A name from softenings() (the core's registry, which the other front ends read too).
Softening = str
FloatArray = npt.NDArray[np.floating]

def accelerations(
    positions: FloatArray,
    masses: FloatArray,
    eps: Union[float, FloatArray, None] = None,
    G: float = 1.0,
    targets: Optional[FloatArray] = None,
    potential: bool = True,
    executor: Optional[Executor] = None,
    precision: Optional[Precision] = None,
    threads: Optional[int] = None,
    softening: Softening = "plummer",
    target_eps: Optional[FloatArray] = None,
    out: Optional[Tuple[object, object]] = None,
) -> Tuple[FloatArray, FloatArray]:
    """Accelerations (M, 3) and potentials (M,) of `targets` (M, 3), or of the particles
    themselves when `targets` is None (each skips its own pair), from the particles at
    `positions` (N, 3) with `masses` (N,). Arrays may be float32 or float64 with any
    strides. `softening` is "plummer" (1/sqrt(r² + eps²)) or "spline" (Gadget's cubic
    spline of support 2.8 eps, Newtonian beyond it). `eps` is one length (default 0) or
    an array (N,) of one length per particle (several species); a pair is then softened
    by the symmetrised rule: Plummer eps_ij² = (eps_i² + eps_j²) / 2, the spline with the
    larger support. With `targets` and an eps array, `target_eps` (M,) gives the targets'
    lengths. Results are float64 for precision "f64" and float32 for "f32". The GIL is
    released while the forces are computed. On a single-GPU executor ("cuda", "cuda:K"),
    C-contiguous arrays of the call's own dtype with one eps go to the device as they
    are and are packed and checked there (the fastest way in); other arrays are packed
    on the host first. Bad input raises ValueError naming the argument and the index; a
    device failure raises RuntimeError. `executor` defaults to "cpu" and `precision` to
    "f64" for host arrays.

    GPU arrays (CuPy, PyTorch, JAX, numba: DLPack or the CUDA array interface) are read
    in place by the CUDA executor ("cuda" by default, "cuda:N" for GPU N) in their own
    dtype (the default precision), C-contiguous, after their producer's stream; the
    results are allocated on the same GPU and returned as arrays of the positions'
    library (PyTorch, CuPy, JAX; a GpuArray for numba, whose kernels take it as it is),
    or written into `out`, the caller's (acceleration, potential) GPU arrays (right shape
    and dtype, C-contiguous, writable, overlapping no input; not JAX arrays). Another GPU, dtype or layout raises ValueError.

    >>> import numpy as np, nbody
    >>> pos = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    >>> acc, phi = nbody.accelerations(pos, np.ones(2), eps=np.array([0.0, 1.0]))
    >>> round(float(acc[0, 0]), 6)  # eps_01² = 1/2: 1 / 1.5**1.5
    0.544331
    """

def tidal(
    positions: FloatArray,
    masses: FloatArray,
    eps: float = 0.0,
    G: float = 1.0,
    targets: Optional[FloatArray] = None,
    executor: Executor = "cpu",
    precision: Precision = "f64",
    threads: Optional[int] = None,
    softening: Softening = "plummer",
) -> Tuple[FloatArray, FloatArray, FloatArray]:
    """Acceleration (N, 3), potential (N,) and tidal tensor (N, 3, 3) of `targets`
    (default: the particles, each skipping its own pair); the tensor is the gradient of a
    target's acceleration with respect to its own position."""
    ...

def vjp(
    positions: FloatArray,
    masses: FloatArray,
    cot_acc: FloatArray,
    cot_phi: Optional[FloatArray] = None,
    eps: float = 0.0,
    G: float = 1.0,
    targets: Optional[FloatArray] = None,
    executor: Executor = "cpu",
    precision: Precision = "f64",
    threads: Optional[int] = None,
    softening: Softening = "plummer",
) -> Tuple[FloatArray, ...]:
    """The vector-Jacobian product of `accelerations`: gradients of
    sum(cot_acc * acc) + sum(cot_phi * phi). Without targets: (d_positions (N, 3),
    d_masses (N,)); with targets: (d_targets (K, 3), d_positions (N, 3), d_masses (N,))."""
    ...

def leaves_vjp(
    positions: FloatArray,
    masses: FloatArray,
    pairs: npt.NDArray[np.integer],
    spans: npt.NDArray[np.integer],
    cot_acc: FloatArray,
    cot_phi: Optional[FloatArray] = None,
    eps: float = 0.0,
    G: float = 1.0,
    executor: Executor = "cpu",
    precision: Precision = "f64",
    threads: Optional[int] = None,
    softening: Softening = "plummer",
) -> Tuple[FloatArray, FloatArray]:
    """The vector-Jacobian product of `leaves`' particle-particle part: (d_positions (N, 3),
    d_masses (N,)) of sum(cot_acc * acc) + sum(cot_phi * phi), each particle's parts as a
    target and as a source together."""
    ...

def jerk(
    positions: FloatArray,
    velocities: FloatArray,
    masses: FloatArray,
    eps: float = 0.0,
    G: float = 1.0,
    executor: Optional[str] = None,
    precision: Optional[Precision] = None,
    threads: Optional[int] = None,
    out: Optional[Tuple[object, object, object]] = None,
) -> Tuple[npt.NDArray[np.floating], npt.NDArray[np.floating], npt.NDArray[np.floating]]:
    """Acceleration (N, 3), jerk (N, 3) and potential (N,) of every particle from all the
    others, each skipping its own pair, as the Hermite integrators use them (arrays in the
    call's precision; "cpu" and "f64" by default for host arrays). GPU arrays are read in
    place as in `accelerations` (executor "cuda", their dtype), results on the same GPU.

    >>> import numpy as np, nbody
    >>> pos, vel = np.array([[0.0, 0, 0], [1.0, 0, 0]]), np.array([[0.0, 0, 0], [-1.0, 0, 0]])
    >>> acc, jerk, phi = nbody.jerk(pos, vel, np.ones(2))
    >>> jerk[0].tolist()  # approaching at speed 1 from distance 1: d|a|/dt = 2
    [2.0, 0.0, 0.0]
    """

def density_map(
    positions: FloatArray,
    masses: FloatArray,
    plane: Literal["xy", "xz", "yz"] = "xy",
    centre: Tuple[float, float] = (0.0, 0.0),
    half_width: float = 1.0,
    pixels: int = 256,
    executor: str = "cpu",
    threads: Optional[int] = None,
) -> npt.NDArray[np.float64]:
    """The projected mass on a square window (cloud-in-cell, as the command's density
    pictures): a (pixels, pixels) float64 array, row 0 at the top; on a CUDA executor the
    deposit runs on the GPU.

    >>> import numpy as np, nbody
    >>> float(nbody.density_map(np.zeros((1, 3)), np.array([2.0]), pixels=4).sum())
    2.0
    """

hdf5_compiled: bool
"""Whether this build writes and reads Gadget HDF5 snapshots (pip compiles them in when
pkg-config finds libhdf5; NBODY_HDF5=1 or 0 decide instead)."""

def write_snapshot(
    path: Union[str, "os.PathLike[str]"],
    positions: FloatArray,
    velocities: FloatArray,
    masses: FloatArray,
    time: float = 0.0,
    units: Optional[str] = None,
) -> None:
    """Writes particles as a snapshot in Gadget's HDF5 layout, the one `nbody run --format
    hdf5` writes and yt, pynbody and the Gadget tools open: Header attributes
    (NumPart_ThisFile, NumPart_Total, MassTable, Time, BoxSize, ...) and PartType1 with
    Coordinates, Velocities, Masses and ParticleIDs, float64. Written to a temporary file
    and renamed. `units` ("au,msun,yr", as `Simulation` takes them) adds Gadget's unit
    attributes (UnitLength_in_cm, UnitMass_in_g, UnitVelocity_in_cm_per_s). Needs a build
    with HDF5 (`hdf5_compiled`); a RuntimeError says so otherwise, an OSError names a
    file that cannot be written.

    >>> import numpy as np, nbody, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "two.hdf5")
    >>> if nbody.hdf5_compiled:
    ...     nbody.write_snapshot(path, np.eye(3)[:2], np.zeros((2, 3)), np.ones(2), time=0.5)
    ...     assert nbody.read_snapshot(path)[2].tolist() == [1.0, 1.0]
    """

def read_snapshot(
    path: Union[str, "os.PathLike[str]"],
) -> Tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Positions (N, 3), velocities (N, 3) and masses (N,) of a Gadget HDF5 snapshot:
    every PartType0 to PartType5 in order, float or double, masses from the Masses field
    or the header's mass table. A damaged file is an OSError naming the file and field."""

cuda_compiled: bool
"""Whether this build has the CUDA executors: `pip install ./python` compiles them in when
it finds nvcc (NBODY_CUDA=1 or 0, or `--config-settings cuda=1`, decide instead)."""

def backends(capabilities: bool = False) -> Union[List[str], Dict[str, Dict[str, List[str]]]]:
    """The backend strings this build and machine offer, as `executor=` takes them
    (the command's --executor and the C ABI's nbody_open take the same). With
    ``capabilities=True``, a dict of each backend string to what its executor declares
    it computes in f64: ``{"plummer": [entry points], "spline": [entry points]}``.

    >>> import nbody
    >>> "cpu" in nbody.backends()
    True
    >>> "jerk" in nbody.backends(capabilities=True)["cpu"]["spline"]
    True
    """

def softenings() -> List[Tuple[str, str]]:
    """The softening kernels ``softening=`` takes (the command's --softening and the C
    ABI take the same), each with one line on what it is.

    >>> import nbody
    >>> [name for name, _ in nbody.softenings()]
    ['plummer', 'spline']
    """

def integrators() -> List[Tuple[str, str]]:
    """The integrators ``Simulation(integrator=...)`` takes (the command's --integrator
    and the AMUSE code take the same names), each with one line on what it is.

    >>> import nbody
    >>> [name for name, _ in nbody.integrators()]
    ['leapfrog', 'hermite', 'block-hermite', 'hermite6', 'rk']
    """

def _rust_seconds(
    n: int,
    reps: int = 20,
    threads: int = 1,
    precision: Precision = "f64",
    executor: str = "cpu",
    potential: bool = True,
    entry: Literal["accelerations", "columns", "device"] = "accelerations",
) -> float:
    """Seconds per call of the same computation timed inside Rust (benchmarks): `entry`
    "accelerations" times packed records, "columns" the rows-and-column entry a single
    GPU takes (RuntimeError where the executor has none), "device" that entry on arrays
    already on the GPU (the call GPU arrays make; CUDA builds, executor "cuda:N").

    >>> import nbody
    >>> nbody._rust_seconds(64, reps=2) > 0
    True
    """

IndexArray = npt.NDArray[np.integer]

def leaves(
    positions: FloatArray,
    masses: FloatArray,
    pairs: IndexArray,
    spans: IndexArray,
    cells: Optional[FloatArray] = None,
    cell_ranges: Optional[IndexArray] = None,
    cell_spans: Optional[IndexArray] = None,
    eps: Union[float, FloatArray, None] = None,
    G: float = 1.0,
    potential: bool = True,
    executor: Optional[Executor] = None,
    precision: Optional[Precision] = None,
    threads: Optional[int] = None,
    softening: Softening = "plummer",
    out: Optional[Tuple[object, object]] = None,
) -> Tuple[FloatArray, FloatArray]:
    """A tree or FMM code's leaf work in one call. Row `[t0, t1, s0, s1]` of `pairs`
    (K, 4) makes the particles `t0..t1` feel the particle spans `spans[s0..s1]` (rows
    `[start, end]` of `spans` (S, 2); a target inside its own span skips its own pair)
    and, with `cells` (C, 11: x, y, z, m, qxx, qxy, qxz, qyy, qyz, qzz, spread, see `cell`;
    or C, 10 without the spread), the
    cell spans `cell_spans[c0..c1]` for row `[c0, c1]` of `cell_ranges` (K, 2). Returns
    acceleration (N, 3) and potential (N,) of every particle, zero where no pair names it.
    `eps` is one length (default 0) or, without cells, an array (N,) of one length per
    particle (the rule of `accelerations`). A span past its array raises ValueError
    naming it.

    >>> import numpy as np, nbody
    >>> pos = np.array([[0.0, 0, 0], [0.5, 0, 0], [10.0, 0, 0], [10.5, 0, 0]])
    >>> m = np.ones(4)
    >>> far = nbody.cell(pos[2:], m[2:])[None, :]
    >>> acc, _ = nbody.leaves(pos, m, np.array([[0, 2, 0, 1]]), np.array([[0, 2]]),
    ...                       cells=far, cell_ranges=np.array([[0, 1]]), cell_spans=np.array([[0, 1]]))
    >>> round(acc[0, 0], 4)  # 1/0.5² + the far pair's 1/10² + 1/10.5²
    4.0191
    """

def cell(positions: FloatArray, masses: FloatArray) -> npt.NDArray[np.float64]:
    """The cell of a set of particles for `leaves`: `[x, y, z, m, qxx, qxy, qxz, qyy, qyz,
    qzz, spread]`, centre of mass, total mass, traceless quadrupole
    `Q_ab = sum m (3 s_a s_b - |s|² δ_ab)` and spread `sum m |s|²` about the centre of
    mass (the softened kernel is not harmonic: its expansion needs the spread)."""

class Simulation:
    """A system evolved by one of the library's integrators on one executor, as
    `nbody run` does."""

    def __init__(
        self,
        ic: Literal["plummer", "cold-sphere", "kepler", "figure8"] = "plummer",
        n: int = 1024,
        seed: int = 1,
        positions: Optional[FloatArray] = None,
        velocities: Optional[FloatArray] = None,
        masses: Optional[FloatArray] = None,
        integrator: Literal["leapfrog", "hermite", "block-hermite", "hermite6", "rk"] = "leapfrog",
        dt: float = 1.0 / 256.0,
        eta: float = 0.02,
        tolerance: float = 1e-8,
        eps: float = 1.0 / 64.0,
        executor: Executor = "cpu",
        precision: Precision = "f64",
        threads: Optional[int] = None,
        test_positions: Optional[FloatArray] = None,
        test_velocities: Optional[FloatArray] = None,
        softening: Softening = "plummer",
        gravity: Literal["direct", "tree"] = "direct",
        theta: Optional[float] = None,
        alpha: Optional[float] = None,
        units: Optional[str] = None,
    ) -> None:
        """`units` ("au,msun,yr", "kpc,1e10msun,gyr", "G=39.48"; default N-body units,
        G = 1) are the units of the positions, velocities and masses given, of `dt`,
        `evolve`'s times and of everything the simulation gives back (energies in mass
        length²/time²); it runs in N-body units of the same length and mass, and
        generated initial conditions are N-body ones. `test_positions` (and `test_velocities`) append massless test particles after
        the system: they feel every massive particle, exert nothing, and cost
        N x N_massive per step. `gravity="tree"` takes the forces from a Barnes-Hut tree
        with quadrupole cells: the geometric test at `theta` (default 0.5) or Gadget's
        relative criterion at `alpha`; leapfrog only; energies from the tree's potential.

        >>> tree = Simulation(n=2000, gravity="tree", theta=0.6)
        >>> e0 = tree.energies()[2]
        >>> _ = tree.evolve(0.0625)
        >>> abs(tree.energies()[2] / e0 - 1) < 1e-3
        True

        >>> sim = Simulation(ic="kepler", test_positions=np.array([[8.0, 0.0, 0.0]]), test_velocities=np.array([[0.0, 0.35, 0.0]]))
        """
    def step(self, until: Optional[float] = None) -> float:
        """One step (one block step; one adaptive stretch for "rk"), never past `until`
        where the integrator can shorten its step ("hermite", "rk"); returns the time.

        >>> sim = Simulation(ic="plummer", n=64, integrator="hermite")
        >>> sim.step(until=1e-6)  # the step it wanted was longer
        1e-06
        """
    def collisions(self, radii: FloatArray) -> npt.NDArray[np.int64]:
        """Index pairs (i, j), i < j, of particles closer than radii[i] + radii[j]
        (unsoftened), as a (K, 2) array in increasing order, found by the executor's
        neighbour search (on the GPU for a CUDA executor): a collision stopping
        condition's question after each step.

        >>> sim = Simulation(positions=np.array([[0.0, 0, 0], [0.1, 0, 0], [5.0, 0, 0]]), masses=np.ones(3))
        >>> sim.collisions(np.full(3, 0.1)).tolist()
        [[0, 1]]
        """
    def evolve(self, t: float) -> float:
        """Steps until the simulated time reaches `t`; returns the time."""
    def energies(self) -> Tuple[float, float, float]:
        """Kinetic, potential and total energy now."""
    def diagnostics(self) -> dict:
        """What the command's energy.csv reports, now, in the simulation's units: time,
        steps, kinetic, potential, total, momentum, angular_momentum, centre_of_mass,
        virial_ratio.

        >>> import nbody
        >>> d = nbody.Simulation(n=256).diagnostics()
        >>> 0.5 < d["virial_ratio"] < 1.5, len(d["momentum"])
        (True, 3)
        """
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the whole simulation (settings, particles, the integrator's own state) to
        `path`, through a temporary file renamed when complete: `Simulation.load(path)`
        continues it bit for bit. Pickling uses the same bytes. A tree simulation saves its
        field too; one stepped on the device tree loads on a GPU, a host one on the host.

        >>> import nbody, tempfile, os, numpy as np
        >>> sim = nbody.Simulation(n=64, integrator="hermite"); sim.evolve(0.1)
        >>> path = os.path.join(tempfile.mkdtemp(), "run.nbody"); sim.save(path)
        >>> again = nbody.Simulation.load(path); sim.evolve(0.2); again.evolve(0.2)
        >>> bool(np.array_equal(sim.positions, again.positions))
        True
        """
    @staticmethod
    def load(path: Union[str, "os.PathLike[str]"]) -> "Simulation":
        """The simulation `save` wrote; a damaged or foreign file is a ValueError naming it."""
    def to_bytes(self) -> bytes:
        """What `save` writes, as bytes."""
    @staticmethod
    def from_bytes(data: bytes, name: str = "the saved simulation") -> "Simulation":
        """The simulation `to_bytes` gave."""
    def add_particles(self, positions: FloatArray, velocities: FloatArray, masses: FloatArray) -> None:
        """Appends particles between steps; the integrator starts again from the new system
        (Hermite takes its first steps anew), the time and step count go on.

        >>> import nbody, numpy as np
        >>> sim = nbody.Simulation(n=10); sim.add_particles(np.ones((1, 3)), np.zeros((1, 3)), np.ones(1))
        >>> sim.positions.shape
        (11, 3)
        """
    def remove_particles(self, indices: List[int]) -> None:
        """Removes the particles at `indices` (each at most once) between steps, as
        `add_particles` rebuilds."""
    def save_snapshot(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the system now as a Gadget HDF5 snapshot (see `write_snapshot`).

        >>> import nbody, tempfile, os
        >>> sim = nbody.Simulation(n=64)
        >>> path = os.path.join(tempfile.mkdtemp(), "s.hdf5")
        >>> if nbody.hdf5_compiled:
        ...     sim.save_snapshot(path); assert nbody.read_snapshot(path)[0].shape == (64, 3)
        """
    @property
    def time(self) -> float: ...
    @property
    def steps(self) -> int: ...
    @property
    def on_device(self) -> bool: ...
    @property
    def positions(self) -> npt.NDArray[np.float64]: ...
    @property
    def velocities(self) -> npt.NDArray[np.float64]: ...
    @property
    def masses(self) -> npt.NDArray[np.float64]: ...


class GpuArray:
    """An output array on a GPU (accelerations on GPU arrays): hand it to CuPy, PyTorch,
    JAX or numba without a copy (`torch.from_dlpack(a)`, `cupy.from_dlpack(a)`,
    `jax.numpy.from_dlpack(a)`, `numba.cuda.as_cuda_array(a)`), or copy it to the host
    with `to_numpy()`."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def device(self) -> int: ...
    @property
    def __cuda_array_interface__(self) -> Dict[str, object]: ...
    def __len__(self) -> int: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> object: ...
    def to_numpy(self) -> FloatArray: ...
