// Mixed precision: a block's frame (double-single offsets) and the far-tile test. Part of gravity.cu (included there, in order).

// Mixed precision (T = double for storage and sums, C = float for each interaction):
// every particle a block reads is moved into the block's frame, its offset from a centre
// of the block's targets computed in double and split into float high and low parts, so
// the rounding is relative to the offsets, not to the absolute coordinates (a system far
// from the origin keeps the error it has at the origin). With T == C the frame is the
// identity.
template <typename T, typename C> struct Frame {
    __device__ __forceinline__ Pt<T, C> apply(const typename V4<T>::type &p) const {
        Pt<T, C> q;
        q.p = p;
        return q;
    }
    __device__ __forceinline__ typename V4<C>::type velocity(const typename V4<T>::type &v) const { return v; }
};
template <> struct Frame<double, float> {
    double x, y, z;
    // The box of the block's targets in the frame (rounded outwards), and the squared
    // distance beyond which a source box is far (see far_tile).
    float lo[3], hi[3], far2;
    __device__ __forceinline__ Pt<double, float> apply(const double4 &p) const {
        const double d[3] = {p.x - x, p.y - y, p.z - z};
        float hi[3], lo[3];
#pragma unroll
        for (int k = 0; k < 3; ++k) {
            hi[k] = (float)d[k];
            lo[k] = (float)(d[k] - (double)hi[k]);
        }
        Pt<double, float> q;
        q.p = make_float4(hi[0], hi[1], hi[2], (float)p.w);
        q.lo = make_float4(lo[0], lo[1], lo[2], 0.0f);
        return q;
    }
    // Velocities in the frame, rounded to float (the jerk tolerates their rounding).
    __device__ __forceinline__ float4 velocity(const double4 &v) const {
        return make_float4((float)(v.x - x), (float)(v.y - y), (float)(v.z - z), 0.0f);
    }
};

// A compile-time flag passed as a value (to a generic lambda).
template <bool V> struct Bool { static const bool value = V; };

template <typename T, typename C> struct IsMixed { enum { value = 0 }; };
template <> struct IsMixed<double, float> { enum { value = 1 }; };

// Mixed precision, far sources. The double-single separation costs six more FADDs per
// interaction than a float one; it matters only for sources near the block's targets.
// Dropping the low parts (a float difference of the frame offsets) errs by at most
// 2^-24 (|s - c| + |t - c|) + 2^-24 |d| <= 2^-24 (2 |d| + 2 R) for targets within R of
// the centre c; for sources at least FAR_REACHES R from every target that is at most
// 2^-24 (2 + 2 / FAR_REACHES) |d| = 2^-22 |d|, a few roundings of the separation, so
// tiles whose box is that far from the targets' box take the float path. The accuracy
// does not depend on the order of the particles; the speed does (in Morton order most
// tiles are far).
#define FAR_REACHES 1.0

