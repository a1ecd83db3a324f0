import numpy as np, sys
mode = sys.argv[1]
if mode == "make":
    n = int(sys.argv[2]); rng = np.random.default_rng(7)
    r = 1 / np.sqrt(rng.uniform(0, 1, n) ** (-2 / 3) - 1)
    r = np.minimum(r, 20)
    v = rng.normal(size=(n, 3)); v /= np.linalg.norm(v, axis=1)[:, None]
    x = v * r[:, None]
    m = np.full(n, 1.0 / n)
    eps = np.where(np.arange(n) % 2 == 0, 1 / 64, 1 / 256)
    np.save("each.npy", np.column_stack([x, m, eps]))
    np.save("one.npy", np.column_stack([x, m]))
else:
    ref, got = np.load(sys.argv[2]), np.load(sys.argv[3])
    a, b = ref[:, :3], got[:, :3]
    e = np.linalg.norm(a - b, axis=1) / np.linalg.norm(a, axis=1)
    pe = np.abs(ref[:, 3] - got[:, 3]) / np.abs(ref[:, 3])
    print(f"{sys.argv[3]}: acceleration max {e.max():.3e} median {np.median(e):.3e}; potential max {pe.max():.3e}")
