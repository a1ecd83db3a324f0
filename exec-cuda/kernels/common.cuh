// The types, the pair interaction and the softening kernels every kernel shares. Part of gravity.cu (included there, in order).

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

// The softened kernels (the SOFT template argument): SOFT = 2 k + each, for kernel k in
// nbody_core::Softening's order (kernels.rs's Soft), each for a length per particle. What
// a kernel computes is its SoftPair below; the tiled and batched loops read only
// SOFT_EACH and take any kernel but the spline (which has loops of its own) through it.
#define SOFT_PLUMMER 0
#define SOFT_PLUMMER_EACH 1
#define SOFT_SPLINE 2
#define SOFT_SPLINE_EACH 3
// Whether kernel SOFT reads a length per particle.
#define SOFT_EACH(SOFT) (((SOFT) & 1) != 0)
// The (MASKED, SOFT) pairs each softened entry point is built for besides the tuned
// Plummer one (entries.cuh): X(args..., MASKED, SOFT). Per-particle Plummer with and
// without the mask; the spline masks for itself (m1 only).
#define SOFT_BUILDS(X, ...) X(__VA_ARGS__, 0, 1) X(__VA_ARGS__, 1, 1) X(__VA_ARGS__, 1, 2) X(__VA_ARGS__, 1, 3)
// Every SOFT but the tuned Plummer one, once: X(args..., SOFT).
#define SOFT_KINDS(X, ...) X(__VA_ARGS__, 1) X(__VA_ARGS__, 2) X(__VA_ARGS__, 3)

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

// Each kernel on the device, one SoftPair<SOFT> apiece: the primary template is not
// defined, so a SOFT without one fails to compile. Each holds
// - add: one interaction. e_t and e_s are the target's and source's per-particle values
//   (unused with one softening); eps2 is the kernel's one argument (Plummer's eps^2, the
//   spline's support h), with h_inv = 1/h for the one-support spline;
// - remove_self: the tiled kernels' self term, the exact arithmetic add gave the pair
//   (i, i), taken off phi (T: the output's precision);
// - self_weight: the batched launches' self term per unit mass (0: none), from the
//   launch's arguments a (a.eps2 the one argument, a.lengths the per-particle values).
template <int SOFT> struct SoftPair;

template <> struct SoftPair<SOFT_PLUMMER> {
    template <typename T, typename C, bool POT, bool MASKED>
    static __device__ __forceinline__ void add(const Pt<T, C> &t, const Pt<T, C> &s, C, C, C eps2, C, C &ax, C &ay,
                                               C &az, C &phi) {
        interact<T, C, POT, MASKED>(t, s, eps2, ax, ay, az, phi);
    }
    template <typename T, typename C, bool MASKED>
    static __device__ __forceinline__ void remove_self(T &phi, T m_i, T eps2, C) {
        if (!MASKED) phi += (T)((C)m_i * rsqrt_fast((C)eps2));
    }
    template <typename T, typename C, typename A> static __device__ __forceinline__ C self_weight(const A &a, int) {
        return rsqrt_fast((C)a.eps2);
    }
};

// Per particle: a pair's eps^2 is the sum of the two uploaded eps_i^2 / 2.
template <> struct SoftPair<SOFT_PLUMMER_EACH> {
    template <typename T, typename C, bool POT, bool MASKED>
    static __device__ __forceinline__ void add(const Pt<T, C> &t, const Pt<T, C> &s, C e_t, C e_s, C, C, C &ax, C &ay,
                                               C &az, C &phi) {
        interact<T, C, POT, MASKED>(t, s, e_t + e_s, ax, ay, az, phi);
    }
    template <typename T, typename C, bool MASKED>
    static __device__ __forceinline__ void remove_self(T &phi, T m_i, T, C e_i) {
        const C e2 = e_i + e_i;
        if (!MASKED || e2 >= min_normal<C>()) phi += (T)((C)m_i * rsqrt_fast(e2));
    }
    // A particle of length zero has no softened self term (masked, as in the pair).
    template <typename T, typename C, typename A> static __device__ __forceinline__ C self_weight(const A &a, int i) {
        const C e2 = C(2) * (C)a.lengths[i];
        return e2 >= min_normal<C>() ? rsqrt_fast(e2) : C(0);
    }
};

// The spline with one support (h = eps2, h_inv given) or one per particle (a pair's is the
// larger of the uploaded h_i = 2.8 eps_i). Its loops test a group's supports first
// (spline_group); add is the per-pair path.
template <int SOFT> struct SplinePair {
    template <typename T, typename C, bool POT, bool MASKED>
    static __device__ __forceinline__ void add(const Pt<T, C> &t, const Pt<T, C> &s, C e_t, C e_s, C eps2, C h_inv,
                                               C &ax, C &ay, C &az, C &phi) {
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
    // w(0) = 14/5 h^-1; the tiled kernel's per-pair spline takes 1/h as rsqrt(h^2)
    // (spline_group).
    template <typename T, typename C, bool MASKED>
    static __device__ __forceinline__ void remove_self(T &phi, T m_i, T eps2, C e_i) {
        if (SOFT == SOFT_SPLINE) phi += (T)((C)m_i * (C(14.0 / 5.0) * (C(1) / (C)eps2)));
        if (SOFT == SOFT_SPLINE_EACH && e_i > C(0)) phi += (T)((C)m_i * (C(14.0 / 5.0) * rsqrt_fast(e_i * e_i)));
    }
    template <typename T, typename C, typename A> static __device__ __forceinline__ C self_weight(const A &a, int i) {
        const C h = SOFT == SOFT_SPLINE ? (C)a.eps2 : (C)a.lengths[i];
        return h > C(0) ? C(14.0 / 5.0) / h : C(0);
    }
};
template <> struct SoftPair<SOFT_SPLINE> : SplinePair<SOFT_SPLINE> {};
template <> struct SoftPair<SOFT_SPLINE_EACH> : SplinePair<SOFT_SPLINE_EACH> {};

// One interaction under kernel SOFT (SoftPair<SOFT>::add).
template <typename T, typename C, bool POT, bool MASKED, int SOFT>
__device__ __forceinline__ void soft_interact(const Pt<T, C> &t, const Pt<T, C> &s, C e_t, C e_s, C eps2, C h_inv,
                                              C &ax, C &ay, C &az, C &phi) {
    SoftPair<SOFT>::template add<T, C, POT, MASKED>(t, s, e_t, e_s, eps2, h_inv, ax, ay, az, phi);
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
