// Hermite's device-resident steps, the GRAPE-6 j-memory and neighbour-list packing. Part of gravity.cu (included there, in order).

// Fourth-order Hermite on device-resident particles (exec-cuda/src/hermite.rs): positions
// [x, y, z, m], velocities, accelerations and jerks [., ., ., 0] in T; each particle's time
// and step in double; arithmetic in double, as nbody-integrators' BlockHermite does it.
// predict: every particle to time t (the sources of a block step).
// gather: the active particles' predicted states become the targets; outputs zeroed.
// correct: each active particle's corrector from its state at its own time and the new
// acceleration and jerk, then its next step (block: dyadic, doubled only where the block
// time allows, written to want[k]; shared: Aarseth's wish in want[k]). `start`: the first force call
// sets acceleration and jerk (the host takes the first steps from them: rules::first_steps).
//
// The arithmetic is nbody-integrators' `rules` module's, operation for operation, each
// operation rounded on its own (the _rn intrinsics, which the compiler never fuses into
// an FMA): the device path is tested bit for bit against those Rust functions
// (exec-cuda/tests/physics.rs), so the scheme has one definition.
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double dvd(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double norm3(double x, double y, double z) {
    return __dsqrt_rn(add(add(mul(x, x), mul(y, y)), mul(z, z)));
}
// rules::predict: x + d (v + d (a / 2 + d j / 6)) and v + d (a + d j / 2).
__device__ __forceinline__ double predict_x(double x, double v, double a, double j, double d) {
    return add(x, mul(d, add(v, mul(d, add(mul(0.5, a), dvd(mul(d, j), 6.0))))));
}
__device__ __forceinline__ double predict_v(double v, double a, double j, double d) {
    return add(v, mul(d, add(a, mul(mul(0.5, d), j))));
}

__device__ __forceinline__ double quantize(double dt, double dt_max, double dt_min) {
    double q = dt_max;
    while (q > dt && q > dt_min) q = mul(q, 0.5);
    return q;
}

#define HERMITE(T, NAME)                                                                                               \
    extern "C" __global__ void nbody_hermite_predict_##NAME(const HermiteArgs<T> s) {                                 \
        const int n = s.n;                                                                                             \
        const double t = s.t, *tj = s.tj;                                                                              \
        const V4<T>::type *pos = s.pos, *vel = s.vel, *acc = s.acc, *jerk = s.jerk;                                    \
        V4<T>::type *ppos = s.ppos, *pvel = s.pvel;                                                                    \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                                                 \
        if (i >= n) return;                                                                                            \
        const double d = sub(t, tj[i]);                                                                                \
        V4<T>::type x = pos[i], v = vel[i], a = acc[i], j = jerk[i], px, pv;                                           \
        px.x = (T)predict_x(x.x, v.x, a.x, j.x, d);                                                                    \
        px.y = (T)predict_x(x.y, v.y, a.y, j.y, d);                                                                    \
        px.z = (T)predict_x(x.z, v.z, a.z, j.z, d);                                                                    \
        px.w = x.w;                                                                                                    \
        pv.x = (T)predict_v(v.x, a.x, j.x, d);                                                                         \
        pv.y = (T)predict_v(v.y, a.y, j.y, d);                                                                         \
        pv.z = (T)predict_v(v.z, a.z, j.z, d);                                                                         \
        pv.w = 0;                                                                                                      \
        ppos[i] = px;                                                                                                  \
        pvel[i] = pv;                                                                                                  \
    }                                                                                                                  \
    extern "C" __global__ void nbody_hermite_gather_##NAME(const HermiteArgs<T> s) {                                  \
        const int na = s.na;                                                                                           \
        const u32 *idx = s.idx;                                                                                        \
        const V4<T>::type *ppos = s.ppos, *pvel = s.pvel;                                                              \
        V4<T>::type *tpos = s.tpos, *tvel = s.tvel, *field = s.field, *jerk_out = s.jerk_out;                          \
        int k = blockIdx.x * blockDim.x + threadIdx.x;                                                                 \
        if (k >= na) return;                                                                                           \
        const u32 i = idx[k];                                                                                          \
        tpos[k] = ppos[i];                                                                                             \
        tvel[k] = pvel[i];                                                                                             \
        field[k] = zero4<T>();                                                                                         \
        jerk_out[k] = zero4<T>();                                                                                      \
    }                                                                                                                  \
    extern "C" __global__ void nbody_hermite_correct_##NAME(const HermiteArgs<T> s) {                                 \
        const int na = s.na, start = s.start, block = s.block;                                                         \
        const u32 *idx = s.idx;                                                                                        \
        const double t = s.t, eta = s.eta, dt_max = s.dt_max, dt_min = s.dt_min;                                       \
        V4<T>::type *pos = s.pos, *vel = s.vel, *acc = s.acc, *jerk = s.jerk;                                          \
        const V4<T>::type *field = s.field, *jerk_out = s.jerk_out;                                                    \
        double *tj = s.tj, *want = s.want;                                                                             \
        int k = blockIdx.x * blockDim.x + threadIdx.x;                                                                 \
        if (k >= na) return;                                                                                           \
        const u32 i = idx[k];                                                                                          \
        const V4<T>::type f1 = field[k], g1 = jerk_out[k];                                                             \
        const double a1[3] = {(double)f1.x, (double)f1.y, (double)f1.z};                                               \
        const double j1[3] = {(double)g1.x, (double)g1.y, (double)g1.z};                                               \
        V4<T>::type A, J;                                                                                              \
        A.x = f1.x; A.y = f1.y; A.z = f1.z; A.w = 0;                                                                   \
        J.x = g1.x; J.y = g1.y; J.z = g1.z; J.w = 0;                                                                   \
        if (start) {                                                                                                   \
            acc[i] = A;                                                                                                \
            jerk[i] = J;                                                                                               \
            tj[i] = t;                                                                                                 \
            return;                                                                                                    \
        }                                                                                                              \
        const double h = sub(t, tj[i]);                                                                                \
        const V4<T>::type X = pos[i], Vv = vel[i], A0 = acc[i], J0 = jerk[i];                                          \
        const double x[3] = {(double)X.x, (double)X.y, (double)X.z}, v[3] = {(double)Vv.x, (double)Vv.y, (double)Vv.z}; \
        const double a0[3] = {(double)A0.x, (double)A0.y, (double)A0.z};                                               \
        const double j0[3] = {(double)J0.x, (double)J0.y, (double)J0.z};                                               \
        double x1[3], v1[3], a2[3], a3[3];                                                                             \
        const double hh = mul(h, h), half_h = mul(0.5, h);                                                             \
        for (int c = 0; c < 3; ++c) {                                                                                  \
            v1[c] = add(add(v[c], mul(half_h, add(a0[c], a1[c]))), dvd(mul(hh, sub(j0[c], j1[c])), 12.0));             \
            x1[c] = add(add(x[c], mul(half_h, add(v[c], v1[c]))), dvd(mul(hh, sub(a0[c], a1[c])), 12.0));              \
            a3[c] = dvd(add(mul(12.0, sub(a0[c], a1[c])), mul(mul(6.0, h), add(j0[c], j1[c]))), mul(hh, h));           \
            a2[c] = add(dvd(sub(mul(-6.0, sub(a0[c], a1[c])), mul(h, add(mul(4.0, j0[c]), mul(2.0, j1[c])))), hh),      \
                        mul(a3[c], h));                                                                                \
        }                                                                                                              \
        const double na_ = norm3(a1[0], a1[1], a1[2]), nj = norm3(j1[0], j1[1], j1[2]);                                \
        const double n2 = norm3(a2[0], a2[1], a2[2]), n3 = norm3(a3[0], a3[1], a3[2]);                                 \
        double w = __dsqrt_rn(dvd(mul(eta, add(mul(na_, n2), mul(nj, nj))), add(mul(nj, n3), mul(n2, n2))));         \
        if (!(isfinite(w) && w > 0.0)) w = mul(2.0, h);                                                                \
        want[k] = w;                                                                                                   \
        if (block) {                                                                                                   \
            double nd = quantize(fmin(w, mul(2.0, h)), dt_max, dt_min);                                                \
            const double r = dvd(t, nd);                                                                               \
            if (nd > h && sub(r, floor(r)) != 0.0) nd = h;                                                             \
            want[k] = nd;                                                                                              \
        }                                                                                                              \
        V4<T>::type P, V;                                                                                              \
        P.x = (T)x1[0]; P.y = (T)x1[1]; P.z = (T)x1[2]; P.w = X.w;                                                     \
        V.x = (T)v1[0]; V.y = (T)v1[1]; V.z = (T)v1[2]; V.w = 0;                                                       \
        pos[i] = P;                                                                                                    \
        vel[i] = V;                                                                                                    \
        acc[i] = A;                                                                                                    \
        jerk[i] = J;                                                                                                   \
        tj[i] = t;                                                                                                     \
    }
