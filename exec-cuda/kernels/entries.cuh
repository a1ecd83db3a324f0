// The exported force kernels: nbody_<kind>_<f32|f64|mixed>_..., with their register bounds. Part of gravity.cu (included there, in order).

// Exported entry points: nbody_<kind>_<f32|f64|mixed>_..., names built by the host code.
// The f32 tiled kernels say "at least one block per SM" so that ptxas is free to spend
// registers: with only the block size it packed (256,4,4) into 63 registers and bunched
// each source's reciprocal square roots together, stalling on the MUFU queue; with this
// it takes about 80 and spaces them out. The f64 kernels would take 150 and lose blocks.
// The mixed ones say three 128-thread blocks: with only the block size ptxas holds
// (128,1,4) to 127 registers and, with the error estimate's FFMA, leaves long stalls
// after the reciprocal square roots.
#define TILED_BOUNDS_f32(B) __launch_bounds__(B, 1)
#define TILED_BOUNDS_f64(B) __launch_bounds__(B)
#define TILED_BOUNDS_mixed(B) __launch_bounds__(B, 384 / (B))
#define TILED(T, C, NAME, B, TP, NI, POT, MASKED)                                                                       \
    extern "C" __global__ void TILED_BOUNDS_##NAME(B) nbody_tiled_##NAME##_b##B##_tp##TP##_ni##NI##_p##POT##_m##MASKED( \
        const TiledArgs<T> a) {                                                                                        \
        tiled<T, C, B, TP, NI, POT, MASKED>(a.targets, a.n_targets, a.sources, a.n_sources_padded, a.out, a.eps2, a.g, \
                                            a.self_t0, a.self_len, a.chunk, a.partial, nullptr, nullptr, a.estimate,       \
                                            a.redo);                                                                   \
    }

#define TILED_REDUCE(T, C, NAME, POT, MASKED)                                                                           \
    extern "C" __global__ void nbody_tiled_reduce_##NAME##_p##POT##_m##MASKED(const TiledArgs<T> a) {                 \
        tiled_reduce<T, C, POT, MASKED>(a.targets, a.n_targets, a.chunk, a.partial, a.out, a.eps2, a.g, a.self_t0,        \
                                        a.self_len, nullptr, a.estimate, a.redo);                                      \
    }
#define TILED_REDUCE_PM(T, C, NAME)                                                                                    \
    TILED_REDUCE(T, C, NAME, 0, 0) TILED_REDUCE(T, C, NAME, 0, 1) TILED_REDUCE(T, C, NAME, 1, 0)                       \
    TILED_REDUCE(T, C, NAME, 1, 1)
TILED_REDUCE_PM(float, float, f32)
TILED_REDUCE_PM(double, double, f64)
TILED_REDUCE_PM(double, float, mixed)

// chunk: the records `partial` holds (the reduction's chunks times n_targets).
#define MIXED_REDO(POT, MASKED)                                                                                        \
    extern "C" __global__ void __launch_bounds__(REDO_WARPS * 32)                                                      \
        nbody_mixed_redo_##p##POT##_m##MASKED(const TiledArgs<double> a) {                                               \
        mixed_redo<POT, MASKED>(a.targets, a.sources, a.n_sources_padded, a.eps2, a.redo, a.partial, a.chunk);         \
    }                                                                                                                  \
    extern "C" __global__ void nbody_mixed_redo_finish_##p##POT##_m##MASKED(const TiledArgs<double> a) {                \
        mixed_redo_finish<POT, MASKED>(a.targets, a.n_sources_padded, a.out, a.eps2, a.g, a.self_t0, a.self_len,      \
                                       a.redo, a.partial, a.chunk);                                                    \
    }
MIXED_REDO(0, 0) MIXED_REDO(0, 1) MIXED_REDO(1, 0) MIXED_REDO(1, 1)

