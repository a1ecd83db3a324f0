// The argument of every exported kernel: one struct passed by value, declared here once
// as a field list (X-macro) and expanded into the struct and into nbody_probe_layouts,
// which writes each struct's size and field offsets for the host to compare.
//
// exec-cuda/src/args.rs declares the same structs in Rust (#[repr(C)]); its unit test
// reads this file and checks every struct field by field (names, order, C types,
// offsets for T = float and double) without a GPU, and the conformance suite compares
// the probe's answer on the GPU. A reordered or retyped field is then a failed test, not
// undefined behaviour.
//
// One field per F(type, name); T is the struct's precision (its template parameter).
// Counts are int (the host refuses counts past 2^31).

#define NBODY_ARGS_FIELD(type, name) type name;

// A batched launch's work item and source span (batch.rs builds them on the host with
// the same layout; see the batched kernel in gravity.cu).
struct Item {
    u32 t0, t1, span_first, span_last;
};
struct Span {
    u32 start, end;
};
// An item that adds its sums atomically (see BATCH_ARGS_FIELDS' slots).
#define NO_SLOT 0xffffffffu
// A far cell (nbody_core::cell::Cell): centre of mass, mass, traceless quadrupole
// (xx, xy, xz, yy, yz, zz), spread (sum of m |s|^2, which the softened kernel feels), a
// lane of padding: 12 lanes, aligned like four.
template <typename T> struct __align__(4 * sizeof(T)) CellRec {
    T x, y, z, m, q[6], spread, pad;
};

// What a jerk launch writes besides out and jerk (see tiled_jerk in gravity.cu).
// Neighbours: per target the nearest source (unsoftened r^2, index; none: r^2 = +inf,
// index 0x7fffffff) and the sources with r^2 <= h2[i], appended through counts[i] (which
// may pass capacity: then only capacity are stored, in no particular order).
// Source-split launches (gridDim.y > 1) write per-chunk partial sums (acc_part,
// jerk_part, near_part) for nbody_jerk_reduce instead of finishing. own: each target's own
// source index (-1: none), where the overlap cannot say it (the GRAPE-6 j-memory's
// scattered addresses); null: the overlap decides.
#define JERK_EXTRA_FIELDS(F)                                                                                           \
    F(typename V4<T>::type *, acc_part)                                                                                \
    F(typename V4<T>::type *, jerk_part)                                                                               \
    F(int *, near_part)                                                                                                \
    F(const T *, h2)                                                                                                   \
    F(u32 *, counts)                                                                                                   \
    F(u32 *, lists)                                                                                                    \
    F(int, capacity)                                                                                                   \
    F(int *, near_index)                                                                                               \
    F(T *, near_r2)                                                                                                    \
    F(const int *, own)                                                                                                \
    F(const T *, ahead)                                                                                                \
    F(int, exclude)                                                                                                    \
    F(const T *, inside)

// nbody_tiled_* and nbody_shuffle_* (shuffle ignores chunk and partial), and
// nbody_tiled_reduce_* (chunk is then the number of chunks). The self pair of target i
// is source self_t0 + i for i < self_len. A source-split launch (gridDim.y > 1) sums
// chunk sources per block row into partial.
#define TILED_ARGS_FIELDS(F)                                                                                           \
    F(const typename V4<T>::type *, targets)                                                                           \
    F(const typename V4<T>::type *, sources)                                                                           \
    F(typename V4<T>::type *, out)                                                                                     \
    F(typename V4<T>::type *, partial)                                                                                 \
    F(const T *, lengths_t)                                                                                            \
    F(const T *, lengths_s)                                                                                            \
    F(float *, estimate)                                                                                               \
    F(int *, redo)                                                                                                     \
    F(T, eps2)                                                                                                         \
    F(T, g)                                                                                                            \
    F(int, n_targets)                                                                                                  \
    F(int, n_sources_padded)                                                                                           \
    F(int, self_t0)                                                                                                    \
    F(int, self_len)                                                                                                   \
    F(int, chunk)

// nbody_jerk_* and nbody_jerk_reduce_* (chunk is then the number of chunks). Target i's
// own source is self_s0 + (i - self_t0) for self_t0 <= i < self_t0 + self_len.
#define JERK_ARGS_FIELDS(F)                                                                                            \
    F(const typename V4<T>::type *, targets)                                                                           \
    F(const typename V4<T>::type *, target_vel)                                                                        \
    F(const typename V4<T>::type *, sources)                                                                           \
    F(const typename V4<T>::type *, source_vel)                                                                        \
    F(typename V4<T>::type *, out)                                                                                     \
    F(typename V4<T>::type *, jerk)                                                                                    \
    F(T, eps2)                                                                                                         \
    F(T, g)                                                                                                            \
    F(int, n_targets)                                                                                                  \
    F(int, n_sources)                                                                                                  \
    F(int, n_sources_padded)                                                                                           \
    F(int, chunk)                                                                                                      \
    F(int, self_t0)                                                                                                    \
    F(int, self_s0)                                                                                                    \
    F(int, self_len)                                                                                                   \
    F(JerkExtra<T>, x)

