// The device tree (src/tree.rs drives these kernels; TreeArgs in args.h): Morton keys over
// the particles' bounding box, CUB's radix sort (sort.cu), the octree built level by
// level over the sorted keys, its moments summed bottom-up, target groups, and a walk per
// group that writes the group's interaction list (particle spans of opened leaves, runs
// of accepted cells) in the batched kernels' item form, and lists the far cells for the
// group's local expansion. Nothing goes back to the host but
// a few counters that size the next launches.

// counters[TREE_*]: nodes taken (may pass capacity: then TREE_OVERFLOW is set and the
// host builds again with more room), target groups, a walk stack overflow, the list
// totals, then the node range of every level (level L holds [lvl[L], lvl[L + 1])), and
// last a one-pass walk whose lists did not fit (TREE_LIST_OVERFLOW: the host walks
// again in two passes).
#define TREE_NODES 0
#define TREE_OVERFLOW 1
#define TREE_GROUPS 2
#define TREE_STACK_OVERFLOW 3
#define TREE_SPANS 4
#define TREE_CELLS 5
#define TREE_ITEMS 6
#define TREE_CELL_ITEMS 7
#define TREE_LEVELS 8
#define TREE_LIST_OVERFLOW 31
// The longest group lists of a walk (spans, cells): a one-pass walk's scratch is sized
// from them.
#define TREE_MOST_SPANS 32
#define TREE_MOST_CELLS 33
// The next group a walking warp takes, one counter per walk mode (TREE_NEXT_GROUP +
// MODE), so the two passes of a two-pass walk each start from zero.
#define TREE_NEXT_GROUP 34
// Super-groups found, and the next one a super-group walk's warp takes.
#define TREE_SUPERS 37
#define TREE_NEXT_SUPER 38
// A one-pass walk's cut lists (see tree_walk): blocks of partial sums taken, the particle
// and cell kernels' runs that add them; then the most sources of one group's particle list.
#define TREE_SLOTS 39
#define TREE_RUNS 40
#define TREE_CELL_RUNS 41
#define TREE_MOST_SOURCES 42
// The most pieces one list is cut into (a list past TREE_MAX_PIECES times the cut length
// makes longer pieces).
#define TREE_MAX_PIECES 16
// Blocks done splitting each level (the last one closes the level below: tree_split).
#define TREE_SPLIT_DONE 43
// A group without a super-group.
#define TREE_NO_SUPER 0xffffffffu
// A super-group's walk hands down to its groups at most front_cap nodes (its frontier:
// the nodes it neither took nor went below); past that its groups walk from the root,
// leaving out what it took by the same tests (TREE_IN_SUPER), and its record says so.
#define TREE_NO_FRONT 0xffffffffu
// A stack entry's flag: every node above it was one the group's super-group opened
// (super_open) and did not take (super_far), so the super-group walk met this one too.
#define TREE_IN_SUPER 0x80000000u
// Morton keys of 21 bits per axis: levels 0 (the root) to 21.
#define TREE_DEPTH 21
// Stack entries per walking warp (src/tree.rs's WARP_STACK).
#define TREE_WARP_STACK 4096
// A node's f64 moments: centre of mass, mass, quadrupole (6), b_max, spread.
#define TREE_MOMENTS 12
// The walk's 64-bit tallies: particle-particle and particle-cell interactions, spans,
// cells, cells translated into groups' expansions and into super-groups'.
#define TREE_TALLIES 6
// Warps of a walking block (src/tree.rs launches 128 threads).
#define TREE_WALK_WARPS 4

// Doubles as unsigned integers in the same order, for atomicMin/atomicMax.
__device__ __forceinline__ unsigned long long ordered(double x) {
    const unsigned long long b = (unsigned long long)__double_as_longlong(x);
    return (b >> 63) ? ~b : b | 0x8000000000000000ULL;
}
__device__ __forceinline__ double unordered(unsigned long long k) {
    return __longlong_as_double((long long)((k >> 63) ? k & 0x7fffffffffffffffULL : ~k));
}

// The root cube: its low corner and side (the largest extent, widened by 1e-12 so the
// farthest particle quantises below 2^21; at least the smallest normal double).
__device__ __forceinline__ double root_frame(const unsigned long long *bounds, double lo[3]) {
    double side = 0;
    for (int k = 0; k < 3; ++k) {
        lo[k] = unordered(bounds[k]);
        side = fmax(side, unordered(bounds[3 + k]) - lo[k]);
    }
    return fmax(side, 2.2250738585072014e-308) * (1.0 + 1e-12);
}

// The 21 low bits of x spread to every third bit.
__device__ __forceinline__ unsigned long long spread3(unsigned long long x) {
    x &= 0x1fffffULL;
    x = (x | x << 32) & 0x1f00000000ffffULL;
    x = (x | x << 16) & 0x1f0000ff0000ffULL;
    x = (x | x << 8) & 0x100f00f00f00f00fULL;
    x = (x | x << 4) & 0x10c30c30c30c30c3ULL;
    x = (x | x << 2) & 0x1249249249249249ULL;
    return x;
}

template <typename T> __device__ __forceinline__ double warp_min(double x) {
    for (int o = 16; o > 0; o /= 2) x = fmin(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}
template <typename T> __device__ __forceinline__ double warp_max(double x) {
    for (int o = 16; o > 0; o /= 2) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

// Resets the counters, the bounds and the root node (one thread).
template <typename T> __device__ void tree_reset(const TreeArgs<T> &a) {
    for (int k = 0; k < TREE_LEVELS + TREE_DEPTH + 2; ++k) a.counters[k] = 0;
    a.counters[TREE_NODES] = 1;
    a.counters[TREE_LEVELS + 1] = 1;
    a.counters[TREE_LIST_OVERFLOW] = 0;
    a.counters[TREE_MOST_SPANS] = 0;
    a.counters[TREE_MOST_CELLS] = 0;
    for (int k = 0; k < 3; ++k) a.counters[TREE_NEXT_GROUP + k] = 0;
    a.counters[TREE_SUPERS] = 0;
    a.counters[TREE_NEXT_SUPER] = 0;
    for (int k = TREE_SLOTS; k <= TREE_MOST_SOURCES; ++k) a.counters[k] = 0;
    for (int k = 0; k < TREE_DEPTH; ++k) a.counters[TREE_SPLIT_DONE + k] = 0;
    for (int k = 0; k < 3; ++k) {
        a.bounds[k] = ~0ULL;
        a.bounds[3 + k] = 0ULL;
    }
    for (int k = 0; k < TREE_TALLIES; ++k) a.tally[k] = 0;
    TreeNode root = {0u, (u32)a.n, 0u, 0u};
    a.nodes[0] = root;
    a.parent[0] = 0xffffffffu;
    a.arrivals[0] = 0;
}

// The particles' bounding box: per-thread extremes, reduced per warp, then per block, one
// atomic per block and bound (one per warp made thousands of atomics on six addresses
// queue up: 0.18 ms at 2^20 on an H200).
template <typename T> __device__ void tree_bounds(const TreeArgs<T> &a) {
    __shared__ double block_lo[3][32], block_hi[3][32];
    // Each thread's extremes in T (exact, and the same once widened), then in f64.
    T tlo[3] = {(T)INFINITY, (T)INFINITY, (T)INFINITY}, thi[3] = {-(T)INFINITY, -(T)INFINITY, -(T)INFINITY};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        const typename V4<T>::type p = a.particles[i];
        const T x[3] = {p.x, p.y, p.z};
        for (int k = 0; k < 3; ++k) {
            tlo[k] = min(tlo[k], x[k]);
            thi[k] = max(thi[k], x[k]);
        }
    }
    double lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        lo[k] = (double)tlo[k];
        hi[k] = (double)thi[k];
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
    for (int k = 0; k < 3; ++k) {
        lo[k] = warp_min<T>(lo[k]);
        hi[k] = warp_max<T>(hi[k]);
        if (lane == 0) {
            block_lo[k][warp] = lo[k];
            block_hi[k][warp] = hi[k];
        }
    }
    __syncthreads();
    if (warp != 0) return;
    for (int k = 0; k < 3; ++k) {
        lo[k] = warp_min<T>(lane < warps ? block_lo[k][lane] : INFINITY);
        hi[k] = warp_max<T>(lane < warps ? block_hi[k][lane] : -INFINITY);
    }
    if (lane == 0 && lo[0] <= hi[0]) {
        for (int k = 0; k < 3; ++k) {
            atomicMin(&a.bounds[k], ordered(lo[k]));
            atomicMax(&a.bounds[3 + k], ordered(hi[k]));
        }
    }
}

// Each particle's Morton key in the root cube, and its index (what the sort carries).
template <typename T> __device__ void tree_keys(const TreeArgs<T> &a) {
    double lo[3];
    const double scale = 2097151.0 / root_frame(a.bounds, lo);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        const typename V4<T>::type p = a.particles[i];
        const double x[3] = {(double)p.x, (double)p.y, (double)p.z};
        unsigned long long key = 0;
        for (int k = 0; k < 3; ++k) {
            const double c = fmin(fmax((x[k] - lo[k]) * scale, 0.0), 2097151.0);
            key |= spread3((unsigned long long)c) << (2 - k);
        }
        a.keys[i] = key;
        a.index[i] = (u32)i;
    }
}

