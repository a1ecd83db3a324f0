// Direct-summation gravity kernels for nbody-cuda.
//
// Every kernel computes, for target i and the sources j it is given,
//   a_i += G sum_j m_j d / r^3,   phi_i -= G sum_j m_j / r,   d = x_j - x_i, r^2 = |d|^2 + eps^2
// and ADDS it into the output (calls accumulate). The physics rules are nbody-core's:
// eps > 0 sums every pair and subtracts the self term m_i / eps afterwards; eps = 0 masks
// zero-distance pairs. Techniques (see shared/papers): shared-memory source tiles with the
// next tile's global load issued before the barrier and stored after it; eps^2 folded
// into the first FMA; massless padding instead of bounds tests in the inner loop; NI
// targets per thread to reuse each shared load; TP threads per target for small N, their
// partial sums combined with warp shuffles (no __syncthreads).

typedef unsigned int u32;

#include <cstddef>

template <typename T> struct V4;
template <> struct V4<float> { typedef float4 type; };
template <> struct V4<double> { typedef double4 type; };

// 1/sqrt(x). f32: the hardware estimate (MUFU.RSQ, within 2 ulp). f64: the same
// single-precision-accurate estimate (rsqrt.approx.f64, MUFU.RSQ64H, about 2^-22 relative
// error) refined by one third-order Newton-Householder step, y (1 + e/2 + 3e^2/8) with
// e = 1 - x y^2, which cubes the error: 2^-66, below f64 rounding.
__device__ __forceinline__ float rsqrt_fast(float x) { return rsqrtf(x); }
__device__ __forceinline__ double rsqrt_fast(double x) {
    double y;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
    double e = fma(-x * y, y, 1.0);
    return fma(y * e, fma(0.375, e, 0.5), y);
}

// Pairs with r^2 below the smallest normal number are masked (eps = 0): the same rule as
// nbody-core's inverse_distance.
template <typename T> __device__ __forceinline__ T min_normal();
template <> __device__ __forceinline__ float min_normal<float>() { return 1.17549435e-38f; }
template <> __device__ __forceinline__ double min_normal<double>() { return 2.2250738585072014e-308; }

// The softened kernels (the SOFT template argument; see soft_interact).
#define SOFT_PLUMMER 0
#define SOFT_PLUMMER_EACH 1
#define SOFT_SPLINE 2
#define SOFT_SPLINE_EACH 3

template <typename T> __device__ __forceinline__ typename V4<T>::type zero4() {
    typename V4<T>::type z;
    z.x = 0; z.y = 0; z.z = 0; z.w = 0;
    return z;
}

// A particle as the interactions read it: (x, y, z, m) in C. Mixed precision (T double,
// C float) adds the low parts of its coordinates (double-single: coordinate = p + lo), so
// a separation keeps f64-like accuracy for close pairs: p_j - p_i is exact when they are
// close (Sterbenz), and the low parts add back what rounding to float dropped.
template <typename T, typename C> struct Pt {
    typename V4<C>::type p;
};
template <> struct Pt<double, float> {
    float4 p;
    float4 lo;
};

// The float parts of a particle in a mixed kernel's frame (for far tiles, see
// FAR_REACHES); the particle itself elsewhere.
template <typename T, typename C> __device__ __forceinline__ Pt<C, C> high(const Pt<T, C> &a) {
    Pt<C, C> h;
    h.p = a.p;
    return h;
}

template <typename T, typename C>
__device__ __forceinline__ void separation(const Pt<T, C> &s, const Pt<T, C> &t, C &dx, C &dy, C &dz) {
    dx = s.p.x - t.p.x; dy = s.p.y - t.p.y; dz = s.p.z - t.p.z;
}
template <>
__device__ __forceinline__ void separation<double, float>(const Pt<double, float> &s, const Pt<double, float> &t,
                                                          float &dx, float &dy, float &dz) {
    dx = (s.p.x - t.p.x) + (s.lo.x - t.lo.x);
    dy = (s.p.y - t.p.y) + (s.lo.y - t.lo.y);
    dz = (s.p.z - t.p.z) + (s.lo.z - t.lo.z);
}

// One interaction of target t with source s: 3 FADD (6 more in mixed precision) + 3 FFMA
// (eps^2 in the first) + RSQ + 3 FMUL + 3 FFMA (+1 FADD). Returns d, 1/r and m/r^3 for
// callers that add more terms (the jerk): every kernel's pair math is this function.
template <typename T, typename C, bool POT, bool MASKED>
__device__ __forceinline__ void interact(const Pt<T, C> &t, const Pt<T, C> &s, C eps2, C &ax, C &ay, C &az, C &phi,
                                         C &dx, C &dy, C &dz, C &rinv, C &m_rinv3) {
    separation(s, t, dx, dy, dz);
    C r2 = fma(dz, dz, fma(dy, dy, fma(dx, dx, eps2)));
    rinv = rsqrt_fast(r2);
    if (MASKED) rinv = r2 >= min_normal<C>() ? rinv : C(0);
    C m_rinv = s.p.w * rinv;
    // (m/r * 1/r) * 1/r: stays 0 for a massless source where 1/r^2 overflows.
    m_rinv3 = (m_rinv * rinv) * rinv;
    ax = fma(dx, m_rinv3, ax);
    ay = fma(dy, m_rinv3, ay);
    az = fma(dz, m_rinv3, az);
    if (POT) phi -= m_rinv;
}

template <typename T, typename C, bool POT, bool MASKED>
__device__ __forceinline__ void interact(const Pt<T, C> &t, const Pt<T, C> &s, C eps2, C &ax, C &ay, C &az, C &phi) {
    C dx, dy, dz, rinv, m_rinv3;
    interact<T, C, POT, MASKED>(t, s, eps2, ax, ay, az, phi, dx, dy, dz, rinv, m_rinv3);
}

// The same, and the square of the pair's pull (m/r^2)^2 added into est: a mixed kernel's
// error estimate (see REDO_RATIO). m/r^2 is the product the weight is formed from, so
// the estimate costs one FFMA a pair.
template <typename T, typename C, bool POT, bool MASKED>
__device__ __forceinline__ void interact(const Pt<T, C> &t, const Pt<T, C> &s, C eps2, C &ax, C &ay, C &az, C &phi,
                                         C &est) {
    C dx, dy, dz, rinv, m_rinv3;
    interact<T, C, POT, MASKED>(t, s, eps2, ax, ay, az, phi, dx, dy, dz, rinv, m_rinv3);
    const C pull = (s.p.w * rinv) * rinv;
    est = fma(pull, pull, est);
}

// The softened kernels a batched launch can run (the SOFT template argument): Plummer with
// one eps (the tuned path), Plummer with a length per particle, the spline with one support,
// the spline with a support per particle. Per-particle values are what the host uploads:
// Plummer eps_i^2 / 2 (a pair's eps^2 is the sum), the spline h_i = 2.8 eps_i (a pair's
// support is the larger).

// The cubic spline inside its support h (nbody_core::kernel::spline, r2 < h^2): the
// potential weight w (phi -= m w) and the force weight g (a += m g d).
// ROOT: r and 1/r from one fast reciprocal square root (r^2 = 0, a particle on itself, gives
// u = 0) instead of a square root and a division, long sequences with slow paths that
// slow the f64 and the per-particle kernels. The f32 one-support spline keeps them in a
// call: the root's registers would cost it a block an SM.
template <typename C, bool ROOT = sizeof(C) == 8>
__device__ __forceinline__ void spline_inside(C r2, C h_inv, C &w, C &g) {
    const C rinv = ROOT ? rsqrt_fast(fmax(r2, min_normal<C>())) : C(0);
    const C u = (ROOT ? r2 * rinv : sqrt(r2)) * h_inv, u2 = u * u, h3 = h_inv * h_inv * h_inv;
    if (u < C(0.5)) {
        w = (C(14.0 / 5.0) - u2 * (C(16.0 / 3.0) + u2 * (C(32.0 / 5.0) * u - C(48.0 / 5.0)))) * h_inv;
        g = (C(32.0 / 3.0) + u2 * (C(32.0) * u - C(192.0 / 5.0))) * h3;
    } else {
        // In q = 1 - u, as the core writes it: nothing cancels near u = 1.
        const C q = C(1) - u, q2 = q * q, q4 = q2 * q2;
        const C m = C(1) - q4 * (C(16.0) - C(128.0 / 5.0) * q + C(32.0 / 3.0) * q2);
        // 1/r = (1/u) (1/h).
        const C r_inv = ROOT ? rinv : C(1) / u * h_inv;
        w = (C(1) + C(16.0 / 15.0) * q4 * q * (C(2) * q - C(3))) * r_inv;
        g = m * (r_inv * r_inv * r_inv);
    }
}

// spline_inside as a call, not inlined: the rare path of the f32 spline's loops stays
// small, so the common path unrolls as Plummer's does. (w, g) come back in registers. The
// f64 one-support loops, bound by FP64 throughput, run faster with it inline. The
// per-particle spline's per-pair path (spline_group's SQ) takes the call in f64 and
// wherever the potential is summed: inlined in each of the unrolled groups, the rare path
// makes those kernels thousands of instructions long, and where a warp meets a pair
// inside its support every few hundred steps each such step costs dozens of common ones
// in instruction fetches. The f32 kernel without the potential is short enough to keep it
// inline.
template <typename C> struct Weights {
    C w, g;
};
template <typename C, bool ROOT = sizeof(C) == 8> __device__ __noinline__ Weights<C> spline_inside_call(C r2, C h_inv) {
    Weights<C> out;
    spline_inside<C, ROOT>(r2, h_inv, out.w, out.g);
    return out;
}

// One interaction under kernel SOFT: e_t and e_s are the target's and source's
// per-particle values (unused with one softening); eps2 is eps^2 (Plummer) or the support h
// (the spline), with h_inv = 1/h.
template <typename T, typename C, bool POT, bool MASKED, int SOFT>
__device__ __forceinline__ void soft_interact(const Pt<T, C> &t, const Pt<T, C> &s, C e_t, C e_s, C eps2, C h_inv,
                                              C &ax, C &ay, C &az, C &phi) {
    if (SOFT == SOFT_PLUMMER) {
        interact<T, C, POT, MASKED>(t, s, eps2, ax, ay, az, phi);
        return;
    }
    if (SOFT == SOFT_PLUMMER_EACH) {
        interact<T, C, POT, MASKED>(t, s, e_t + e_s, ax, ay, az, phi);
        return;
    }
    C dx, dy, dz;
    separation(s, t, dx, dy, dz);
    const C r2 = fma(dz, dz, fma(dy, dy, dx * dx));
    C h = eps2, hi = h_inv;
    if (SOFT == SOFT_SPLINE_EACH) h = e_t > e_s ? e_t : e_s;
    C w, g;
    if (r2 < h * h) {
        // Inside the support (rare): the per-particle support's inverse only here.
        if (SOFT == SOFT_SPLINE_EACH) hi = C(1) / h;
        if (sizeof(C) == 4) {
            const Weights<C> wg = spline_inside_call(r2, hi);
            w = wg.w;
            g = wg.g;
        } else {
            spline_inside(r2, hi, w, g);
        }
    } else {
        // Newtonian; two unsoftened particles at one point are masked.
        w = rsqrt_fast(r2);
        if (SOFT == SOFT_SPLINE_EACH) w = r2 >= min_normal<C>() ? w : C(0);
        g = w * w * w;
    }
    const C m_g = s.p.w * g;
    ax = fma(dx, m_g, ax);
    ay = fma(dy, m_g, ay);
    az = fma(dz, m_g, az);
    if (POT) phi -= s.p.w * w;
}

// A non-negative float's bits as a signed integer: they order as the values do.
__device__ __forceinline__ int order_bits(float x) { return __float_as_int(x); }
__device__ __forceinline__ long long order_bits(double x) { return __double_as_longlong(x); }

