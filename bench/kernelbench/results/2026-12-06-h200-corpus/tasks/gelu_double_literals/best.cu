// GELU written from the formula with double literals and M_PI: the math runs in FP64.
// class: map
// torch: out = F.gelu(inp, approximate='tanh')
#include <math.h>
// kernelpro: let N = 1 << 25
// kernelpro: grid = ceil_div(N, 1024)
// kernelpro: block = 256
// kernelpro: out = out float[N]
// kernelpro: inp = in float[N] uniform(-3, 3)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void gelu_kernel(float* __restrict__ out, const float* __restrict__ inp, long n) {
  // grid-stride over the units, four a step through float4 (kernelpro).
  for (long long kp_v = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_v < ((long long)(n)) / 4; kp_v += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const float4 kp_i_inp = __ldcs(reinterpret_cast<const float4*>(inp) + kp_v);
    float4 kp_o_out;
    {
      const long idx = (long)(kp_v * 4 + 0);
      float v = kp_i_inp.x;
      kp_o_out.x = 0.5f * v * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (v + 0.044715f * v * v * v)));
    }
    {
      const long idx = (long)(kp_v * 4 + 1);
      float v = kp_i_inp.y;
      kp_o_out.y = 0.5f * v * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (v + 0.044715f * v * v * v)));
    }
    {
      const long idx = (long)(kp_v * 4 + 2);
      float v = kp_i_inp.z;
      kp_o_out.z = 0.5f * v * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (v + 0.044715f * v * v * v)));
    }
    {
      const long idx = (long)(kp_v * 4 + 3);
      float v = kp_i_inp.w;
      kp_o_out.w = 0.5f * v * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (v + 0.044715f * v * v * v)));
    }
    __stcs(reinterpret_cast<float4*>(out) + kp_v, kp_o_out);
  }
  for (long long kp_u = ((long long)(n)) / 4 * 4 + (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const long idx = (long)(kp_u);
    float v = inp[idx];
    out[idx] = 0.5f * v * (1.0f + tanhf(sqrtf(2.0f / M_PI) * (v + 0.044715f * v * v * v)));
  }
}
