// Experiments on the f32 tiled kernel (issue #17 part 2), kept beside the kernels so the
// figures in benches/results can be reproduced: each variant against the library's own
// kernel (included below, so the baseline is the shipped code), checked against it
// before it is timed, timed with CUDA events after a warm-up.
//
//   nvcc -O3 -ftz=true -std=c++14 -arch=sm_90 -o tiled-experiments tiled-experiments.cu
//   ./tiled-experiments [N ...]
//
// Variants: K sources per thread per tile (the tile is K x B sources, one barrier per
// tile, so a barrier is paid K times more rarely), loaded with cp.async (straight into
// shared memory: no registers hold the next tile, so more warps fit), and minimum blocks
// per SM in __launch_bounds__ (the compiler then keeps registers under a cap).
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include "../kernels/gravity.cu"

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e = (x);                                                                                           \
        if (e != cudaSuccess) {                                                                                        \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));                                 \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

// Combines the TP slices' sums and writes them: partial sums of a source chunk, or the
// finished field.
template <int TP, int NI, bool POT>
__device__ __forceinline__ void write_sums(float (&ax)[NI], float (&ay)[NI], float (&az)[NI], float (&phi)[NI],
                                           const float (&mi)[NI], int slice, int first, int n_targets,
                                           float4 *__restrict__ out, float4 *__restrict__ partial, float eps2,
                                           float g) {
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        if (TP > 1) {
            ax[k] = lane_sum<TP>(ax[k]); ay[k] = lane_sum<TP>(ay[k]); az[k] = lane_sum<TP>(az[k]);
            if (POT) phi[k] = lane_sum<TP>(phi[k]);
        }
    }
    if (slice == 0) {
#pragma unroll
        for (int k = 0; k < NI; ++k)
            if (first + k < n_targets && gridDim.y > 1)
                partial[(size_t)blockIdx.y * n_targets + first + k] = make_float4(ax[k], ay[k], az[k], phi[k]);
            else if (first + k < n_targets)
                finish<float, float, POT, false>(out, first + k, mi[k], eps2, g, ax[k], ay[k], az[k], phi[k], 0,
                                                 n_targets);
    }
}

// The tiled kernel with a tile of K x B sources (f32 only, one chunk of sources).
template <int B, int TP, int NI, int K, bool ASYNC, bool POT>
__device__ __forceinline__ void tiled_k(const float4 *__restrict__ targets, int n_targets,
                                        const float4 *__restrict__ sources, int n_sources_padded,
                                        float4 *__restrict__ out, float eps2, float g, int chunk,
                                        float4 *__restrict__ partial) {
    const int L = K * B;
    __shared__ float4 tile[2][L];
    const int slice = threadIdx.x % TP;
    const int first = blockIdx.x * (B / TP) * NI + threadIdx.x / TP * NI;
    Pt<float, float> ti[NI];
    float ax[NI], ay[NI], az[NI], phi[NI];
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        ti[k].p = first + k < n_targets ? targets[first + k] : zero4<float>();
        ax[k] = 0; ay[k] = 0; az[k] = 0; phi[k] = 0;
    }
    const int begin = blockIdx.y * chunk, end = min(begin + chunk, n_sources_padded);
