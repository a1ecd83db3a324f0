// The cell kernel: targets against far cells (monopole and quadrupole). Part of gravity.cu (included there, in order).

// A far cell as the cell kernel reads it, in the arithmetic precision C: centre (in the
// block's frame for mixed precision: a far cell needs no low parts), mass, quadrupole,
// eps^2 times the spread (the softened kernel's share of it, taken once per cell);
// twelve lanes aligned like four, so a thread reads one in three 128-bit loads.
template <typename C> struct __align__(4 * sizeof(C)) CellC {
    C x, y, z, m, q[6], soft, pad;
};

// One particle-cell interaction (nbody_core::cell::cell): with d = x_i - c, r^2 = |d|^2
// + eps^2, q = dQd - eps^2 S (S the spread), phi -= M/r + q/(2 r^5), a += Q d / r^5 -
// (M/r + 5/2 q/r^5) d / r^2 (M/r and q/r^5 shared by both sums: 9 multiplies, not 11;
// the monopole through (M/r)/r^2, as the pair kernel's, so it stays normal as far
// out). MASKED: a target at an unsoftened cell's centre feels nothing (as in the
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
    const C dqd = fma(dx, qdx, fma(dy, qdy, fma(dz, qdz, -c.soft)));
    const C rinv2 = rinv * rinv, rinv5 = rinv2 * rinv2 * rinv;
    const C m_rinv = c.m * rinv, q_rinv5 = dqd * rinv5;
    const C radial = rinv2 * fma(C(2.5), q_rinv5, m_rinv);
    ax = fma(-radial, dx, fma(qdx, rinv5, ax));
    ay = fma(-radial, dy, fma(qdy, rinv5, ay));
    az = fma(-radial, dz, fma(qdz, rinv5, az));
    if (POT) phi -= fma(C(0.5), q_rinv5, m_rinv);
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
            c.soft = eps2 * (C)r.spread;
            c.pad = C(0);
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
