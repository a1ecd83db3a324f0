// The gradient kernels (nbody_core::gradient): the tidal tensor and the two passes of the
// vector-Jacobian product. Part of gravity.cu (included there, in order).
//
// One thread per target (nbody_grad_targets_*) or per source (nbody_grad_sources_*), the
// other side in shared-memory tiles of GRAD_BLOCK records, summed per tile in T and
// added into double totals per tile (as the CPU's passes do). The self pair is summed and
// then taken off with the host's w0 = w(0) and g0 = g(0) (nbody_core::kernel::Softened::
// terms at zero, the arithmetic the core's loops use). SOFT: SOFT_PLUMMER (MASKED for
// eps = 0) or SOFT_SPLINE (arg the support h, h_inv = 1/h).

#define GRAD_BLOCK 256

// The kernel's terms without the mass (nbody_core::kernel::Softened::terms): phi -= m w,
// a += m g d, d(g d)/dd = g I + dg d d^T.
template <typename T, int SOFT, bool MASKED>
__device__ __forceinline__ void grad_terms(T d2, T arg, T h_inv, T &w, T &g, T &dg) {
    if (SOFT == SOFT_SPLINE && d2 < arg * arg) {
        // nbody_core::kernel::spline inside the support, in q = 1 - u past u = 1/2.
        const T u = sqrt(d2) * h_inv, u2 = u * u, h3 = h_inv * h_inv * h_inv, h5 = h3 * h_inv * h_inv;
        if (u < T(0.5)) {
            w = (T(14.0 / 5.0) - u2 * (T(16.0 / 3.0) + u2 * (T(32.0 / 5.0) * u - T(48.0 / 5.0)))) * h_inv;
            g = (T(32.0 / 3.0) + u2 * (T(32.0) * u - T(192.0 / 5.0))) * h3;
            dg = (T(96.0) * u - T(384.0 / 5.0)) * h5;
        } else {
            const T q = T(1) - u, q2 = q * q, q4 = q2 * q2;
            const T m = T(1) - q4 * (T(16.0) - T(128.0 / 5.0) * q + T(32.0 / 3.0) * q2);
            const T u_inv = T(1) / u, u3_inv = u_inv * u_inv * u_inv;
            w = (T(1) + T(16.0 / 15.0) * q4 * q * (T(2) * q - T(3))) * u_inv * h_inv;
            g = m * u3_inv * h3;
            dg = (T(64.0) * q2 * q * u_inv - T(3.0) * m * u3_inv * u_inv) * u_inv * h5;
        }
        return;
    }
    const T r2 = SOFT == SOFT_SPLINE ? d2 : d2 + arg;
    const T rinv = (MASKED && r2 < min_normal<T>()) ? T(0) : rsqrt_fast(r2);
    const T rinv2 = rinv * rinv;
    w = rinv;
    g = rinv2 * rinv;
    dg = T(-3) * rinv2 * rinv2 * rinv;
}

