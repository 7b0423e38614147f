#include "grid.cuh" // the encoding's device functions, offered by gridjit as a header

// Each thread encodes one point and writes its features as floats.
__global__ void encode(const float* x, const grid_config::param_t* params, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    grid_in_t p;
    for (int d = 0; d < grid_config::D; ++d) p.v[d] = x[i * grid_config::D + d];
    const grid_out_t f = grid(p, params, nullptr);
    for (int k = 0; k < grid_config::N_OUT; ++k) y[i * grid_config::N_OUT + k] = gj_to_float(f.v[k]);
}
