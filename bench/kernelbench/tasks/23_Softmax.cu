// task: 23_Softmax
// class: row-reduction
// KernelBench level 1 #23: torch.softmax(x, dim=1), x of (4096, 393216) in v0.1; here 128 rows of the
// same length (192 MiB). One thread per row, three passes, a double sum.
// torch: y = torch.softmax(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 128
// kernelpro: let COLS = 393216
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void softmax_rows(float* y, const float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + (size_t)r * cols;
  float* yr = y + (size_t)r * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
  double s = 0.0;
  for (int c = 0; c < cols; ++c) s += expf(xr[c] - m);
  float inv = (float)(1.0 / s);
  for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) * inv;
}