#define TILED_PM(T, C, NAME, B, TP, NI)                                                                                 \
    TILED(T, C, NAME, B, TP, NI, 0, 0)                                                                                  \
    TILED(T, C, NAME, B, TP, NI, 0, 1)                                                                                  \
    TILED(T, C, NAME, B, TP, NI, 1, 0)                                                                                  \
    TILED(T, C, NAME, B, TP, NI, 1, 1)

// Must list exactly config.rs's CANDIDATES.
#define TILED_ALL(T, C, NAME)                                                                                           \
    TILED_PM(T, C, NAME, 128, 1, 1)                                                                                       \
    TILED_PM(T, C, NAME, 128, 1, 2)                                                                                       \
    TILED_PM(T, C, NAME, 128, 1, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 1, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 2, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 2, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 4, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 4, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 8, 2)                                                                                       \
    TILED_PM(T, C, NAME, 128, 8, 4)                                                                                       \
    TILED_PM(T, C, NAME, 128, 8, 8)                                                                                       \
    TILED_PM(T, C, NAME, 128, 16, 1)                                                                                      \
    TILED_PM(T, C, NAME, 128, 16, 2)                                                                                      \
    TILED_PM(T, C, NAME, 128, 16, 4)                                                                                      \
    TILED_PM(T, C, NAME, 128, 32, 1)                                                                                      \
    TILED_PM(T, C, NAME, 128, 32, 2)                                                                                      \
    TILED_PM(T, C, NAME, 256, 1, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 2, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 4, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 8, 4)                                                                                       \
    TILED_PM(T, C, NAME, 256, 16, 2)

TILED_ALL(float, float, f32)
TILED_ALL(double, double, f64)
TILED_ALL(double, float, mixed)

// The tiled kernel under the other softened kernels (soft_interact): per-particle
// Plummer with and without the mask, the spline with one support or one per particle
// (masking itself, named m1), for the f32 and f64 ladders (tuning.rs's LADDER; the mixed
// executor runs these through the batched kernel).
// The f64 soft kernels are held to 128 registers (two 256-thread blocks an SM): unbound,
// per-particle Plummer takes 254 and one block. The f32 soft kernels without the
// potential are held to Plummer's 80 (three blocks an SM, and the source split Plummer
// gets): unbound, each takes a few registers more and drops to two blocks an SM. The
// kernels with the potential keep the f32 tiled bound.
#define TILED_SOFT_BOUNDS_f32(B, POT, SOFT) __launch_bounds__(B, !(POT) ? 768 / (B) : 1)
#define TILED_SOFT_BOUNDS_f64(B, POT, SOFT) __launch_bounds__(B, 512 / (B))
#define TILED_SOFT(T, C, NAME, B, TP, NI, POT, MASKED, SOFT)                                                           \
    extern "C" __global__ void TILED_SOFT_BOUNDS_##NAME(B, POT, SOFT)                                                  \
        nbody_tiled_##NAME##_b##B##_tp##TP##_ni##NI##_p##POT##_m##MASKED##_s##SOFT(const TiledArgs<T> a) {             \
        tiled<T, C, B, TP, NI, POT, MASKED, SOFT>(a.targets, a.n_targets, a.sources, a.n_sources_padded, a.out, a.eps2, \
                                                  a.g, a.self_t0, a.self_len, a.chunk, a.partial, a.lengths_t,         \
                                                  a.lengths_s);                                                        \
    }
#define TILED_SOFT_P(T, C, NAME, B, TP, NI, POT) SOFT_BUILDS(TILED_SOFT, T, C, NAME, B, TP, NI, POT)
#define TILED_SOFT_PM(T, C, NAME, B, TP, NI) TILED_SOFT_P(T, C, NAME, B, TP, NI, 0) TILED_SOFT_P(T, C, NAME, B, TP, NI, 1)
// Must list exactly tuning.rs's LADDER.
#define TILED_SOFT_LADDER(T, C, NAME)                                                                                  \
    TILED_SOFT_PM(T, C, NAME, 256, 4, 4)                                                                               \
    TILED_SOFT_PM(T, C, NAME, 256, 8, 4)                                                                               \
    TILED_SOFT_PM(T, C, NAME, 256, 16, 2)                                                                              \
    TILED_SOFT_PM(T, C, NAME, 128, 32, 2)                                                                              \
    TILED_SOFT_PM(T, C, NAME, 128, 32, 1)