// Field and tidal sums of target i over every source, then (MODE 0) the field into out
// and the tensor into tidal, or (MODE 1) the target's gradient G (T c - h a) into grad.
template <typename T, int SOFT, bool MASKED, int MODE>
__device__ __forceinline__ void grad_targets(const GradArgs<T> &a) {
    typedef typename V4<T>::type V;
    __shared__ V tile[GRAD_BLOCK];
    const int i = blockIdx.x * GRAD_BLOCK + threadIdx.x;
    const V xi = i < a.n_targets ? a.targets[i] : zero4<T>();
    double tot[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int t0 = 0; t0 < a.n_sources; t0 += GRAD_BLOCK) {
        const int j = t0 + threadIdx.x;
        // Past the end: massless records, which add nothing.
        tile[threadIdx.x] = j < a.n_sources ? a.sources[j] : zero4<T>();
        __syncthreads();
        T s[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        const int len = min(GRAD_BLOCK, a.n_sources - t0);
        for (int k = 0; k < len; ++k) {
            const V p = tile[k];
            const T dx = p.x - xi.x, dy = p.y - xi.y, dz = p.z - xi.z;
            T w, g, dg;
            grad_terms<T, SOFT, MASKED>(dx * dx + dy * dy + dz * dz, a.arg, a.h_inv, w, g, dg);
            const T mg = p.w * g, mdg = p.w * dg;
            s[0] += mg * dx;
            s[1] += mg * dy;
            s[2] += mg * dz;
            s[3] -= p.w * w;
            const T ex = mdg * dx, ey = mdg * dy, ez = mdg * dz;
            s[4] -= mg + ex * dx;
            s[5] -= ex * dy;
            s[6] -= ex * dz;
            s[7] -= mg + ey * dy;
            s[8] -= ey * dz;
            s[9] -= mg + ez * dz;
        }
        for (int k = 0; k < 10; ++k) tot[k] += (double)s[k];
        __syncthreads();
    }
    if (i >= a.n_targets) return;
    T f[10];
    for (int k = 0; k < 10; ++k) f[k] = (T)tot[k];
    const int own = i - a.self_t0;
    if (own >= 0 && own < a.self_len) {
        // The self pair (nbody_core::gradient::subtract_self_tidal).
        const T m = a.sources[a.self_s0 + own].w, mg0 = m * a.g0;
        f[3] += m * a.w0;
        f[4] += mg0;
        f[7] += mg0;
        f[9] += mg0;
    }
    const T G = a.g;
    if (MODE == 0) {
        V o = a.out[i];
        o.x += G * f[0];
        o.y += G * f[1];
        o.z += G * f[2];
        if (a.potential) o.w += G * f[3];
        a.out[i] = o;
        for (int k = 0; k < 6; ++k) a.tidal[6 * i + k] += G * f[4 + k];
    } else {
        // nbody_core::gradient::add_target_gradient.
        const V c = a.cot[i];
        const T h = a.potential ? c.w : T(0);
        const T tx = f[4] * c.x + f[5] * c.y + f[6] * c.z;
        const T ty = f[5] * c.x + f[7] * c.y + f[8] * c.z;
        const T tz = f[6] * c.x + f[8] * c.y + f[9] * c.z;
        V o = a.grad[i];
        o.x += G * (tx - h * f[0]);
        o.y += G * (ty - h * f[1]);
        o.z += G * (tz - h * f[2]);
        a.grad[i] = o;
    }
}

// Source j's gradient sums over every target (nbody_core::gradient::pair_source_gradient,
// the targets' cotangents taking the sources' part), then G m_j s and G m into grad.
template <typename T, int SOFT, bool MASKED>
__device__ __forceinline__ void grad_sources(const GradArgs<T> &a) {
    typedef typename V4<T>::type V;
    __shared__ V tx[GRAD_BLOCK], tc[GRAD_BLOCK];
    const int j = blockIdx.x * GRAD_BLOCK + threadIdx.x;
    const V xj = j < a.n_sources ? a.sources[j] : zero4<T>();
    double tot[4] = {0, 0, 0, 0};
    for (int t0 = 0; t0 < a.n_targets; t0 += GRAD_BLOCK) {
        const int i = t0 + threadIdx.x;
        // Past the end: zero cotangents, which add nothing.
        tx[threadIdx.x] = i < a.n_targets ? a.targets[i] : zero4<T>();
        V c = i < a.n_targets ? a.cot[i] : zero4<T>();
        if (!a.potential) c.w = 0;
        tc[threadIdx.x] = c;
        __syncthreads();
        T s[4] = {0, 0, 0, 0};
        const int len = min(GRAD_BLOCK, a.n_targets - t0);
        for (int k = 0; k < len; ++k) {
            const V p = tx[k], q = tc[k];
            const T dx = xj.x - p.x, dy = xj.y - p.y, dz = xj.z - p.z;
            T w, g, dg;
            grad_terms<T, SOFT, MASKED>(dx * dx + dy * dy + dz * dz, a.arg, a.h_inv, w, g, dg);
            const T dc = dx * q.x + dy * q.y + dz * q.z;
            const T radial = dg * dc + q.w * g;
            s[0] += g * q.x + radial * dx;
            s[1] += g * q.y + radial * dy;
            s[2] += g * q.z + radial * dz;
            s[3] += g * dc - q.w * w;
        }
        for (int k = 0; k < 4; ++k) tot[k] += (double)s[k];
        __syncthreads();
    }
    if (j >= a.n_sources) return;
    T f[4];
    for (int k = 0; k < 4; ++k) f[k] = (T)tot[k];
    const int own = j - a.self_s0;
    if (own >= 0 && own < a.self_len) {
        // The self pair (nbody_core::gradient::subtract_self_source).
        const V c = a.cot[a.self_t0 + own];
        const T h = a.potential ? c.w : T(0);
        f[0] -= a.g0 * c.x;
        f[1] -= a.g0 * c.y;
        f[2] -= a.g0 * c.z;
        f[3] += h * a.w0;
    }
    const T gm = a.g * xj.w;
    V o = a.grad[j];
    o.x += gm * f[0];
    o.y += gm * f[1];
    o.z += gm * f[2];
    o.w += a.g * f[3];
    a.grad[j] = o;
}

// The product of a system on itself (targets = sources, each skipping its own pair;
// nbody_core::gradient::pair_fused) in one pass: particle i against every j, its record
// and its cotangent, giving i's target part into grad, its source part and mass gradient
// into out. Per pair one kernel evaluation for eight sums: S0 = sum m_j g, V = sum
// (m_j dg (d.c_i) + h_i m_j g) d, B = sum g c_j + (dg (d.c_j) - h_j g) d, M = -sum g d.c_j
// + h_j w, with d = x_j - x_i; then target part -G (S0 c_i + V), source part G m_i B,
// mass gradient G M. A launch of gridDim.y > 1 block rows splits the js into runs of
// chunk, each row writing its eight double sums a particle into partial for
// nbody_grad_fused_reduce_*: at 65,536 one row would give an H100 two blocks an SM.
// Blocks of 128 threads.
#define GRAD_FUSED_BLOCK 128

// The end of the fused product for particle i from its eight sums: its own pair taken
// out (d = 0: m_i g0 in S0, g0 c_i in B, -h_i w0 in M), then the target part into grad,
// the source part and mass gradient into out.
template <typename T> __device__ __forceinline__ void grad_fused_finish(const GradArgs<T> &a, int i, const double *tot) {
    typedef typename V4<T>::type V;
    const V xi = a.targets[i];
    V ci = a.cot[i];
    if (!a.potential) ci.w = 0;
    T f[8];
    for (int k = 0; k < 8; ++k) f[k] = (T)tot[k];
    f[0] -= xi.w * a.g0;
    f[4] -= a.g0 * ci.x;
    f[5] -= a.g0 * ci.y;
    f[6] -= a.g0 * ci.z;
    f[7] += ci.w * a.w0;
    const T G = a.g, gm = a.g * xi.w;
    V t = a.grad[i];
    t.x -= G * (f[0] * ci.x + f[1]);
    t.y -= G * (f[0] * ci.y + f[2]);
    t.z -= G * (f[0] * ci.z + f[3]);
    a.grad[i] = t;
    V o = a.out[i];
    o.x += gm * f[4];
    o.y += gm * f[5];
    o.z += gm * f[6];
    o.w += G * f[7];
    a.out[i] = o;
}

template <typename T, int SOFT, bool MASKED>
__device__ __forceinline__ void grad_fused(const GradArgs<T> &a) {
    typedef typename V4<T>::type V;
    __shared__ V px[GRAD_FUSED_BLOCK], pc[GRAD_FUSED_BLOCK];
    const int i = blockIdx.x * GRAD_FUSED_BLOCK + threadIdx.x;
    const int n = a.n_targets;
    // This block's run of the js: all of them, or chunk of them per block row.
    const int j0 = blockIdx.y * a.chunk, j1 = min(n, j0 + a.chunk);
    const V xi = i < n ? a.targets[i] : zero4<T>();
    V ci = i < n ? a.cot[i] : zero4<T>();
    if (!a.potential) ci.w = 0;
    double tot[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int t0 = j0; t0 < j1; t0 += GRAD_FUSED_BLOCK) {
        const int j = t0 + threadIdx.x;
        // Past the end: massless records with zero cotangents, which add nothing.
        px[threadIdx.x] = j < j1 ? a.targets[j] : zero4<T>();
        V c = j < j1 ? a.cot[j] : zero4<T>();
        if (!a.potential) c.w = 0;
        pc[threadIdx.x] = c;
        __syncthreads();
        T s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const int len = min(GRAD_FUSED_BLOCK, j1 - t0);
#pragma unroll 4
        for (int k = 0; k < len; ++k) {
            const V p = px[k], q = pc[k];
            const T dx = p.x - xi.x, dy = p.y - xi.y, dz = p.z - xi.z;
            T w, g, dg;
            grad_terms<T, SOFT, MASKED>(dx * dx + dy * dy + dz * dz, a.arg, a.h_inv, w, g, dg);
            const T dci = dx * ci.x + dy * ci.y + dz * ci.z;
            const T dcj = dx * q.x + dy * q.y + dz * q.z;
            const T mg = p.w * g;
            const T cv = p.w * dg * dci + ci.w * mg;
            const T cb = dg * dcj - q.w * g;
            s[0] += mg;
            s[1] += cv * dx;
            s[2] += cv * dy;
            s[3] += cv * dz;
            s[4] += g * q.x + cb * dx;
            s[5] += g * q.y + cb * dy;
            s[6] += g * q.z + cb * dz;
            s[7] -= g * dcj + q.w * w;
        }
        for (int k = 0; k < 8; ++k) tot[k] += (double)s[k];
        __syncthreads();
    }
    if (i >= n) return;
    if (gridDim.y > 1) {
        for (int k = 0; k < 8; ++k) a.partial[((size_t)blockIdx.y * n + i) * 8 + k] = tot[k];
        return;
    }
    grad_fused_finish<T>(a, i, tot);
}

// Adds the block rows' partial sums of a source-split fused launch in row order (the same
// sums whatever the blocks' timing) and finishes each particle; chunk is then the number
// of rows.
template <typename T> __device__ __forceinline__ void grad_fused_reduce(const GradArgs<T> &a) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n_targets) return;
    double tot[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int r = 0; r < a.chunk; ++r)
        for (int k = 0; k < 8; ++k) tot[k] += a.partial[((size_t)r * a.n_targets + i) * 8 + k];
    grad_fused_finish<T>(a, i, tot);
}