#pragma unroll
    for (int q = 0; q < K; ++q) {
        if (ASYNC) cp_async16(&tile[0][q * B + threadIdx.x], &sources[begin + q * B + threadIdx.x]);
        else tile[0][q * B + threadIdx.x] = sources[begin + q * B + threadIdx.x];
    }
    if (ASYNC) { cp_async_commit(); cp_async_wait_all(); }
    __syncthreads();
    int buf = 0;
    for (int base = begin; base < end; base += L, buf ^= 1) {
        const bool more = base + L < end;
        float4 next[ASYNC ? 1 : K];
        if (more) {
#pragma unroll
            for (int q = 0; q < K; ++q) {
                if (ASYNC) cp_async16(&tile[buf ^ 1][q * B + threadIdx.x], &sources[base + L + q * B + threadIdx.x]);
                else next[q] = sources[base + L + q * B + threadIdx.x];
            }
            if (ASYNC) cp_async_commit();
        }
#pragma unroll(L / TP < 16 ? L / TP : 16)
        for (int jj = 0; jj < L / TP; ++jj) {
            Pt<float, float> s;
            s.p = tile[buf][jj * TP + slice];
#pragma unroll
            for (int k = 0; k < NI; ++k) interact<float, float, POT, false>(ti[k], s, eps2, ax[k], ay[k], az[k], phi[k]);
        }
        if (more) {
            if (ASYNC) cp_async_wait_all();
            else {
#pragma unroll
                for (int q = 0; q < K; ++q) tile[buf ^ 1][q * B + threadIdx.x] = next[q];
            }
        }
        __syncthreads();
    }
    float mi[NI];
#pragma unroll
    for (int k = 0; k < NI; ++k) mi[k] = ti[k].p.w;
    write_sums<TP, NI, POT>(ax, ay, az, phi, mi, slice, first, n_targets, out, partial, eps2, g);
}

// Mass-scaled sources: each source is staged as X = c x (c = m^-1/2), with e = eps^2 c^2
// and sqrt(m) beside it, so that d' = c (x_j - x_i) is one FFMA per axis, r'^2 = c^2 r^2,
// u = rsqrt(r'^2) = sqrt(m) / r and m d / r^3 = u^3 d': 12 instructions per interaction
// against 13 (acc only). A massless source is staged far away (X = 1e20): r'^2
// overflows, u = 0, and it adds nothing.
template <int B, int TP, int NI, int K, bool POT>
__device__ __forceinline__ void tiled_s(const float4 *__restrict__ targets, int n_targets,
                                        const float4 *__restrict__ sources, int n_sources_padded,
                                        float4 *__restrict__ out, float eps2, float g, int chunk,
                                        float4 *__restrict__ partial) {
    const int L = K * B;
    __shared__ float4 ta[2][L];
    __shared__ float te[2][L];
    __shared__ float tm[2][L];
    const int slice = threadIdx.x % TP;
    const int first = blockIdx.x * (B / TP) * NI + threadIdx.x / TP * NI;
    float tx[NI], ty[NI], tz[NI], mi[NI], ax[NI], ay[NI], az[NI], phi[NI];
#pragma unroll
    for (int k = 0; k < NI; ++k) {
        const float4 t = first + k < n_targets ? targets[first + k] : zero4<float>();
        tx[k] = t.x; ty[k] = t.y; tz[k] = t.z; mi[k] = t.w;
        ax[k] = 0; ay[k] = 0; az[k] = 0; phi[k] = 0;
    }
    auto stage = [&](int buf, int q, float4 p) {
        const int j = q * B + threadIdx.x;
        if (p.w > 0.0f) {
            const float c = rsqrtf(p.w);
            ta[buf][j] = make_float4(c * p.x, c * p.y, c * p.z, c);
            te[buf][j] = eps2 * c * c;
            tm[buf][j] = p.w * c;
        } else {
            ta[buf][j] = make_float4(1e20f, 1e20f, 1e20f, 1.0f);
            te[buf][j] = 0.0f;
            tm[buf][j] = 0.0f;
        }
    };
    const int begin = blockIdx.y * chunk, end = min(begin + chunk, n_sources_padded);
#pragma unroll
    for (int q = 0; q < K; ++q) stage(0, q, sources[begin + q * B + threadIdx.x]);
    __syncthreads();
    int buf = 0;
    for (int base = begin; base < end; base += L, buf ^= 1) {
        const bool more = base + L < end;
        float4 next[K];
        if (more) {
#pragma unroll
            for (int q = 0; q < K; ++q) next[q] = sources[base + L + q * B + threadIdx.x];
        }
#pragma unroll(L / TP < 16 ? L / TP : 16)
        for (int jj = 0; jj < L / TP; ++jj) {
            const int j = jj * TP + slice;
            const float4 a = ta[buf][j];
            const float e = te[buf][j];
            const float sm = POT ? tm[buf][j] : 0.0f;
#pragma unroll
            for (int k = 0; k < NI; ++k) {
                const float dx = fmaf(-a.w, tx[k], a.x), dy = fmaf(-a.w, ty[k], a.y), dz = fmaf(-a.w, tz[k], a.z);
                const float r2 = fmaf(dz, dz, fmaf(dy, dy, fmaf(dx, dx, e)));
                const float u = rsqrtf(r2);
                const float u3 = (u * u) * u;
                ax[k] = fmaf(dx, u3, ax[k]);
                ay[k] = fmaf(dy, u3, ay[k]);
                az[k] = fmaf(dz, u3, az[k]);
                if (POT) phi[k] = fmaf(-u, sm, phi[k]);
            }
        }
        if (more) {
#pragma unroll
            for (int q = 0; q < K; ++q) stage(buf ^ 1, q, next[q]);
        }
        __syncthreads();
    }
    write_sums<TP, NI, POT>(ax, ay, az, phi, mi, slice, first, n_targets, out, partial, eps2, g);
}