// nbody_batch_*: items index spans, spans index particles, out has one entry per
// particle. nbody_self_potential_* reads self_count (n entries) instead of the items.
// slots (null: none) gives each item its block of 32 entries of partial, or NO_SLOT: an
// item of a target group cut into several items writes its sums there, and
// nbody_batch_reduce_* (items = runs: t0, t1 and the run's slots [span_first,
// span_last); n = runs) adds them in order, so sums do not depend on the blocks' timing.
#define BATCH_ARGS_FIELDS(F)                                                                                           \
    F(const typename V4<T>::type *, particles)                                                                         \
    F(const Item *, items)                                                                                             \
    F(const Span *, spans)                                                                                             \
    F(const u32 *, offset)                                                                                             \
    F(const u32 *, self_count)                                                                                         \
    F(typename V4<T>::type *, out)                                                                                     \
    F(const T *, lengths)                                                                                              \
    F(const u32 *, slots)                                                                                              \
    F(typename V4<T>::type *, partial)                                                                                 \
    F(T, eps2)                                                                                                         \
    F(T, g)                                                                                                            \
    F(int, n)

// nbody_cells_*: items index spans, spans index cells, out has one entry per particle;
// slots and partial as the batched kernel's.
#define CELL_ARGS_FIELDS(F)                                                                                            \
    F(const typename V4<T>::type *, particles)                                                                         \
    F(const CellRec<T> *, cells)                                                                                       \
    F(const Item *, items)                                                                                             \
    F(const Span *, spans)                                                                                             \
    F(const u32 *, offset)                                                                                             \
    F(typename V4<T>::type *, out)                                                                                     \
    F(const u32 *, slots)                                                                                              \
    F(typename V4<T>::type *, partial)                                                                                 \
    F(T, eps2)                                                                                                         \
    F(T, g)                                                                                                            \
    F(int, n)

// nbody_kick_* (a = velocities, b = accelerations) and nbody_drift_* (a = positions,
// b = velocities): a[i] += b[i] h for i < n.
#define STEP_ARGS_FIELDS(F)                                                                                            \
    F(typename V4<T>::type *, a)                                                                                       \
    F(const typename V4<T>::type *, b)                                                                                 \
    F(T, h)                                                                                                            \
    F(int, n)

// nbody_columns_pack_* (rows and column in, records out: n records from rows of x, y, z
// and the column's masses (null: massless), zero records up to padded; the first bad
// index atomically kept in first_bad[0] (non-finite) and first_bad[1] (negative mass))
// and nbody_columns_unpack_* (records in, rows of ax, ay, az and the column of
// potentials, null: not wanted, out).
#define COLUMNS_ARGS_FIELDS(F)                                                                                         \
    F(typename V4<T>::type *, records)                                                                                 \
    F(T *, rows)                                                                                                       \
    F(T *, column)                                                                                                     \
    F(int *, first_bad)                                                                                                \
    F(int, n)                                                                                                          \
    F(int, padded)

// nbody_project_*: a pixels x pixels grid of doubles, row 0 at the top; h_axis and
// v_axis pick the coordinates; a coordinate's cell is (x - left) scale, (top - y) scale.
#define PROJECT_ARGS_FIELDS(F)                                                                                         \
    F(const typename V4<T>::type *, particles)                                                                         \
    F(double *, grid)                                                                                                  \
    F(double, left)                                                                                                    \
    F(double, top)                                                                                                     \
    F(double, scale)                                                                                                   \
    F(int, n)                                                                                                          \
    F(int, pixels)                                                                                                     \
    F(int, h_axis)                                                                                                     \
    F(int, v_axis)

// nbody_sums_*: n particles' positions, velocities and field records summed into one
// row of twelve doubles per block at partial[12 * block] (nbody_core::resident::system_sums'
// order).
#define SUMS_ARGS_FIELDS(F)                                                                                            \
    F(const typename V4<T>::type *, pos)                                                                               \
    F(const typename V4<T>::type *, vel)                                                                               \
    F(const typename V4<T>::type *, field)                                                                             \
    F(double *, partial)                                                                                               \
    F(int, n)