// nbody_grad_{targets,sources,fused}_<f32|f64>_s<SOFT>_m<MASKED>[_k<MODE>]: Plummer with and
// without the mask, the spline (which never masks).
#define GRAD_ENTRIES(T, NAME, SOFT, MASKED)                                                                            \
    extern "C" __global__ void __launch_bounds__(GRAD_BLOCK)                                                           \
        nbody_grad_targets_##NAME##_s##SOFT##_m##MASKED##_k0(const GradArgs<T> a) {                                    \
        grad_targets<T, SOFT, MASKED, 0>(a);                                                                           \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(GRAD_BLOCK)                                                           \
        nbody_grad_targets_##NAME##_s##SOFT##_m##MASKED##_k1(const GradArgs<T> a) {                                    \
        grad_targets<T, SOFT, MASKED, 1>(a);                                                                           \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(GRAD_BLOCK)                                                           \
        nbody_grad_sources_##NAME##_s##SOFT##_m##MASKED(const GradArgs<T> a) {                                         \
        grad_sources<T, SOFT, MASKED>(a);                                                                              \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(GRAD_FUSED_BLOCK)                                                     \
        nbody_grad_fused_##NAME##_s##SOFT##_m##MASKED(const GradArgs<T> a) {                                           \
        grad_fused<T, SOFT, MASKED>(a);                                                                                \
    }