#define SCALED(B, TP, NI, K, POT, MINB)                                                                                \
    extern "C" __global__ void __launch_bounds__(B, MINB)                                                              \
        s_b##B##_tp##TP##_ni##NI##_k##K##_p##POT##_m##MINB(const float4 *t, int nt, const float4 *s, int ns, float4 *o,        \
                                                  float e, float g, int c, float4 *pa) {                               \
        tiled_s<B, TP, NI, K, POT>(t, nt, s, ns, o, e, g, c, pa);                                                      \
    }
SCALED(128, 2, 8, 2, 0, 1)
SCALED(128, 2, 8, 1, 0, 1)
SCALED(128, 1, 8, 1, 0, 1)
SCALED(256, 2, 8, 1, 0, 1)
SCALED(128, 2, 8, 1, 0, 5)
SCALED(128, 2, 8, 1, 0, 6)
SCALED(128, 2, 4, 1, 0, 1)
SCALED(128, 2, 8, 1, 1, 1)

#define VARIANT(B, TP, NI, K, ASYNC, MINB, POT)                                                                        \
    extern "C" __global__ void __launch_bounds__(B, MINB)                                                              \
        x_b##B##_tp##TP##_ni##NI##_k##K##_a##ASYNC##_m##MINB##_p##POT(const float4 *t, int nt, const float4 *s,      \
                                                                        int ns, float4 *o, float e, float g, int c, float4 *pa) { \
        tiled_k<B, TP, NI, K, ASYNC, POT>(t, nt, s, ns, o, e, g, c, pa);                                               \
    }

typedef void (*Kern)(const float4 *, int, const float4 *, int, float4 *, float, float, int, float4 *);
struct Variant {
    const char *name;
    Kern k;
    int b, tp, ni, tile;
};

#define V(B, TP, NI, K, A, M, P) VARIANT(B, TP, NI, K, A, M, P)
#define E(B, TP, NI, K, A, M, P)                                                                                       \
    {"x_b" #B "_tp" #TP "_ni" #NI "_k" #K "_a" #A "_m" #M "_p" #P, x_b##B##_tp##TP##_ni##NI##_k##K##_a##A##_m##M##_p##P, \
     B, TP, NI, K * B},
#define LIST(X)                                                                                                        \
    X(256, 4, 4, 4, 1, 1, 0)

