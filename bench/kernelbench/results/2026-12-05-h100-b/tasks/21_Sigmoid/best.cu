// task: 21_Sigmoid
// class: map
// KernelBench level 1 #21_Sigmoid: torch.sigmoid(x), x of (4096, 393216) in v0.1, scaled here to (4096, 16384) (256 MiB).
// torch: y = torch.sigmoid(x)
// kernelpro: let B = 4096
// kernelpro: let D = 16384
// kernelpro: let N = B * D
// kernelpro: grid = min(ceil_div(N, 512), 132 * 4)
// kernelpro: block = 512
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void sigmoid(float* y, const float* x, int n) {
  // grid-stride over the units, four a step through float4 (kernelpro).
  for (long long kp_v = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_v < ((long long)(n)) / 4; kp_v += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const float4 kp_i_x = __ldcs(reinterpret_cast<const float4*>(x) + kp_v);
    float4 kp_o_y;
    {
      const int i = (int)(kp_v * 4 + 0);
      float v = kp_i_x.x;
      kp_o_y.x = 1.0f / (1.0f + expf(-v));
    }
    {
      const int i = (int)(kp_v * 4 + 1);
      float v = kp_i_x.y;
      kp_o_y.y = 1.0f / (1.0f + expf(-v));
    }
    {
      const int i = (int)(kp_v * 4 + 2);
      float v = kp_i_x.z;
      kp_o_y.z = 1.0f / (1.0f + expf(-v));
    }
    {
      const int i = (int)(kp_v * 4 + 3);
      float v = kp_i_x.w;
      kp_o_y.w = 1.0f / (1.0f + expf(-v));
    }
    __stcs(reinterpret_cast<float4*>(y) + kp_v, kp_o_y);
  }
  for (long long kp_u = ((long long)(n)) / 4 * 4 + (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int i = (int)(kp_u);
    float v = x[i];
    y[i] = 1.0f / (1.0f + expf(-v));
  }
}
