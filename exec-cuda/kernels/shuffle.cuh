// The warp-shuffle variant of the tiled kernel (sources broadcast from registers). Part of gravity.cu (included there, in order).

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