// NS sources against a thread's NI targets under the spline (SOFT_SPLINE or
// SOFT_SPLINE_EACH): Newtonian and branch-free, as Plummer's pairs are, unless a pair may
// lie inside its support, when the whole group takes the per-pair path. A pair is inside
// only if r^2 is below the square of the larger of its two supports, so the test is one
// bound per source: the square of the larger of the thread's largest target support and
// the source's (at least the smallest normal number, so coincident unsoftened particles
// count as inside). Inside pairs are a few neighbours among N sources, so a warp seldom
// takes that path; a common group costs a minimum per pair (in f32, half that where
// ptxas joins them; see below), one compare per source and one branch (with WARP, a
// vote) over Plummer's.
//
// SQ (the tiled kernel's SOFT_SPLINE_EACH): e_t and e_s (read at e_s[e_at + q * ES]) hold
// squared supports, and bound[0] bounds the whole group (its caller folds the tile's
// largest support into it), so the common path is the one-support spline's and reads no
// source's support; the per-pair path takes 1/h = rsqrt(max(e_t^2, e_s^2)).
//
// WARP (the tiled kernel, whose warps run its loops converged): in f32, the whole warp
// takes the per-pair path when one of its threads must, instead of running both paths
// (one vote a group): near groups are rare, so the divergent paths cost more than the
// warp's detours. Not taken where it does not pay: f64, and the one-support spline with
// the potential.
template <typename T, typename C, int NI, int NS, bool POT, int SOFT, int ES, bool SQ = false, bool WARP = false>
__device__ __forceinline__ void spline_group(const Pt<T, C> (&ti)[NI], const Pt<T, C> (&s)[NS], const C (&bound)[NS],
                                             const C *e_t, const C *e_s, C h, C h_inv, C (&ax)[NI], C (&ay)[NI],
                                             C (&az)[NI], C (&phi)[NI], int e_at = 0) {
    // One bound for the group: the least r^2 of the group against it; else each source's.
    const bool ONE = SOFT == SOFT_SPLINE || SQ;
    C dx[NS][NI], dy[NS][NI], dz[NS][NI], r2[NS][NI];
    bool near = false;
    // f32: the least r^2 as an integer (r^2 >= +0, whose bits order as the values): the
    // ptxas of CUDA 12.9 and 13 joins two chained integer minima into one VIMNMX3 on
    // sm_90, so a group of eight takes four instructions instead of seven FMNMX; nvcc 11.8
    // emits seven two-input VIMNMX, as fast as the FMNMX.
    decltype(order_bits(C(0))) least = 0;
#pragma unroll
    for (int q = 0; q < NS; ++q) {
#pragma unroll
        for (int k = 0; k < NI; ++k) {
            separation(s[q], ti[k], dx[q][k], dy[q][k], dz[q][k]);
            r2[q][k] = fma(dz[q][k], dz[q][k], fma(dy[q][k], dy[q][k], dx[q][k] * dx[q][k]));
            // f64: a compare per pair (DSETP) costs less than a DMNMX chain on the FP64 pipe.
            if (sizeof(C) == 8) near = near || r2[q][k] < bound[ONE ? 0 : q];
            else least = k == 0 && (q == 0 || !ONE) ? order_bits(r2[q][k]) : min(least, order_bits(r2[q][k]));
        }
        if (sizeof(C) == 4 && !ONE) near = near || least < order_bits(bound[q]);
    }
    if (sizeof(C) == 4 && ONE) near = least < order_bits(bound[0]);
    if (WARP && sizeof(C) == 4 && (SQ || !POT)) near = __any_sync(0xffffffffu, near);
    if (!near) {
#pragma unroll
        for (int q = 0; q < NS; ++q)
#pragma unroll
            for (int k = 0; k < NI; ++k) {
                const C rinv = rsqrt_fast(r2[q][k]);
                const C m_rinv = s[q].p.w * rinv;
                const C m_rinv3 = (m_rinv * rinv) * rinv;
                ax[k] = fma(dx[q][k], m_rinv3, ax[k]);
                ay[k] = fma(dy[q][k], m_rinv3, ay[k]);
                az[k] = fma(dz[q][k], m_rinv3, az[k]);
                if (POT) phi[k] -= m_rinv;
            }
    } else if (SQ) {
        // The supports' address formed here: the compiler otherwise forms it on the common
        // path, three instructions a group.
        asm volatile("" : "+r"(e_at));
#pragma unroll
        for (int q = 0; q < NS; ++q) {
            const C hh_s = e_s[e_at + q * ES];
#pragma unroll
            for (int k = 0; k < NI; ++k) {
                const C hh = fmax(e_t[k], hh_s);
                C w, g;
                if (r2[q][k] < hh) {
                    // 1/h from h^2 by the fast reciprocal square root: an exact
                    // square root and division here slow the whole f32 kernel, rare
                    // as the path is (their registers). finish removes the
                    // self term with the same arithmetic.
                    const C hi = rsqrt_fast(hh);
                    if (sizeof(C) == 8 || POT) {
                        // One shared copy of the rare path (see spline_inside_call).
                        const Weights<C> wg = spline_inside_call<C, true>(r2[q][k], hi);
                        w = wg.w;
                        g = wg.g;
                    } else {
                        spline_inside<C, true>(r2[q][k], hi, w, g);
                    }
                } else {
                    // Newtonian; two unsoftened particles at one point are masked.
                    w = r2[q][k] >= min_normal<C>() ? rsqrt_fast(r2[q][k]) : C(0);
                    g = w * w * w;
                }
                const C m_g = s[q].p.w * g;
                ax[k] = fma(dx[q][k], m_g, ax[k]);
                ay[k] = fma(dy[q][k], m_g, ay[k]);
                az[k] = fma(dz[q][k], m_g, az[k]);
                if (POT) phi[k] -= s[q].p.w * w;
            }
        }
    } else {
#pragma unroll
        for (int q = 0; q < NS; ++q)
#pragma unroll
            for (int k = 0; k < NI; ++k)
                soft_interact<T, C, POT, true, SOFT>(ti[k], s[q], SOFT == SOFT_SPLINE_EACH ? e_t[k] : C(0),
                                                      SOFT == SOFT_SPLINE_EACH ? e_s[q * ES] : C(0), h, h_inv, ax[k],
                                                      ay[k], az[k], phi[k]);
    }
}

// Sums over TP consecutive lanes (TP a power of two <= 32), leaving the total in each.
template <int TP, typename T> __device__ __forceinline__ T lane_sum(T v) {
#pragma unroll
    for (int off = TP / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Mixed precision (T = double for storage and sums, C = float for each interaction):
// every particle a block reads is moved into the block's frame, its offset from a centre
// of the block's targets computed in double and split into float high and low parts, so
// the rounding is relative to the offsets, not to the absolute coordinates (a system far
// from the origin keeps the error it has at the origin). With T == C the frame is the
// identity.
template <typename T, typename C> struct Frame {
    __device__ __forceinline__ Pt<T, C> apply(const typename V4<T>::type &p) const {
        Pt<T, C> q;
        q.p = p;
        return q;
    }
    __device__ __forceinline__ typename V4<C>::type velocity(const typename V4<T>::type &v) const { return v; }
};
template <> struct Frame<double, float> {
    double x, y, z;
    // The box of the block's targets in the frame (rounded outwards), and the squared
    // distance beyond which a source box is far (see far_tile).
    float lo[3], hi[3], far2;
    __device__ __forceinline__ Pt<double, float> apply(const double4 &p) const {
        const double d[3] = {p.x - x, p.y - y, p.z - z};
        float hi[3], lo[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
            hi[k] = (float)d[k];
            lo[k] = (float)(d[k] - (double)hi[k]);
        }
        Pt<double, float> q;
        q.p = make_float4(hi[0], hi[1], hi[2], (float)p.w);
        q.lo = make_float4(lo[0], lo[1], lo[2], 0.0f);
        return q;
    }
    // Velocities in the frame, rounded to float (the jerk tolerates their rounding).
    __device__ __forceinline__ float4 velocity(const double4 &v) const {
        return make_float4((float)(v.x - x), (float)(v.y - y), (float)(v.z - z), 0.0f);
    }
};

// A compile-time flag passed as a value (to a generic lambda).
template <bool V> struct Bool { static const bool value = V; };

template <typename T, typename C> struct IsMixed { enum { value = 0 }; };
template <> struct IsMixed<double, float> { enum { value = 1 }; };

// Mixed precision, far sources. The double-single separation costs six more FADDs per
// interaction than a float one; it matters only for sources near the block's targets.
// Dropping the low parts (a float difference of the frame offsets) errs by at most
// 2^-24 (|s - c| + |t - c|) + 2^-24 |d| <= 2^-24 (2 |d| + 2 R) for targets within R of
// the centre c; for sources at least FAR_REACHES R from every target that is at most
// 2^-24 (2 + 2 / FAR_REACHES) |d| = 2^-22 |d|, a few roundings of the separation, so
// tiles whose box is that far from the targets' box take the float path. The accuracy
// does not depend on the order of the particles; the speed does (in Morton order most
// tiles are far).
#define FAR_REACHES 1.0

// The frame of the points p[first, first + count) clipped to n (at least one is real):
// per axis the middle of their bounding box, or 0 where the box is wider than its middle
// is far from the origin (a sparse block: offsets never exceed the coordinates, so the
// error is never worse than plain f32's). Every thread of the block must call it.
template <typename T, typename C>
__device__ __forceinline__ Frame<T, C> block_frame(const typename V4<T>::type *p, int first, int count, int n) {
    return Frame<T, C>();
}
template <>
__device__ __forceinline__ Frame<double, float> block_frame<double, float>(const double4 *p, int first, int count,
                                                                           int n) {
    __shared__ double bounds[6][32];
    double b[6] = {1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0}; // lo xyz, -hi xyz
    for (int t = threadIdx.x; t < count && first + t < n; t += blockDim.x) {
        const double4 q = p[first + t];
        b[0] = fmin(b[0], q.x); b[1] = fmin(b[1], q.y); b[2] = fmin(b[2], q.z);
        b[3] = fmin(b[3], -q.x); b[4] = fmin(b[4], -q.y); b[5] = fmin(b[5], -q.z);
    }
#pragma unroll
    for (int k = 0; k < 6; ++k) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) b[k] = fmin(b[k], __shfl_xor_sync(0xffffffffu, b[k], off));
        if (threadIdx.x % 32 == 0) bounds[k][threadIdx.x / 32] = b[k];
    }
    __syncthreads();
    double c[3], box[6];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        double lo = bounds[k][0], hi = -bounds[k + 3][0];
        for (int w = 1; w < (int)(blockDim.x / 32); ++w) {
            lo = fmin(lo, bounds[k][w]);
            hi = fmax(hi, -bounds[k + 3][w]);
        }
        const double mid = 0.5 * (lo + hi);
        c[k] = hi - lo >= fabs(mid) ? 0.0 : mid;
        box[k] = lo - c[k];
        box[k + 3] = hi - c[k];
    }
    // Everyone has read the bounds before any later use of shared memory overwrites them.
    __syncthreads();
    Frame<double, float> f;
    f.x = c[0]; f.y = c[1]; f.z = c[2];
    double reach2 = 0.0; // the largest squared distance of a target from the centre, at most
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        f.lo[k] = __double2float_rd(box[k]);
        f.hi[k] = __double2float_ru(box[k + 3]);
        const double r = fmax(-box[k], box[k + 3]);
        reach2 = fma(r, r, reach2);
    }
    // Far: at least FAR_REACHES reaches from every target (a little more, for rounding).
    f.far2 = __double2float_ru(FAR_REACHES * FAR_REACHES * 1.001 * reach2);
    return f;
}


// Notes the box (in the frame) of this warp's sources of a tile into box[buf][.][warp]:
// minima of x, y, z and of -x, -y, -z.
// (Overloads, not specialisations: the other kernels' boxes have one lane, and no use.)
template <typename T, typename C, int W> __device__ __forceinline__ void note_box(const Pt<T, C> &, C (*)[W]) {}
__device__ __forceinline__ void note_box(const Pt<double, float> &s, float (*box)[32]) {
    float b[6] = {s.p.x, s.p.y, s.p.z, -s.p.x, -s.p.y, -s.p.z};
#pragma unroll
    for (int k = 0; k < 6; ++k) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) b[k] = fminf(b[k], __shfl_xor_sync(0xffffffffu, b[k], off));
        if (threadIdx.x % 32 == 0) box[k][threadIdx.x / 32] = b[k];
    }
}

// The squared gap (rounded down) between the box of the tile whose warps noted `box`
// and the frame's targets (the same answer in every thread); B, the block size, makes
// the loop over warps short and unrolled.
template <int B, typename T, typename C, int W>
__device__ __forceinline__ float tile_gap2(const C (*)[W], const Frame<T, C> &) {
    return 0.0f;
}
template <int B> __device__ __forceinline__ float tile_gap2(const float (*box)[32], const Frame<double, float> &f) {
    float gap2 = 0.0f;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        float lo = box[k][0], hi = -box[k + 3][0];
#pragma unroll
        for (int w = 1; w < B / 32; ++w) {
            lo = fminf(lo, box[k][w]);
            hi = fmaxf(hi, -box[k + 3][w]);
        }
        // The gap between the boxes on this axis, rounded down.
        const float gap = fmaxf(0.0f, fmaxf(__fsub_rd(lo, f.hi[k]), __fsub_rd(f.lo[k], hi)));
        gap2 = __fmaf_rd(gap, gap, gap2);
    }
    return gap2;
}

// True when the tile whose warps noted `box` lies FAR_REACHES reaches from the frame's
// targets.
template <int B, typename T, typename C, int W>
__device__ __forceinline__ bool far_tile(const C (*)[W], const Frame<T, C> &) {
    return false;
}
template <int B> __device__ __forceinline__ bool far_tile(const float (*box)[32], const Frame<double, float> &f) {
    return tile_gap2<B>(box, f) >= f.far2;
}

// Adds G * sums into out[i]; the potential only when POT; subtracts the self term for
// targets in [self_t0, self_t0 + self_len) (they are sources too) when softened.
template <typename T, typename C, bool POT, bool MASKED, int SOFT = SOFT_PLUMMER>
__device__ __forceinline__ void finish(typename V4<T>::type *out, int i, T m_i, T eps2, T g, T ax, T ay, T az, T phi,
                                       int self_t0, int self_len, C e_i = C(0)) {
    typename V4<T>::type o = out[i];
    o.x += g * ax;
    o.y += g * ay;
    o.z += g * az;
    if (POT) {
        // The kernel added m_i w(0) for the pair (i, i), in the precision of its
        // interactions: remove exactly that (soft_interact's arithmetic for it).
        if (i - self_t0 >= 0 && i - self_t0 < self_len) {
            if (SOFT == SOFT_PLUMMER && !MASKED) phi += (T)((C)m_i * rsqrt_fast((C)eps2));
            if (SOFT == SOFT_PLUMMER_EACH) {
                const C e2 = e_i + e_i;
                if (!MASKED || e2 >= min_normal<C>()) phi += (T)((C)m_i * rsqrt_fast(e2));
            }
            if (SOFT == SOFT_SPLINE) phi += (T)((C)m_i * (C(14.0 / 5.0) * (C(1) / (C)eps2)));
            // The tiled kernel's per-pair spline takes 1/h as rsqrt(h^2) (spline_group).
            if (SOFT == SOFT_SPLINE_EACH && e_i > C(0)) phi += (T)((C)m_i * (C(14.0 / 5.0) * rsqrt_fast(e_i * e_i)));
        }
        o.w += g * phi;
    }
    out[i] = o;
}

// Copies one 16-byte-aligned record from global into shared memory. On sm_80 and later
// it goes straight there (cp.async): no register holds it and the thread does not wait
// for it until copies_wait; before sm_80 it is an ordinary load and store.
template <typename R> __device__ __forceinline__ void copy_async(R *smem, const R *gmem) {
#if __CUDA_ARCH__ >= 800
    static_assert(sizeof(R) % 16 == 0, "cp.async copies 16-byte pieces");
    const unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
#pragma unroll
    for (int k = 0; k < (int)(sizeof(R) / 16); ++k)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst + 16 * k), "l"((const char *)gmem + 16 * k));
#else
    *smem = *gmem;
#endif
}
// Waits for this thread's copy_async copies (a barrier then publishes them to the block).
__device__ __forceinline__ void copies_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
#endif
}

