// CUB's device-wide radix sort and exclusive scan behind C entry points, for the device
// tree (src/tree.rs): Morton keys with the particle indices they sort, and the scans that
// place every target group's interaction list. build.rs compiles this file into a static
// library linked with the static CUDA runtime; the runtime picks up the primary context
// the executor retains through the driver API, and the executor's stream is passed in.
//
// Each entry point follows CUB's two-phase protocol: with temp null it only writes the
// scratch size it needs into *temp_bytes; otherwise it queues the work on `stream`.
// Returns the cudaError_t (0 on success).

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

extern "C" int nbody_cub_sort_pairs(void *temp, size_t *temp_bytes, const unsigned long long *keys_in,
                                    unsigned long long *keys_out, const unsigned int *values_in,
                                    unsigned int *values_out, int n, int end_bit, void *stream) {
    return (int)cub::DeviceRadixSort::SortPairs(temp, *temp_bytes, keys_in, keys_out, values_in, values_out, n, 0,
                                                end_bit, (cudaStream_t)stream);
}

extern "C" int nbody_cub_exclusive_sum(void *temp, size_t *temp_bytes, const unsigned long long *in,
                                       unsigned long long *out, int n, void *stream) {
    return (int)cub::DeviceScan::ExclusiveSum(temp, *temp_bytes, in, out, n, (cudaStream_t)stream);
}