LIST(V)
#define S(B, TP, NI, K, P, M) {"s_b" #B "_tp" #TP "_ni" #NI "_k" #K "_p" #P "_m" #M, s_b##B##_tp##TP##_ni##NI##_k##K##_p##P##_m##M, B, TP, NI, K * B},
static const Variant VARIANTS[] = {LIST(E) S(128, 2, 8, 2, 0, 1) S(128, 2, 8, 1, 0, 1) S(128, 1, 8, 1, 0, 1)
                                   S(256, 2, 8, 1, 0, 1) S(128, 2, 8, 1, 0, 5) S(128, 2, 8, 1, 0, 6)
                                   S(128, 2, 4, 1, 0, 1) S(128, 2, 8, 1, 1, 1)};

// One launch of a variant over y source chunks (y > 1: partial sums, then the library's
// reduce kernel, as the library's source-split launches do).
static void launch(const Variant &v, const float4 *d_p, int n, int n_pad, float4 *d_o, int y, float4 *d_part) {
    dim3 grid((n + v.b / v.tp * v.ni - 1) / (v.b / v.tp * v.ni), y);
    const int chunk = (n_pad / v.tile + y - 1) / y * v.tile;
    v.k<<<grid, v.b>>>(d_p, n, d_p, n_pad, d_o, 1e-4f, 1.0f, chunk, d_part);
    if (y > 1) nbody_tiled_reduce_f32_p0_m0<<<(n + 255) / 256, 256>>>(d_p, n, y, d_part, d_o, 1e-4f, 1.0f, 0, n);
    CHECK(cudaGetLastError());
}

