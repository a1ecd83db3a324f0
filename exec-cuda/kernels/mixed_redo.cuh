// Mixed precision: the f64 sum of a target whose error estimate is too large. Part of gravity.cu (included there, in order).

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
