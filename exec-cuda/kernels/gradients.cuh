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
