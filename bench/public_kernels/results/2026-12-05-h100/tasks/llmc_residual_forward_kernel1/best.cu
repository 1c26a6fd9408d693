// task: llmc_residual_forward_kernel1
// class: map
// karpathy/llm.c dev/cuda/residual_forward.cu: residual_forward_kernel1, verbatim below the spec.
#include <cuda_runtime.h>
#define floatX float
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)
// torch: out = inp1 + inp2
// kernelpro: let N = 8 * 1024 * 768
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: out = out float[N]
// kernelpro: inp1 = in float[N] uniform(-1, 1)
// kernelpro: inp2 = in float[N] uniform(-1, 1)
// kernelpro: N = N
// kernelpro: check rtol=1e-5 atol=1e-5
__global__ void residual_forward_kernel1(floatX* out, const floatX* inp1, const floatX* inp2, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    // L2 prefetch of what the same thread of the block kp_ahead blocks later (about two waves) loads.
    const int kp_ahead = max(1, (int)__fdividef(524288.0f, (float)(blockDim.x * blockDim.y * blockDim.z)));
    if (blockIdx.x + kp_ahead < gridDim.x && ((idx + kp_ahead * (int)blockDim.x) < N)) asm volatile("prefetch.global.L2 [%0];" :: "l"(&inp1[idx + kp_ahead * (int)blockDim.x]));
    if (blockIdx.x + kp_ahead < gridDim.x && ((idx + kp_ahead * (int)blockDim.x) < N)) asm volatile("prefetch.global.L2 [%0];" :: "l"(&inp2[idx + kp_ahead * (int)blockDim.x]));
    if (idx < N) {
        out[idx] = (floatX)((float)inp1[idx] + (float)inp2[idx]);
    }
}
