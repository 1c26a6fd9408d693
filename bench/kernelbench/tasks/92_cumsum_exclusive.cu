// task: 92_cumsum_exclusive
// class: scan
// KernelBench level 1 #92: exclusive cumsum along dim 1 (the corrected form: same shape as x, first
// column 0), x of (32768, 32768) in v0.1; here 2048 rows of the same length (256 MiB).
// torch: y = torch.cat((torch.zeros_like(x.view(ROWS, COLS)[:, :1]), torch.cumsum(x.view(ROWS, COLS)[:, :-1], dim=1)), dim=1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void exclusive_cumsum_rows(float* __restrict__ y, const float* __restrict__ x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + (long)r * cols;
  float* yr = y + (long)r * cols;
  float acc = 0.0f;
  for (int c = 0; c < cols; ++c) {
    yr[c] = acc;
    acc += xr[c];
  }
}
