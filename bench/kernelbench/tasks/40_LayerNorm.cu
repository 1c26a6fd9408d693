// task: 40_LayerNorm
// class: row-reduction
// KernelBench level 1 #40: nn.LayerNorm((64, 256, 256)) on x of (16, 64, 256, 256), as in v0.1.
// The affine weight and bias are random here (KernelBench starts them at ones and zeros), so a
// kernel that ignores them fails. One thread per row of 4M elements, double sums.
// torch: y = F.layer_norm(x.view(ROWS, D), (D,), w, b, 1e-5).reshape(-1)
// kernelpro: let ROWS = 16
// kernelpro: let D = 64 * 256 * 256
// kernelpro: grid = 1
// kernelpro: block = 32
// kernelpro: y = out float[ROWS * D]
// kernelpro: x = in float[ROWS * D] uniform(0, 1)
// kernelpro: w = in float[D] uniform(0.5, 1.5)
// kernelpro: b = in float[D] uniform(-0.5, 0.5)
// kernelpro: rows = ROWS
// kernelpro: d = D
// kernelpro: eps = 1e-5
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void layer_norm_rows(float* y, const float* x, const float* w, const float* b, int rows, int d, float eps) {
  int r = threadIdx.x + blockIdx.x * blockDim.x;
  if (r >= rows) return;
  const float* xr = x + (size_t)r * d;
  float* yr = y + (size_t)r * d;
  double sum = 0.0;
  for (int i = 0; i < d; ++i) sum += xr[i];
  float mean = (float)(sum / d);
  double sq = 0.0;
  for (int i = 0; i < d; ++i) {
    float t = xr[i] - mean;
    sq += (double)t * t;
  }
  float rstd = (float)(1.0 / sqrt(sq / d + eps));
  for (int i = 0; i < d; ++i) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
}
