// Summing the devices' parameter gradients: a[i] += b[i], in fp32, rounded once.
// The encoding's header brings the shared device types (gj_half, gj_to_float, ...);
// no encoding function is called here.
#include "grid.cuh"

template <typename T>
__global__ void add_into(T* __restrict__ a, const T* __restrict__ b, unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        a[i] = gj_from_float<T>(gj_to_float(a[i]) + gj_to_float(b[i]));
    }
}
