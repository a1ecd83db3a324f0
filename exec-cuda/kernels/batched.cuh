// The batched kernels: a tree code's target groups against lists of source spans. Part of gravity.cu (included there, in order).

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
    const bool EACH = SOFT_EACH(SOFT);
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
    // The item's sources: its spans' positions from its first span's offset (0 but for a
    // device tree's piece of a cut list, which keeps its group's offsets).
    const u32 last = item.span_last - 1, origin = offset[item.span_first];
    const u32 total = offset[last] + (spans[last].end - spans[last].start) - origin;
    for (u32 base = 0; base < total; base += B) {
        const u32 flat = base + threadIdx.x, at = origin + flat;
        Pt<T, C> q = frame.apply(zero4<T>());
        C e_q = 0;
        if (flat < total) {
            // The span holding position `at`: the last whose offset is <= at.
            u32 lo = item.span_first, hi = last;
            while (lo < hi) {
                const u32 mid = (lo + hi + 1) / 2;
                if (offset[mid] <= at) lo = mid; else hi = mid - 1;
            }
            const u32 k = spans[lo].start + (at - offset[lo]);
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
    const bool EACH = SOFT_EACH(SOFT);
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