// Source tiles of the tiled kernel hold K blocks' worth of sources (8 KB per buffer) where
// particles go into shared memory unchanged (T == C), so a block meets a barrier once per
// K x B sources; the mixed kernels move each source into their frame on the way, through
// registers, one block's worth per tile.
template <typename T, typename C, int B> struct TileBlocks {
    enum { value = IsMixed<T, C>::value || 8192 / (B * (int)sizeof(Pt<T, C>)) < 1 ? 1 : 8192 / (B * (int)sizeof(Pt<T, C>)) };
};

// Per-particle Plummer's source lengths per 16-byte load: sum_tile reads a slice's lengths
// this many at a time, and stage_lengths pads each slice's row by as many.
template <typename C> struct LengthVector {
    enum { value = 16 / (int)sizeof(C) };
};

// One source s (its per-particle value e_s) against a thread's NI targets. SAME: the
// targets share one length, so soft_interact's per-pair sum e_t + e_s is formed once
// (never with FAR: only the strided kernels, never mixed, take it).
// EST (the mixed kernels under Plummer): each pair's squared pull into est too.
template <typename T, typename C, int NI, bool POT, bool MASKED, bool FAR, int SOFT, bool SAME>
__device__ __forceinline__ void source_pairs(const Pt<T, C> &s, C e_s, const Pt<T, C> (&ti)[NI], const C *e_i, C eps2,
                                             C h_inv, C (&ax)[NI], C (&ay)[NI], C (&az)[NI], C (&phi)[NI], C *est) {
    const bool EACH = SOFT == SOFT_PLUMMER_EACH || SOFT == SOFT_SPLINE_EACH;
    const bool EST = IsMixed<T, C>::value && SOFT == SOFT_PLUMMER;
    static_assert(!(SAME && FAR), "the one-length form has no far tiles");
    const C e_pair = SAME ? e_i[0] + e_s : C(0);
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        const C e_t = EACH ? e_i[k] : C(0);
        if (EST && FAR)
            interact<C, C, POT, MASKED>(high(ti[k]), high(s), eps2, ax[k], ay[k], az[k], phi[k], est[k]);
        else if (EST)
            interact<T, C, POT, MASKED>(ti[k], s, eps2, ax[k], ay[k], az[k], phi[k], est[k]);
        else if (SAME)
            soft_interact<T, C, POT, MASKED, SOFT_PLUMMER>(ti[k], s, C(0), C(0), e_pair, h_inv, ax[k], ay[k], az[k],
                                                           phi[k]);
        else if (FAR)
            soft_interact<C, C, POT, MASKED, SOFT>(high(ti[k]), high(s), e_t, e_s, eps2, h_inv, ax[k], ay[k], az[k],
                                                   phi[k]);
        else soft_interact<T, C, POT, MASKED, SOFT>(ti[k], s, e_t, e_s, eps2, h_inv, ax[k], ay[k], az[k], phi[k]);
    }
}

// Adds the N sources of `tile` into NI targets' sums, each of the TP slices taking every
// TP-th source from its own: N / TP iterations known at compile time, fully unrolled
// when short. FAR (a mixed kernel's far tile): the float parts only. SOFT_SPLINE_EACH:
// e_i and tile_e hold squared supports and tile_h2 is the largest of the tile's.
// SOFT_PLUMMER_EACH: tile_e is the slices' rows of ROW lengths, each padded by V
// (stage_lengths), read V at a time; SAME (a warp whose threads each hold targets of one
// length): a pair's eps^2 is summed once per source, not once per pair.
template <typename T, typename C, int N, int TP, int NI, bool POT, bool MASKED, bool FAR, int SOFT = SOFT_PLUMMER,
          bool SAME = false, int ROW = N / TP>
__device__ __forceinline__ void sum_tile(const Pt<T, C> *tile, int slice, const Pt<T, C> (&ti)[NI], C eps2,
                                         C (&ax)[NI], C (&ay)[NI], C (&az)[NI], C (&phi)[NI],
                                         const C *tile_e = nullptr, const C *e_i = nullptr, C h_inv = C(0),
                                         C tile_h2 = C(0), C *est = nullptr) {
    const bool EACH = SOFT == SOFT_PLUMMER_EACH || SOFT == SOFT_SPLINE_EACH;
    if (!FAR && (SOFT == SOFT_SPLINE || SOFT == SOFT_SPLINE_EACH)) {
        // The spline (T == C here: the mixed executor's splines run batched), two f32
        // sources per test (N / TP is even); one f64 source (the FP64 loop, at half the
        // rate, hides the test, and holding two sources' pairs costs it occupancy). One
        // bound for the whole tile: per particle, the larger of the thread's and the
        // tile's largest supports.
        const int NS = sizeof(C) == 4 ? 2 : 1;
        C h2 = SOFT == SOFT_SPLINE ? eps2 * eps2 : tile_h2;
        if (SOFT == SOFT_SPLINE_EACH)
#pragma unroll
            for (int k = 0; k < NI; ++k) h2 = fmax(h2, e_i[k]);
        C bound[NS];
#pragma unroll
        for (int q = 0; q < NS; ++q) bound[q] = fmax(h2, min_normal<C>());
#pragma unroll(N / TP / NS < (NS == 1 ? 16 : 8) ? N / TP / NS : (NS == 1 ? 16 : 8))
        for (int jj = 0; jj < N / TP; jj += NS) {
            Pt<T, C> s[NS];
#pragma unroll
            for (int q = 0; q < NS; ++q) s[q] = tile[(jj + q) * TP + slice];
            const bool SQ = SOFT == SOFT_SPLINE_EACH;
            spline_group<T, C, NI, NS, POT, SOFT, TP, SQ, true>(ti, s, bound, e_i, SQ ? tile_e + slice : tile_e,
                                                                eps2, h_inv, ax, ay, az, phi, SQ ? jj * TP : 0);
        }
    } else if (SOFT == SOFT_PLUMMER_EACH) {
        // A slice's lengths V at a time (16 bytes; tile_e's rows and j0 are multiples of V,
        // and tile_e is aligned).
        const int V = LengthVector<C>::value;
        static_assert((N / TP) % V == 0, "a slice's sources come in whole vectors");
#pragma unroll((N / TP < 16 ? N / TP : 16) / V)
        for (int j0 = 0; j0 < N / TP; j0 += V) {
            C e_v[V];
            const C *at = tile_e + slice * (ROW + V) + j0;
            if (sizeof(C) == 4) {
                const float4 v = *reinterpret_cast<const float4 *>(at);
                e_v[0] = v.x; e_v[1 % V] = v.y; e_v[2 % V] = v.z; e_v[3 % V] = v.w;
            } else {
                const double2 v = *reinterpret_cast<const double2 *>(at);
                e_v[0] = v.x; e_v[1 % V] = v.y;
            }
#pragma unroll
            for (int jv = 0; jv < V; ++jv)
                source_pairs<T, C, NI, POT, MASKED, FAR, SOFT, SAME>(tile[(j0 + jv) * TP + slice], e_v[jv], ti, e_i, eps2,
                                                                     h_inv, ax, ay, az, phi, est);
        }
    } else {
#pragma unroll(N / TP < 16 ? N / TP : 16)
        for (int jj = 0; jj < N / TP; ++jj)
            source_pairs<T, C, NI, POT, MASKED, FAR, SOFT, false>(tile[jj * TP + slice],
                                                                  EACH ? tile_e[jj * TP + slice] : C(0), ti, e_i,
                                                                  eps2, h_inv, ax, ay, az, phi, est);
    }
}

// Stores a thread's K per-particle lengths into a source tile's lengths (one per B
// threads). The spline's go in squared, and each warp's largest square into most[warp],
// so sum_tile's test has one bound per tile (the warp's threads all call this).
// Per-particle Plummer's go in by slice (TP rows of K * B / TP: source p at row p % TP,
// column p / TP), so that sum_tile reads a slice's next sources with one vector load; each
// row padded by one vector, so the slices' loads fall in different banks.
template <typename C, int B, int K, int TP, int SOFT>
__device__ __forceinline__ void stage_lengths(const C *e, C *tile_e, C *most) {
    C largest = C(0);
#pragma unroll
    for (int q = 0; q < K; ++q) {
        const C v = SOFT == SOFT_SPLINE_EACH ? e[q] * e[q] : e[q];
        largest = fmax(largest, v);
        const int p = q * B + threadIdx.x;
        tile_e[SOFT == SOFT_PLUMMER_EACH ? p % TP * (K * B / TP + LengthVector<C>::value) + p / TP : p] = v;
    }
    if (SOFT == SOFT_SPLINE_EACH) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) largest = fmax(largest, __shfl_xor_sync(0xffffffffu, largest, off));
        if (threadIdx.x % 32 == 0) most[threadIdx.x / 32] = largest;
    }
}

