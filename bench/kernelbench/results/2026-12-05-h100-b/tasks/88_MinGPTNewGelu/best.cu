// task: 88_MinGPTNewGelu
// class: map
// KernelBench level 1 #88: the tanh GELU of minGPT, x of (8192, 8192) as in v0.1.
// torch: y = 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))
// kernelpro: let B = 8192
// kernelpro: let D = 8192
// kernelpro: grid = min(ceil_div((B * D), 512), 132 * 4)
// kernelpro: block = 512
// kernelpro: y = out float[B * D]
// kernelpro: x = in float[B * D] uniform(-1, 1)
// kernelpro: n = B * D
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void new_gelu(float* y, const float* x, long n) {
  // grid-stride over the units, four a step through float4 (kernelpro).
  for (long long kp_v = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_v < ((long long)(n)) / 4; kp_v += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const float4 kp_i_x = __ldcs(reinterpret_cast<const float4*>(x) + kp_v);
    float4 kp_o_y;
    {
      const long i = (long)(kp_v * 4 + 0);
      float v = kp_i_x.x;
      float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      kp_o_y.x = 0.5f * v * (1.0f + tanhf(inner));
    }
    {
      const long i = (long)(kp_v * 4 + 1);
      float v = kp_i_x.y;
      float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      kp_o_y.y = 0.5f * v * (1.0f + tanhf(inner));
    }
    {
      const long i = (long)(kp_v * 4 + 2);
      float v = kp_i_x.z;
      float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      kp_o_y.z = 0.5f * v * (1.0f + tanhf(inner));
    }
    {
      const long i = (long)(kp_v * 4 + 3);
      float v = kp_i_x.w;
      float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
      kp_o_y.w = 0.5f * v * (1.0f + tanhf(inner));
    }
    __stcs(reinterpret_cast<float4*>(y) + kp_v, kp_o_y);
  }
  for (long long kp_u = ((long long)(n)) / 4 * 4 + (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const long i = (long)(kp_u);
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    y[i] = 0.5f * v * (1.0f + tanhf(inner));
  }
}
