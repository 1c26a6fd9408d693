// GELU (tanh approximation), first version: one element per thread, scalar loads and stores.
// class: map
// torch: y = F.gelu(x, approximate='tanh')
#define GELU_SCALING_FACTOR 0.7978845608f
// kernelpro: let N = 1 << 25
// kernelpro: grid = ceil_div(N, 1024)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-3, 3)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void gelu_forward_v1(float* y, const float* x, int n) {
  // grid-stride over the units, four a step through float4 (kernelpro).
  for (long long kp_v = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_v < ((long long)(n)) / 4; kp_v += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const float4 kp_i_x = __ldcs(reinterpret_cast<const float4*>(x) + kp_v);
    float4 kp_o_y;
    {
      const int i = (int)(kp_v * 4 + 0);
      float xi = kp_i_x.x;
      float cube = 0.044715f * xi * xi * xi;
      kp_o_y.x = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
    {
      const int i = (int)(kp_v * 4 + 1);
      float xi = kp_i_x.y;
      float cube = 0.044715f * xi * xi * xi;
      kp_o_y.y = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
    {
      const int i = (int)(kp_v * 4 + 2);
      float xi = kp_i_x.z;
      float cube = 0.044715f * xi * xi * xi;
      kp_o_y.z = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
    {
      const int i = (int)(kp_v * 4 + 3);
      float xi = kp_i_x.w;
      float cube = 0.044715f * xi * xi * xi;
      kp_o_y.w = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
    }
    __stcs(reinterpret_cast<float4*>(y) + kp_v, kp_o_y);
  }
  for (long long kp_u = ((long long)(n)) / 4 * 4 + (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int i = (int)(kp_u);
    float xi = x[i];
    float cube = 0.044715f * xi * xi * xi;
    y[i] = 0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube)));
  }
}