// nbody_grad_targets_* (k0: field into out, tidal tensor into tidal, six T a target;
// k1: each target's gradient into grad) and nbody_grad_sources_* (each source's position
// and mass gradients into grad): cot holds a cotangent record per target (ax, ay, az on
// the acceleration, w on the potential, read only when potential is set). arg is eps^2
// (Plummer) or the spline's support h (h_inv = 1/h); w0 and g0 the kernel's w(0), g(0).
// Target i's own source is self_s0 + (i - self_t0) for self_t0 <= i < self_t0 + self_len.
// nbody_grad_fused_* (a system on itself: targets = sources, n_targets of them): the
// targets' gradients into grad, the sources' into out; with gridDim.y > 1 rows of chunk
// sources each, eight doubles a particle a row into partial instead, which
// nbody_grad_fused_reduce_* (chunk: the number of rows) adds and finishes.
// nbody_grad_pairs_* (a system on itself, each pair once; targets and cot as above, n_targets
// particles in `tiles` tiles): the band of tile diagonals [band0, band0 + band) into two
// slot rows a diagonal; nbody_grad_pairs_reduce_* adds them into four doubles a particle
// in partial, and with finish set adds each whole gradient into grad.
#define GRAD_ARGS_FIELDS(F)                                                                                            \
    F(const typename V4<T>::type *, targets)                                                                           \
    F(const typename V4<T>::type *, sources)                                                                           \
    F(const typename V4<T>::type *, cot)                                                                               \
    F(typename V4<T>::type *, out)                                                                                     \
    F(T *, tidal)                                                                                                      \
    F(typename V4<T>::type *, grad)                                                                                    \
    F(T, arg)                                                                                                          \
    F(T, h_inv)                                                                                                        \
    F(T, w0)                                                                                                           \
    F(T, g0)                                                                                                           \
    F(T, g)                                                                                                            \
    F(int, n_targets)                                                                                                  \
    F(int, n_sources)                                                                                                  \
    F(int, self_t0)                                                                                                    \
    F(int, self_s0)                                                                                                    \
    F(int, self_len)                                                                                                   \
    F(int, potential)                                                                                                  \
    F(double *, partial)                                                                                               \
    F(int, chunk)                                                                                                      \
    F(typename V4<T>::type *, slots)                                                                                   \
    F(int, tiles)                                                                                                      \
    F(int, band0)                                                                                                      \
    F(int, band)                                                                                                       \
    F(int, finish)

// The Hermite kernels (nbody_hermite_{predict,gather,correct}_*): the state (pos, vel,
// acc, jerk, each particle's time tj), its prediction (ppos, pvel), the active
// particles idx[0..na) gathered as targets (tpos, tvel) with their outputs (field,
// jerk_out), and the corrector's step wishes (want). predict reads n and t; correct
// reads t, start, block, eta, dt_max and dt_min.
#define HERMITE_ARGS_FIELDS(F)                                                                                         \
    F(typename V4<T>::type *, pos)                                                                                     \
    F(typename V4<T>::type *, vel)                                                                                     \
    F(typename V4<T>::type *, acc)                                                                                     \
    F(typename V4<T>::type *, jerk)                                                                                    \
    F(double *, tj)                                                                                                    \
    F(typename V4<T>::type *, ppos)                                                                                    \
    F(typename V4<T>::type *, pvel)                                                                                    \
    F(const u32 *, idx)                                                                                                \
    F(typename V4<T>::type *, tpos)                                                                                    \
    F(typename V4<T>::type *, tvel)                                                                                    \
    F(typename V4<T>::type *, field)                                                                                   \
    F(typename V4<T>::type *, jerk_out)                                                                                \
    F(double *, want)                                                                                                  \
    F(double, t)                                                                                                       \
    F(double, eta)                                                                                                     \
    F(double, dt_max)                                                                                                  \
    F(double, dt_min)                                                                                                  \
    F(int, n)                                                                                                          \
    F(int, na)                                                                                                         \
    F(int, start)                                                                                                      \
    F(int, block)

// The GRAPE-6 j-memory kernels (double only). nbody_jmem_scatter: k records of five
// double4 (x y z m, v, a, jerk, t) at rec written to address[i] of pos, vel, acc, jerk
// and tj. nbody_jmem_place: the k i-particles with own[i] >= 0 put at pos/vel[own[i]]
// (the predicted j-particles) from tpos/tvel; field and jerk_out zeroed.
#define JMEM_ARGS_FIELDS(F)                                                                                            \
    F(const u32 *, address)                                                                                            \
    F(const double4 *, rec)                                                                                            \
    F(const int *, own)                                                                                                \
    F(const double4 *, tpos)                                                                                           \
    F(const double4 *, tvel)                                                                                           \
    F(double4 *, pos)                                                                                                  \
    F(double4 *, vel)                                                                                                  \
    F(double4 *, acc)                                                                                                  \
    F(double4 *, jerk)                                                                                                 \
    F(double *, tj)                                                                                                    \
    F(double4 *, field)                                                                                                \
    F(double4 *, jerk_out)                                                                                             \
    F(int, k)