// The tiled kernel. Block of B threads = B/TP target groups x TP slices; each group holds
// NI targets. Sources are padded with massless particles to a multiple of B. When the
// targets cannot fill the GPU, gridDim.y > 1 blocks share a target group, each summing
// one chunk of `chunk` sources (a multiple of B) into `partial[blockIdx.y][target]`, and
// nbody_tiled_reduce adds the chunks in order and finishes. Mixed precision (T double, C
// float): interactions in the block's frame, each thread's float sums added into double
// ones every FLUSH tiles (at least 32 interactions per thread in between), and every
// launch goes through `partial` and the reduction with its error estimates (`estimate`,
// one float per chunk and target), which lists the targets mixed_redo sums again.
template <typename T, typename C, int B, int TP, int NI, bool POT, bool MASKED, int SOFT = SOFT_PLUMMER>
__device__ __forceinline__ void tiled(const typename V4<T>::type *__restrict__ targets, int n_targets,
                                      const typename V4<T>::type *__restrict__ sources, int n_sources_padded,
                                      typename V4<T>::type *__restrict__ out, T eps2_, T g, int self_t0, int self_len,
                                      int chunk, typename V4<T>::type *__restrict__ partial,
                                      const T *__restrict__ lengths_t = nullptr,
                                      const T *__restrict__ lengths_s = nullptr, float *__restrict__ estimate = nullptr,
                                      int *__restrict__ redo = nullptr) {
    typedef typename V4<T>::type v4;
    const bool MIXED = IsMixed<T, C>::value;
    // The reduction that follows (stream order) appends to the list from an empty one.
    if (MIXED && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) redo[0] = 0;
    const bool EACH = SOFT == SOFT_PLUMMER_EACH || SOFT == SOFT_SPLINE_EACH;
    const int K = TileBlocks<T, C, B>::value, L = K * B;
    const int FLUSH = 32 * TP / B > 1 ? 32 * TP / B : 1;
    const C eps2 = (C)eps2_;
    const C h_inv = SOFT == SOFT_SPLINE ? C(1) / eps2 : C(0);
    // Two tiles: while one is read, the next is stored into the other, so each tile costs
    // one barrier, not two. Per-particle lengths ride beside them (padding: length 0); the
    // spline's as squares, with each warp's largest in tile_most (stage_lengths).
    __shared__ Pt<T, C> tile[2][L];
    __shared__ __align__(16) C tile_e[2][SOFT == SOFT_PLUMMER_EACH ? L + TP * LengthVector<C>::value : EACH ? L : 1];
    __shared__ C tile_most[2][SOFT == SOFT_SPLINE_EACH ? B / 32 : 1];
    // Mixed: the boxes of both tiles' sources, per warp (note_box, far_tile).
    __shared__ C boxes[2][6][IsMixed<T, C>::value ? 32 : 1];
    const int slice = threadIdx.x % TP;
    const int block_first = blockIdx.x * (B / TP) * NI;
    // A thread's NI targets: consecutive, or for per-particle Plummer every (B / TP)-th of
    // the block's, so that targets whose lengths alternate or come in long runs give each
    // thread one length (see `same` below).
    const bool STRIDED = SOFT == SOFT_PLUMMER_EACH;
    static_assert(!STRIDED || !IsMixed<T, C>::value, "the one-length form has no far tiles");
    const int first = block_first + threadIdx.x / TP * (STRIDED ? 1 : NI);
    const int step = STRIDED ? B / TP : 1;
    const Frame<T, C> frame = block_frame<T, C>(targets, block_first, B / TP * NI, n_targets);
    Pt<T, C> ti[NI];
    C ax[NI], ay[NI], az[NI], phi[NI], ei[NI], ei_sum[NI], est[NI];
    T mi[NI], sx[NI], sy[NI], sz[NI], sphi[NI];
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        const int i = first + k * step;
        ti[k] = frame.apply(i < n_targets ? targets[i] : zero4<T>());
        mi[k] = i < n_targets ? targets[i].w : T(0);
        ei[k] = EACH && i < n_targets ? (C)lengths_t[i] : C(0);
        // What the sums read: the spline's squared supports, Plummer's values as they are.
        ei_sum[k] = SOFT == SOFT_SPLINE_EACH ? ei[k] * ei[k] : ei[k];
        ax[k] = 0; ay[k] = 0; az[k] = 0; phi[k] = 0; est[k] = 0;
        sx[k] = 0; sy[k] = 0; sz[k] = 0; sphi[k] = 0;
    }
    // Per-particle Plummer in a warp whose every thread holds one target length: each
    // source's eps^2 with it is one add for NI pairs instead of NI (sum_tile's SAME).
    // Only the strided kernels compute it: even dead, the test changes how the compiler
    // schedules Plummer's loop.
    bool same = false;
    if (STRIDED) {
        bool one_length = true;
#pragma unroll
        for (int k = 0; k < NI; ++k)
            // Padding targets (past the end) take any length: their sums are dropped.
            one_length = one_length && (first + k * step >= n_targets || ei[k] == ei[0]);
        same = __all_sync(0xffffffffu, one_length);
    }
    const int begin = blockIdx.y * chunk, end = min(begin + chunk, n_sources_padded);
    // A tile holds K sub-tiles of B sources (the chunk's last tile may hold fewer); the
    // mixed kernels' single sub-tile goes through the frame.
    if (MIXED) {
        if (begin < end) {
            tile[0][threadIdx.x] = frame.apply(sources[begin + threadIdx.x]);
            note_box(tile[0][threadIdx.x], boxes[0]);
        }
    } else {
        for (int q = 0; q < K && begin + q * B < end; ++q)
            copy_async((v4 *)&tile[0][q * B + threadIdx.x], &sources[begin + q * B + threadIdx.x]);
        copies_wait();
    }
    if (EACH) {
        C first_e[K];
#pragma unroll
        for (int q = 0; q < K; ++q) first_e[q] = begin + q * B < end ? (C)lengths_s[begin + q * B + threadIdx.x] : C(0);
        stage_lengths<C, B, K, TP, SOFT>(first_e, tile_e[0], tile_most[0]);
    }
    __syncthreads();
    int buf = 0, tiles = 0;
    for (int base = begin; base < end; base += L, buf ^= 1) {
        // The next tile's loads are issued first and land while this one is computed.
        const bool more = base + L < end;
        v4 next;
        C next_e[EACH ? K : 1];
        if (more) {
            if (MIXED) next = sources[base + L + threadIdx.x];
            else
                for (int q = 0; q < K && base + L + q * B < end; ++q)
                    copy_async((v4 *)&tile[buf ^ 1][q * B + threadIdx.x], &sources[base + L + q * B + threadIdx.x]);
            if (EACH)
#pragma unroll
                for (int q = 0; q < K; ++q)
                    next_e[q] = base + L + q * B < end ? (C)lengths_s[base + L + q * B + threadIdx.x] : C(0);
        }
        const C *te = tile_e[EACH ? buf : 0];
        C most = C(0);
        if (SOFT == SOFT_SPLINE_EACH)
#pragma unroll
            for (int w = 0; w < B / 32; ++w) most = fmax(most, tile_most[buf][w]);
        if (STRIDED && same) {
            // Per-particle Plummer (never mixed) with one length per thread: a full tile, or
            // the chunk's last one sub-tile at a time. (Not a generic lambda over both
            // forms: it changes how the compiler schedules Plummer's loop.)
            if (K == 1 || end - base >= L)
                sum_tile<T, C, L, TP, NI, POT, MASKED, false, SOFT, STRIDED>(tile[buf], slice, ti, eps2, ax, ay, az,
                                                                             phi, te, ei_sum, h_inv, most, est);
            else
                for (int q = 0; q < (end - base) / B; ++q)
                    sum_tile<T, C, B, TP, NI, POT, MASKED, false, SOFT, STRIDED, L / TP>(
                        tile[buf] + q * B, slice, ti, eps2, ax, ay, az, phi, te + q * (B / TP), ei_sum, h_inv, most, est);
        } else if (MIXED && far_tile<B>(boxes[buf], frame)) {
            sum_tile<T, C, L, TP, NI, POT, MASKED, true, SOFT>(tile[buf], slice, ti, eps2, ax, ay, az, phi, te, ei_sum,
                                                               h_inv, most, est);
        } else if (K == 1 || end - base >= L) {
            sum_tile<T, C, L, TP, NI, POT, MASKED, false, SOFT>(tile[buf], slice, ti, eps2, ax, ay, az, phi, te, ei_sum,
                                                                h_inv, most, est);
        } else {
            // The chunk's last tile, partly filled: its sub-tiles one at a time.
            for (int q = 0; q < (end - base) / B; ++q)
                sum_tile<T, C, B, TP, NI, POT, MASKED, false, SOFT, false, L / TP>(
                    tile[buf] + q * B, slice, ti, eps2, ax, ay, az, phi,
                    STRIDED ? te + q * (B / TP) : EACH ? te + q * B : te, ei_sum, h_inv, most, est);
        }
        if (MIXED && (++tiles % FLUSH == 0 || !more)) {
#pragma unroll
            for (int k = 0; k < NI; ++k) {
                sx[k] += ax[k]; sy[k] += ay[k]; sz[k] += az[k]; sphi[k] += phi[k];
                ax[k] = 0; ay[k] = 0; az[k] = 0; phi[k] = 0;
            }
        }
        // Nobody reads tile[buf ^ 1] in this iteration: everyone finished it before the
        // barrier that ended the previous one.
        if (more) {
            if (MIXED) {
                tile[buf ^ 1][threadIdx.x] = frame.apply(next);
                note_box(tile[buf ^ 1][threadIdx.x], boxes[buf ^ 1]);
            } else {
                copies_wait();
            }
            if (EACH) stage_lengths<C, B, K, TP, SOFT>(next_e, tile_e[buf ^ 1], tile_most[buf ^ 1]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        if (!MIXED) {
            sx[k] = ax[k]; sy[k] = ay[k]; sz[k] = az[k]; sphi[k] = phi[k];
        }
        if (TP > 1) {
            sx[k] = lane_sum<TP>(sx[k]);
            sy[k] = lane_sum<TP>(sy[k]);
            sz[k] = lane_sum<TP>(sz[k]);
            if (POT) sphi[k] = lane_sum<TP>(sphi[k]);
            if (MIXED) est[k] = lane_sum<TP>(est[k]);
        }
    }
    if (slice == 0) {
#pragma unroll
        for (int k = 0; k < NI; ++k) {
            const int i = first + k * step;
            if (i >= n_targets) continue;
            if (MIXED || gridDim.y > 1) {
                v4 a;
                a.x = sx[k]; a.y = sy[k]; a.z = sz[k]; a.w = sphi[k];
                partial[(size_t)blockIdx.y * n_targets + i] = a;
                if (MIXED) estimate[(size_t)blockIdx.y * n_targets + i] = est[k];
            } else {
                finish<T, C, POT, MASKED, SOFT>(out, i, mi[k], eps2_, g, sx[k], sy[k], sz[k], sphi[k], self_t0,
                                                self_len, ei[k]);
            }
        }
    }
}

// Mixed precision, targets whose pull is a small net of large ones. Each pair in f32 errs
// by a few 2^-24 of its own pull (the rounding of m/r^3 and of the sum it goes into), so a
// target whose strongest pulls are many times its net pull (a particle between two heavy
// ones, at a clump's centre) can err by more than the 2e-6 the mixed executors promise
// on the clustered test's systems, where the worst target's pulls have a root sum of
// squares many times its net. The kernels sum the squared pulls in f32 beside the forces
// (one FFMA a pair); a target whose root sum exceeds REDO_RATIO times its net pull (or is
// not finite) is summed again in f64 (mixed_redo). The ratio is the largest that keeps
// the clustered test within its bound in every order with a margin (docs/figures.md,
// Mixed precision). A Plummer sphere sends almost none (its nearest pulls are small beside
// the net), so its rate pays only the FFMA.
#define REDO_RATIO 6.0

// Adds the chunks of a source-split tiled launch in chunk order, then finishes. One
// thread per target. Mixed (every launch): a target whose error estimate (the chunks'
// sums of squared pulls) exceeds REDO_RATIO^2 times its squared net pull is listed in
// redo (redo[0] counts them) for mixed_redo, which finishes it.
template <typename T, typename C, bool POT, bool MASKED, int SOFT = SOFT_PLUMMER>
__device__ __forceinline__ void tiled_reduce(const typename V4<T>::type *__restrict__ targets, int n_targets,
                                             int chunks, const typename V4<T>::type *__restrict__ partial,
                                             typename V4<T>::type *__restrict__ out, T eps2, T g, int self_t0,
                                             int self_len, const T *__restrict__ lengths_t = nullptr,
                                             const float *__restrict__ estimate = nullptr, int *__restrict__ redo = nullptr) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_targets) return;
    T ax = 0, ay = 0, az = 0, phi = 0;
    float est = 0.0f;
    for (int c = 0; c < chunks; ++c) {
        const typename V4<T>::type a = partial[(size_t)c * n_targets + i];
        ax += a.x; ay += a.y; az += a.z; phi += a.w;
        if (IsMixed<T, C>::value) est += estimate[(size_t)c * n_targets + i];
    }
    // A target that is a source too summed its own pull, m / eps^2, which is no pull at
    // all (its separation is zero, so its f32 force is exactly 0): taken out again, as
    // the kernel computed it (else every target of a system on itself whose net pull is
    // below m / (6 eps^2) would be summed again).
    if (IsMixed<T, C>::value && !MASKED && i - self_t0 >= 0 && i - self_t0 < self_len) {
        const float rinv = rsqrt_fast((float)eps2), pull = ((float)targets[i].w * rinv) * rinv;
        est = fmaxf(0.0f, fmaf(-pull, pull, est));
    }
    if (IsMixed<T, C>::value && !((double)est <= REDO_RATIO * REDO_RATIO * (double)(ax * ax + ay * ay + az * az))) {
        redo[1 + atomicAdd(redo, 1)] = i;
        return;
    }
    const bool EACH = SOFT == SOFT_PLUMMER_EACH || SOFT == SOFT_SPLINE_EACH;
    finish<T, C, POT, MASKED, SOFT>(out, i, targets[i].w, eps2, g, ax, ay, az, phi, self_t0, self_len,
                                    EACH ? (C)lengths_t[i] : C(0));
}

// The targets the mixed reduction listed, summed again in f64. A target may be alone on
// the list, and its sum is over every source, so the work is split both ways: blocks of
// 32 listed targets (one a lane) times `redo_chunks` runs of the sources, each block
// writing its 32 partial sums into `partial` (free again once the reduction has read
// it: `capacity` records), and mixed_redo_finish adds a target's runs in order, so a run
// of the program gives the same answer whatever order the list came in. Within a block
// the REDO_WARPS warps split the block's sources (warp w every REDO_WARPS-th run of 32),
// each staging its run in its own shared tile for all 32 lanes to read. eps2 and the mask
// are the mixed kernel's (eps^2 rounded to f32, pairs with r^2 below f32's smallest
// normal masked), so a target summed again differs from one that was not only by rounding;
// that mask is why the pair is written out here rather than taken from interact, whose
// f64 form masks below f64's smallest normal.
#define REDO_WARPS 16
// Runs of the sources per group of 32 listed targets: enough that a short list still
// fills the GPU, at most 64 and at least 512 sources each, within `capacity` records.
__device__ __forceinline__ int redo_chunks(int count, int n_sources_padded, int capacity) {
    const int slots = ((count + 31) / 32) * 32;
    int c = slots == 0 ? 1 : capacity / slots;
    c = min(min(c, 64), n_sources_padded / 512);
    return max(c, 1);
}
template <bool POT, bool MASKED>
__device__ __forceinline__ void mixed_redo(const double4 *__restrict__ targets, const double4 *__restrict__ sources,
                                           int n_sources_padded, double eps2, const int *__restrict__ redo,
                                           double4 *__restrict__ partial, int capacity) {
    __shared__ double4 tiles[REDO_WARPS][32];
    __shared__ double sums[REDO_WARPS][4][32];
    const int count = redo[0], lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int chunks = redo_chunks(count, n_sources_padded, capacity), slots = ((count + 31) / 32) * 32;
    // Whole runs of 32 per chunk (n_sources_padded is a multiple of 256).
    const int len = ((n_sources_padded + chunks - 1) / chunks + 31) / 32 * 32;
    for (int w = blockIdx.x; w < (slots / 32) * chunks; w += gridDim.x) {
        const int q = (w / chunks) * 32 + lane, c = w % chunks;
        const int begin = c * len, end = min(begin + len, n_sources_padded);
        const double4 t = q < count ? targets[redo[1 + q]] : make_double4(0.0, 0.0, 0.0, 0.0);
        double ax = 0.0, ay = 0.0, az = 0.0, phi = 0.0;
        for (int j0 = begin + warp * 32; j0 < end; j0 += REDO_WARPS * 32) {
            tiles[warp][lane] = sources[j0 + lane];
            __syncwarp();
#pragma unroll 8
            for (int k = 0; k < 32; ++k) {
                const double4 s = tiles[warp][k];
                const double dx = s.x - t.x, dy = s.y - t.y, dz = s.z - t.z;
                const double r2 = fma(dz, dz, fma(dy, dy, fma(dx, dx, eps2)));
                double rinv = rsqrt_fast(r2);
                if (MASKED) rinv = r2 >= (double)min_normal<float>() ? rinv : 0.0;
                const double m_rinv = s.w * rinv, m_rinv3 = (m_rinv * rinv) * rinv;
                ax = fma(dx, m_rinv3, ax);
                ay = fma(dy, m_rinv3, ay);
                az = fma(dz, m_rinv3, az);
                if (POT) phi -= m_rinv;
            }
            __syncwarp();
        }
        sums[warp][0][lane] = ax; sums[warp][1][lane] = ay; sums[warp][2][lane] = az; sums[warp][3][lane] = phi;
        __syncthreads();
        if (warp == 0) {
            for (int v = 1; v < REDO_WARPS; ++v) {
                ax += sums[v][0][lane]; ay += sums[v][1][lane]; az += sums[v][2][lane]; phi += sums[v][3][lane];
            }
            partial[(size_t)c * slots + q] = make_double4(ax, ay, az, phi);
        }
        __syncthreads();
    }
}

// Adds each listed target's runs (mixed_redo) in order and finishes it. One thread per
// listed target, grid-stride.
template <bool POT, bool MASKED>
__device__ __forceinline__ void mixed_redo_finish(const double4 *__restrict__ targets, int n_sources_padded,
                                                  double4 *__restrict__ out, double eps2, double g, int self_t0,
                                                  int self_len, const int *__restrict__ redo,
                                                  const double4 *__restrict__ partial, int capacity) {
    const int count = redo[0];
    const int chunks = redo_chunks(count, n_sources_padded, capacity), slots = ((count + 31) / 32) * 32;
    for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < count; q += gridDim.x * blockDim.x) {
        double ax = 0.0, ay = 0.0, az = 0.0, phi = 0.0;
        for (int c = 0; c < chunks; ++c) {
            const double4 a = partial[(size_t)c * slots + q];
            ax += a.x; ay += a.y; az += a.z; phi += a.w;
        }
        const int i = redo[1 + q];
        finish<double, double, POT, MASKED>(out, i, targets[i].w, eps2, g, ax, ay, az, phi, self_t0, self_len);
    }
}

// The kernels' argument structs (JerkExtra: what a jerk launch writes besides out and
// jerk; Item and Span of a batched launch; one *Args struct per exported kernel).
#include "args.h"

#define NO_NEIGHBOUR 0x7fffffff