// Median of `reps` timings of `run` with CUDA events, after one warm-up run.
template <typename F> static float median_ms(int reps, F run) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    run(); // warm-up
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r) {
        CHECK(cudaEventRecord(a));
        run();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float t;
        CHECK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

static float time_it(const Variant &v, const float4 *d_p, int n, int n_pad, float4 *d_o, int y, float4 *d_part,
                     int reps) {
    return median_ms(reps, [&] { launch(v, d_p, n, n_pad, d_o, y, d_part); });
}

// The chunk count in 1..16 whose blocks fill the last wave best (fewest chunks on a tie).
static int balanced_chunks(int blocks_x, int slots, int tiles) {
    int best = 1;
    double best_eff = 0;
    for (int y = 1; y <= 16 && y <= tiles; ++y) {
        const double waves = (double)blocks_x * y / slots;
        const double eff = waves / std::ceil(waves);
        if (eff > best_eff + 0.005) {
            best_eff = eff;
            best = y;
        }
    }
    return best;
}

int main(int argc, char **argv) {
    std::vector<int> sizes;
    for (int i = 1; i < argc; ++i) sizes.push_back(atoi(argv[i]));
    if (sizes.empty()) sizes = {65536, 262144, 1048576};
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    int clock_khz = 0;
    CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
    printf("device: %s, %d SMs, clock %d MHz\n", prop.name, prop.multiProcessorCount, clock_khz / 1000);
    for (int n : sizes) {
        const int n_pad = (n + 4095) / 4096 * 4096;
        std::vector<float4> p(n_pad, make_float4(0, 0, 0, 0));
        srand(1);
        for (int i = 0; i < n; ++i)
            p[i] = make_float4(rand() / (float)RAND_MAX - 0.5f, rand() / (float)RAND_MAX - 0.5f,
                               rand() / (float)RAND_MAX - 0.5f, 1.0f / n);
        float4 *d_p, *d_o, *d_ref;
        CHECK(cudaMalloc(&d_p, n_pad * sizeof(float4)));
        CHECK(cudaMalloc(&d_o, n * sizeof(float4)));
        CHECK(cudaMalloc(&d_ref, n * sizeof(float4)));
        float4 *d_part;
        CHECK(cudaMalloc(&d_part, (size_t)16 * n * sizeof(float4)));
        CHECK(cudaMemcpy(d_p, p.data(), n_pad * sizeof(float4), cudaMemcpyHostToDevice));
        // Baseline: the shipped kernel at the ladder's config for large N, (256,4,4), and (256,1,4).
        struct Base {
            const char *name;
            void (*k)(const float4 *, int, const float4 *, int, float4 *, float, float, int, int, int, float4 *);
            int b, tp, ni;
        } bases[] = {{"lib_b256_tp4_ni4_p0", nbody_tiled_f32_b256_tp4_ni4_p0_m0, 256, 4, 4},
                     {"lib_b256_tp8_ni4_p0", nbody_tiled_f32_b256_tp8_ni4_p0_m0, 256, 8, 4},
                     {"lib_b256_tp1_ni4_p0", nbody_tiled_f32_b256_tp1_ni4_p0_m0, 256, 1, 4},
                     {"lib_b256_tp4_ni4_p1", nbody_tiled_f32_b256_tp4_ni4_p1_m0, 256, 4, 4}};
        const double inter = (double)n * n;
        const int reps = n >= 1048576 ? 3 : 7;
        std::vector<float4> ref(n), got(n);
        for (auto &bse : bases) {
            dim3 grid((n + bse.b / bse.tp * bse.ni - 1) / (bse.b / bse.tp * bse.ni));
            const float ms = median_ms(reps, [&] {
                bse.k<<<grid, bse.b>>>(d_p, n, d_p, n_pad, d_o, 1e-4f, 1.0f, 0, n, n_pad, nullptr);
            });
            printf("%8d %-28s %9.3f ms %.3e /s\n", n, bse.name, ms, inter / (ms * 1e-3));
        }
        // The reference for the checks: the first baseline, once, into d_ref (with potential).
        CHECK(cudaMemset(d_ref, 0, n * sizeof(float4)));
        {
            dim3 grid((n + 255) / 256);
            nbody_tiled_f32_b256_tp4_ni4_p1_m0<<<grid, 256>>>(d_p, n, d_p, n_pad, d_ref, 1e-4f, 1.0f, 0, n, n_pad,
                                                              nullptr);
            CHECK(cudaMemcpy(ref.data(), d_ref, n * sizeof(float4), cudaMemcpyDeviceToHost));
        }
        for (const Variant &v : VARIANTS) {
          if (n_pad % v.tile != 0) continue;
          int blocks = 0;
          CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, v.k, v.b, 0));
          const int bx = (n + v.b / v.tp * v.ni - 1) / (v.b / v.tp * v.ni);
          const int yb = balanced_chunks(bx, blocks * prop.multiProcessorCount, n_pad / v.tile);
          for (int y : {1, yb}) {
            CHECK(cudaMemset(d_o, 0, n * sizeof(float4)));
            launch(v, d_p, n, n_pad, d_o, y, d_part);
            CHECK(cudaMemcpy(got.data(), d_o, n * sizeof(float4), cudaMemcpyDeviceToHost));
            double worst = 0;
            for (int i = 0; i < n; ++i) {
                double d = std::sqrt(std::pow(got[i].x - ref[i].x, 2) + std::pow(got[i].y - ref[i].y, 2) +
                                     std::pow(got[i].z - ref[i].z, 2));
                double m = std::sqrt(std::pow(ref[i].x, 2) + std::pow(ref[i].y, 2) + std::pow(ref[i].z, 2));
                worst = std::max(worst, d / m);
            }
            cudaFuncAttributes attr;
            CHECK(cudaFuncGetAttributes(&attr, v.k));
            float ms = time_it(v, d_p, n, n_pad, d_o, y, d_part, reps);
            printf("%8d %-28s y=%-2d %9.3f ms %.3e /s  regs %3d blocks/SM %d waves %.2f  max rel diff %.1e\n", n,
                   v.name, y, ms, inter / (ms * 1e-3), attr.numRegs, blocks,
                   (double)bx * y / (blocks * prop.multiProcessorCount), worst);
            if (yb == 1) break;
          }
        }
        CHECK(cudaFree(d_p));
        CHECK(cudaFree(d_o));
        CHECK(cudaFree(d_ref));
        CHECK(cudaFree(d_part));
    }
    return 0;
}