// The particles in key order (index: the sorted indices).
template <typename T> __device__ void tree_gather(const TreeArgs<T> &a) {
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < a.n; k += gridDim.x * blockDim.x)
        a.sorted[k] = a.particles[a.index[k]];
}

// tree_split's work on the nodes of `level`, over the first `blocks` blocks.
template <typename T> __device__ __forceinline__ void split_level(const TreeArgs<T> &a, u32 blocks) {
    const u32 *lvl = a.counters + TREE_LEVELS;
    const u32 begin = lvl[a.level], end = lvl[a.level + 1];
    const int shift = 3 * (TREE_DEPTH - 1 - a.level);
    const u32 o = threadIdx.x & 7, seg = threadIdx.x & 24;
    const unsigned mask = 0xffu << seg;
    const u32 first = (blockIdx.x * blockDim.x + threadIdx.x) >> 3, stride = (blocks * blockDim.x) >> 3;
    for (u32 c = begin + first; c < end; c += stride) {
        const TreeNode node = a.nodes[c];
        if (a.level >= TREE_DEPTH || node.end - node.start <= (u32)a.leaf_size) continue;
        // The first particle of the node whose octant digit is at least o.
        u32 l = node.start, h = node.end;
        if (o > 0) {
            while (l < h) {
                const u32 m = (l + h) / 2;
                if ((u32)((a.keys[m] >> shift) & 7) < o) l = m + 1; else h = m;
            }
        }
        u32 next = __shfl_down_sync(mask, l, 1, 8);
        if (o == 7) next = node.end;
        const bool filled = next > l;
        const u32 octants = (__ballot_sync(mask, filled) >> seg) & 0xffu, k = __popc(octants);
        u32 base = 0;
        if (o == 0) base = atomicAdd(&a.counters[TREE_NODES], k);
        base = __shfl_sync(mask, base, 0, 8);
        if (base + k > (u32)a.capacity) {
            if (o == 0) a.counters[TREE_OVERFLOW] = 1;
            continue;
        }
        if (filled) {
            const u32 w = base + __popc(octants & ((1u << o) - 1u));
            const TreeNode child = {l, next, 0u, 0u};
            a.nodes[w] = child;
            a.parent[w] = c;
            a.arrivals[w] = 0;
        }
        if (o == 0) {
            a.nodes[c].child = base;
            a.nodes[c].children = k;
        }
    }
}

// Splits every node of `level` holding more than leaf_size particles into its non-empty
// octants (keys: the sorted keys), appended to the node array; children of one node are
// contiguous and in octant order, so a walk meets them in the same order whatever order
// the nodes were appended in. Eight threads a node (aligned in the warp), each searching
// one octant's first particle: the top levels' few nodes would otherwise wait on seven
// binary searches in a row over the whole key array. Only the blocks the level's nodes
// need take part (the host's grid fills the GPU for a level of unknown size; the top
// levels hold a few nodes and the deep ones often none, and a thousand blocks arriving
// on one counter cost microseconds a launch). The last of them to finish closes level
// + 1: its nodes are those appended meanwhile.
template <typename T> __device__ void tree_split(const TreeArgs<T> &a) {
    const u32 *lvl = a.counters + TREE_LEVELS;
    const u32 on_level = lvl[a.level + 1] - lvl[a.level];
    const u32 blocks = min((u32)gridDim.x, (on_level * 8 + blockDim.x - 1) / blockDim.x);
    if (blockIdx.x >= blocks) {
        // An empty level appends nothing: the level below is empty too, and starts where it ends.
        if (blocks == 0 && blockIdx.x == 0 && threadIdx.x == 0) a.counters[TREE_LEVELS + a.level + 2] = lvl[a.level + 1];
        return;
    }
    // Once a level has run out of room, some of the nodes below capacity were never
    // written (a split whose children did not all fit writes none): the host builds again
    // with more room, and nothing may read those nodes meanwhile. In a fresh node array
    // they hold whatever the allocation held before, and their spans index anywhere.
    if (!a.counters[TREE_OVERFLOW]) split_level(a, blocks);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence(); // this block's nodes and count, before its arrival
        const u32 done = atomicAdd(&a.counters[TREE_SPLIT_DONE + a.level], 1u);
        if (done == blocks - 1) {
            __threadfence();
            const u32 nodes = atomicAdd(&a.counters[TREE_NODES], 0u);
            a.counters[TREE_LEVELS + a.level + 2] = min(nodes, (u32)a.capacity);
        }
    }
}

// Adds m (3 s_a s_b - |s|^2 delta_ab) into q (xx xy xz yy yz zz) and m |s|^2 into the
// spread q[6]: a point mass at offset s.
__device__ __forceinline__ void add_quadrupole(double q[7], double m, const double s[3]) {
    const double s2 = s[0] * s[0] + s[1] * s[1] + s[2] * s[2];
    q[6] += m * s2;
    q[0] += m * (3 * s[0] * s[0] - s2);
    q[1] += m * (3 * s[0] * s[1]);
    q[2] += m * (3 * s[0] * s[2]);
    q[3] += m * (3 * s[1] * s[1] - s2);
    q[4] += m * (3 * s[1] * s[2]);
    q[5] += m * (3 * s[2] * s[2] - s2);
}