// Keeps the nearer of two (r^2, index) candidates; a tie goes to the smaller index.
template <typename T> __device__ __forceinline__ void keep_nearer(T &best, int &arg, T r2, int j) {
    if (r2 < best || (r2 == best && j < arg)) {
        best = r2;
        arg = j;
    }
}

// Acceleration, potential and jerk (and neighbours), with the acceleration kernel's
// machinery: shared-memory tiles of positions and velocities, TP threads per target
// (partial sums combined with warp shuffles), NI targets per thread (each shared load
// serves NI interactions), and the sources split over gridDim.y chunks of `chunk` (a
// multiple of B) when the targets alone cannot fill the GPU.
template <typename T, typename C, int B, int TP, int NI, bool POT, bool MASKED, bool NEIGH>
__device__ __forceinline__ void tiled_jerk(const typename V4<T>::type *__restrict__ targets,
                                           const typename V4<T>::type *__restrict__ target_vel, int n_targets,
                                           const typename V4<T>::type *__restrict__ sources,
                                           const typename V4<T>::type *__restrict__ source_vel, int n_sources,
                                           int n_sources_padded, int chunk, typename V4<T>::type *__restrict__ out,
                                           typename V4<T>::type *__restrict__ jerk_out, T eps2_, T g, int self_t0,
                                           int self_s0, int self_len, JerkExtra<T> x) {
    typedef typename V4<T>::type v4;
    typedef typename V4<C>::type c4;
    const bool MIXED = IsMixed<T, C>::value;
    const C eps2 = (C)eps2_;
    __shared__ Pt<T, C> tile_x[B];
    __shared__ c4 tile_v[B];
    const int slice = threadIdx.x % TP;
    const int block_first = blockIdx.x * (B / TP) * NI;
    const int first = block_first + threadIdx.x / TP * NI;
    // Mixed precision: positions and velocities each in the frame of the block's targets.
    const Frame<T, C> fx = block_frame<T, C>(targets, block_first, B / TP * NI, n_targets);
    const Frame<T, C> fv = block_frame<T, C>(target_vel, block_first, B / TP * NI, n_targets);
    Pt<T, C> p[NI];
    c4 v[NI];
    int own[NI];
    T mi[NI], h2[NI], best[NI], s[7][NI];
    C ax[NI], ay[NI], az[NI], phi[NI], jx[NI], jy[NI], jz[NI];
    int arg[NI];
#pragma unroll
    for (int q = 0; q < NI; ++q) {
        const int i = first + q;
        const bool real = i < n_targets;
        p[q] = fx.apply(real ? targets[i] : zero4<T>());
        v[q] = fv.velocity(real ? target_vel[i] : zero4<T>());
        mi[q] = real ? targets[i].w : T(0);
        own[q] = x.own != 0 ? (real ? x.own[i] : -1)
                            : (i - self_t0 >= 0 && i - self_t0 < self_len ? self_s0 + i - self_t0 : -1);
        h2[q] = NEIGH && real && x.h2 != 0 ? x.h2[i] : T(-1);
        ax[q] = 0; ay[q] = 0; az[q] = 0; phi[q] = 0; jx[q] = 0; jy[q] = 0; jz[q] = 0;
#pragma unroll
        for (int c = 0; c < 7; ++c) s[c][q] = 0;
        best[q] = T(1) / T(0);
        arg[q] = NO_NEIGHBOUR;
    }
    // Mixed: tiles far from the targets take float separations (see FAR_REACHES). With
    // neighbours, only where no source of the tile can be a neighbour of the warp's
    // targets (its gap beyond each target's radius and nearest distance so far, by a
    // margin far above the roundings of either), so the lists and nearest neighbours are
    // those the double-single distances give; and the tiles start at the block's own
    // sources (targets that are sources), whose nearest distances then bound the rest.
    __shared__ C boxes[6][IsMixed<T, C>::value ? 32 : 1];
    const int begin = blockIdx.y * chunk, end = min(begin + chunk, n_sources_padded);
    // (Targets not declared as sources start where they would sit in the sources, were
    // they the same array in the same order: a guess that only orders the tiles.)
    int start = 0;
    if (MIXED && NEIGH && block_first < n_targets) {
        int s0 = x.own != 0 ? x.own[block_first]
                            : (block_first - self_t0 >= 0 && block_first - self_t0 < self_len
                                   ? self_s0 + block_first - self_t0
                                   : -1);
        if (s0 < 0) s0 = (int)((long long)block_first * n_sources / n_targets);
        if (s0 >= begin && s0 < end) start = (s0 - begin) / B * B;
    }
    for (int step = 0; step < end - begin; step += B) {
        const int base = begin + (start + step) % (end - begin);
        __syncthreads();
        tile_x[threadIdx.x] = fx.apply(sources[base + threadIdx.x]);
        tile_v[threadIdx.x] = fv.velocity(source_vel[base + threadIdx.x]);
        if (MIXED) note_box(tile_x[threadIdx.x], boxes);
        __syncthreads();
        // The tile's sums, with double-single or (FAR) float separations.
        auto sum_tile = [&](auto far) {
            const bool FAR = decltype(far)::value;
#pragma unroll(NI > 1 ? 2 : 4)
            for (int jj = 0; jj < B / TP; ++jj) {
                const int k = jj * TP + slice;
                const Pt<T, C> sx = tile_x[k];
                const c4 sv = tile_v[k];
#pragma unroll
                for (int q = 0; q < NI; ++q) {
                    C dx, dy, dz, rinv, m_rinv3;
                    if (FAR)
                        interact<C, C, POT, MASKED>(high(p[q]), high(sx), eps2, ax[q], ay[q], az[q], phi[q], dx, dy, dz,
                                                    rinv, m_rinv3);
                    else
                        interact<T, C, POT, MASKED>(p[q], sx, eps2, ax[q], ay[q], az[q], phi[q], dx, dy, dz, rinv,
                                                    m_rinv3);
                    C dvx = sv.x - v[q].x, dvy = sv.y - v[q].y, dvz = sv.z - v[q].z;
                    C alpha = ((C(3) * fma(dx, dvx, fma(dy, dvy, dz * dvz))) * rinv) * rinv;
                    jx[q] = fma(m_rinv3, fma(-alpha, dx, dvx), jx[q]);
                    jy[q] = fma(m_rinv3, fma(-alpha, dy, dvy), jy[q]);
                    jz[q] = fma(m_rinv3, fma(-alpha, dz, dvz), jz[q]);
                    if (NEIGH && !FAR) {
                        const int j = base + k;
                        const T d2 = (T)((dx * dx + dy * dy) + dz * dz);
                        const bool other = j != own[q] && j < n_sources;
                        if (other && d2 < best[q]) {
                            best[q] = d2;
                            arg[q] = j;
                        }
                        if (other && d2 <= h2[q]) {
                            const u32 slot = atomicAdd(&x.counts[first + q], 1u);
                            if (slot < (u32)x.capacity) x.lists[(size_t)(first + q) * x.capacity + slot] = (u32)j;
                        }
                    }
                }
            }
        };
        bool far = MIXED && far_tile<B>(boxes, fx);
        if (NEIGH && far) {
            const T gap2 = (T)tile_gap2<B>(boxes, fx);
            bool clear = true;
#pragma unroll
            for (int q = 0; q < NI; ++q)
                clear = clear && (first + q >= n_targets || gap2 > T(1.001) * fmax(h2[q], best[q]));
            far = __all_sync(0xffffffffu, clear);
        }
        if (far) sum_tile(Bool<true>());
        else sum_tile(Bool<false>());
        // Mixed precision: each tile's float sums (B / TP interactions) go into doubles.
        if (MIXED) {
#pragma unroll
            for (int q = 0; q < NI; ++q) {
                s[0][q] += ax[q]; s[1][q] += ay[q]; s[2][q] += az[q]; s[3][q] += phi[q];
                s[4][q] += jx[q]; s[5][q] += jy[q]; s[6][q] += jz[q];
                ax[q] = 0; ay[q] = 0; az[q] = 0; phi[q] = 0; jx[q] = 0; jy[q] = 0; jz[q] = 0;
            }
        }
    }
#pragma unroll
    for (int q = 0; q < NI; ++q) {
        if (!MIXED) {
            s[0][q] = ax[q]; s[1][q] = ay[q]; s[2][q] = az[q]; s[3][q] = phi[q];
            s[4][q] = jx[q]; s[5][q] = jy[q]; s[6][q] = jz[q];
        }
        if (TP > 1) {
#pragma unroll
            for (int c = 0; c < 7; ++c)
                if (POT || c != 3) s[c][q] = lane_sum<TP>(s[c][q]);
            if (NEIGH) {
#pragma unroll
                for (int off = TP / 2; off > 0; off >>= 1)
                    keep_nearer(best[q], arg[q], __shfl_xor_sync(0xffffffffu, best[q], off),
                                __shfl_xor_sync(0xffffffffu, arg[q], off));
            }
        }
        const int i = first + q;
        if (slice != 0 || i >= n_targets) continue;
        if (gridDim.y > 1) {
            const size_t at = (size_t)blockIdx.y * n_targets + i;
            v4 a, jk;
            a.x = s[0][q]; a.y = s[1][q]; a.z = s[2][q]; a.w = s[3][q];
            jk.x = s[4][q]; jk.y = s[5][q]; jk.z = s[6][q]; jk.w = best[q];
            x.acc_part[at] = a;
            x.jerk_part[at] = jk;
            if (NEIGH) x.near_part[at] = arg[q];
            continue;
        }
        finish<T, C, POT, MASKED>(out, i, mi[q], eps2_, g, s[0][q], s[1][q], s[2][q], s[3][q], self_t0, self_len);
        v4 jo = jerk_out[i];
        jo.x += g * s[4][q]; jo.y += g * s[5][q]; jo.z += g * s[6][q];
        jerk_out[i] = jo;
        if (NEIGH) {
            x.near_index[i] = arg[q];
            x.near_r2[i] = best[q];
        }
    }
}

// Combines the chunks of a source-split jerk launch in chunk order (the same sums on
// every run), then finishes as the unsplit kernel does. One thread per target.
template <typename T, typename C, bool POT, bool MASKED, bool NEIGH>
__device__ __forceinline__ void jerk_reduce(const typename V4<T>::type *__restrict__ targets, int n_targets,
                                            int chunks, typename V4<T>::type *__restrict__ out,
                                            typename V4<T>::type *__restrict__ jerk_out, T eps2, T g, int self_t0,
                                            int self_len, JerkExtra<T> x) {
    typedef typename V4<T>::type v4;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_targets) return;
    T ax = 0, ay = 0, az = 0, phi = 0, jx = 0, jy = 0, jz = 0;
    T best = T(1) / T(0);
    int arg = NO_NEIGHBOUR;
    for (int c = 0; c < chunks; ++c) {
        const size_t at = (size_t)c * n_targets + i;
        const v4 a = x.acc_part[at], jk = x.jerk_part[at];
        ax += a.x; ay += a.y; az += a.z; phi += a.w;
        jx += jk.x; jy += jk.y; jz += jk.z;
        if (NEIGH) keep_nearer(best, arg, jk.w, x.near_part[at]);
    }
    finish<T, C, POT, MASKED>(out, i, targets[i].w, eps2, g, ax, ay, az, phi, self_t0, self_len);
    v4 jo = jerk_out[i];
    jo.x += g * jx; jo.y += g * jy; jo.z += g * jz;
    jerk_out[i] = jo;
    if (NEIGH) {
        x.near_index[i] = arg;
        x.near_r2[i] = best;
    }
}

// One work item of a batched launch: up to 32 targets [t0, t1) of one pair and the source
// spans [span_first, span_last) of the expanded span list, which together hold at most a
// chunk of sources (so items cost about the same). `offset[s]` is where span s starts in
// the item's concatenated source list. Several items may name the same targets: they add
// their sums atomically. The self terms of the softened potential are removed after, by
// nbody_self_potential, from counts made on the host (a per-thread count over the item's
// spans cost as much as the interactions for tree lists of one-particle monopole spans).
// (Item and Span are declared in args.h.)

// Where a batched or cell item's sums for target i go: added atomically into out (the
// item is its target group's only one), or into the item's block of partial sums, which
// nbody_batch_reduce_* adds in the items' order (a group cut into several items: sums
// that do not depend on which block finished first).
template <typename T, bool POT>
__device__ __forceinline__ void item_sums(typename V4<T>::type *out, const u32 *slots, typename V4<T>::type *partial,
                                          const Item &item, int i, T sx, T sy, T sz, T sphi) {
    const u32 slot = slots ? slots[blockIdx.x] : NO_SLOT;
    if (slot != NO_SLOT) {
        typename V4<T>::type v;
        v.x = sx; v.y = sy; v.z = sz; v.w = POT ? sphi : T(0);
        partial[(size_t)slot * 32 + (i - item.t0)] = v;
        return;
    }
    atomicAdd(&out[i].x, sx);
    atomicAdd(&out[i].y, sy);
    atomicAdd(&out[i].z, sz);
    if (POT) atomicAdd(&out[i].w, sphi);
}

// Adds each run's partial sums (a run: a target group's items, in order) into out, one
// thread per target.
template <typename T> __device__ __forceinline__ void batch_reduce(const BatchArgs<T> &a) {
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 32 * (size_t)a.n) return;
    const Item run = a.items[t / 32];
    const u32 l = (u32)(t % 32), i = run.t0 + l;
    if (i >= run.t1) return;
    T sx = 0, sy = 0, sz = 0, sphi = 0;
    for (u32 s = run.span_first; s < run.span_last; ++s) {
        const typename V4<T>::type v = a.partial[(size_t)s * 32 + l];
        sx += v.x; sy += v.y; sz += v.z; sphi += v.w;
    }
    atomicAdd(&a.out[i].x, sx);
    atomicAdd(&a.out[i].y, sy);
    atomicAdd(&a.out[i].z, sz);
    atomicAdd(&a.out[i].w, sphi);
}