TILED_SOFT_LADDER(float, float, f32)
TILED_SOFT_LADDER(double, double, f64)

#define TILED_REDUCE_SOFT(T, C, NAME, POT, MASKED, SOFT)                                                               \
    extern "C" __global__ void nbody_tiled_reduce_##NAME##_p##POT##_m##MASKED##_s##SOFT(const TiledArgs<T> a) {      \
        tiled_reduce<T, C, POT, MASKED, SOFT>(a.targets, a.n_targets, a.chunk, a.partial, a.out, a.eps2, a.g,            \
                                              a.self_t0, a.self_len, a.lengths_t);                                     \
    }
#define TILED_REDUCE_SOFT_P(T, C, NAME, POT) SOFT_BUILDS(TILED_REDUCE_SOFT, T, C, NAME, POT)
TILED_REDUCE_SOFT_P(float, float, f32, 0) TILED_REDUCE_SOFT_P(float, float, f32, 1)
TILED_REDUCE_SOFT_P(double, double, f64, 0) TILED_REDUCE_SOFT_P(double, double, f64, 1)

#define SHUFFLE(T, C, NAME, NI, POT, MASKED)                                                                           \
    extern "C" __global__ void __launch_bounds__(128) nbody_shuffle_##NAME##_ni##NI##_p##POT##_m##MASKED(             \
        const TiledArgs<T> a) {                                                                                        \
        shuffled<T, C, NI, POT, MASKED>(a.targets, a.n_targets, a.sources, a.n_sources_padded, a.out, a.eps2, a.g,     \
                                        a.self_t0, a.self_len);                                                        \
    }
#define SHUFFLE_PM(T, C, NAME, NI)                                                                                     \
    SHUFFLE(T, C, NAME, NI, 0, 0) SHUFFLE(T, C, NAME, NI, 0, 1) SHUFFLE(T, C, NAME, NI, 1, 0)                          \
    SHUFFLE(T, C, NAME, NI, 1, 1)
// Must list exactly SHUFFLE_TARGETS_PER_THREAD in lib.rs.
#define SHUFFLE_ALL(T, C, NAME) SHUFFLE_PM(T, C, NAME, 1) SHUFFLE_PM(T, C, NAME, 2) SHUFFLE_PM(T, C, NAME, 4)
SHUFFLE_ALL(float, float, f32)
SHUFFLE_ALL(double, double, f64)
SHUFFLE_ALL(double, float, mixed)

#define JERK_TP(T, C, NAME, TP, NI, POT, MASKED, NEIGH)                                                               \
    extern "C" __global__ void __launch_bounds__(128)                                                                  \
        nbody_jerk_##NAME##_tp##TP##_ni##NI##_p##POT##_m##MASKED##_n##NEIGH(const JerkArgs<T> a) {                     \
        tiled_jerk<T, C, 128, TP, NI, POT, MASKED, NEIGH>(a.targets, a.target_vel, a.n_targets, a.sources,            \
                                                       a.source_vel, a.n_sources, a.n_sources_padded, a.chunk, a.out,  \
                                                       a.jerk, a.eps2, a.g, a.self_t0, a.self_s0, a.self_len, a.x);    \
    }

#define JERK(T, C, NAME, POT, MASKED, NEIGH)                                                                            \
    JERK_TP(T, C, NAME, 1, 1, POT, MASKED, NEIGH)                                                                         \
    JERK_TP(T, C, NAME, 1, 2, POT, MASKED, NEIGH)                                                                         \
    JERK_TP(T, C, NAME, 4, 1, POT, MASKED, NEIGH)                                                                         \
    extern "C" __global__ void nbody_jerk_reduce_##NAME##_p##POT##_m##MASKED##_n##NEIGH(const JerkArgs<T> a) {        \
        jerk_reduce<T, C, POT, MASKED, NEIGH>(a.targets, a.n_targets, a.chunk, a.out, a.jerk, a.eps2, a.g, a.self_t0,     \
                                              a.self_len, a.x);                                                        \
    }