// Node c's moments (its children's are done; `side`: its level's side): mass, centre of mass,
// traceless quadrupole, spread and b_max in f64, from a leaf's particles or by the parallel-axis
// rule from the children, as the host tree sums them; then the node's cell record and
// opening record (size: 2 b_max, or the node's side; opened when the distance from its
// centre of mass to a group's box is at most size / theta).
template <typename T>
__device__ __forceinline__ void node_moments(const TreeArgs<T> &a, u32 c, const TreeNode &node, double side) {
    double m = 0, s[3] = {0, 0, 0}, plain[3] = {0, 0, 0};
    u32 parts = 0;
    if (node.children == 0) {
        // Unrolled, so a thread has several particles' loads in flight.
#pragma unroll 4
        for (u32 k = node.start; k < node.end; ++k) {
            const typename V4<T>::type p = a.sorted[k];
            const double x[3] = {(double)p.x, (double)p.y, (double)p.z}, w = (double)p.w;
            m += w;
            for (int d = 0; d < 3; ++d) {
                s[d] += w * x[d];
                plain[d] += x[d];
            }
        }
        parts = node.end - node.start;
    } else {
        for (u32 ch = node.child; ch < node.child + node.children; ++ch) {
            const double *cm = a.moments + (size_t)ch * TREE_MOMENTS;
            const double cm3 = __ldcg(cm + 3);
            m += cm3;
            for (int d = 0; d < 3; ++d) {
                const double x = __ldcg(cm + d);
                s[d] += cm3 * x;
                plain[d] += x;
            }
        }
        parts = node.children;
    }
    // A massless node sits at the mean of its parts.
    double com[3];
    for (int d = 0; d < 3; ++d) com[d] = m > 0 ? s[d] / m : plain[d] / (double)parts;
    double q[7] = {0, 0, 0, 0, 0, 0, 0}, bmax = 0;
    if (node.children == 0) {
        // Unrolled, so a thread has several particles' loads in flight.
#pragma unroll 4
        for (u32 k = node.start; k < node.end; ++k) {
            const typename V4<T>::type p = a.sorted[k];
            const double off[3] = {(double)p.x - com[0], (double)p.y - com[1], (double)p.z - com[2]};
            add_quadrupole(q, (double)p.w, off);
            // The farthest squared distance, one root after (the same b_max).
            bmax = fmax(bmax, off[0] * off[0] + off[1] * off[1] + off[2] * off[2]);
        }
        bmax = sqrt(bmax);
    } else {
        for (u32 ch = node.child; ch < node.child + node.children; ++ch) {
            const double *cm = a.moments + (size_t)ch * TREE_MOMENTS;
            double v[TREE_MOMENTS];
            for (int k = 0; k < TREE_MOMENTS; ++k) v[k] = __ldcg(cm + k);
            const double off[3] = {v[0] - com[0], v[1] - com[1], v[2] - com[2]};
            add_quadrupole(q, v[3], off);
            for (int k = 0; k < 6; ++k) q[k] += v[4 + k];
            q[6] += v[11];
            bmax = fmax(bmax, sqrt(off[0] * off[0] + off[1] * off[1] + off[2] * off[2]) + v[10]);
        }
    }
    double *out = a.moments + (size_t)c * TREE_MOMENTS;
    for (int d = 0; d < 3; ++d) out[d] = com[d];
    out[3] = m;
    for (int k = 0; k < 6; ++k) out[4 + k] = q[k];
    out[10] = bmax;
    out[11] = q[6];
    CellRec<T> rec;
    rec.x = (T)com[0];
    rec.y = (T)com[1];
    rec.z = (T)com[2];
    rec.m = (T)m;
    for (int k = 0; k < 6; ++k) rec.q[k] = a.quadrupole ? (T)q[k] : T(0);
    rec.spread = a.quadrupole ? (T)q[6] : T(0);
    rec.pad = 0;
    a.cells[c] = rec;
    // The relative test keeps the size itself (its safeguard: opened within it).
    const double size = a.opening_side ? side : 2 * bmax, reach = a.relative ? size : size / (double)a.theta;
    typename V4<T>::type o;
    o.x = (T)com[0];
    o.y = (T)com[1];
    o.z = (T)com[2];
    o.w = (T)(reach * reach);
    a.opening[c] = o;
}

// Every node's moments in one launch: a thread per leaf, and then up the tree, the last
// of a node's children to finish takes the node (arrivals counts them; its children's
// moments are then all written, and read past L1), so no level waits for a launch of
// its own and the top levels' few nodes cost no launches. A node's sums read its
// children in order, whichever thread takes it: the same bits every time.
template <typename T> __device__ void tree_moments(const TreeArgs<T> &a) {
    const u32 *lvl = a.counters + TREE_LEVELS;
    double lo[3];
    const double root = root_frame(a.bounds, lo);
    const u32 end = min(a.counters[TREE_NODES], (u32)a.capacity);
    for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < end; c += gridDim.x * blockDim.x) {
        TreeNode node = a.nodes[c];
        if (node.children != 0) continue;
        // The last level whose range starts at or before c.
        int level = 0;
        while (level < TREE_DEPTH && lvl[level + 1] <= c) ++level;
        node_moments(a, c, node, ldexp(root, -level));
        for (u32 at = c; level > 0; --level) {
            __threadfence(); // this node's moments, before its arrival
            const u32 up = a.parent[at];
            node = a.nodes[up];
            if (atomicAdd(&a.arrivals[up], 1u) != node.children - 1) break;
            __threadfence(); // the siblings' arrivals, before their moments are read
            node_moments(a, up, node, ldexp(root, -(level - 1)));
            at = up;
        }
    }
}

// Target groups: runs of consecutive children of one node, packed in order while they
// hold at most group_size particles together, for every node of more than group_size
// with children (a child of more is a node of its own, or a group alone when it is a
// leaf); the root alone when it holds at most group_size or is a leaf. Siblings are
// close in space, and packing them fills the batched kernel's items of 32 targets, which
// the octree's own nodes of at most group_size (often an eighth of it) would not.
// Each group also gets its super-group (tree_supers): the highest node above it of at most
// super_size particles, when there is one.
template <typename T> __device__ void tree_groups(const TreeArgs<T> &a) {
    const u32 nodes = min(a.counters[TREE_NODES], (u32)a.capacity), most = (u32)a.group_size;
    const bool supers = a.super_size > a.group_size;
    const auto emit = [&](Span run, u32 sup) {
        const u32 at = atomicAdd(&a.counters[TREE_GROUPS], 1u);
        a.groups[at] = run;
        a.group_super[at] = sup;
    };
    for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < nodes; c += gridDim.x * blockDim.x) {
        const TreeNode node = a.nodes[c];
        if (c == 0 && (node.end - node.start <= most || node.children == 0)) {
            const Span g = {node.start, node.end};
            emit(g, TREE_NO_SUPER);
        }
        if (node.end - node.start <= most || node.children == 0) continue;
        u32 sup = TREE_NO_SUPER;
        if (supers && node.end - node.start <= (u32)a.super_size) {
            u32 x = c;
            while (x != 0) {
                const TreeNode up = a.nodes[a.parent[x]];
                if (up.end - up.start > (u32)a.super_size) break;
                x = a.parent[x];
            }
            sup = a.node_super[x];
        }
        Span run = {0u, 0u};
        for (u32 ch = node.child; ch < node.child + node.children; ++ch) {
            const TreeNode k = a.nodes[ch];
            const u32 len = k.end - k.start;
            if (len > most && k.children != 0) continue;
            if (run.end > run.start && (run.end != k.start || run.end - run.start + len > most)) {
                emit(run, sup);
                run.start = run.end = 0u;
            }
            if (run.end == run.start) run.start = k.start;
            run.end = k.end;
        }
        if (run.end > run.start) emit(run, sup);
    }
}