// nbody_compact_lists: the neighbour lists a jerk launch appended (counts[i] entries,
// at most capacity of them stored at lists[i * capacity]) packed end to end, with what
// the host reads per target in one copy: meta[3 i] = counts[i], meta[3 i + 1] = where its
// stored entries begin in compact (segments taken with an atomic add on meta[3 n], so in
// no particular order), meta[3 i + 2] = its nearest source (near_index[i], or
// 0x7fffffff when near_index is null or it has none).
#define LISTS_ARGS_FIELDS(F)                                                                                           \
    F(const u32 *, counts)                                                                                             \
    F(const u32 *, lists)                                                                                              \
    F(const int *, near_index)                                                                                         \
    F(u32 *, meta)                                                                                                     \
    F(u32 *, compact)                                                                                                  \
    F(int, capacity)                                                                                                   \
    F(int, n)

// The device tree's kernels (tree.cuh; src/tree.rs drives them). A node is a range of
// the Morton-sorted particles with its children (a range of the node array; none for a
// leaf). Per node besides: its parent, its moments in f64 (centre of mass, mass,
// traceless quadrupole xx xy xz yy yz zz, b_max: 11 of a stride of 12), its cell record
// for the cell kernel and its opening record (centre of mass, (size / theta)^2). The
// counters are TREE_COUNTERS u32: see tree.cuh. span_at and item_at are exclusive scans
// of counts and item_counts (two u32 packed in each u64: particle spans | cells << 32,
// particle items | cell items << 32). locals holds each group's local expansion
// record (LOCAL_RECORD entries, local.cuh: centre, far cells), local_theta its far test (0: none).
// Super-groups (nodes of at most super_size particles whose parent holds more; 0: none):
// supers lists their nodes, node_super a super-group's index at its node, group_super
// each group's super-group (TREE_NO_SUPER: none), super_rec their records (SUPER_RECORD),
// super_front their frontiers (front_cap entries each).
struct TreeNode {
    u32 start, end, child, children;
};
#define TREE_ARGS_FIELDS(F)                                                                                            \
    F(const typename V4<T>::type *, particles)                                                                         \
    F(typename V4<T>::type *, sorted)                                                                                  \
    F(typename V4<T>::type *, sorted_out)                                                                              \
    F(typename V4<T>::type *, out)                                                                                     \
    F(unsigned long long *, keys)                                                                                      \
    F(u32 *, index)                                                                                                    \
    F(unsigned long long *, bounds)                                                                                    \
    F(u32 *, counters)                                                                                                 \
    F(unsigned long long *, tally)                                                                                     \
    F(TreeNode *, nodes)                                                                                               \
    F(u32 *, parent)                                                                                                   \
    F(u32 *, arrivals)                                                                                                 \
    F(double *, moments)                                                                                               \
    F(CellRec<T> *, cells)                                                                                             \
    F(typename V4<T>::type *, opening)                                                                                 \
    F(Span *, groups)                                                                                                  \
    F(unsigned long long *, counts)                                                                                    \
    F(unsigned long long *, item_counts)                                                                               \
    F(const unsigned long long *, span_at)                                                                             \
    F(const unsigned long long *, item_at)                                                                             \
    F(Item *, items)                                                                                                   \
    F(Span *, spans)                                                                                                   \
    F(u32 *, offset)                                                                                                   \
    F(Item *, cell_items)                                                                                              \
    F(u32 *, cell_index)                                                                                               \
    F(u32 *, stack)                                                                                                    \
    F(const typename V4<T>::type *, previous)                                                                          \
    F(u32 *, scratch)                                                                                                  \
    F(T *, locals)                                                                                                     \
    F(u32 *, node_super)                                                                                               \
    F(u32 *, group_super)                                                                                              \
    F(u32 *, supers)                                                                                                   \
    F(T *, super_rec)                                                                                                  \
    F(u32 *, super_front)                                                                                              \
    F(u32 *, slots)                                                                                                    \
    F(u32 *, cell_slots)                                                                                               \
    F(Item *, runs)                                                                                                    \
    F(Item *, cell_runs)                                                                                               \
    F(T, theta)                                                                                                        \
    F(T, alpha)                                                                                                        \
    F(T, g)                                                                                                            \
    F(T, eps2)                                                                                                         \
    F(T, local_theta)                                                                                                  \
    F(int, n)                                                                                                          \
    F(int, capacity)                                                                                                   \
    F(int, leaf_size)                                                                                                  \
    F(int, group_size)                                                                                                 \
    F(int, level)                                                                                                      \
    F(int, opening_side)                                                                                               \
    F(int, quadrupole)                                                                                                 \
    F(int, relative)                                                                                                   \
    F(int, potential)                                                                                                  \
    F(int, scratch_cells)                                                                                              \
    F(int, scratch_spans)                                                                                              \
    F(int, cap_spans)                                                                                                  \
    F(int, cap_cells)                                                                                                  \
    F(int, cap_items)                                                                                                  \
    F(int, cap_cell_items)                                                                                             \
    F(int, super_size)                                                                                                 \
    F(int, front_cap)                                                                                                  \
    F(int, cap_slots)                                                                                                  \
    F(int, cap_runs)                                                                                                   \
    F(int, cap_cell_runs)                                                                                              \
    F(int, split_sources)                                                                                              \
    F(int, split_cells)                                                                                                \
    F(int, self_term)