#define BATCH_SOFT(T, C, NAME, POT, MASKED, SOFT)                                                                      \
    extern "C" __global__ void __launch_bounds__(128)                                                                  \
        nbody_batch_##NAME##_p##POT##_m##MASKED##_s##SOFT(const BatchArgs<T> a) {                                      \
        batched<T, C, POT, MASKED, SOFT>(a.particles, a.items, a.spans, a.offset, a.out, a.lengths, a.slots, a.partial, \
                                         a.eps2, a.g);                                                                 \
    }
// The tuned Plummer kernel with and without the mask, and every other kernel's builds.
#define BATCH(T, C, NAME, POT)                                                                                         \
    BATCH_SOFT(T, C, NAME, POT, 0, 0) BATCH_SOFT(T, C, NAME, POT, 1, 0) SOFT_BUILDS(BATCH_SOFT, T, C, NAME, POT)

// No register bound: holding the batched and cell kernels to fewer registers for
// occupancy makes the tree's kernels slower (the item layouts already fill the SMs).
#define CELLS(T, C, NAME, POT)                                                                                         \
    extern "C" __global__ void __launch_bounds__(128) nbody_cells_##NAME##_p##POT(const CellArgs<T> a) {              \
        batched_cells<T, C, POT, false>(a.particles, a.cells, a.items, a.spans, a.offset, a.out, a.slots, a.partial,   \
                                        a.eps2, a.g);                                                                  \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(128) nbody_cells_##NAME##_p##POT##_indexed(const CellArgs<T> a) {    \
        batched_cells<T, C, POT, true>(a.particles, a.cells, a.items, a.spans, a.offset, a.out, a.slots, a.partial,    \
                                       a.eps2, a.g);                                                                   \
    }

#define PER_PRECISION(T, C, NAME)                                                                                       \
    JERK(T, C, NAME, 0, 0, 0) JERK(T, C, NAME, 0, 1, 0) JERK(T, C, NAME, 1, 0, 0) JERK(T, C, NAME, 1, 1, 0)                        \
    JERK(T, C, NAME, 0, 0, 1) JERK(T, C, NAME, 0, 1, 1) JERK(T, C, NAME, 1, 0, 1) JERK(T, C, NAME, 1, 1, 1)                        \
    BATCH(T, C, NAME, 0) BATCH(T, C, NAME, 1)                                                                         \
    CELLS(T, C, NAME, 0) CELLS(T, C, NAME, 1)                                                                         \
    extern "C" __global__ void nbody_batch_reduce_##NAME(const BatchArgs<T> a) { batch_reduce<T>(a); }

PER_PRECISION(float, float, f32)
PER_PRECISION(double, double, f64)
PER_PRECISION(double, float, mixed)

// Removes the self terms a batched launch counted: G m_i w_i(0) for each of target i's
// source spans that holds it (SoftPair's self_weight). One thread per particle.
#define SELF_POTENTIAL_SOFT(T, C, NAME, SOFT)                                                                          \
    extern "C" __global__ void nbody_self_potential_##NAME##_s##SOFT(const BatchArgs<T> a) {                          \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                                                 \
        if (i < a.n && a.self_count[i] != 0)                                                                           \
            a.out[i].w += a.g * T(a.self_count[i]) *                                                                  \
                          (T)((C)a.particles[i].w * SoftPair<SOFT>::template self_weight<T, C>(a, i));                 \
    }
#define SELF_POTENTIAL(T, C, NAME) SELF_POTENTIAL_SOFT(T, C, NAME, 0) SOFT_KINDS(SELF_POTENTIAL_SOFT, T, C, NAME)
SELF_POTENTIAL(float, float, f32)
SELF_POTENTIAL(double, double, f64)
SELF_POTENTIAL(double, float, mixed)
