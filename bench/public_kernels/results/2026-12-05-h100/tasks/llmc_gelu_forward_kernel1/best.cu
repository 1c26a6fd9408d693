// task: llmc_gelu_forward_kernel1
// class: map
// karpathy/llm.c dev/cuda/gelu_forward.cu: gelu_forward_kernel1, verbatim below the spec.
#include <cuda_runtime.h>
#define floatX float
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)
// torch: out = F.gelu(inp, approximate='tanh')
// kernelpro: let N = 8 * 1024 * 768
// kernelpro: grid = min(ceil_div(N, 512), 132 * 4)
// kernelpro: block = 512
// kernelpro: out = out float[N]
// kernelpro: inp = in float[N] uniform(-3, 3)
// kernelpro: N = N
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void gelu_forward_kernel1(floatX* __restrict__ out, const floatX* __restrict__ inp, int N) {
  // grid-stride over the units (kernelpro).
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(N); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int i = (int)(kp_u);
    float xi = inp[i];
    float cube = 0.044715f * xi * xi * xi;
    out[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
  }
}
