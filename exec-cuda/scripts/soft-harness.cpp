// Times exported tiled kernels, kernel alone, from cubins built by soft-cubins.sh (f32, or
// f64 with SOFT_CUBINS_F64=1; one precision per run, read from the first kernel's name): the
// shipped kernels beside a variant, in one process on one GPU (CUDA events after two
// warm-up launches, median of ten). The system is the bench's: a Plummer sphere in
// random order (or Morton order with SORT=1), two species alternating (eps 1/256 and
// 1/64; with ONE_EPS=x every particle's eps is x, which prices a per-particle kernel at one
// length against the one-length kernel); n / (targets per block) blocks over all sources,
// or over chunks of them as the host splits a launch (then the cubin's reduce kernel adds
// the chunks; soft-cubins.sh builds them), so compare kernels of one configuration with
// each other, not with the library's host-slice rates.
//
//   nvcc -O2 -o soft-harness soft-harness.cpp -lcuda
//   [SORT=1] [ONE_EPS=x] ./soft-harness N CUBIN:KERNEL[:p|s|u|w[:CHUNKS]] ...
//
// The suffix says what the per-particle arrays hold: p Plummer's eps^2/2, s the spline's
// 2.8 eps, u none (the kernel's own eps^2 = 1/65536, or the spline's support 2.8/256 for
// the _s2 kernels), w none with the _s2 kernels' support 2.8/64. The last column sums a sample of the outputs: equal sums say two
// variants computed the same forces.
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <random>
#include <string>
#include <algorithm>
#include <cstring>
#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char *s; cuGetErrorString(r, &s); fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s); exit(1);} } while (0)
template <typename R> struct Args { CUdeviceptr targets, sources, out, partial, lt, ls; R eps2, g; int n_targets, n_sources_padded, self_t0, self_len, chunk; };
template <typename R> int run(int argc, char **argv) {
    const size_t W = sizeof(R);
    int n = atoi(argv[1]);
    CK(cuInit(0)); CUdevice dev; CK(cuDeviceGet(&dev, 0)); CUcontext ctx; CK(cuCtxCreate(&ctx, 0, dev));
    std::mt19937_64 rng(1); std::uniform_real_distribution<double> U(0, 1);
    std::vector<R> p(4 * n), lp(n), ls(n);
    double a = 3 * M_PI / 16;
    for (int i = 0; i < n; ++i) {
        double x1 = 1e-10 + U(rng) * (0.999 - 1e-10), r = 1 / sqrt(pow(x1, -2.0 / 3) - 1);
        double z = 2 * U(rng) - 1, ph = 2 * M_PI * U(rng), s = sqrt(1 - z * z);
        p[4 * i] = a * r * s * cos(ph); p[4 * i + 1] = a * r * s * sin(ph); p[4 * i + 2] = a * r * z; p[4 * i + 3] = 1.0 / n;
        // ONE_EPS=x: every particle's eps x instead (the spline per particle at one support).
        double e = getenv("ONE_EPS") ? atof(getenv("ONE_EPS")) : i % 2 == 0 ? 1.0 / 256 : 1.0 / 64;
        lp[i] = 0.5 * e * e; ls[i] = 2.8 * e;
    }
    if (getenv("SORT") && *getenv("SORT") == '1') {
        // Morton order, 10 bits an axis over the bounding box; the lengths travel along.
        double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < 3; ++k) { lo[k] = std::min(lo[k], (double)p[4 * i + k]); hi[k] = std::max(hi[k], (double)p[4 * i + k]); }
        auto spread = [](unsigned v) { unsigned long long r = 0; for (int b = 0; b < 10; ++b) r |= (unsigned long long)((v >> b) & 1) << (3 * b); return r; };
        std::vector<std::pair<unsigned long long, int>> key(n);
        for (int i = 0; i < n; ++i) {
            unsigned long long kk = 0;
            for (int k = 0; k < 3; ++k) kk |= spread((unsigned)((p[4 * i + k] - lo[k]) / (hi[k] - lo[k]) * 1023.0)) << k;
            key[i] = {kk, i};
        }
        std::sort(key.begin(), key.end());
        std::vector<R> p2(4 * n), lp2(n), ls2(n);
        for (int j = 0; j < n; ++j) {
            const int i = key[j].second;
            for (int k = 0; k < 4; ++k) p2[4 * j + k] = p[4 * i + k];
            lp2[j] = lp[i]; ls2[j] = ls[i];
        }
        p.swap(p2); lp.swap(lp2); ls.swap(ls2);
    }
    int padded = (n + 1023) / 1024 * 1024;
    p.resize(4 * padded, 0.f); lp.resize(padded, 1.f); ls.resize(padded, 0.f);
    CUdeviceptr dp, dout, dlp, dls;
    CK(cuMemAlloc(&dp, p.size() * W)); CK(cuMemcpyHtoD(dp, p.data(), p.size() * W));
    CK(cuMemAlloc(&dout, 4 * W * n));
    CK(cuMemAlloc(&dlp, padded * W)); CK(cuMemcpyHtoD(dlp, lp.data(), padded * W));
    CK(cuMemAlloc(&dls, padded * W)); CK(cuMemcpyHtoD(dls, ls.data(), padded * W));
    CUevent e0, e1; CK(cuEventCreate(&e0, 0)); CK(cuEventCreate(&e1, 0));
    for (int k = 2; k < argc; ++k) {
        std::string spec = argv[k];
        size_t c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
        std::string file = spec.substr(0, c1), name = spec.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
        char L = c2 == std::string::npos ? 'u' : spec[c2 + 1];
        const size_t c3 = c2 == std::string::npos ? std::string::npos : spec.find(':', c2 + 1);
        int chunks = c3 == std::string::npos ? 1 : std::max(1, atoi(spec.c_str() + c3 + 1));
        CUmodule m; CK(cuModuleLoad(&m, file.c_str())); CUfunction f; CK(cuModuleGetFunction(&f, m, name.c_str()));
        int B = 256, TP = 4, NI = 4;
        sscanf(strstr(name.c_str(), "_b"), "_b%d_tp%d_ni%d", &B, &TP, &NI);
        int per_block = B / TP * NI, blocks = (n + per_block - 1) / per_block;
        Args<R> a{dp, dp, dout, 0, L == 'p' ? dlp : L == 's' ? dls : 0, L == 'p' ? dlp : L == 's' ? dls : 0,
                  L == 'u' || L == 'w' ? (R)(1.0 / 65536) : R(0), R(1), n, padded, 0, n, padded};
        // The spline's support: the bench's 2.8/256, or with suffix w the larger species' 2.8/64.
        if (name.find("_s2") != std::string::npos) a.eps2 = L == 'w' ? R(2.8 / 64) : R(2.8 / 256);
        // The source split as the host makes it: chunks of a multiple of 256 sources, the
        // partial sums added in chunk order by the reduce kernel of the same flags.
        int chunk = (padded + chunks - 1) / chunks;
        chunk = (chunk + 255) / 256 * 256;
        chunks = (padded + chunk - 1) / chunk;
        a.chunk = chunk;
        CUdeviceptr part = 0;
        CUfunction rf = 0;
        Args<R> ra = a;
        ra.chunk = chunks;
        if (chunks > 1) {
            CK(cuMemAlloc(&part, (size_t)chunks * n * 4 * W));
            a.partial = part;
            ra.partial = part;
            const size_t pp = name.find("_p", name.find("_b"));
            const std::string rname = std::string("nbody_tiled_reduce_") + (W == 8 ? "f64" : "f32") + name.substr(pp);
            CK(cuModuleGetFunction(&rf, m, rname.c_str()));
        }
        void *params[] = {&a}, *rparams[] = {&ra};
        std::vector<float> times;
        for (int rep = 0; rep < 12; ++rep) {
            CK(cuMemsetD8(dout, 0, 4 * W * n));
            CK(cuEventRecord(e0, 0));
            CK(cuLaunchKernel(f, blocks, chunks, 1, B, 1, 1, 0, 0, params, 0));
            if (chunks > 1) CK(cuLaunchKernel(rf, (n + 255) / 256, 1, 1, 256, 1, 1, 0, 0, rparams, 0));
            CK(cuEventRecord(e1, 0)); CK(cuEventSynchronize(e1));
            float ms; CK(cuEventElapsedTime(&ms, e0, e1)); if (rep >= 2) times.push_back(ms);
        }
        std::sort(times.begin(), times.end());
        std::vector<R> o(4 * n); CK(cuMemcpyDtoH(o.data(), dout, 4 * W * n));
        double chk = 0; for (int i = 0; i < n; i += 97) chk += fabs(o[4 * i]) + fabs(o[4 * i + 1]);
        if (part) CK(cuMemFree(part));
        printf("%2d chunks %-24s %-48s %8.4f ms  %.3e /s  chk %.6e\n", chunks, file.c_str(), name.c_str(), times[times.size() / 2],
               (double)n * n / (times[times.size() / 2] * 1e-3), chk);
        CK(cuModuleUnload(m));
    }
    return 0;
}
int main(int argc, char **argv) {
    if (argc > 2 && strstr(argv[2], "_f64_")) return run<double>(argc, argv);
    return run<float>(argc, argv);
}