// Super-groups: every node of more than group_size and at most super_size particles, with
// children, whose parent holds more than super_size (so they are disjoint and each holds
// whole groups); each gets an index (supers: its node; node_super: the index at the node).
// A super-group walk (tree_super_walk) takes the cells far from its whole box into one
// expansion, and its groups' walks leave those out.
template <typename T> __device__ void tree_supers(const TreeArgs<T> &a) {
    if (a.super_size <= a.group_size || a.counters[TREE_OVERFLOW]) return;
    const u32 nodes = min(a.counters[TREE_NODES], (u32)a.capacity), most = (u32)a.super_size;
    for (u32 c = blockIdx.x * blockDim.x + threadIdx.x; c < nodes; c += gridDim.x * blockDim.x) {
        const TreeNode node = a.nodes[c];
        const u32 len = node.end - node.start;
        if (len > most || len <= (u32)a.group_size || node.children == 0) continue;
        if (c != 0) {
            const TreeNode up = a.nodes[a.parent[c]];
            if (up.end - up.start <= most) continue;
        }
        const u32 s = atomicAdd(&a.counters[TREE_SUPERS], 1u);
        a.supers[s] = c;
        a.node_super[c] = s;
    }
}

// Arithmetic rounded as written, never contracted into an fma: the super-group walk and its
// groups' walks (other kernels) must decide each node the same way, bit for bit.
__device__ __forceinline__ float rn_add(float x, float y) { return __fadd_rn(x, y); }
__device__ __forceinline__ double rn_add(double x, double y) { return __dadd_rn(x, y); }
__device__ __forceinline__ float rn_sub(float x, float y) { return __fsub_rn(x, y); }
__device__ __forceinline__ double rn_sub(double x, double y) { return __dsub_rn(x, y); }
__device__ __forceinline__ float rn_mul(float x, float y) { return __fmul_rn(x, y); }
__device__ __forceinline__ double rn_mul(double x, double y) { return __dmul_rn(x, y); }
__device__ __forceinline__ float rn_div(float x, float y) { return __fdiv_rn(x, y); }
__device__ __forceinline__ double rn_div(double x, double y) { return __ddiv_rn(x, y); }
__device__ __forceinline__ float rn_sqrt(float x) { return __fsqrt_rn(x); }
__device__ __forceinline__ double rn_sqrt(double x) { return __dsqrt_rn(x); }

// What a super-group's walk and its groups' walks test a node against: the super-group's
// box, centre, squared radius, smallest previous acceleration, particle range.
template <typename T> struct SuperBox {
    T lo[3], hi[3], centre[3], radius2, a_old, local2;
    u32 start, end;
};

// Super-group s as its walk recorded it.
template <typename T> __device__ __forceinline__ SuperBox<T> super_box(const TreeArgs<T> &a, u32 s) {
    const T *r = a.super_rec + (size_t)s * SUPER_RECORD;
    SuperBox<T> b;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        b.lo[d] = r[d];
        b.hi[d] = r[3 + d];
        b.centre[d] = r[6 + d];
    }
    b.radius2 = r[9];
    b.a_old = r[10];
    b.local2 = rn_mul(a.local_theta, a.local_theta);
    const TreeNode node = a.nodes[a.supers[s]];
    b.start = node.start;
    b.end = node.end;
    return b;
}

// Node c (opening record o) goes into the super-group's expansion: it holds none of the
// super-group's particles, every one of its groups would take it as a cell (its test
// against the super-group's box, which holds theirs), and it is far from the super-group's
// centre as a group's far cells are from the group's.
template <typename T>
__device__ __forceinline__ bool super_far(const TreeArgs<T> &a, const SuperBox<T> &s, const TreeNode &node,
                                          const typename V4<T>::type &o, u32 c) {
    if (node.start < s.end && s.start < node.end) return false;
    const T x[3] = {o.x, o.y, o.z};
    T d2 = T(0), e2 = T(0);
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        const T out = max(max(rn_sub(s.lo[d], x[d]), rn_sub(x[d], s.hi[d])), T(0)), e = rn_sub(x[d], s.centre[d]);
        d2 = rn_add(d2, rn_mul(out, out));
        e2 = rn_add(e2, rn_mul(e, e));
    }
    if (!(d2 > o.w)) return false;
    if (a.relative) {
        const T ratio = rn_div(o.w, d2), order = a.quadrupole ? rn_mul(ratio, rn_sqrt(ratio)) : ratio;
        if (!(rn_mul(rn_div(rn_mul(a.g, a.cells[c].m), d2), order) <= rn_mul(a.alpha, s.a_old))) return false;
    }
    return s.radius2 <= rn_mul(s.local2, e2);
}

// Every group of the super-group opens node c: it holds the super-group's particles, or
// its reach covers the super-group's whole box (so any group's box within it).
template <typename T>
__device__ __forceinline__ bool super_open(const SuperBox<T> &s, const TreeNode &node, const typename V4<T>::type &o) {
    if (node.start <= s.start && s.end <= node.end) return true;
    const T x[3] = {o.x, o.y, o.z};
    T f2 = T(0);
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        const T f = max(abs(rn_sub(x[d], s.lo[d])), abs(rn_sub(x[d], s.hi[d])));
        f2 = rn_add(f2, rn_mul(f, f));
    }
    return f2 <= o.w;
}

// The box of particles [start, end) (a warp's lanes stride over them).
template <typename T>
__device__ __forceinline__ void particle_box(const TreeArgs<T> &a, u32 start, u32 end, T lo[3], T hi[3]) {
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        lo[d] = (T)INFINITY;
        hi[d] = -(T)INFINITY;
    }
    for (u32 k = start + lane; k < end; k += 32) {
        const typename V4<T>::type p = a.sorted[k];
        lo[0] = min(lo[0], p.x); hi[0] = max(hi[0], p.x);
        lo[1] = min(lo[1], p.y); hi[1] = max(hi[1], p.y);
        lo[2] = min(lo[2], p.z); hi[2] = max(hi[2], p.z);
    }
    for (int d = 0; d < 3; ++d) {
        for (int o = 16; o > 0; o /= 2) {
            lo[d] = min(lo[d], __shfl_xor_sync(full, lo[d], o));
            hi[d] = max(hi[d], __shfl_xor_sync(full, hi[d], o));
        }
    }
}

// The smallest previous acceleration of particles [start, end), over the warp.
template <typename T> __device__ __forceinline__ T smallest_previous(const TreeArgs<T> &a, u32 start, u32 end) {
    T a_old = (T)INFINITY;
    for (u32 k = start + (threadIdx.x & 31); k < end; k += 32) {
        const typename V4<T>::type f = a.previous[a.index[k]];
        a_old = min(a_old, sqrt(f.x * f.x + f.y * f.y + f.z * f.z));
    }
    for (int o = 16; o > 0; o /= 2) a_old = min(a_old, __shfl_xor_sync(0xffffffffu, a_old, o));
    return a_old;
}

// Lane k's exclusive prefix sum of x over the warp; `total` gets the warp's sum.
__device__ __forceinline__ u32 warp_exclusive(u32 x, u32 &total) {
    const int lane = threadIdx.x & 31;
    u32 inc = x;
    for (int o = 1; o < 32; o *= 2) {
        const u32 y = __shfl_up_sync(0xffffffffu, inc, o);
        if (lane >= o) inc += y;
    }
    total = __shfl_sync(0xffffffffu, inc, 31);
    return inc - x;
}

// What a walk writes: WALK_COUNT counts (spans, cells, items, interactions) for the scans;
// WALK_FILL writes the list at the group's place in the scans, and its items (32
// targets each); WALK_ONCE (a force after the first, whose list buffers were sized by
// an earlier two-pass walk) writes the list into the warp's scratch, then takes its
// places with atomics and copies it there: one traversal instead of two. A group whose
// list outgrows the scratch, or lists that outgrow the buffers, set TREE_LIST_OVERFLOW
// and the host walks again in two passes. The places differ run to run, the lists and
// each item's sums do not, and a target's two items (particles, cells) add into a zeroed
// output, so the forces are the same run to run.
#define WALK_COUNT 0
#define WALK_FILL 1
#define WALK_ONCE 2