// Batched kernel: block of 128 threads = 128 / TP targets x TP slices (32 x 4 for a full
// item; batched picks TP by the item's count of targets). The item's spans are read
// as one concatenated list, so a tile of 128 is filled across span boundaries (tree lists
// are made of short spans); only the item's last tile is padded with massless particles.
template <typename T, typename C, bool POT, bool MASKED, int SOFT, int TP>
__device__ __forceinline__ void batched_layout(const typename V4<T>::type *__restrict__ particles, const Item &item,
                                               const Span *__restrict__ spans, const u32 *__restrict__ offset,
                                               typename V4<T>::type *__restrict__ out,
                                               const T *__restrict__ lengths, const u32 *__restrict__ slots,
                                               typename V4<T>::type *__restrict__ partial, T eps2_, T g,
                                               Pt<T, C> *tile, C *tile_e, C (*boxes)[IsMixed<T, C>::value ? 32 : 1]) {
    const bool MIXED = IsMixed<T, C>::value;
    const bool EACH = SOFT == SOFT_PLUMMER_EACH || SOFT == SOFT_SPLINE_EACH;
    const C eps2 = (C)eps2_;
    const C h_inv = SOFT == SOFT_SPLINE ? C(1) / eps2 : C(0);
    const int B = 128;
    const int slice = threadIdx.x % TP;
    const int i = item.t0 + threadIdx.x / TP;
    const bool active = i < (int)item.t1;
    // Mixed precision: the frame of the item's targets (a tree leaf: compact).
    const Frame<T, C> frame = block_frame<T, C>(particles, item.t0, item.t1 - item.t0, item.t1);
    const Pt<T, C> p = frame.apply(active ? particles[i] : zero4<T>());
    const C e_i = EACH && active ? (C)lengths[i] : C(0);
    C ax = 0, ay = 0, az = 0, phi = 0;
    T sx = 0, sy = 0, sz = 0, sphi = 0;
    const u32 last = item.span_last - 1;
    const u32 total = offset[last] + (spans[last].end - spans[last].start);
    for (u32 base = 0; base < total; base += B) {
        const u32 flat = base + threadIdx.x;
        Pt<T, C> q = frame.apply(zero4<T>());
        C e_q = 0;
        if (flat < total) {
            // The span holding position `flat`: the last whose offset is <= flat.
            u32 lo = item.span_first, hi = last;
            while (lo < hi) {
                const u32 mid = (lo + hi + 1) / 2;
                if (offset[mid] <= flat) lo = mid; else hi = mid - 1;
            }
            const u32 k = spans[lo].start + (flat - offset[lo]);
            q = frame.apply(particles[k]);
            if (EACH) e_q = (C)lengths[k];
        }
        __syncthreads();
        tile[threadIdx.x] = q;
        if (EACH) tile_e[threadIdx.x] = e_q;
        if (MIXED) note_box(q, boxes);
        __syncthreads();
        // A far tile (mixed, see FAR_REACHES) in float, as in the tiled kernel.
        if (MIXED && far_tile<B>(boxes, frame)) {
#pragma unroll 8
            for (int j = slice; j < B; j += TP)
                soft_interact<C, C, POT, MASKED, SOFT>(high(p), high(tile[j]), e_i, tile_e[EACH ? j : 0], eps2, h_inv,
                                                       ax, ay, az, phi);
        } else if (SOFT == SOFT_SPLINE || SOFT == SOFT_SPLINE_EACH) {
            // Four f32 sources per test of the spline's supports (spline_group), one f64.
            const int NS = sizeof(C) == 4 ? 4 : 1;
            const C h2 = fmax(SOFT == SOFT_SPLINE ? eps2 * eps2 : e_i * e_i, min_normal<C>());
            const Pt<T, C> t[1] = {p};
            C bx[1] = {ax}, by[1] = {ay}, bz[1] = {az}, bphi[1] = {phi};
#pragma unroll 2
            for (int j = slice; j < B; j += NS * TP) {
                Pt<T, C> src[NS];
                C e_s[NS], bound[NS];
#pragma unroll
                for (int q = 0; q < NS; ++q) {
                    src[q] = tile[j + q * TP];
                    e_s[q] = SOFT == SOFT_SPLINE_EACH ? tile_e[j + q * TP] : C(0);
                    bound[q] = SOFT == SOFT_SPLINE_EACH ? fmax(h2, e_s[q] * e_s[q]) : h2;
                }
                spline_group<T, C, 1, NS, POT, SOFT, 1>(t, src, bound, &e_i, e_s, eps2, h_inv, bx, by, bz, bphi);
            }
            ax = bx[0]; ay = by[0]; az = bz[0]; phi = bphi[0];
        } else {
#pragma unroll 8
            for (int j = slice; j < B; j += TP)
                soft_interact<T, C, POT, MASKED, SOFT>(p, tile[j], e_i, tile_e[EACH ? j : 0], eps2, h_inv, ax, ay, az,
                                                       phi);
        }
        if (MIXED) {
            sx += ax; sy += ay; sz += az; sphi += phi;
            ax = 0; ay = 0; az = 0; phi = 0;
        }
    }
    if (!MIXED) {
        sx = ax; sy = ay; sz = az; sphi = phi;
    }
    sx = lane_sum<TP>(sx);
    sy = lane_sum<TP>(sy);
    sz = lane_sum<TP>(sz);
    if (POT) {
        sphi = lane_sum<TP>(sphi);
    }
    if (active && slice == 0) item_sums<T, POT>(out, slots, partial, item, i, g * sx, g * sy, g * sz, g * sphi);
}

// One item per block of 128 threads. An item's cost is its list over the block's
// 128 / TP rows, whatever its count of targets, so items of few targets (a tree group's
// last: a group of 68 makes items of 32, 32 and 4) take more slices per target: 32
// targets x 4 slices, 16 x 8, 8 x 16 or 4 x 32 (the branch is the block's, so no warp
// diverges).
template <typename T, typename C, bool POT, bool MASKED, int SOFT>
__device__ __forceinline__ void batched(const typename V4<T>::type *__restrict__ particles,
                                        const Item *__restrict__ items, const Span *__restrict__ spans,
                                        const u32 *__restrict__ offset, typename V4<T>::type *__restrict__ out,
                                        const T *__restrict__ lengths, const u32 *__restrict__ slots,
                                        typename V4<T>::type *__restrict__ partial, T eps2, T g) {
    const bool EACH = SOFT == SOFT_PLUMMER_EACH || SOFT == SOFT_SPLINE_EACH;
    __shared__ Pt<T, C> tile[128];
    __shared__ C tile_e[EACH ? 128 : 1];
    // Mixed: the tile's box, per warp (note_box, far_tile).
    __shared__ C boxes[6][IsMixed<T, C>::value ? 32 : 1];
    const Item item = items[blockIdx.x];
    const u32 targets = item.t1 - item.t0;
#define BATCHED_LAYOUT(TP)                                                                                             \
    batched_layout<T, C, POT, MASKED, SOFT, TP>(particles, item, spans, offset, out, lengths, slots, partial, eps2, g, \
                                                tile, tile_e, boxes)
    if (targets > 16) BATCHED_LAYOUT(4);
    else if (targets > 8) BATCHED_LAYOUT(8);
    else if (targets > 4) BATCHED_LAYOUT(16);
    else BATCHED_LAYOUT(32);
#undef BATCHED_LAYOUT
}

// A far cell as the cell kernel reads it, in the arithmetic precision C: centre (in the
// block's frame for mixed precision: a far cell needs no low parts), mass, quadrupole;
// twelve lanes aligned like four, so a thread reads one in three 128-bit loads.
template <typename C> struct __align__(4 * sizeof(C)) CellC {
    C x, y, z, m, q[6], pad[2];
};

// One particle-cell interaction (nbody_core::cell::cell): with d = x_i - c, r^2 = |d|^2
// + eps^2, phi -= M/r + dQd/(2 r^5), a += Q d / r^5 - (M + 5/2 dQd/r^4) d / r^3 (the
// monopole through 1/r^3, not r^2/r^5, so it stays normal as far out as the pair
// kernel's). MASKED: a target at an unsoftened cell's centre feels nothing (as in the
// pair kernel); the device tree's lists need no mask, since a walk takes a cell only
// when its centre lies outside the group's box, so every target's r^2 > 0.
template <typename C, bool POT, bool MASKED>
__device__ __forceinline__ void cell_interact(const typename V4<C>::type &t, const CellC<C> &c, C eps2, C &ax, C &ay,
                                              C &az, C &phi) {
    const C dx = t.x - c.x, dy = t.y - c.y, dz = t.z - c.z;
    const C r2 = fma(dz, dz, fma(dy, dy, fma(dx, dx, eps2)));
    C rinv = rsqrt_fast(r2);
    if (MASKED) rinv = r2 >= min_normal<C>() ? rinv : C(0);
    const C qdx = fma(c.q[0], dx, fma(c.q[1], dy, c.q[2] * dz));
    const C qdy = fma(c.q[1], dx, fma(c.q[3], dy, c.q[4] * dz));
    const C qdz = fma(c.q[2], dx, fma(c.q[4], dy, c.q[5] * dz));
    const C dqd = fma(dx, qdx, fma(dy, qdy, dz * qdz));
    const C rinv2 = rinv * rinv, rinv3 = rinv2 * rinv, rinv5 = rinv3 * rinv2;
    const C radial = rinv3 * fma(C(2.5) * dqd * rinv2, rinv2, c.m);
    ax = fma(-radial, dx, fma(qdx, rinv5, ax));
    ay = fma(-radial, dy, fma(qdy, rinv5, ay));
    az = fma(-radial, dz, fma(qdz, rinv5, az));
    if (POT) phi -= fma(C(0.5) * dqd, rinv5, c.m * rinv);
}

// The batched cell kernel: the batched kernel's work items (up to 32 targets, an item's
// spans read as one concatenated list of at most a chunk), over cells: each thread stages
// one cell of a tile of 128 in shared memory; a thread holds NI targets (128 / TP rows
// apart) and each of a target's TP slices takes every TP-th cell, so one read of a cell
// serves NI interactions. An item's cost is its list over the 128 / TP rows, whatever
// its count of targets, so items of few targets (a group's last: a tree group of 68
// makes items of 32, 32 and 4) take more slices per target (cells_layout). Mixed
// precision: targets and cell centres in the block's frame, their float parts only (a
// cell is far: the rounding of its offset is relative to the distance). The last tile
// is read only as far as it is filled (no padding cells, so the tree's unmasked kernel
// never meets a cell at a target).
// INDEXED: the item's [span_first, span_last) indexes a flat array of cell indices (the
// device tree's lists, one entry per cell) instead of spans: no search per source, and
// no mask (see cell_interact).
template <typename T, typename C, bool POT, bool INDEXED, int NI, int TP>
__device__ __forceinline__ void cells_layout(const typename V4<T>::type *__restrict__ particles,
                                             const CellRec<T> *__restrict__ cells, const Item &item,
                                             const Span *__restrict__ spans, const u32 *__restrict__ offset,
                                             typename V4<T>::type *__restrict__ out, const u32 *__restrict__ slots,
                                             typename V4<T>::type *__restrict__ partial, T eps2_, T g,
                                             CellC<C> *tile) {
    const C eps2 = (C)eps2_;
    const int B = 128, ROWS = B / TP;
    const int slice = threadIdx.x % TP, row = threadIdx.x / TP;
    const Frame<T, C> frame = block_frame<T, C>(particles, item.t0, item.t1 - item.t0, item.t1);
    typename V4<C>::type p[NI];
    C ax[NI], ay[NI], az[NI], phi[NI];
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        const int i = item.t0 + row + k * ROWS;
        p[k] = high(frame.apply(i < (int)item.t1 ? particles[i] : zero4<T>())).p;
        ax[k] = ay[k] = az[k] = phi[k] = C(0);
    }
    const u32 last = item.span_last - 1;
    const u32 *index = (const u32 *)spans;
    const u32 total =
        INDEXED ? item.span_last - item.span_first : offset[last] + (spans[last].end - spans[last].start);
    for (u32 base = 0; base < total; base += B) {
        const u32 flat = base + threadIdx.x;
        CellC<C> c;
        if (flat < total) {
            u32 k;
            if (INDEXED) {
                k = index[item.span_first + flat];
            } else {
                u32 lo = item.span_first, hi = last;
                while (lo < hi) {
                    const u32 mid = (lo + hi + 1) / 2;
                    if (offset[mid] <= flat) lo = mid; else hi = mid - 1;
                }
                k = spans[lo].start + (flat - offset[lo]);
            }
            const CellRec<T> r = cells[k];
            typename V4<T>::type centre;
            centre.x = r.x; centre.y = r.y; centre.z = r.z; centre.w = r.m;
            const typename V4<C>::type f = high(frame.apply(centre)).p;
            c.x = f.x; c.y = f.y; c.z = f.z; c.m = f.w;
#pragma unroll
            for (int k = 0; k < 6; ++k) c.q[k] = (C)r.q[k];
            c.pad[0] = c.pad[1] = C(0);
        }
        __syncthreads();
        if (flat < total) tile[threadIdx.x] = c;
        __syncthreads();
        const int filled = (int)min((u32)B, total - base);
        if (filled == B) {
#pragma unroll(B / TP < 4 ? B / TP : 4)
            for (int j = slice; j < B; j += TP) {
                const CellC<C> cj = tile[j];
#pragma unroll
                for (int k = 0; k < NI; ++k) cell_interact<C, POT, !INDEXED>(p[k], cj, eps2, ax[k], ay[k], az[k], phi[k]);
            }
        } else {
            for (int j = slice; j < filled; j += TP) {
                const CellC<C> cj = tile[j];
#pragma unroll
                for (int k = 0; k < NI; ++k) cell_interact<C, POT, !INDEXED>(p[k], cj, eps2, ax[k], ay[k], az[k], phi[k]);
            }
        }
    }
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        const int i = item.t0 + row + k * ROWS;
        T sx = lane_sum<TP>((T)ax[k]), sy = lane_sum<TP>((T)ay[k]), sz = lane_sum<TP>((T)az[k]), sphi = 0;
        if (POT) sphi = lane_sum<TP>((T)phi[k]);
        if (i < (int)item.t1 && slice == 0) item_sums<T, POT>(out, slots, partial, item, i, g * sx, g * sy, g * sz, g * sphi);
    }
}