#define GRAD_KERNELS(T, NAME) GRAD_ENTRIES(T, NAME, 0, 0) GRAD_ENTRIES(T, NAME, 0, 1) GRAD_ENTRIES(T, NAME, 2, 0)
GRAD_KERNELS(float, f32)
GRAD_KERNELS(double, f64)
extern "C" __global__ void nbody_grad_fused_reduce_f32(const GradArgs<float> a) { grad_fused_reduce<float>(a); }
extern "C" __global__ void nbody_grad_fused_reduce_f64(const GradArgs<double> a) { grad_fused_reduce<double>(a); }

// The whole product of a system on itself with each pair evaluated once for both of its
// particles (Newton's third law for the gradient): with d = x_j - x_i,
// H = m_i c_j - m_j c_i and e = h_i m_j + h_j m_i, particle i's whole gradient (its
// target part and source part together, as nbody_core::Executor::vjp_batch gives it) is
// G P_i with P_i = sum_j t_ij, t_ij = g H + (dg d.H - g e) d, and t_ji = -t_ij; its mass
// gradient is G M_i with M_i = -sum_j (g d.c_j + h_j w), and the pair gives j
// g d.c_i - h_i w. So one evaluation serves two particles at about 20 operations each
// (41 a pair in f32 with the potential, 37 without, besides the j sums' transposition),
// against the fused pass's 45 for one.
//
// Tiles of NI GRAD_PAIRS_THREADS particles (PairsTile). A launch covers a band of tile
// diagonals: block (x, y) takes tile I = x against tile J = I + l, l = band0 + y, when J
// is a tile. Its i-side sums go to slot row 2 y of the band, its j-side sums (every
// lane's, added across the warp through shared memory, then the warps' in order) to row
// 2 y + 1, so every slot is written by one block; nbody_grad_pairs_reduce_* then adds a
// particle's rows in row order into its double sums (`partial`), and the band's last
// launch finishes. Tile I against itself (l = 0) sums every pair but the own one-sided
// (i-side only). Every sum is in a fixed order: the same bits run to run, whatever the
// band width.
#define GRAD_PAIRS_THREADS 64

