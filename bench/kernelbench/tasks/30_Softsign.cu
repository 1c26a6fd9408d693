// task: 30_Softsign
// class: map
// KernelBench level 1 #30_Softsign: x / (1 + |x|), x of (4096, 393216) in v0.1, scaled here to (4096, 16384) (256 MiB).
// torch: y = x / (1 + torch.abs(x))
// kernelpro: let B = 4096
// kernelpro: let D = 16384
// kernelpro: let N = B * D
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void softsign(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v / (1.0f + fabsf(v));
  }
}