// One group's walk per warp, each warp taking the next group from a counter when done
// with its last (lists differ in length tenfold, and not every launched block is
// resident at once: a fixed stride left the walk waiting on its slowest warps). The warp pops up to 32
// nodes off its stack (in global memory, TREE_WARP_STACK entries per warp) and tests
// one per lane: a node that holds none of the group's particles and whose centre of
// mass lies farther than its reach from the group's box (and, with the relative test,
// whose error estimate is small enough against the group's previous accelerations) is
// taken as a cell, a leaf otherwise as its particle span, anything else is opened (its
// children pushed, in order). Cells (as indices) and spans go out with warp prefix sums; neighbouring lanes'
// adjacent leaf ranges merge into one span. With local expansions (local_theta > 0), a cell
// taken whose centre of mass lies at least radius / local_theta from the group box's
// centre (radius: the box's half diagonal) is far: it goes into the group's cell list
// from the top down, after the cells the cell kernel meets (which the items cover), and
// tree_local translates the far ones into the group's expansion. MODE: see WALK_COUNT.
template <typename T, int MODE> __device__ void tree_walk(const TreeArgs<T> &a) {
    const bool WRITE = MODE != WALK_COUNT, ONCE = MODE == WALK_ONCE;
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const unsigned below = (1u << lane) - 1u;
    const u32 warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 *stack = a.stack + (size_t)warp * TREE_WARP_STACK;
    const bool local = a.local_theta > T(0);
    const T local2 = a.local_theta * a.local_theta;
    // WALK_ONCE: the warp's scratch list (cells, spans, offsets), and where it writes.
    const u32 s_cells = ONCE ? (u32)a.scratch_cells : 0u, s_spans = ONCE ? (u32)a.scratch_spans : 0u;
    u32 *scratch = ONCE ? a.scratch + (size_t)warp * (s_cells + 3 * s_spans) : nullptr;
    u32 *cell_out = ONCE ? scratch : a.cell_index;
    Span *span_out = ONCE ? (Span *)(scratch + s_cells) : a.spans;
    u32 *offset_out = ONCE ? scratch + s_cells + 2 * s_spans : a.offset;
    const u32 groups = a.counters[TREE_GROUPS];
    for (;;) {
        u32 g = 0;
        if (lane == 0) g = atomicAdd(&a.counters[TREE_NEXT_GROUP + MODE], 1u);
        g = __shfl_sync(full, g, 0);
        if (g >= groups) break;
        const Span grp = a.groups[g];
        T lo[3], hi[3];
        particle_box(a, grp.start, grp.end, lo, hi);
        // The expansion's centre and radius: the group box's centre and half diagonal.
        T centre[3], radius2 = 0;
#pragma unroll
        for (int d = 0; d < 3; ++d) {
            centre[d] = T(0.5) * (lo[d] + hi[d]);
            radius2 += T(0.25) * (hi[d] - lo[d]) * (hi[d] - lo[d]);
        }
        // The relative test's scale: the group's smallest previous acceleration.
        const T a_old = a.relative ? smallest_previous(a, grp.start, grp.end) : (T)INFINITY;
        // The group's super-group: what its walk took, this one leaves out.
        const u32 sup = a.group_super[g];
        const SuperBox<T> sbox = sup != TREE_NO_SUPER ? super_box(a, sup) : SuperBox<T>{};
        u32 span_base = 0, cell_base = 0;
        // Where the far cells go down from: the top of the group's cell list (the
        // counting walk's near and far cells), or of the warp's scratch.
        u32 far_top = ONCE ? s_cells : 0u;
        if (MODE == WALK_FILL) {
            span_base = (u32)(a.span_at[g] & 0xffffffffULL);
            cell_base = (u32)(a.span_at[g] >> 32);
            far_top = cell_base + (u32)(a.counts[g] >> 32);
        }
        // The super-group's frontier, when it fitted (read as the stack's bottom, no flags:
        // every node there is the groups' own); else the root, flagged when there is a
        // super-group, whose nodes the walk then tests again.
        const u32 fronts = sup != TREE_NO_SUPER ? *(const u32 *)(a.super_rec + (size_t)sup * SUPER_RECORD + 11) : 0u;
        const bool handed = sup != TREE_NO_SUPER && fronts != TREE_NO_FRONT;
        const u32 *front = handed ? a.super_front + (size_t)sup * (u32)a.front_cap : nullptr;
        u32 fp = 0, fn = handed ? fronts : 0u, sp = handed ? 0u : 1u;
        if (lane == 0 && !handed) stack[0] = sup != TREE_NO_SUPER ? TREE_IN_SUPER : 0u;
        u32 ns = 0, sources = 0, cells = 0, far_cells = 0;
        while (sp > 0 || fp < fn) {
            const bool popped = sp > 0;
            const u32 take = popped ? min(sp, 32u) : min(fn - fp, 32u), base = popped ? sp - take : fp;
            __syncwarp();
            bool have = (u32)lane < take;
            const u32 entry = have ? (popped ? stack[base + lane] : front[base + lane]) : 0u,
                      c = entry & ~TREE_IN_SUPER;
            __syncwarp();
            if (popped) sp = base; else fp += take;
            TreeNode node = {0u, 0u, 0u, 0u};
            int kind = 0; // 1: cell, 2: leaf span, 3: opened (0: nothing, or the super-group's)
            bool in_super = false;
            if (have) {
                node = a.nodes[c];
                const typename V4<T>::type o = a.opening[c];
                if (entry & TREE_IN_SUPER) {
                    // The super-group's walk took this node, or opened it (then every group
                    // does, and so does this one, so the node's children are the
                    // super-group walk's too).
                    if (super_far(a, sbox, node, o, c)) {
                        have = false;
                    } else if (super_open(sbox, node, o)) {
                        in_super = true;
                        kind = node.children == 0 ? 2 : 3;
                    }
                }
            }
            if (have && !in_super) {
                const typename V4<T>::type o = a.opening[c];
                const T dx = max(max(lo[0] - o.x, o.x - hi[0]), T(0));
                const T dy = max(max(lo[1] - o.y, o.y - hi[1]), T(0));
                const T dz = max(max(lo[2] - o.z, o.z - hi[2]), T(0));
                const bool holds = node.start < grp.end && grp.start < node.end;
                const T d2 = dx * dx + dy * dy + dz * dz;
                bool take = !holds && d2 > o.w;
                if (take && a.relative) {
                    // Gadget's relative test (nbody_core::cell::Criterion): G M / d^2
                    // (size / d)^k <= alpha |a_old|, k = 3 with quadrupoles, else 2.
                    const T ratio = o.w / d2, order = a.quadrupole ? ratio * sqrt(ratio) : ratio;
                    take = a.g * a.cells[c].m / d2 * order <= a.alpha * a_old;
                }
                kind = take ? 1 : node.children == 0 ? 2 : 3;
                // A taken cell far from the whole group (its radius within local_theta of
                // the distance to the centre) goes into the group's expansion instead.
                if (kind == 1 && local) {
                    const T ex = o.x - centre[0], ey = o.y - centre[1], ez = o.z - centre[2];
                    if (radius2 <= local2 * (ex * ex + ey * ey + ez * ez)) kind = 4;
                }
            }
            // Far cells, listed down from the top (a one-pass walk's past its scratch
            // overflows, below, and is walked again).
            const unsigned far = __ballot_sync(full, kind == 4);
            if (WRITE && kind == 4) {
                const u32 k = far_cells + __popc(far & below);
                if (!ONCE || k < s_cells) cell_out[far_top - 1 - k] = c;
            }
            far_cells += __popc(far);
            // Cells, by index.
            const unsigned taken = __ballot_sync(full, kind == 1);
            if (WRITE && kind == 1) {
                const u32 at = cell_base + cells + __popc(taken & below);
                if (!ONCE || at < s_cells) cell_out[at] = c;
            }
            cells += __popc(taken);
            // Leaf spans: a run starts where the lane before did not end where this begins.
            const unsigned leaves = __ballot_sync(full, kind == 2);
            const u32 prev_end = __shfl_up_sync(full, node.end, 1);
            const bool span_start =
                kind == 2 && !(lane > 0 && ((leaves >> (lane - 1)) & 1u) && prev_end == node.start);
            const unsigned span_starts = __ballot_sync(full, span_start);
            u32 batch_sources;
            const u32 before = warp_exclusive(kind == 2 ? node.end - node.start : 0u, batch_sources);
            if (WRITE && kind == 2) {
                const u32 at = span_base + ns + __popc(span_starts & (below | (1u << lane))) - 1;
                if (!ONCE || at < s_spans) {
                    if (span_start) {
                        span_out[at].start = node.start;
                        offset_out[at] = sources + before;
                    }
                    const bool next_joins =
                        lane < 31 && ((leaves >> (lane + 1)) & 1u) && !((span_starts >> (lane + 1)) & 1u);
                    if (!next_joins) span_out[at].end = node.end;
                }
            }
            ns += __popc(span_starts);
            sources += batch_sources;
            // Opened nodes push their children.
            u32 pushed;
            const u32 at = warp_exclusive(kind == 3 ? node.children : 0u, pushed);
            if (sp + pushed > TREE_WARP_STACK) {
                if (lane == 0) a.counters[TREE_STACK_OVERFLOW] = 1;
                break;
            }
            if (kind == 3)
                for (u32 k = 0; k < node.children; ++k)
                    stack[sp + at + k] = (node.child + k) | (in_super ? TREE_IN_SUPER : 0u);
            sp += pushed;
        }
        const u32 nt = grp.end - grp.start, chunks = (nt + 31) / 32;
        // A list longer than split_sources (cells: split_cells) is cut into pieces of
        // about equal counts of spans (cells), each its own item per 32 targets writing
        // its own block of partial sums, which a run per 32 targets adds in order: one
        // group's long list would otherwise be one block's work, running on alone at the
        // kernel's end. The cut depends on the list alone, so every walk mode makes the
        // same items and the same sums.
        const u32 cut = (u32)a.split_sources, cell_cut = (u32)a.split_cells;
        const u32 pieces = cut > 0 && sources > cut ? min(min((sources - 1) / cut + 1, ns), (u32)TREE_MAX_PIECES) : 1u;
        const u32 cell_pieces = cell_cut > 0 && cells > cell_cut ? min((cells - 1) / cell_cut + 1, (u32)TREE_MAX_PIECES) : 1u;
        const u32 n_items = chunks * pieces, n_cell_items = cells > 0 ? chunks * cell_pieces : 0u;
        // Blocks of partial sums (the particle pieces', then the cell pieces'), runs.
        const u32 blocks = (pieces > 1 ? n_items : 0u) + (cell_pieces > 1 ? n_cell_items : 0u);
        const u32 runs = pieces > 1 ? chunks : 0u, cell_runs = cell_pieces > 1 ? chunks : 0u;
        if (MODE != WALK_FILL && lane == 0) {
            if (MODE == WALK_COUNT) {
                a.counts[g] = (unsigned long long)ns | (unsigned long long)(cells + far_cells) << 32;
                a.item_counts[g] = (unsigned long long)n_items | (unsigned long long)n_cell_items << 32;
                // What the filling walk takes, so the host can size it.
                if (blocks > 0) {
                    atomicAdd(&a.counters[TREE_SLOTS], blocks);
                    atomicAdd(&a.counters[TREE_RUNS], runs);
                    atomicAdd(&a.counters[TREE_CELL_RUNS], cell_runs);
                }
            }
            atomicAdd(&a.tally[0], (unsigned long long)nt * sources);
            atomicAdd(&a.tally[1], (unsigned long long)nt * cells);
            // The list entries in 64 bits: the host refuses lists past 32-bit indices.
            atomicAdd(&a.tally[2], (unsigned long long)ns);
            atomicAdd(&a.tally[3], (unsigned long long)(cells + far_cells));
            atomicAdd(&a.tally[4], (unsigned long long)far_cells);
            atomicMax(&a.counters[TREE_MOST_SPANS], ns);
            atomicMax(&a.counters[TREE_MOST_CELLS], cells + far_cells);
            atomicMax(&a.counters[TREE_MOST_SOURCES], sources);
        }
        if (MODE == WALK_COUNT) continue;
        // The cut list's blocks and runs (their places do not change the sums): where they
        // do not fit, the walk walks again in two passes, which size them (and start the
        // counters again, so one past its room only wastes it).
        u32 slot_base = 0, run_base = 0, cell_run_base = 0;
        bool taken = true;
        if (lane == 0 && blocks > 0) {
            slot_base = atomicAdd(&a.counters[TREE_SLOTS], blocks);
            run_base = runs > 0 ? atomicAdd(&a.counters[TREE_RUNS], runs) : 0u;
            cell_run_base = cell_runs > 0 ? atomicAdd(&a.counters[TREE_CELL_RUNS], cell_runs) : 0u;
            const auto fits = [](u32 at, u32 need, int cap) {
                return (unsigned long long)at + need <= (unsigned long long)(u32)cap;
            };
            taken = fits(slot_base, blocks, a.cap_slots) && fits(run_base, runs, a.cap_runs) &&
                    fits(cell_run_base, cell_runs, a.cap_cell_runs);
        }
        if (!__shfl_sync(full, taken, 0)) {
            if (lane == 0) a.counters[TREE_LIST_OVERFLOW] = 1;
            continue;
        }
        slot_base = __shfl_sync(full, slot_base, 0);
        run_base = __shfl_sync(full, run_base, 0);
        cell_run_base = __shfl_sync(full, cell_run_base, 0);
        u32 item_base, cell_item_base;
        if (ONCE) {
            // The group's places: spans, cells, items, cell items (the totals may wrap
            // past 2^32 entries; the host reads the 64-bit tallies and walks again then).
            u32 places[4] = {0u, 0u, 0u, 0u};
            if (lane == 0) {
                places[0] = atomicAdd(&a.counters[TREE_SPANS], ns);
                places[1] = atomicAdd(&a.counters[TREE_CELLS], cells + far_cells);
                places[2] = atomicAdd(&a.counters[TREE_ITEMS], n_items);
                places[3] = n_cell_items > 0 ? atomicAdd(&a.counters[TREE_CELL_ITEMS], n_cell_items) : 0u;
            }
#pragma unroll
            for (int k = 0; k < 4; ++k) places[k] = __shfl_sync(full, places[k], 0);
            const unsigned long long caps[4] = {(u32)a.cap_spans, (u32)a.cap_cells, (u32)a.cap_items,
                                                (u32)a.cap_cell_items};
            const u32 need[4] = {ns, cells + far_cells, n_items, n_cell_items};
            bool fits = ns <= s_spans && cells + far_cells <= s_cells;
#pragma unroll
            for (int k = 0; k < 4; ++k) fits = fits && (unsigned long long)places[k] + need[k] <= caps[k];
            if (!fits) {
                if (lane == 0) a.counters[TREE_LIST_OVERFLOW] = 1;
                continue;
            }
            __syncwarp(); // the lanes' scratch writes, before other lanes read them
            for (u32 k = lane; k < cells; k += 32) a.cell_index[places[1] + k] = cell_out[k];
            for (u32 k = lane; k < far_cells; k += 32)
                a.cell_index[places[1] + cells + k] = cell_out[s_cells - far_cells + k];
            for (u32 k = lane; k < ns; k += 32) {
                a.spans[places[0] + k] = span_out[k];
                a.offset[places[0] + k] = offset_out[k];
            }
            span_base = places[0];
            cell_base = places[1];
            item_base = places[2];
            cell_item_base = places[3];
        } else {
            item_base = (u32)(a.item_at[g] & 0xffffffffULL);
            cell_item_base = (u32)(a.item_at[g] >> 32);
        }
        if (local && lane < LOCAL_FAR + 2) {
            // The group's record for tree_local: its centre, its far cells' place and count.
            T *rec = a.locals + (size_t)g * LOCAL_RECORD;
            if (lane < 3) rec[lane] = lane == 0 ? centre[0] : lane == 1 ? centre[1] : centre[2];
            else if (lane == 3) rec[3] = T(0);
            else ((u32 *)(rec + LOCAL_FAR))[lane - LOCAL_FAR] = lane == LOCAL_FAR ? cell_base + cells : far_cells;
        }
        // Item m of the group: its 32 targets m / pieces, its piece m % pieces (spans
        // [j ns / pieces, (j + 1) ns / pieces): none empty, as pieces <= ns).
        const u32 cell_slot_base = slot_base + (pieces > 1 ? n_items : 0u);
        for (u32 m = lane; m < max(n_items, n_cell_items); m += 32) {
            if (m < n_items) {
                const u32 k = m / pieces, j = m % pieces, t0 = grp.start + 32 * k;
                const Item it = {t0, min(t0 + 32, grp.end), span_base + j * ns / pieces, span_base + (j + 1) * ns / pieces};
                a.items[item_base + m] = it;
                a.slots[item_base + m] = pieces > 1 ? slot_base + m : NO_SLOT;
            }
            if (m < n_cell_items) {
                const u32 k = m / cell_pieces, j = m % cell_pieces, t0 = grp.start + 32 * k;
                const Item ci = {t0, min(t0 + 32, grp.end), cell_base + j * cells / cell_pieces,
                                 cell_base + (j + 1) * cells / cell_pieces};
                a.cell_items[cell_item_base + m] = ci;
                a.cell_slots[cell_item_base + m] = cell_pieces > 1 ? cell_slot_base + m : NO_SLOT;
            }
        }
        // A run per 32 targets of a cut list: its pieces' blocks, in order.
        for (u32 k = lane; k < runs + cell_runs; k += 32) {
            const u32 c = k < runs ? k : k - runs, t0 = grp.start + 32 * c, t1 = min(t0 + 32, grp.end);
            if (k < runs) {
                const Item run = {t0, t1, slot_base + c * pieces, slot_base + (c + 1) * pieces};
                a.runs[run_base + c] = run;
            } else {
                const Item run = {t0, t1, cell_slot_base + c * cell_pieces, cell_slot_base + (c + 1) * cell_pieces};
                a.cell_runs[cell_run_base + c] = run;
            }
        }
    }
}