// One item per block of 128 threads, laid out by its count of targets: 32 as 16 rows of
// two targets, 8 slices each; 16, 8 and 4 as rows of one target with 8, 16 and 32
// slices (the branch is the block's, so no warp diverges).
template <typename T, typename C, bool POT, bool INDEXED>
__device__ __forceinline__ void batched_cells(const typename V4<T>::type *__restrict__ particles,
                                              const CellRec<T> *__restrict__ cells, const Item *__restrict__ items,
                                              const Span *__restrict__ spans, const u32 *__restrict__ offset,
                                              typename V4<T>::type *__restrict__ out, const u32 *__restrict__ slots,
                                              typename V4<T>::type *__restrict__ partial, T eps2, T g) {
    __shared__ CellC<C> tile[128];
    const Item item = items[blockIdx.x];
    const u32 targets = item.t1 - item.t0;
    // f64 keeps one layout, 32 targets of 4 slices: two targets per thread, or a choice
    // of layouts, raise its registers from 52 to 80-124 (occupancy) for loads and idle
    // rows that the FP64 pipe, at half the FP32 rate, mostly hides.
    if (sizeof(C) == 8 || targets > 16)
        cells_layout<T, C, POT, INDEXED, sizeof(C) == 4 ? 2 : 1, sizeof(C) == 4 ? 8 : 4>(
            particles, cells, item, spans, offset, out, slots, partial, eps2, g, tile);
    else if (targets > 8)
        cells_layout<T, C, POT, INDEXED, 1, 8>(particles, cells, item, spans, offset, out, slots, partial, eps2, g, tile);
    else if (targets > 4)
        cells_layout<T, C, POT, INDEXED, 1, 16>(particles, cells, item, spans, offset, out, slots, partial, eps2, g, tile);
    else
        cells_layout<T, C, POT, INDEXED, 1, 32>(particles, cells, item, spans, offset, out, slots, partial, eps2, g, tile);
}

// The warp-shuffle variant, for comparison with the shared-memory tiles: no shared
// memory for sources and no barriers; each lane of a warp loads one source of the warp's
// next 32 (issued before the current 32 are computed) and __shfl_sync broadcasts them one
// by one to every lane. One thread per target, NI targets per thread, no source split.
template <typename T, typename C> __device__ __forceinline__ Pt<T, C> shfl_pt(const Pt<T, C> &p, int lane) {
    Pt<T, C> q;
    q.p.x = __shfl_sync(0xffffffffu, p.p.x, lane);
    q.p.y = __shfl_sync(0xffffffffu, p.p.y, lane);
    q.p.z = __shfl_sync(0xffffffffu, p.p.z, lane);
    q.p.w = __shfl_sync(0xffffffffu, p.p.w, lane);
    return q;
}
template <>
__device__ __forceinline__ Pt<double, float> shfl_pt<double, float>(const Pt<double, float> &p, int lane) {
    Pt<double, float> q;
    q.p.x = __shfl_sync(0xffffffffu, p.p.x, lane);
    q.p.y = __shfl_sync(0xffffffffu, p.p.y, lane);
    q.p.z = __shfl_sync(0xffffffffu, p.p.z, lane);
    q.p.w = __shfl_sync(0xffffffffu, p.p.w, lane);
    q.lo.x = __shfl_sync(0xffffffffu, p.lo.x, lane);
    q.lo.y = __shfl_sync(0xffffffffu, p.lo.y, lane);
    q.lo.z = __shfl_sync(0xffffffffu, p.lo.z, lane);
    q.lo.w = 0.0f;
    return q;
}

template <typename T, typename C, int NI, bool POT, bool MASKED>
__device__ __forceinline__ void shuffled(const typename V4<T>::type *__restrict__ targets, int n_targets,
                                         const typename V4<T>::type *__restrict__ sources, int n_sources_padded,
                                         typename V4<T>::type *__restrict__ out, T eps2_, T g, int self_t0,
                                         int self_len) {
    typedef typename V4<T>::type v4;
    const bool MIXED = IsMixed<T, C>::value;
    const C eps2 = (C)eps2_;
    const int lane = threadIdx.x % 32;
    const int block_first = blockIdx.x * blockDim.x * NI;
    const int first = block_first + threadIdx.x * NI;
    const Frame<T, C> frame = block_frame<T, C>(targets, block_first, blockDim.x * NI, n_targets);
    Pt<T, C> ti[NI];
    C ax[NI], ay[NI], az[NI], phi[NI];
    T mi[NI], sx[NI], sy[NI], sz[NI], sphi[NI];
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        ti[k] = frame.apply(first + k < n_targets ? targets[first + k] : zero4<T>());
        mi[k] = first + k < n_targets ? targets[first + k].w : T(0);
        ax[k] = 0; ay[k] = 0; az[k] = 0; phi[k] = 0;
        sx[k] = 0; sy[k] = 0; sz[k] = 0; sphi[k] = 0;
    }
    v4 next = sources[lane];
    for (int base = 0; base < n_sources_padded; base += 32) {
        const Pt<T, C> mine = frame.apply(next);
        if (base + 32 < n_sources_padded) next = sources[base + 32 + lane];
#pragma unroll 8
        for (int j = 0; j < 32; ++j) {
            const Pt<T, C> s = shfl_pt(mine, j);
#pragma unroll
            for (int k = 0; k < NI; ++k) interact<T, C, POT, MASKED>(ti[k], s, eps2, ax[k], ay[k], az[k], phi[k]);
        }
        if (MIXED) {
#pragma unroll
            for (int k = 0; k < NI; ++k) {
                sx[k] += ax[k]; sy[k] += ay[k]; sz[k] += az[k]; sphi[k] += phi[k];
                ax[k] = 0; ay[k] = 0; az[k] = 0; phi[k] = 0;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        if (!MIXED) {
            sx[k] = ax[k]; sy[k] = ay[k]; sz[k] = az[k]; sphi[k] = phi[k];
        }
        if (first + k < n_targets)
            finish<T, C, POT, MASKED>(out, first + k, mi[k], eps2_, g, sx[k], sy[k], sz[k], sphi[k], self_t0, self_len);
    }
}

// Exported entry points: nbody_<kind>_<f32|f64|mixed>_..., names built by the host code.
// The f32 tiled kernels say "at least one block per SM" so that ptxas is free to spend
// registers: with only the block size it packed (256,4,4) into 63 registers and bunched
// each source's reciprocal square roots together, stalling on the MUFU queue; with this
// it takes about 80 and spaces them out. The f64 kernels would take 150 and lose blocks.
// The mixed ones say three 128-thread blocks: with only the block size ptxas holds
// (128,1,4) to 127 registers and, with the error estimate's FFMA, leaves long stalls
// after the reciprocal square roots.
#define TILED_BOUNDS_f32(B) __launch_bounds__(B, 1)
#define TILED_BOUNDS_f64(B) __launch_bounds__(B)
#define TILED_BOUNDS_mixed(B) __launch_bounds__(B, 384 / (B))
#define TILED(T, C, NAME, B, TP, NI, POT, MASKED)                                                                       \
    extern "C" __global__ void TILED_BOUNDS_##NAME(B) nbody_tiled_##NAME##_b##B##_tp##TP##_ni##NI##_p##POT##_m##MASKED( \
        const TiledArgs<T> a) {                                                                                        \
        tiled<T, C, B, TP, NI, POT, MASKED>(a.targets, a.n_targets, a.sources, a.n_sources_padded, a.out, a.eps2, a.g, \
                                            a.self_t0, a.self_len, a.chunk, a.partial, nullptr, nullptr, a.estimate,       \
                                            a.redo);                                                                   \
    }

#define TILED_REDUCE(T, C, NAME, POT, MASKED)                                                                           \
    extern "C" __global__ void nbody_tiled_reduce_##NAME##_p##POT##_m##MASKED(const TiledArgs<T> a) {                 \
        tiled_reduce<T, C, POT, MASKED>(a.targets, a.n_targets, a.chunk, a.partial, a.out, a.eps2, a.g, a.self_t0,        \
                                        a.self_len, nullptr, a.estimate, a.redo);                                      \
    }
#define TILED_REDUCE_PM(T, C, NAME)                                                                                    \
    TILED_REDUCE(T, C, NAME, 0, 0) TILED_REDUCE(T, C, NAME, 0, 1) TILED_REDUCE(T, C, NAME, 1, 0)                       \
    TILED_REDUCE(T, C, NAME, 1, 1)
TILED_REDUCE_PM(float, float, f32)
TILED_REDUCE_PM(double, double, f64)
TILED_REDUCE_PM(double, float, mixed)

// chunk: the records `partial` holds (the reduction's chunks times n_targets).
#define MIXED_REDO(POT, MASKED)                                                                                        \
    extern "C" __global__ void __launch_bounds__(REDO_WARPS * 32)                                                      \
        nbody_mixed_redo_##p##POT##_m##MASKED(const TiledArgs<double> a) {                                               \
        mixed_redo<POT, MASKED>(a.targets, a.sources, a.n_sources_padded, a.eps2, a.redo, a.partial, a.chunk);         \
    }                                                                                                                  \
    extern "C" __global__ void nbody_mixed_redo_finish_##p##POT##_m##MASKED(const TiledArgs<double> a) {                \
        mixed_redo_finish<POT, MASKED>(a.targets, a.n_sources_padded, a.out, a.eps2, a.g, a.self_t0, a.self_len,      \
                                       a.redo, a.partial, a.chunk);                                                    \
    }
MIXED_REDO(0, 0) MIXED_REDO(0, 1) MIXED_REDO(1, 0) MIXED_REDO(1, 1)

#define TILED_PM(T, C, NAME, B, TP, NI)                                                                                 \
    TILED(T, C, NAME, B, TP, NI, 0, 0)                                                                                  \
    TILED(T, C, NAME, B, TP, NI, 0, 1)                                                                                  \
    TILED(T, C, NAME, B, TP, NI, 1, 0)                                                                                  \
    TILED(T, C, NAME, B, TP, NI, 1, 1)

// Must list exactly config.rs's CANDIDATES.
#define TILED_ALL(T, C, NAME)                                                                                           \
    TILED_PM(T, C, NAME, 128, 1, 1)                                                                                       \
    TILED_PM(T, C, NAME, 128, 1, 2)                                                                                       \
    TILED_PM(T, C, NAME, 128, 1, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 1, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 2, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 2, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 4, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 4, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 8, 2)                                                                                       \
    TILED_PM(T, C, NAME, 128, 8, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 8, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 16, 1)                                                                                      \
    TILED_PM(T, C, NAME, 128, 16, 2)                                                                                      \
    TILED_PM(T, C, NAME, 128, 16, 4)                                                                                      \
    TILED_PM(T, C, NAME, 128, 32, 1)                                                                                      \
    TILED_PM(T, C, NAME, 128, 32, 2)                                                                                      \
    TILED_PM(T, C, NAME, 256, 1, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 2, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 4, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 8, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 16, 2)

TILED_ALL(float, float, f32)
TILED_ALL(double, double, f64)
TILED_ALL(double, float, mixed)

// The tiled kernel under the other softened kernels (soft_interact): per-particle
// Plummer with and without the mask, the spline with one support or one per particle
// (masking itself, named m1), for the f32 and f64 ladders (tuning.rs's LADDER; the mixed
// executor runs these through the batched kernel).
// The f64 soft kernels are held to 128 registers (two 256-thread blocks an SM): unbound,
// per-particle Plummer takes 254 and one block. The f32 soft kernels without the
// potential are held to Plummer's 80 (three blocks an SM, and the source split Plummer
// gets): unbound, each takes a few registers more and drops to two blocks an SM. The
// kernels with the potential keep the f32 tiled bound.
#define TILED_SOFT_BOUNDS_f32(B, POT, SOFT) __launch_bounds__(B, !(POT) ? 768 / (B) : 1)
#define TILED_SOFT_BOUNDS_f64(B, POT, SOFT) __launch_bounds__(B, 512 / (B))
#define TILED_SOFT(T, C, NAME, B, TP, NI, POT, MASKED, SOFT)                                                           \
    extern "C" __global__ void TILED_SOFT_BOUNDS_##NAME(B, POT, SOFT)                                                  \
        nbody_tiled_##NAME##_b##B##_tp##TP##_ni##NI##_p##POT##_m##MASKED##_s##SOFT(const TiledArgs<T> a) {             \
        tiled<T, C, B, TP, NI, POT, MASKED, SOFT>(a.targets, a.n_targets, a.sources, a.n_sources_padded, a.out, a.eps2, \
                                                  a.g, a.self_t0, a.self_len, a.chunk, a.partial, a.lengths_t,         \
                                                  a.lengths_s);                                                        \
    }
#define TILED_SOFT_P(T, C, NAME, B, TP, NI, POT)                                                                       \
    TILED_SOFT(T, C, NAME, B, TP, NI, POT, 0, 1) TILED_SOFT(T, C, NAME, B, TP, NI, POT, 1, 1)                          \
        TILED_SOFT(T, C, NAME, B, TP, NI, POT, 1, 2) TILED_SOFT(T, C, NAME, B, TP, NI, POT, 1, 3)
#define TILED_SOFT_PM(T, C, NAME, B, TP, NI) TILED_SOFT_P(T, C, NAME, B, TP, NI, 0) TILED_SOFT_P(T, C, NAME, B, TP, NI, 1)
// Must list exactly tuning.rs's LADDER.
#define TILED_SOFT_LADDER(T, C, NAME)                                                                                  \
    TILED_SOFT_PM(T, C, NAME, 256, 4, 4)                                                                               \
    TILED_SOFT_PM(T, C, NAME, 256, 8, 4)                                                                               \
    TILED_SOFT_PM(T, C, NAME, 256, 16, 2)                                                                              \
    TILED_SOFT_PM(T, C, NAME, 128, 32, 2)                                                                              \
    TILED_SOFT_PM(T, C, NAME, 128, 32, 1)
TILED_SOFT_LADDER(float, float, f32)
TILED_SOFT_LADDER(double, double, f64)

#define TILED_REDUCE_SOFT(T, C, NAME, POT, MASKED, SOFT)                                                               \
    extern "C" __global__ void nbody_tiled_reduce_##NAME##_p##POT##_m##MASKED##_s##SOFT(const TiledArgs<T> a) {      \
        tiled_reduce<T, C, POT, MASKED, SOFT>(a.targets, a.n_targets, a.chunk, a.partial, a.out, a.eps2, a.g,            \
                                              a.self_t0, a.self_len, a.lengths_t);                                     \
    }
