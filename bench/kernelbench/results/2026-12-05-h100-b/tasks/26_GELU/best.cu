// task: 26_GELU_
// class: map
// KernelBench level 1 #26_GELU_: F.gelu(x) (the erf form), x of (4096, 393216) in v0.1, scaled here to (4096, 16384) (256 MiB).
// torch: y = F.gelu(x)
// kernelpro: let B = 4096
// kernelpro: let D = 16384
// kernelpro: let N = B * D
// kernelpro: grid = min(ceil_div(N, 512), 132 * 4)
// kernelpro: block = 512
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void gelu(float* y, const float* x, int n) {
  // grid-stride over the units, four a step through float4 (kernelpro).
  for (long long kp_v = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_v < ((long long)(n)) / 4; kp_v += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const float4 kp_i_x = __ldcs(reinterpret_cast<const float4*>(x) + kp_v);
    float4 kp_o_y;
    {
      const int i = (int)(kp_v * 4 + 0);
      float v = kp_i_x.x;
      kp_o_y.x = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
    {
      const int i = (int)(kp_v * 4 + 1);
      float v = kp_i_x.y;
      kp_o_y.y = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
    {
      const int i = (int)(kp_v * 4 + 2);
      float v = kp_i_x.z;
      kp_o_y.z = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
    {
      const int i = (int)(kp_v * 4 + 3);
      float v = kp_i_x.w;
      kp_o_y.w = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
    __stcs(reinterpret_cast<float4*>(y) + kp_v, kp_o_y);
  }
  for (long long kp_u = ((long long)(n)) / 4 * 4 + (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int i = (int)(kp_u);
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}