// The list totals from the scans' last entries (one thread; `capacity`: the groups).
template <typename T> __device__ void tree_totals(const TreeArgs<T> &a) {
    const size_t last = (size_t)a.capacity - 1;
    const unsigned long long spans = a.span_at[last] + a.counts[last], items = a.item_at[last] + a.item_counts[last];
    a.counters[TREE_SPANS] = (u32)(spans & 0xffffffffULL);
    a.counters[TREE_CELLS] = (u32)(spans >> 32);
    a.counters[TREE_ITEMS] = (u32)(items & 0xffffffffULL);
    a.counters[TREE_CELL_ITEMS] = (u32)(items >> 32);
}

// A warp's sums of l (each lane's), added in a fixed order, in every lane.
template <typename T> __device__ __forceinline__ void warp_sum_terms(T l[LOCAL_TERMS]) {
#pragma unroll
    for (int k = 0; k < LOCAL_TERMS; ++k)
        for (int o = 16; o > 0; o /= 2) l[k] += __shfl_xor_sync(0xffffffffu, l[k], o);
}

// A warp per super-group (the next from a counter): its box and record, then a walk from
// the root that takes every node far from the whole super-group (super_far) into its
// expansion (each lane summing the cells it meets) and goes on only below nodes every one
// of its groups opens (super_open); the groups' walks (tree_walk) meet the same nodes in
// the same way and leave those taken out, so no node is counted twice or missed.
template <typename T> __device__ void tree_super_walk(const TreeArgs<T> &a) {
    const unsigned full = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const u32 warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 *stack = a.stack + (size_t)warp * TREE_WARP_STACK;
    const u32 supers = a.counters[TREE_SUPERS];
    for (;;) {
        u32 s = 0;
        if (lane == 0) s = atomicAdd(&a.counters[TREE_NEXT_SUPER], 1u);
        s = __shfl_sync(full, s, 0);
        if (s >= supers) break;
        const TreeNode own = a.nodes[a.supers[s]];
        T lo[3], hi[3];
        particle_box(a, own.start, own.end, lo, hi);
        T *rec = a.super_rec + (size_t)s * SUPER_RECORD;
        if (lane == 0) {
            T radius2 = 0;
            for (int d = 0; d < 3; ++d) {
                rec[d] = lo[d];
                rec[3 + d] = hi[d];
                rec[6 + d] = T(0.5) * (lo[d] + hi[d]);
                radius2 += T(0.25) * (hi[d] - lo[d]) * (hi[d] - lo[d]);
            }
            rec[9] = radius2;
        }
        const T a_old = a.relative ? smallest_previous(a, own.start, own.end) : (T)INFINITY;
        if (lane == 0) rec[10] = a_old;
        __syncwarp();
        // The walk reads the box as its groups will.
        const SuperBox<T> box = super_box(a, s);
        T l[LOCAL_TERMS];
#pragma unroll
        for (int k = 0; k < LOCAL_TERMS; ++k) l[k] = T(0);
        const u32 cap = (u32)a.front_cap;
        u32 *front = a.super_front + (size_t)s * cap;
        if (lane == 0) stack[0] = 0;
        u32 sp = 1, far = 0, fronts = 0;
        while (sp > 0) {
            const u32 take = min(sp, 32u), base = sp - take;
            __syncwarp();
            const bool have = (u32)lane < take;
            const u32 c = have ? stack[base + lane] : 0u;
            __syncwarp();
            sp = base;
            TreeNode node = {0u, 0u, 0u, 0u};
            bool taken = false, open = false;
            if (have) {
                node = a.nodes[c];
                const typename V4<T>::type o = a.opening[c];
                taken = super_far(a, box, node, o, c);
                open = !taken && node.children > 0 && super_open(box, node, o);
            }
            if (taken) local_add_cell(a.cells[c], box.centre, a.eps2, l);
            far += __popc(__ballot_sync(full, taken));
            // What the walk hands down: its groups' walks start from these.
            const bool handed = have && !taken && !open;
            const unsigned hand = __ballot_sync(full, handed);
            const u32 at_front = fronts + __popc(hand & ((1u << lane) - 1u));
            if (handed && at_front < cap) front[at_front] = c;
            fronts += __popc(hand);
            u32 pushed;
            const u32 at = warp_exclusive(open ? node.children : 0u, pushed);
            if (sp + pushed > TREE_WARP_STACK) {
                if (lane == 0) a.counters[TREE_STACK_OVERFLOW] = 1;
                break;
            }
            if (open)
                for (u32 k = 0; k < node.children; ++k) stack[sp + at + k] = node.child + k;
            sp += pushed;
        }
        warp_sum_terms(l);
        if (lane == 0) {
#pragma unroll
            for (int k = 0; k < LOCAL_TERMS; ++k) rec[SUPER_TERMS + k] = l[k];
            *(u32 *)(rec + 11) = fronts <= cap ? fronts : TREE_NO_FRONT;
            atomicAdd(&a.tally[5], (unsigned long long)far);
        }
    }
}