HERMITE(float, f32)
HERMITE(double, f64)

// GRAPE-6 j-particle memory (exec-cuda/src/jmemory.rs), in double. scatter: k updated
// records of five double4 (x y z m, v, a, jerk, t) written at their addresses. place:
// the i-particles that are j-particles (own[i] >= 0, each address at most once) put at
// the positions and velocities the code passed, so their self pair is exactly zero
// distance, and the outputs zeroed.
extern "C" __global__ void nbody_jmem_scatter(const JmemArgs s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.k) return;
    const u32 a = s.address[i];
    const double4 *r = s.rec + 5 * (size_t)i;
    s.pos[a] = r[0];
    s.vel[a] = r[1];
    s.acc[a] = r[2];
    s.jerk[a] = r[3];
    s.tj[a] = r[4].x;
}

extern "C" __global__ void nbody_jmem_place(const JmemArgs s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.k) return;
    s.field[i] = zero4<double>();
    s.jerk_out[i] = zero4<double>();
    const int a = s.own[i];
    if (a >= 0) {
        s.pos[a] = s.tpos[i];
        s.vel[a] = s.tvel[i];
    }
}

// Packs the neighbour lists of a jerk launch (see ListsArgs in args.h): one thread per
// target, so only the entries found travel to the host, not n x capacity slots.
extern "C" __global__ void nbody_compact_lists(const ListsArgs s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s.n) return;
    const u32 found = s.counts[i], stored = min(found, (u32)s.capacity);
    const u32 at = stored ? atomicAdd(s.meta + 3 * (size_t)s.n, stored) : 0u;
    s.meta[3 * (size_t)i] = found;
    s.meta[3 * (size_t)i + 1] = at;
    s.meta[3 * (size_t)i + 2] = s.near_index ? (u32)s.near_index[i] : (u32)NO_NEIGHBOUR;
    const u32 *from = s.lists + (size_t)i * s.capacity;
    for (u32 k = 0; k < stored; ++k) s.compact[at + k] = from[k];
}
