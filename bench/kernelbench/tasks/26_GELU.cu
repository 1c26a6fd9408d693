// task: 26_GELU_
// class: map
// KernelBench level 1 #26_GELU_: F.gelu(x) (the erf form), x of (4096, 393216) in v0.1, scaled here to (4096, 16384) (256 MiB).
// torch: y = F.gelu(x)
// kernelpro: let B = 4096
// kernelpro: let D = 16384
// kernelpro: let N = B * D
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void gelu(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}