#define TILED_REDUCE_SOFT_P(T, C, NAME, POT)                                                                           \
    TILED_REDUCE_SOFT(T, C, NAME, POT, 0, 1) TILED_REDUCE_SOFT(T, C, NAME, POT, 1, 1)                                  \
        TILED_REDUCE_SOFT(T, C, NAME, POT, 1, 2) TILED_REDUCE_SOFT(T, C, NAME, POT, 1, 3)
TILED_REDUCE_SOFT_P(float, float, f32, 0) TILED_REDUCE_SOFT_P(float, float, f32, 1)
TILED_REDUCE_SOFT_P(double, double, f64, 0) TILED_REDUCE_SOFT_P(double, double, f64, 1)

#define SHUFFLE(T, C, NAME, NI, POT, MASKED)                                                                           \
    extern "C" __global__ void __launch_bounds__(128) nbody_shuffle_##NAME##_ni##NI##_p##POT##_m##MASKED(             \
        const TiledArgs<T> a) {                                                                                        \
        shuffled<T, C, NI, POT, MASKED>(a.targets, a.n_targets, a.sources, a.n_sources_padded, a.out, a.eps2, a.g,     \
                                        a.self_t0, a.self_len);                                                        \
    }
#define SHUFFLE_PM(T, C, NAME, NI)                                                                                     \
    SHUFFLE(T, C, NAME, NI, 0, 0) SHUFFLE(T, C, NAME, NI, 0, 1) SHUFFLE(T, C, NAME, NI, 1, 0)                          \
    SHUFFLE(T, C, NAME, NI, 1, 1)
// Must list exactly SHUFFLE_TARGETS_PER_THREAD in lib.rs.
#define SHUFFLE_ALL(T, C, NAME) SHUFFLE_PM(T, C, NAME, 1) SHUFFLE_PM(T, C, NAME, 2) SHUFFLE_PM(T, C, NAME, 4)
SHUFFLE_ALL(float, float, f32)
SHUFFLE_ALL(double, double, f64)
SHUFFLE_ALL(double, float, mixed)

#define JERK_TP(T, C, NAME, TP, NI, POT, MASKED, NEIGH)                                                               \
    extern "C" __global__ void __launch_bounds__(128)                                                                  \
        nbody_jerk_##NAME##_tp##TP##_ni##NI##_p##POT##_m##MASKED##_n##NEIGH(const JerkArgs<T> a) {                     \
        tiled_jerk<T, C, 128, TP, NI, POT, MASKED, NEIGH>(a.targets, a.target_vel, a.n_targets, a.sources,            \
                                                       a.source_vel, a.n_sources, a.n_sources_padded, a.chunk, a.out,  \
                                                       a.jerk, a.eps2, a.g, a.self_t0, a.self_s0, a.self_len, a.x);    \
    }

#define JERK(T, C, NAME, POT, MASKED, NEIGH)                                                                            \
    JERK_TP(T, C, NAME, 1, 1, POT, MASKED, NEIGH)                                                                         \
    JERK_TP(T, C, NAME, 1, 2, POT, MASKED, NEIGH)                                                                         \
    JERK_TP(T, C, NAME, 4, 1, POT, MASKED, NEIGH)                                                                         \
    extern "C" __global__ void nbody_jerk_reduce_##NAME##_p##POT##_m##MASKED##_n##NEIGH(const JerkArgs<T> a) {        \
        jerk_reduce<T, C, POT, MASKED, NEIGH>(a.targets, a.n_targets, a.chunk, a.out, a.jerk, a.eps2, a.g, a.self_t0,     \
                                              a.self_len, a.x);                                                        \
    }

#define BATCH_SOFT(T, C, NAME, POT, MASKED, SOFT)                                                                      \
    extern "C" __global__ void __launch_bounds__(128)                                                                  \
        nbody_batch_##NAME##_p##POT##_m##MASKED##_s##SOFT(const BatchArgs<T> a) {                                      \
        batched<T, C, POT, MASKED, SOFT>(a.particles, a.items, a.spans, a.offset, a.out, a.lengths, a.slots, a.partial, \
                                         a.eps2, a.g);                                                                 \
    }
// Plummer's kernels with and without the mask; the spline's mask themselves (named m1).
#define BATCH(T, C, NAME, POT, MASKED) BATCH_SOFT(T, C, NAME, POT, MASKED, 0) BATCH_SOFT(T, C, NAME, POT, MASKED, 1)
#define BATCH_SPLINE(T, C, NAME, POT) BATCH_SOFT(T, C, NAME, POT, 1, 2) BATCH_SOFT(T, C, NAME, POT, 1, 3)

// No register bound: holding the batched and cell kernels to fewer registers for
// occupancy makes the tree's kernels slower (the item layouts already fill the SMs).
#define CELLS(T, C, NAME, POT)                                                                                         \
    extern "C" __global__ void __launch_bounds__(128) nbody_cells_##NAME##_p##POT(const CellArgs<T> a) {              \
        batched_cells<T, C, POT, false>(a.particles, a.cells, a.items, a.spans, a.offset, a.out, a.slots, a.partial,   \
                                        a.eps2, a.g);                                                                  \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(128) nbody_cells_##NAME##_p##POT##_indexed(const CellArgs<T> a) {    \
        batched_cells<T, C, POT, true>(a.particles, a.cells, a.items, a.spans, a.offset, a.out, a.slots, a.partial,    \
                                       a.eps2, a.g);                                                                   \
    }

#define PER_PRECISION(T, C, NAME)                                                                                       \
    JERK(T, C, NAME, 0, 0, 0) JERK(T, C, NAME, 0, 1, 0) JERK(T, C, NAME, 1, 0, 0) JERK(T, C, NAME, 1, 1, 0)                        \
    JERK(T, C, NAME, 0, 0, 1) JERK(T, C, NAME, 0, 1, 1) JERK(T, C, NAME, 1, 0, 1) JERK(T, C, NAME, 1, 1, 1)                        \
    BATCH(T, C, NAME, 0, 0) BATCH(T, C, NAME, 0, 1) BATCH(T, C, NAME, 1, 0) BATCH(T, C, NAME, 1, 1)                   \
    BATCH_SPLINE(T, C, NAME, 0) BATCH_SPLINE(T, C, NAME, 1)                                                            \
    CELLS(T, C, NAME, 0) CELLS(T, C, NAME, 1)                                                                         \
    extern "C" __global__ void nbody_batch_reduce_##NAME(const BatchArgs<T> a) { batch_reduce<T>(a); }

PER_PRECISION(float, float, f32)
PER_PRECISION(double, double, f64)
PER_PRECISION(double, float, mixed)

// Removes the self terms a batched launch counted: G m_i / eps for each of target i's
// source spans that holds it. One thread per particle.
// With a length per particle (a.lengths not null) each particle's own: Plummer's
// eps_i^2 / 2 doubled, the spline's 14/5 h_i^-1 = 1/eps_i; the spline's one support
// (a.eps2 holding h) likewise.
template <typename T, typename C, int SOFT> __device__ __forceinline__ C self_weight(const BatchArgs<T> &a, int i) {
    if (SOFT == SOFT_PLUMMER) return rsqrt_fast((C)a.eps2);
    // A particle of length zero has no softened self term (masked, as in the pair).
    if (SOFT == SOFT_PLUMMER_EACH) {
        const C e2 = C(2) * (C)a.lengths[i];
        return e2 >= min_normal<C>() ? rsqrt_fast(e2) : C(0);
    }
    const C h = SOFT == SOFT_SPLINE ? (C)a.eps2 : (C)a.lengths[i];
    return h > C(0) ? C(14.0 / 5.0) / h : C(0);
}
#define SELF_POTENTIAL_SOFT(T, C, NAME, SOFT)                                                                          \
    extern "C" __global__ void nbody_self_potential_##NAME##_s##SOFT(const BatchArgs<T> a) {                          \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                                                 \
        if (i < a.n && a.self_count[i] != 0)                                                                           \
            a.out[i].w += a.g * T(a.self_count[i]) * (T)((C)a.particles[i].w * self_weight<T, C, SOFT>(a, i));          \
    }
#define SELF_POTENTIAL(T, C, NAME)                                                                                     \
    SELF_POTENTIAL_SOFT(T, C, NAME, 0)                                                                                 \
    SELF_POTENTIAL_SOFT(T, C, NAME, 1) SELF_POTENTIAL_SOFT(T, C, NAME, 2) SELF_POTENTIAL_SOFT(T, C, NAME, 3)
SELF_POTENTIAL(float, float, f32)
SELF_POTENTIAL(double, double, f64)
SELF_POTENTIAL(double, float, mixed)

// Integrator steps on device-resident particles: velocities are [vx, vy, vz, 0], outputs
// [ax, ay, az, phi]; positions keep their mass lane. One thread per particle.
#define KICK_DRIFT(T, NAME)                                                                                            \
    extern "C" __global__ void nbody_kick_##NAME(const StepArgs<T> s) { step_add<T>(s); }                              \
    extern "C" __global__ void nbody_drift_##NAME(const StepArgs<T> s) { step_add<T>(s); }

// a[i].xyz += b[i].xyz h: a kick (velocities, accelerations) or a drift (positions,
// velocities; the mass lane kept).
template <typename T> __device__ __forceinline__ void step_add(const StepArgs<T> &s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n) {
        typename V4<T>::type x = s.a[i], d = s.b[i];
        x.x += d.x * s.h;
        x.y += d.y * s.h;
        x.z += d.z * s.h;
        s.a[i] = x;
    }
}

KICK_DRIFT(float, f32)
KICK_DRIFT(double, f64)

// Columns (crate::columns): rows of x, y, z and a column of masses packed into records,
// and records unpacked into rows of ax, ay, az and a column of potentials, so a caller's
// arrays (numpy's, C's) go up and come down as they are. Packing checks every value as
// the host's validate::particles does and keeps the first offending index of each kind
// (atomicMin) for the host to name; the records past n up to padded are zero (massless
// at the origin, as upload_padded pads). One thread per record.
template <typename T> __device__ __forceinline__ void columns_pack(const ColumnsArgs<T> &a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.padded) return;
    typename V4<T>::type r;
    r.x = r.y = r.z = r.w = T(0);
    if (i < a.n) {
        long long k = 3LL * i;
        r.x = a.rows[k];
        r.y = a.rows[k + 1];
        r.z = a.rows[k + 2];
        r.w = a.column ? a.column[i] : T(0);
        // x - x is 0 exactly for finite x and NaN for NaN or an infinity; a coordinate at
        // or past nbody_core::validate::range (2^61 in f32, 2^509 in f64) is bad too.
        const T range = sizeof(T) == 4 ? T(2305843009213693952.0) : T(1.6759759912428246e+153);
        if ((r.x - r.x) + (r.y - r.y) + (r.z - r.z) + (r.w - r.w) != T(0) || fabs(r.x) >= range || fabs(r.y) >= range ||
            fabs(r.z) >= range)
            atomicMin(&a.first_bad[0], i);
        if (r.w < T(0)) atomicMin(&a.first_bad[1], i);
    }
    a.records[i] = r;
}
template <typename T> __device__ __forceinline__ void columns_unpack(const ColumnsArgs<T> &a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    typename V4<T>::type r = a.records[i];
    long long k = 3LL * i;
    a.rows[k] = r.x;
    a.rows[k + 1] = r.y;
    a.rows[k + 2] = r.z;
    if (a.column) a.column[i] = r.w;
}
#define COLUMNS(T, NAME)                                                                                               \
    extern "C" __global__ void nbody_columns_pack_##NAME(const ColumnsArgs<T> a) { columns_pack<T>(a); }               \
    extern "C" __global__ void nbody_columns_unpack_##NAME(const ColumnsArgs<T> a) { columns_unpack<T>(a); }
COLUMNS(float, f32)
COLUMNS(double, f64)

// Density map: adds each particle's mass into its cell of a pixels x pixels grid of
// doubles (row 0 at the top), the same cell arithmetic as nbody-core's
// Projection::cell, in double. One thread per particle; cells shared by particles add
// atomically. Masses are validated on the host; NaN coordinates fail the range test.
#define PROJECT(T, NAME)                                                                                               \
    extern "C" __global__ void nbody_project_##NAME(const ProjectArgs<T> a) {                                         \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                                                 \
        if (i >= a.n) return;                                                                                          \
        V4<T>::type p = a.particles[i];                                                                                \
        double x[3] = {(double)p.x, (double)p.y, (double)p.z};                                                         \
        double col = (x[a.h_axis] - a.left) * a.scale, row = (a.top - x[a.v_axis]) * a.scale;                          \
        if (col >= 0.0 && col < (double)a.pixels && row >= 0.0 && row < (double)a.pixels)                              \
            atomicAdd(&a.grid[(long long)row * a.pixels + (long long)col], (double)p.w);                               \
    }
PROJECT(float, f32)
PROJECT(double, f64)

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

#include "tree.cuh"

// Every argument struct's size and field offsets (args.h's NBODY_PROBED order), for the
// host to compare with its own layout: out[k] for k < capacity; returns nothing else.
#define NBODY_PROBE_FIELD(type, name) put(out, capacity, k, (long long)offsetof(S, name));
#define NBODY_PROBE_STRUCT(S_, FIELDS)                                                                                 \
    {                                                                                                                  \
        typedef S_ S;                                                                                                  \
        put(out, capacity, k, (long long)sizeof(S));                                                                   \
        const int count_at = k++;                                                                                      \
        FIELDS(NBODY_PROBE_FIELD)                                                                                      \
        put_at(out, capacity, count_at, (long long)(k - count_at - 1));                                                   \
    }
__device__ __forceinline__ void put(long long *out, int capacity, int &k, long long v) {
    if (k < capacity) out[k] = v;
    ++k;
}
__device__ __forceinline__ void put_at(long long *out, int capacity, int at, long long v) {
    if (at < capacity) out[at] = v;
}
extern "C" __global__ void nbody_probe_layouts(long long *out, int capacity) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int k = 0;
    NBODY_PROBED(NBODY_PROBE_STRUCT)
}