// Targets a thread: the j-side sums cost a transposition through shared memory per j,
// shared by a thread's targets (four in f32, two in f64: the f64 tile's shared memory
// stays below 48 KiB).
template <typename T> struct PairsTile { static const int NI = 2; };
template <> struct PairsTile<float> { static const int NI = 4; };

// One pair (i in registers, j from the tile; m3i = -3 m_i, m3j = -3 m_j): i's sums in acc,
// j's into jt (t summed, the sign taken at the end) and jm. FIRST: jt and jm start here.
template <typename T, int SOFT, bool MASKED, bool POT, bool FIRST>
__device__ __forceinline__ void grad_pair_once(const GradArgs<T> &a, const typename V4<T>::type &xi,
                                               const typename V4<T>::type &ci, T m3i, const typename V4<T>::type &p,
                                               const typename V4<T>::type &q, T m3j, T acc[4], T jt[4]) {
    const T dx = p.x - xi.x, dy = p.y - xi.y, dz = p.z - xi.z;
    const T dci = dx * ci.x + dy * ci.y + dz * ci.z;
    const T dcj = dx * q.x + dy * q.y + dz * q.z;
    T w, g, s, gi, gj;
    if (SOFT == SOFT_SPLINE) {
        T dg;
        grad_terms<T, SOFT, MASKED>(dx * dx + dy * dy + dz * dz, a.arg, a.h_inv, w, g, dg);
        // d.H without H: m_i d.c_j - m_j d.c_i.
        s = dg * (xi.w * dcj - p.w * dci);
        if (POT) s -= g * (ci.w * p.w + q.w * xi.w);
        gi = g * xi.w;
        gj = g * p.w;
    } else {
        const T r2 = fma(dx, dx, fma(dy, dy, fma(dz, dz, a.arg)));
        const T rinv = (MASKED && r2 < min_normal<T>()) ? T(0) : rsqrt_fast(r2);
        const T rinv2 = rinv * rinv;
        w = rinv;
        g = rinv2 * rinv;
        gi = g * xi.w;
        gj = g * p.w;
        if (POT) {
            // dg d.H - g e = g (m_i A + m_j B) = gi A + gj B, A = -3/r^2 d.c_j - h_j and
            // B = 3/r^2 d.c_i - h_i: two operations fewer than forming e.
            const T r3 = T(-3) * rinv2;
            s = fma(gi, fma(r3, dcj, -q.w), gj * fma(-r3, dci, -ci.w));
        } else {
            // dg d.H = g / r^2 (-3 m_i d.c_j + 3 m_j d.c_i).
            s = g * (rinv2 * (m3i * dcj - m3j * dci));
        }
    }
    const T tx = gi * q.x - gj * ci.x + s * dx;
    const T ty = gi * q.y - gj * ci.y + s * dy;
    const T tz = gi * q.z - gj * ci.z + s * dz;
    acc[0] += tx;
    acc[1] += ty;
    acc[2] += tz;
    acc[3] -= g * dcj;
    if (POT) acc[3] -= q.w * w;
    if (FIRST) {
        jt[0] = tx;
        jt[1] = ty;
        jt[2] = tz;
        jt[3] = g * dci;
        if (POT) jt[3] -= ci.w * w;
    } else {
        jt[0] += tx;
        jt[1] += ty;
        jt[2] += tz;
        // Into the sum directly: one FMA a term, not a product and an add.
        jt[3] = fma(g, dci, jt[3]);
        if (POT) jt[3] = fma(-ci.w, w, jt[3]);
    }
}