// Target k's sorted-order field o, with its softened self term taken off the potential
// (self_term 1: as the batched kernel's fix-up in T, 2: in float, the mixed kernels'
// arithmetic), added into the caller's order.
template <typename T>
__device__ __forceinline__ void finish_target(const TreeArgs<T> &a, u32 k, typename V4<T>::type o) {
    if (a.potential && a.self_term != 0) {
        const T m = a.sorted[k].w;
        const T w = a.self_term == 2 ? (T)((float)m * rsqrt_fast((float)a.eps2)) : m * rsqrt_fast(a.eps2);
        o.w += a.g * w;
    }
    const u32 i = a.index[k];
    typename V4<T>::type f = a.out[i];
    f.x += o.x;
    f.y += o.y;
    f.z += o.z;
    if (a.potential) f.w += o.w;
    a.out[i] = f;
}

// Adds expansion l about `centre` at each of group grp's targets (a lane a target); the
// last series of a group finishes its targets (finish_target) instead of storing them.
template <typename T>
__device__ __forceinline__ void add_series(const TreeArgs<T> &a, Span grp, const T l[LOCAL_TERMS], const T centre[3],
                                           bool last) {
    for (u32 k = grp.start + (threadIdx.x & 31); k < grp.end; k += 32) {
        const typename V4<T>::type p = a.sorted[k];
        const T y[3] = {p.x - centre[0], p.y - centre[1], p.z - centre[2]};
        T acc[3], phi;
        local_field(l, y, acc, phi);
        typename V4<T>::type o = a.sorted_out[k];
        o.x = fma(a.g, acc[0], o.x);
        o.y = fma(a.g, acc[1], o.y);
        o.z = fma(a.g, acc[2], o.z);
        if (a.potential) o.w = fma(a.g, phi, o.w);
        if (last) finish_target(a, k, o);
        else a.sorted_out[k] = o;
    }
}

