// Direct-summation gravity kernels for nbody-cuda.
//
// Every kernel computes, for target i and the sources j it is given,
//   a_i += G sum_j m_j d / r^3,   phi_i -= G sum_j m_j / r,   d = x_j - x_i, r^2 = |d|^2 + eps^2
// and ADDS it into the output (calls accumulate). The physics rules are nbody-core's:
// eps > 0 sums every pair and subtracts the self term m_i / eps afterwards; eps = 0 masks
// zero-distance pairs. Techniques (see shared/papers): shared-memory source tiles with the
// next tile's global load issued before the barrier and stored after it; eps^2 folded
// into the first FMA; massless padding instead of bounds tests in the inner loop; NI
// targets per thread to reuse each shared load; TP threads per target for small N, their
// partial sums combined with warp shuffles (no __syncthreads).
//
// The kernels by job, in one translation unit (one module, and each kernel compiled as
// before): each file below holds one job over what the files before it define.

#include "common.cuh"
#include "mixed_frame.cuh"
#include "tiles.cuh"
#include "mixed_redo.cuh"
// The kernels' argument structs (JerkExtra: what a jerk launch writes besides out and
// jerk; Item and Span of a batched launch; one *Args struct per exported kernel).
#include "args.h"
#include "jerk.cuh"
#include "batched.cuh"
#include "cells.cuh"
#include "shuffle.cuh"
#include "entries.cuh"
#include "columns.cuh"
#include "hermite.cuh"
#include "local.cuh"
#include "tree.cuh"
#include "gradients.cuh"

// Every argument struct's size and field offsets (args.h's NBODY_PROBED order), for the
// host to compare with its own layout: out[k] for k < capacity; returns nothing else.
#define NBODY_PROBE_FIELD(type, name) put(out, capacity, k, (long long)offsetof(S, name));
#define NBODY_PROBE_STRUCT(S_, FIELDS)                                                                                 \
    {                                                                                                                  \
        typedef S_ S;                                                                                                  \
        put(out, capacity, k, (long long)sizeof(S));                                                                   \
        const int count_at = k++;                                                                                      \
        FIELDS(NBODY_PROBE_FIELD)                                                                                      \
        put_at(out, capacity, count_at, (long long)(k - count_at - 1));                                                   \
    }
__device__ __forceinline__ void put(long long *out, int capacity, int &k, long long v) {
    if (k < capacity) out[k] = v;
    ++k;
}
__device__ __forceinline__ void put_at(long long *out, int capacity, int at, long long v) {
    if (at < capacity) out[at] = v;
}
extern "C" __global__ void nbody_probe_layouts(long long *out, int capacity) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    int k = 0;
    NBODY_PROBED(NBODY_PROBE_STRUCT)
}
