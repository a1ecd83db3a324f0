// The jerk kernels (Hermite's forces) with the nearest neighbour and neighbour lists. Part of gravity.cu (included there, in order).

#define NO_NEIGHBOUR 0x7fffffff
// The mark of a list entry inside the target's `inside` radius (PackedLists::INSIDE).
#define LISTED_INSIDE 0x80000000u

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
    T mi[NI], h2[NI], dt[NI], in2[NI], best[NI], s[7][NI];
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
        dt[q] = NEIGH && real && x.ahead != 0 ? x.ahead[i] : T(0);
        in2[q] = NEIGH && real && x.inside != 0 ? x.inside[i] : T(-1);
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
                    const C dvx = sv.x - v[q].x, dvy = sv.y - v[q].y, dvz = sv.z - v[q].z;
                    const int j = base + k;
                    const bool other = j != own[q] && j < n_sources;
                    T d2 = T(0);
                    bool listed = false, inside = false;
                    Pt<T, C> src = sx;
                    if (NEIGH && !FAR) {
                        separation(sx, p[q], dx, dy, dz);
                        d2 = (T)((dx * dx + dy * dy) + dz * dz);
                        // With a look-ahead, also where the pair comes within the radius
                        // after dt (NBODY6++'s velocity criterion).
                        T near2 = d2;
                        if (x.ahead != 0) {
                            const T qx = fma(dt[q], (T)dvx, (T)dx), qy = fma(dt[q], (T)dvy, (T)dy),
                                    qz = fma(dt[q], (T)dvz, (T)dz);
                            near2 = fmin(near2, (qx * qx + qy * qy) + qz * qz);
                        }
                        listed = other && near2 <= h2[q];
                        inside = near2 < in2[q];
                        // Listed sources left out of the sums where asked: massless here.
                        if (listed && x.exclude) src.p.w = C(0);
                    }
                    if (FAR)
                        interact<C, C, POT, MASKED>(high(p[q]), high(sx), eps2, ax[q], ay[q], az[q], phi[q], dx, dy, dz,
                                                    rinv, m_rinv3);
                    else
                        interact<T, C, POT, MASKED>(p[q], src, eps2, ax[q], ay[q], az[q], phi[q], dx, dy, dz, rinv,
                                                    m_rinv3);
                    C alpha = ((C(3) * fma(dx, dvx, fma(dy, dvy, dz * dvz))) * rinv) * rinv;
                    jx[q] = fma(m_rinv3, fma(-alpha, dx, dvx), jx[q]);
                    jy[q] = fma(m_rinv3, fma(-alpha, dy, dvy), jy[q]);
                    jz[q] = fma(m_rinv3, fma(-alpha, dz, dvz), jz[q]);
                    if (NEIGH && !FAR) {
                        if (other && d2 < best[q]) {
                            best[q] = d2;
                            arg[q] = j;
                        }
                        if (listed) {
                            const u32 slot = atomicAdd(&x.counts[first + q], 1u);
                            if (slot < (u32)x.capacity)
                                x.lists[(size_t)(first + q) * x.capacity + slot] = (u32)j | (inside ? LISTED_INSIDE : 0u);
                        }
                    }
                }
            }
        };
        // (A look-ahead can bring a far tile's source within a radius: no far tiles then.)
        bool far = MIXED && !(NEIGH && x.ahead != 0) && far_tile<B>(boxes, fx);
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