// Block (I, J) of tile I's targets against tile J's sources. Every eighth j, each lane's
// four j sums for the last eight js go through `buf` (a row of the warp's 32 lanes a j,
// padded so the reads below meet no bank twice); lane L then adds the 32 lanes' values of
// component L & 3 for j L >> 2 in lane order into `part` (a row per warp and
// component); at the end each j's warps are added in order.
template <typename T, int SOFT, bool MASKED, bool POT, bool DIAG, int TH, int NI>
__device__ __forceinline__ void grad_pairs_tile(const GradArgs<T> &a, int I, int J, typename V4<T>::type *px,
                                                typename V4<T>::type *pc, T *buf, T *part) {
    typedef typename V4<T>::type V;
    const int TILE = NI * TH, ROW = TILE + 8, BUF = 132;
    const int n = a.n_targets, t = threadIdx.x, lane = t & 31, warp = t >> 5;
    V xi[NI], ci[NI];
    T m3i[NI], acc[NI][4];
#pragma unroll
    for (int u = 0; u < NI; ++u) {
        const int i = I * TILE + u * TH + t, j = J * TILE + u * TH + t;
        // Past the end: massless records with zero cotangents, which add nothing.
        xi[u] = i < n ? a.targets[i] : zero4<T>();
        ci[u] = i < n ? a.cot[i] : zero4<T>();
        m3i[u] = T(-3) * xi[u].w;
        px[u * TH + t] = j < n ? a.targets[j] : zero4<T>();
        pc[u * TH + t] = j < n ? a.cot[j] : zero4<T>();
        for (int k = 0; k < 4; ++k) acc[u][k] = 0;
    }
    __syncthreads();
    T *wbuf = buf + warp * 8 * BUF;
    for (int k0 = 0; k0 < TILE; k0 += 8) {
        if (!DIAG) __syncwarp(); // the last eight js' reads, before this eight's writes
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const V p = px[k0 + u], q = pc[k0 + u];
            const T m3j = T(-3) * p.w;
            T jt[4];
            if (DIAG) {
#pragma unroll
                for (int v = 0; v < NI; ++v)
                    if (k0 + u != v * TH + t)
                        grad_pair_once<T, SOFT, MASKED, POT, false>(a, xi[v], ci[v], m3i[v], p, q, m3j, acc[v], jt);
            } else {
                grad_pair_once<T, SOFT, MASKED, POT, true>(a, xi[0], ci[0], m3i[0], p, q, m3j, acc[0], jt);
#pragma unroll
                for (int v = 1; v < NI; ++v)
                    grad_pair_once<T, SOFT, MASKED, POT, false>(a, xi[v], ci[v], m3i[v], p, q, m3j, acc[v], jt);
                V o;
                o.x = jt[0];
                o.y = jt[1];
                o.z = jt[2];
                o.w = jt[3];
                *(V *)(wbuf + u * BUF + 4 * lane) = o;
            }
        }
        if (!DIAG) {
            __syncwarp();
            const int c = lane & 3, j = lane >> 2;
            // Four chains of eight (not one of 32 dependent adds), added in a fixed order.
            T s4[4] = {0, 0, 0, 0};
#pragma unroll
            for (int k = 0; k < 32; ++k) s4[k & 3] += wbuf[j * BUF + 4 * k + c];
            const T sum = (s4[0] + s4[1]) + (s4[2] + s4[3]);
            part[(warp * 4 + c) * ROW + k0 + j] = sum;
        }
    }
    const int row = 2 * blockIdx.y;
    V *slots = a.slots;
    const size_t padded = (size_t)a.tiles * TILE;
#pragma unroll
    for (int u = 0; u < NI; ++u) {
        V o;
        o.x = acc[u][0];
        o.y = acc[u][1];
        o.z = acc[u][2];
        o.w = acc[u][3];
        slots[(size_t)row * padded + (size_t)I * TILE + u * TH + t] = o;
    }
    if (DIAG) return;
    __syncthreads();
#pragma unroll
    for (int u = 0; u < NI; ++u) {
        const int j = u * TH + t;
        T s[4] = {0, 0, 0, 0};
        for (int w = 0; w < TH / 32; ++w)
            for (int c = 0; c < 4; ++c) s[c] += part[(w * 4 + c) * ROW + j];
        V o;
        o.x = -s[0];
        o.y = -s[1];
        o.z = -s[2];
        o.w = s[3];
        slots[(size_t)(row + 1) * padded + (size_t)J * TILE + j] = o;
    }
}

