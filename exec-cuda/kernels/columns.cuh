// Steps, column packing and density maps on device-resident particles. Part of gravity.cu (included there, in order).

// Integrator steps on device-resident particles: velocities are [vx, vy, vz, 0], outputs
// [ax, ay, az, phi]; positions keep their mass lane. One thread per particle.
#define KICK_DRIFT(T, NAME)                                                                                            \
    extern "C" __global__ void nbody_kick_##NAME(const StepArgs<T> s) { step_add<T>(s); }                              \
    extern "C" __global__ void nbody_drift_##NAME(const StepArgs<T> s) { step_add<T>(s); }

// a[i].xyz += b[i].xyz h: a kick (velocities, accelerations) or a drift (positions,
// velocities; the mass lane kept).
template <typename T> __device__ __forceinline__ void step_add(const StepArgs<T> &s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n) {
        typename V4<T>::type x = s.a[i], d = s.b[i];
        x.x += d.x * s.h;
        x.y += d.y * s.h;
        x.z += d.z * s.h;
        s.a[i] = x;
    }
}

KICK_DRIFT(float, f32)
KICK_DRIFT(double, f64)

// Columns (crate::columns): rows of x, y, z and a column of masses packed into records,
// and records unpacked into rows of ax, ay, az and a column of potentials, so a caller's
// arrays (numpy's, C's) go up and come down as they are. Packing checks every value as
// the host's validate::particles does and keeps the first offending index of each kind
// (atomicMin) for the host to name; the records past n up to padded are zero (massless
// at the origin, as upload_padded pads). One thread per record.
template <typename T> __device__ __forceinline__ void columns_pack(const ColumnsArgs<T> &a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.padded) return;
    typename V4<T>::type r;
    r.x = r.y = r.z = r.w = T(0);
    if (i < a.n) {
        long long k = 3LL * i;
        r.x = a.rows[k];
        r.y = a.rows[k + 1];
        r.z = a.rows[k + 2];
        r.w = a.column ? a.column[i] : T(0);
        // x - x is 0 exactly for finite x and NaN for NaN or an infinity; a coordinate at
        // or past nbody_core::validate::range (2^61 in f32, 2^509 in f64) is bad too.
        const T range = sizeof(T) == 4 ? T(2305843009213693952.0) : T(1.6759759912428246e+153);
        if ((r.x - r.x) + (r.y - r.y) + (r.z - r.z) + (r.w - r.w) != T(0) || fabs(r.x) >= range || fabs(r.y) >= range ||
            fabs(r.z) >= range)
            atomicMin(&a.first_bad[0], i);
        if (r.w < T(0)) atomicMin(&a.first_bad[1], i);
    }
    a.records[i] = r;
}
template <typename T> __device__ __forceinline__ void columns_unpack(const ColumnsArgs<T> &a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    typename V4<T>::type r = a.records[i];
    long long k = 3LL * i;
    a.rows[k] = r.x;
    a.rows[k + 1] = r.y;
    a.rows[k + 2] = r.z;
    if (a.column) a.column[i] = r.w;
}
#define COLUMNS(T, NAME)                                                                                               \
    extern "C" __global__ void nbody_columns_pack_##NAME(const ColumnsArgs<T> a) { columns_pack<T>(a); }               \
    extern "C" __global__ void nbody_columns_unpack_##NAME(const ColumnsArgs<T> a) { columns_unpack<T>(a); }
COLUMNS(float, f32)
COLUMNS(double, f64)

// Density map: adds each particle's mass into its cell of a pixels x pixels grid of
// doubles (row 0 at the top), the same cell arithmetic as nbody-core's
// Projection::cell, in double. One thread per particle; cells shared by particles add
// atomically. Masses are validated on the host; NaN coordinates fail the range test.
#define PROJECT(T, NAME)                                                                                               \
    extern "C" __global__ void nbody_project_##NAME(const ProjectArgs<T> a) {                                         \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                                                 \
        if (i >= a.n) return;                                                                                          \
        V4<T>::type p = a.particles[i];                                                                                \
        double x[3] = {(double)p.x, (double)p.y, (double)p.z};                                                         \
        double col = (x[a.h_axis] - a.left) * a.scale, row = (a.top - x[a.v_axis]) * a.scale;                          \
        if (col >= 0.0 && col < (double)a.pixels && row >= 0.0 && row < (double)a.pixels)                              \
            atomicAdd(&a.grid[(long long)row * a.pixels + (long long)col], (double)p.w);                               \
    }
PROJECT(float, f32)
PROJECT(double, f64)

// A resident system's diagnostic sums (nbody_core::resident::system_sums, in its order):
// each thread adds its particles (grid-stride) in double, the block adds its threads
// (shuffles, then the warps in order) and writes one row of twelve; the host adds the
// rows in block order, so the result does not depend on scheduling. Blocks of 256.
template <typename T> __device__ __forceinline__ void system_sums(const SumsArgs<T> &a) {
    double s[12];
    for (int k = 0; k < 12; ++k) s[k] = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += gridDim.x * blockDim.x) {
        typename V4<T>::type p = a.pos[i], v = a.vel[i], f = a.field[i];
        double m = p.w, x[3] = {(double)p.x, (double)p.y, (double)p.z}, u[3] = {(double)v.x, (double)v.y, (double)v.z};
        s[0] += 0.5 * m * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        s[1] += 0.5 * m * (double)f.w;
        for (int k = 0; k < 3; ++k) {
            s[2 + k] += m * u[k];
            s[8 + k] += m * x[k];
        }
        s[5] += m * (x[1] * u[2] - x[2] * u[1]);
        s[6] += m * (x[2] * u[0] - x[0] * u[2]);
        s[7] += m * (x[0] * u[1] - x[1] * u[0]);
        s[11] += m;
    }
    for (int k = 0; k < 12; ++k)
        for (int off = 16; off > 0; off >>= 1) s[k] += __shfl_down_sync(0xffffffffu, s[k], off);
    __shared__ double warps[8][12];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        for (int k = 0; k < 12; ++k) warps[warp][k] = s[k];
    __syncthreads();
    if (threadIdx.x < 12) {
        double t = 0.0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += warps[w][threadIdx.x];
        a.partial[12 * blockIdx.x + threadIdx.x] = t;
    }
}
extern "C" __global__ void __launch_bounds__(256) nbody_sums_f32(const SumsArgs<float> a) { system_sums<float>(a); }
extern "C" __global__ void __launch_bounds__(256) nbody_sums_f64(const SumsArgs<double> a) { system_sums<double>(a); }
