"""Value and gradient of a scalar of the forces, in JAX: nbody.jax.accelerations (the
forward kernel and the vector-Jacobian product kernel through callbacks) against
jax.grad of a plain jax.numpy all-pairs sum, both under jax.jit, f64, on this CPU
(medians; the first call compiles and is not timed). Also the force alone and the
product alone through the Python API, to show the product's cost in forces.

    python bench_gradients.py            # N = 1,024 and 4,096
    python bench_gradients.py --n 4096 --reps 7
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import nbody
import nbody.jax as njax

jax.config.update("jax_enable_x64", True)


def all_pairs(pos, m, eps):
    n = pos.shape[0]
    d = pos[None, :, :] - pos[:, None, :]
    off = 1.0 - jnp.eye(n)
    r2 = (d**2).sum(-1) + eps**2 + (1.0 - off)
    inv = off / jnp.sqrt(r2)
    return (m[None, :, None] * d * (inv**3)[..., None]).sum(1), -(m[None, :] * inv).sum(1)


def median_seconds(f, reps):
    jax.block_until_ready(f())
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        jax.block_until_ready(f())
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", default="1024,4096")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--eps", type=float, default=0.01)
    args = ap.parse_args()
    for n in [int(x) for x in args.n.split(",")]:
        rng = np.random.default_rng(1)
        pos, m = jnp.asarray(rng.normal(size=(n, 3))), jnp.full(n, 1.0 / n)
        c = jnp.asarray(rng.normal(size=(n, 3)))

        def scalar(field):
            return lambda p, mm: (c * field(p, mm)[0]).sum() + field(p, mm)[1].sum()

        ours = jax.jit(jax.value_and_grad(scalar(lambda p, mm: njax.accelerations(p, mm, eps=args.eps)), (0, 1)))
        theirs = jax.jit(jax.value_and_grad(scalar(lambda p, mm: all_pairs(p, mm, args.eps)), (0, 1)))
        t_ours = median_seconds(lambda: ours(pos, m), args.reps)
        t_theirs = median_seconds(lambda: theirs(pos, m), args.reps)
        (v1, (g1, _)), (v2, (g2, _)) = ours(pos, m), theirs(pos, m)
        err = float(jnp.abs(g1 - g2).max() / jnp.abs(g2).max())
        p_np, m_np, c_np = np.asarray(pos), np.asarray(m), np.asarray(c)
        t_force = median_seconds(lambda: nbody.accelerations(p_np, m_np, eps=args.eps), args.reps)
        t_vjp = median_seconds(lambda: nbody.vjp(p_np, m_np, c_np, np.ones(n), eps=args.eps), args.reps)
        print(
            f"N {n}: value and gradient {t_ours * 1e3:.2f} ms (nbody.jax) against {t_theirs * 1e3:.2f} ms "
            f"(jax.numpy all pairs): {t_theirs / t_ours:.1f}x; gradients agree to {err:.1e}; "
            f"force {t_force * 1e3:.2f} ms, product {t_vjp * 1e3:.2f} ms ({t_vjp / t_force:.2f} forces)"
        )


if __name__ == "__main__":
    main()