template <typename T, int SOFT, bool MASKED, bool POT, int TH, int NI>
__device__ __forceinline__ void grad_pairs(const GradArgs<T> &a) {
    typedef typename V4<T>::type V;
    const int TILE = NI * TH, WARPS = TH / 32;
    __shared__ V px[TILE], pc[TILE];
    __shared__ __align__(16) T buf[WARPS * 8 * 132];
    __shared__ T part[WARPS * 4 * (TILE + 8)];
    const int I = blockIdx.x, l = a.band0 + blockIdx.y, J = I + l;
    if (J >= a.tiles) return;
    if (l == 0) grad_pairs_tile<T, SOFT, MASKED, POT, true, TH, NI>(a, I, J, px, pc, buf, part);
    else grad_pairs_tile<T, SOFT, MASKED, POT, false, TH, NI>(a, I, J, px, pc, buf, part);
}

// A band's slot rows added into each particle's double sums in row order (chunk: the
// tile's particles; the band of
// `band` diagonals from band0: row 2 y from the tile l diagonals on, row 2 y + 1 from the
// tile l before, where that tile exists); the last band (finish) then adds G P and G M
// into grad.
template <typename T> __device__ __forceinline__ void grad_pairs_reduce(const GradArgs<T> &a) {
    typedef typename V4<T>::type V;
    const int TILE = a.chunk;
    const size_t padded = (size_t)a.tiles * TILE;
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if ((size_t)p >= padded) return;
    const int tile = p / TILE;
    double s[4] = {0, 0, 0, 0};
    if (a.band0 > 0)
        for (int k = 0; k < 4; ++k) s[k] = a.partial[(size_t)p * 4 + k];
    for (int y = 0; y < a.band; ++y) {
        const int l = a.band0 + y;
        if (tile + l < a.tiles) {
            const V v = a.slots[(size_t)(2 * y) * padded + p];
            s[0] += (double)v.x;
            s[1] += (double)v.y;
            s[2] += (double)v.z;
            s[3] += (double)v.w;
        }
        if (l > 0 && tile - l >= 0) {
            const V v = a.slots[(size_t)(2 * y + 1) * padded + p];
            s[0] += (double)v.x;
            s[1] += (double)v.y;
            s[2] += (double)v.z;
            s[3] += (double)v.w;
        }
    }
    if (!a.finish) {
        for (int k = 0; k < 4; ++k) a.partial[(size_t)p * 4 + k] = s[k];
        return;
    }
    if (p >= a.n_targets) return;
    const T G = a.g;
    V o = a.grad[p];
    o.x += G * (T)s[0];
    o.y += G * (T)s[1];
    o.z += G * (T)s[2];
    o.w += G * (T)s[3];
    a.grad[p] = o;
}

// Blocks an SM the register budget leaves room for: 10 (f32, 96 registers, no spills)
// and 6 (f64) of 64 threads, against 6 and 4 unbounded. At 65,536 on an H200, f32 at 10
// blocks ran 1.3% faster than at 8 and 3% faster than at 12; f64 at 6 ran 1% faster
// than at 7 or 8.
#define GRAD_PAIRS_ENTRY(T, NAME, MINB, SOFT, MASKED, POT)                                                             \
    extern "C" __global__ void __launch_bounds__(GRAD_PAIRS_THREADS, MINB)                                             \
        nbody_grad_pairs_##NAME##_s##SOFT##_m##MASKED##_p##POT(const GradArgs<T> a) {                                  \
        grad_pairs<T, SOFT, MASKED, POT, GRAD_PAIRS_THREADS, PairsTile<T>::NI>(a);                                     \
    }
#define GRAD_PAIRS_KERNELS(T, NAME, MINB)                                                                              \
    GRAD_PAIRS_ENTRY(T, NAME, MINB, 0, 0, 0)                                                                           \
    GRAD_PAIRS_ENTRY(T, NAME, MINB, 0, 0, 1)                                                                           \
    GRAD_PAIRS_ENTRY(T, NAME, MINB, 0, 1, 0)                                                                           \
    GRAD_PAIRS_ENTRY(T, NAME, MINB, 0, 1, 1)                                                                           \
    GRAD_PAIRS_ENTRY(T, NAME, MINB, 2, 0, 0)                                                                           \
    GRAD_PAIRS_ENTRY(T, NAME, MINB, 2, 0, 1)                                                                           \
    extern "C" __global__ void nbody_grad_pairs_reduce_##NAME(const GradArgs<T> a) { grad_pairs_reduce<T>(a); }
GRAD_PAIRS_KERNELS(float, f32, 10)
GRAD_PAIRS_KERNELS(double, f64, 6)