// Each group's expansion from its far cells (a lane a cell, the lanes' sums added in a
// fixed order) at each of its targets (a lane a target; a warp per group), then its
// super-group's (about the super-group's centre), added to the sorted-order results
// after the leaf kernels' (so in a fixed order); the last finishes the group's targets
// into the caller's order (tree_scatter's work, which this replaces). One series at a
// time: the second's terms take the first's registers.
template <typename T> __device__ void tree_local(const TreeArgs<T> &a) {
    const int lane = threadIdx.x & 31;
    const u32 groups = a.counters[TREE_GROUPS], warps = (gridDim.x * blockDim.x) >> 5;
    for (u32 g = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; g < groups; g += warps) {
        const T *rec = a.locals + (size_t)g * LOCAL_RECORD;
        const u32 *far = (const u32 *)(rec + LOCAL_FAR);
        const u32 start = far[0], n_far = far[1], sup = a.group_super[g];
        const Span grp = a.groups[g];
        if (n_far > 0) {
            const T centre[3] = {rec[0], rec[1], rec[2]};
            T l[LOCAL_TERMS];
#pragma unroll
            for (int k = 0; k < LOCAL_TERMS; ++k) l[k] = T(0);
            for (u32 k = lane; k < n_far; k += 32) local_add_cell(a.cells[a.cell_index[start + k]], centre, a.eps2, l);
            warp_sum_terms(l);
            add_series(a, grp, l, centre, sup == TREE_NO_SUPER);
        }
        if (sup != TREE_NO_SUPER) {
            const T *srec = a.super_rec + (size_t)sup * SUPER_RECORD;
            const T centre[3] = {srec[6], srec[7], srec[8]};
            T l[LOCAL_TERMS];
#pragma unroll
            for (int k = 0; k < LOCAL_TERMS; ++k) l[k] = srec[SUPER_TERMS + k];
            add_series(a, grp, l, centre, true);
        }
        if (n_far == 0 && sup == TREE_NO_SUPER)
            for (u32 k = grp.start + lane; k < grp.end; k += 32) finish_target(a, k, a.sorted_out[k]);
    }
}

// Adds the sorted-order results into the caller's order (finish_target), when no
// expansion pass (tree_local) did.
template <typename T> __device__ void tree_scatter(const TreeArgs<T> &a) {
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < a.n; k += gridDim.x * blockDim.x)
        finish_target(a, (u32)k, a.sorted_out[k]);
}

#define TREE_KERNEL(NAME, T, STEP, CALL)                                                                               \
    extern "C" __global__ void nbody_tree_##STEP##_##NAME(const TreeArgs<T> a) { CALL(a); }
// The groups' walks: 128 threads, at least BLOCKS blocks an SM (8 in f32: 64 registers),
// since a walk waits on its node reads and needs warps to hide them.
#define TREE_WALK_KERNEL(NAME, T, BLOCKS, STEP, CALL)                                                                  \
    extern "C" __global__ void __launch_bounds__(128, BLOCKS) nbody_tree_##STEP##_##NAME(const TreeArgs<T> a) {        \
        CALL(a);                                                                                                       \
    }
#define TREE_KERNELS(NAME, T, BLOCKS)                                                                                  \
    TREE_KERNEL(NAME, T, reset, tree_reset<T>)                                                                         \
    TREE_KERNEL(NAME, T, bounds, tree_bounds<T>)                                                                       \
    TREE_KERNEL(NAME, T, keys, tree_keys<T>)                                                                           \
    TREE_KERNEL(NAME, T, gather, tree_gather<T>)                                                                       \
    TREE_KERNEL(NAME, T, split, tree_split<T>)                                                                         \
    TREE_KERNEL(NAME, T, moments, tree_moments<T>)                                                                     \
    TREE_KERNEL(NAME, T, supers, tree_supers<T>)                                                                       \
    TREE_KERNEL(NAME, T, groups, tree_groups<T>)                                                                       \
    TREE_KERNEL(NAME, T, super_walk, tree_super_walk<T>)                                                               \
    TREE_WALK_KERNEL(NAME, T, BLOCKS, count, (tree_walk<T, WALK_COUNT>))                                               \
    TREE_WALK_KERNEL(NAME, T, BLOCKS, fill, (tree_walk<T, WALK_FILL>))                                                 \
    TREE_WALK_KERNEL(NAME, T, BLOCKS, once, (tree_walk<T, WALK_ONCE>))                                                 \
    TREE_KERNEL(NAME, T, totals, tree_totals<T>)                                                                       \
    TREE_KERNEL(NAME, T, local, tree_local<T>)                                                                         \
    TREE_KERNEL(NAME, T, scatter, tree_scatter<T>)
TREE_KERNELS(f32, float, 8)
TREE_KERNELS(f64, double, 4)
