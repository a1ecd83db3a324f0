// Local expansions for the device tree (nbody_core::local is their f64 oracle): a far
// cell's potential (the cell kernel's: monopole, traceless quadrupole and spread, Plummer
// softened) as a fourth-order Taylor series about a target group's centre, summed once
// per group over the far cells its walk listed (cell to local), then evaluated at each of
// its targets (local to particle). Part of gravity.cu (included there, before tree.cuh).
//
// The cell's potential without G is phi(d) = -(M K + q K^5 / 2), K = (|d|^2 + eps^2)^-1/2,
// q = d.Q.d - eps^2 S (S the spread). With G_k = 2^k K^(k)(u) (u = |d|^2 + eps^2: G_1 = -K^3, G_k = -(2k - 1) G_(k-1)
// K^2), Q traceless and Qd = Q d, its derivatives are
//   phi_i   = s1 d_i + t2 Qd_i
//   phi_ij  = s2 d_i d_j + s1 delta_ij + t2 Q_ij + t3 (Qd_i d_j + Qd_j d_i)
//   phi_ijk = s3 d_i d_j d_k + s2 (delta_ij d_k + 2 more) + t3 (Q_ij d_k + 2 more)
//             + t4 (Qd_i d_j d_k + 2 more) + t3 (Qd_i delta_jk + 2 more)
// with s_k = -(M G_k + q G_(k+2) / 6) and t_k = -G_k / 3 (the derivatives of q G_2 / 6 and
// M K collected by their tensor shapes): about 150 operations a cell, against 22 a target
// for the cell kernel.

// A group's expansion: the derivatives of the potential at its centre up to the fourth
// (the fourth of the monopole only: the quadrupole's is smaller by the cell's (size / D)^2),
// each order's unique lanes counted over sorted axes (xx xy xz yy yz zz, xxx xxy ... zzz,
// xxxx ... zzzz). It lives in registers of the warp that sums and evaluates it
// (tree_local); the walk leaves each group a record of LOCAL_RECORD entries: the centre,
// then the group's far cells' place in the cell list and their count (two u32s from
// entry LOCAL_FAR on).
#define LOCAL_TERMS 35
#define LOCAL_RECORD 8
#define LOCAL_FAR 4

// A super-group's record (tree.cuh's tree_super_walk writes it, SUPER_RECORD entries): its
// box's low and high corners, its centre, the square of its radius (the box's half
// diagonal), its smallest previous acceleration (the relative test's scale), its frontier's
// length (a u32; tree.cuh's TREE_NO_FRONT when it did not fit), then its expansion's
// LOCAL_TERMS derivatives from entry SUPER_TERMS on.
#define SUPER_RECORD 48
#define SUPER_TERMS 12

// The unique lane of a symmetric pair of axes.
__device__ __forceinline__ constexpr int pair_lane(int i, int j) {
    return i > j ? pair_lane(j, i) : (i == 0 ? j : i == 1 ? 2 + j : 5);
}