template <typename T> struct JerkExtra { JERK_EXTRA_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct TiledArgs { TILED_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct JerkArgs { JERK_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct BatchArgs { BATCH_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct CellArgs { CELL_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct StepArgs { STEP_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct ColumnsArgs { COLUMNS_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct ProjectArgs { PROJECT_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct SumsArgs { SUMS_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct HermiteArgs { HERMITE_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct TreeArgs { TREE_ARGS_FIELDS(NBODY_ARGS_FIELD) };
template <typename T> struct GradArgs { GRAD_ARGS_FIELDS(NBODY_ARGS_FIELD) };
struct JmemArgs {
    JMEM_ARGS_FIELDS(NBODY_ARGS_FIELD)
};
struct ListsArgs {
    LISTS_ARGS_FIELDS(NBODY_ARGS_FIELD)
};

// The structs in the order nbody_probe_layouts writes them (args.rs's PROBED lists the
// same): for each, its size, its field count, then every field's offset.
#define NBODY_PROBED(P)                                                                                                \
    P(JerkExtra<float>, JERK_EXTRA_FIELDS)                                                                             \
    P(JerkExtra<double>, JERK_EXTRA_FIELDS)                                                                            \
    P(TiledArgs<float>, TILED_ARGS_FIELDS)                                                                             \
    P(TiledArgs<double>, TILED_ARGS_FIELDS)                                                                            \
    P(JerkArgs<float>, JERK_ARGS_FIELDS)                                                                               \
    P(JerkArgs<double>, JERK_ARGS_FIELDS)                                                                              \
    P(BatchArgs<float>, BATCH_ARGS_FIELDS)                                                                             \
    P(BatchArgs<double>, BATCH_ARGS_FIELDS)                                                                            \
    P(CellArgs<float>, CELL_ARGS_FIELDS)                                                                               \
    P(CellArgs<double>, CELL_ARGS_FIELDS)                                                                              \
    P(StepArgs<float>, STEP_ARGS_FIELDS)                                                                               \
    P(StepArgs<double>, STEP_ARGS_FIELDS)                                                                              \
    P(ColumnsArgs<float>, COLUMNS_ARGS_FIELDS)                                                                         \
    P(ColumnsArgs<double>, COLUMNS_ARGS_FIELDS)                                                                        \
    P(ProjectArgs<float>, PROJECT_ARGS_FIELDS)                                                                         \
    P(ProjectArgs<double>, PROJECT_ARGS_FIELDS)                                                                        \
    P(SumsArgs<float>, SUMS_ARGS_FIELDS)                                                                               \
    P(SumsArgs<double>, SUMS_ARGS_FIELDS)                                                                              \
    P(HermiteArgs<float>, HERMITE_ARGS_FIELDS)                                                                         \
    P(HermiteArgs<double>, HERMITE_ARGS_FIELDS)                                                                        \
    P(JmemArgs, JMEM_ARGS_FIELDS)                                                                                      \
    P(ListsArgs, LISTS_ARGS_FIELDS)                                                                                    \
    P(TreeArgs<float>, TREE_ARGS_FIELDS)                                                                               \
    P(TreeArgs<double>, TREE_ARGS_FIELDS)                                                                              \
    P(GradArgs<float>, GRAD_ARGS_FIELDS)                                                                               \
    P(GradArgs<double>, GRAD_ARGS_FIELDS)