// The frame of the points p[first, first + count) clipped to n (at least one is real):
// per axis the middle of their bounding box, or 0 where the box is wider than its middle
// is far from the origin (a sparse block: offsets never exceed the coordinates, so the
// error is never worse than plain f32's). Every thread of the block must call it.
template <typename T, typename C>
__device__ __forceinline__ Frame<T, C> block_frame(const typename V4<T>::type *p, int first, int count, int n) {
    return Frame<T, C>();
}
template <>
__device__ __forceinline__ Frame<double, float> block_frame<double, float>(const double4 *p, int first, int count,
                                                                           int n) {
    __shared__ double bounds[6][32];
    double b[6] = {1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0, 1.0 / 0.0}; // lo xyz, -hi xyz
    for (int t = threadIdx.x; t < count && first + t < n; t += blockDim.x) {
        const double4 q = p[first + t];
        b[0] = fmin(b[0], q.x); b[1] = fmin(b[1], q.y); b[2] = fmin(b[2], q.z);
        b[3] = fmin(b[3], -q.x); b[4] = fmin(b[4], -q.y); b[5] = fmin(b[5], -q.z);
    }
#pragma unroll
    for (int k = 0; k < 6; ++k) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) b[k] = fmin(b[k], __shfl_xor_sync(0xffffffffu, b[k], off));
        if (threadIdx.x % 32 == 0) bounds[k][threadIdx.x / 32] = b[k];
    }
    __syncthreads();
    double c[3], box[6];
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        double lo = bounds[k][0], hi = -bounds[k + 3][0];
        for (int w = 1; w < (int)(blockDim.x / 32); ++w) {
            lo = fmin(lo, bounds[k][w]);
            hi = fmax(hi, -bounds[k + 3][w]);
        }
        const double mid = 0.5 * (lo + hi);
        c[k] = hi - lo >= fabs(mid) ? 0.0 : mid;
        box[k] = lo - c[k];
        box[k + 3] = hi - c[k];
    }
    // Everyone has read the bounds before any later use of shared memory overwrites them.
    __syncthreads();
    Frame<double, float> f;
    f.x = c[0]; f.y = c[1]; f.z = c[2];
    double reach2 = 0.0; // the largest squared distance of a target from the centre, at most
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        f.lo[k] = __double2float_rd(box[k]);
        f.hi[k] = __double2float_ru(box[k + 3]);
        const double r = fmax(-box[k], box[k + 3]);
        reach2 = fma(r, r, reach2);
    }
    // Far: at least FAR_REACHES reaches from every target (a little more, for rounding).
    f.far2 = __double2float_ru(FAR_REACHES * FAR_REACHES * 1.001 * reach2);
    return f;
}


// Notes the box (in the frame) of this warp's sources of a tile into box[buf][.][warp]:
// minima of x, y, z and of -x, -y, -z.
// (Overloads, not specialisations: the other kernels' boxes have one lane, and no use.)
template <typename T, typename C, int W> __device__ __forceinline__ void note_box(const Pt<T, C> &, C (*)[W]) {}
__device__ __forceinline__ void note_box(const Pt<double, float> &s, float (*box)[32]) {
    float b[6] = {s.p.x, s.p.y, s.p.z, -s.p.x, -s.p.y, -s.p.z};
#pragma unroll
    for (int k = 0; k < 6; ++k) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) b[k] = fminf(b[k], __shfl_xor_sync(0xffffffffu, b[k], off));
        if (threadIdx.x % 32 == 0) box[k][threadIdx.x / 32] = b[k];
    }
}

// The squared gap (rounded down) between the box of the tile whose warps noted `box`
// and the frame's targets (the same answer in every thread); B, the block size, makes
// the loop over warps short and unrolled.
template <int B, typename T, typename C, int W>
__device__ __forceinline__ float tile_gap2(const C (*)[W], const Frame<T, C> &) {
    return 0.0f;
}
template <int B> __device__ __forceinline__ float tile_gap2(const float (*box)[32], const Frame<double, float> &f) {
    float gap2 = 0.0f;
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        float lo = box[k][0], hi = -box[k + 3][0];
#pragma unroll
        for (int w = 1; w < B / 32; ++w) {
            lo = fminf(lo, box[k][w]);
            hi = fmaxf(hi, -box[k + 3][w]);
        }
        // The gap between the boxes on this axis, rounded down.
        const float gap = fmaxf(0.0f, fmaxf(__fsub_rd(lo, f.hi[k]), __fsub_rd(f.lo[k], hi)));
        gap2 = __fmaf_rd(gap, gap, gap2);
    }
    return gap2;
}

// True when the tile whose warps noted `box` lies FAR_REACHES reaches from the frame's
// targets.
template <int B, typename T, typename C, int W>
__device__ __forceinline__ bool far_tile(const C (*)[W], const Frame<T, C> &) {
    return false;
}
template <int B> __device__ __forceinline__ bool far_tile(const float (*box)[32], const Frame<double, float> &f) {
    return tile_gap2<B>(box, f) >= f.far2;
}
