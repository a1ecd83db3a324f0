// The tiled kernels' bodies: source tiles in shared memory, and their reductions. Part of gravity.cu (included there, in order).

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
        // interactions: remove exactly that.
        if (i - self_t0 >= 0 && i - self_t0 < self_len) {
            SoftPair<SOFT>::template remove_self<T, C, MASKED>(phi, m_i, eps2, e_i);
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
    const bool EACH = SOFT_EACH(SOFT);
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
    const bool EACH = SOFT_EACH(SOFT);
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
    const bool EACH = SOFT_EACH(SOFT);
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
    const bool EACH = SOFT_EACH(SOFT);
    finish<T, C, POT, MASKED, SOFT>(out, i, targets[i].w, eps2, g, ax, ay, az, phi, self_t0, self_len,
                                    EACH ? (C)lengths_t[i] : C(0));
}
