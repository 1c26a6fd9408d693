// task: 88_MinGPTNewGelu
// class: map
// KernelBench level 1 #88: the tanh GELU of minGPT, x of (8192, 8192) as in v0.1.
// torch: y = 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))
// kernelpro: let B = 8192
// kernelpro: let D = 8192
// kernelpro: grid = ceil_div(B * D, 256)
// kernelpro: block = 256
// kernelpro: y = out float[B * D]
// kernelpro: x = in float[B * D] uniform(-1, 1)
// kernelpro: n = B * D
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void new_gelu(float* y, const float* x, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  y[i] = 0.5f * v * (1.0f + tanhf(inner));
}
