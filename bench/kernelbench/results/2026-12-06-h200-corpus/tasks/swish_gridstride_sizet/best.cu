// Swish (x * sigmoid(x)) with a grid-stride loop and size_t indices.
// class: map
// torch: y = x * torch.sigmoid(x)
// kernelpro: let N = 1 << 25
// kernelpro: grid = ceil_div(N, 1024)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-3, 3)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void swish_kernel(float* y, const float* x, size_t n) {
  // grid-stride over the units, four a step through float4 (kernelpro).
  for (long long kp_v = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_v < ((long long)(n)) / 4; kp_v += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const float4 kp_i_x = __ldcs(reinterpret_cast<const float4*>(x) + kp_v);
    float4 kp_o_y;
    {
      const size_t i = (size_t)(kp_v * 4 + 0);
      float v = kp_i_x.x;
      kp_o_y.x = v / (1.0f + expf(-v));
    }
    {
      const size_t i = (size_t)(kp_v * 4 + 1);
      float v = kp_i_x.y;
      kp_o_y.y = v / (1.0f + expf(-v));
    }
    {
      const size_t i = (size_t)(kp_v * 4 + 2);
      float v = kp_i_x.z;
      kp_o_y.z = v / (1.0f + expf(-v));
    }
    {
      const size_t i = (size_t)(kp_v * 4 + 3);
      float v = kp_i_x.w;
      kp_o_y.w = v / (1.0f + expf(-v));
    }
    __stcs(reinterpret_cast<float4*>(y) + kp_v, kp_o_y);
  }
  for (long long kp_u = ((long long)(n)) / 4 * 4 + (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const size_t i = (size_t)(kp_u);
    float v = x[i];
    y[i] = v / (1.0f + expf(-v));
  }
}