// Adds the derivatives of cell c's potential (without G) at d = centre - c into l.
template <typename T>
__device__ __forceinline__ void local_add_cell(const CellRec<T> &c, const T centre[3], T eps2, T l[LOCAL_TERMS]) {
    const T d[3] = {centre[0] - c.x, centre[1] - c.y, centre[2] - c.z};
    const T u = fma(d[2], d[2], fma(d[1], d[1], fma(d[0], d[0], eps2)));
    const T k = sizeof(T) == 4 ? (T)rsqrtf((float)u) : T(1) / sqrt(u), k2 = k * k;
    const T g1 = -k2 * k, g2 = T(-3) * g1 * k2, g3 = T(-5) * g2 * k2, g4 = T(-7) * g3 * k2, g5 = T(-9) * g4 * k2;
    T qd[3];
#pragma unroll
    for (int i = 0; i < 3; ++i)
        qd[i] = fma(c.q[pair_lane(i, 0)], d[0], fma(c.q[pair_lane(i, 1)], d[1], c.q[pair_lane(i, 2)] * d[2]));
    // q less the spread's softened share (a constant: it enters q's value, none of its derivatives).
    const T q6 = fma(d[0], qd[0], fma(d[1], qd[1], fma(d[2], qd[2], -eps2 * c.spread))) * T(1.0 / 6.0);
    const T s1 = -fma(c.m, g1, q6 * g3), s2 = -fma(c.m, g2, q6 * g4), s3 = -fma(c.m, g3, q6 * g5);
    const T t2 = g2 * T(-1.0 / 3.0), t3 = g3 * T(-1.0 / 3.0), t4 = g4 * T(-1.0 / 3.0);
    l[0] -= fma(c.m, k, q6 * g2);
#pragma unroll
    for (int i = 0; i < 3; ++i) l[1 + i] += fma(s1, d[i], t2 * qd[i]);
    int at = 4;
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
        for (int j = i; j < 3; ++j) {
            T v = fma(s2 * d[i], d[j], fma(t2, c.q[pair_lane(i, j)], t3 * fma(qd[i], d[j], qd[j] * d[i])));
            if (i == j) v += s1;
            l[at++] += v;
        }
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
        for (int j = i; j < 3; ++j)
#pragma unroll
            for (int m = j; m < 3; ++m) {
                T v = s3 * d[i] * d[j] * d[m];
                v = fma(t3, fma(c.q[pair_lane(i, j)], d[m], fma(c.q[pair_lane(i, m)], d[j], c.q[pair_lane(j, m)] * d[i])), v);
                v = fma(t4, fma(qd[i], d[j] * d[m], fma(qd[j], d[i] * d[m], qd[m] * d[i] * d[j])), v);
                // The delta terms: s2 d_x + t3 Qd_x for each pair of equal axes, x the third.
                if (i == j) v += fma(s2, d[m], t3 * qd[m]);
                if (i == m) v += fma(s2, d[j], t3 * qd[j]);
                if (j == m) v += fma(s2, d[i], t3 * qd[i]);
                l[at++] += v;
            }
    // The monopole's fourth: -M (G4 d d d d + G3 (delta d d, 6 ways) + G2 (delta delta, 3 ways)).
    const T m4 = -c.m * g4, m3 = -c.m * g3, m2 = -c.m * g2;
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
        for (int j = i; j < 3; ++j)
#pragma unroll
            for (int m = j; m < 3; ++m)
#pragma unroll
                for (int n = m; n < 3; ++n) {
                    T v = m4 * d[i] * d[j] * d[m] * d[n];
                    T dd = 0;
                    if (i == j) dd = fma(d[m], d[n], dd);
                    if (i == m) dd = fma(d[j], d[n], dd);
                    if (i == n) dd = fma(d[j], d[m], dd);
                    if (j == m) dd = fma(d[i], d[n], dd);
                    if (j == n) dd = fma(d[i], d[m], dd);
                    if (m == n) dd = fma(d[i], d[j], dd);
                    v = fma(m3, dd, v);
                    const int pairs = (i == j && m == n) + (i == m && j == n) + (i == n && j == m);
                    if (pairs) v = fma(m2, T(pairs), v);
                    l[at++] += v;
                }
}

// y^e / e! over the axes, for exponents e (each at most 4).
template <typename T> __device__ __forceinline__ T monomial(const T y[3], int e0, int e1, int e2) {
    T p = T(1);
    const int e[3] = {e0, e1, e2};
    const T inv[5] = {T(1), T(1), T(0.5), T(1.0 / 6.0), T(1.0 / 24.0)};
#pragma unroll
    for (int ax = 0; ax < 3; ++ax) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
            if (k < e[ax]) p *= y[ax];
        p *= inv[e[ax]];
    }
    return p;
}

// Adds lane `at`'s term, the derivative with exponents (e0, e1, e2), at offset y: its
// potential term L y^e / e! and its acceleration term -L y^(e - 1_i) / (e - 1_i)!.
template <typename T>
__device__ __forceinline__ void local_term(T coef, const T y[3], int e0, int e1, int e2, T a[3], T &phi) {
    phi = fma(coef, monomial(y, e0, e1, e2), phi);
    if (e0) a[0] = fma(-coef, monomial(y, e0 - 1, e1, e2), a[0]);
    if (e1) a[1] = fma(-coef, monomial(y, e0, e1 - 1, e2), a[1]);
    if (e2) a[2] = fma(-coef, monomial(y, e0, e1, e2 - 1), a[2]);
}

// The expansion l (without G) at offset y from its centre: the acceleration -grad phi
// into a and the potential into phi.
template <typename T> __device__ __forceinline__ void local_field(const T l[LOCAL_TERMS], const T y[3], T a[3], T &phi) {
    a[0] = a[1] = a[2] = T(0);
    phi = l[0];
#pragma unroll
    for (int i = 0; i < 3; ++i) local_term(l[1 + i], y, i == 0, i == 1, i == 2, a, phi);
    int at = 4;
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
        for (int j = i; j < 3; ++j) {
            local_term(l[at++], y, (i == 0) + (j == 0), (i == 1) + (j == 1), (i == 2) + (j == 2), a, phi);
        }
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
        for (int j = i; j < 3; ++j)
#pragma unroll
            for (int m = j; m < 3; ++m)
                local_term(l[at++], y, (i == 0) + (j == 0) + (m == 0), (i == 1) + (j == 1) + (m == 1),
                           (i == 2) + (j == 2) + (m == 2), a, phi);
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
        for (int j = i; j < 3; ++j)
#pragma unroll
            for (int m = j; m < 3; ++m)
#pragma unroll
                for (int n = m; n < 3; ++n)
                    local_term(l[at++], y, (i == 0) + (j == 0) + (m == 0) + (n == 0),
                               (i == 1) + (j == 1) + (m == 1) + (n == 1), (i == 2) + (j == 2) + (m == 2) + (n == 2),
                               a, phi);
}
