// task: 24_LogSoftmax
// class: row-reduction
// KernelBench level 1 #24: torch.log_softmax(x, dim=1), x of (4096, 393216) in v0.1; here 128 rows
// of the same length (192 MiB). One thread per row, index arithmetic instead of row pointers.
// torch: y = torch.log_softmax(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 128
// kernelpro: let COLS = 393216
// kernelpro: grid = ceil_div(ROWS, 128)
// kernelpro: block = 128
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void log_softmax_rows(float* y, const float* x, long rows, long cols) {
  long r = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float m = -INFINITY;
  for (long c = 0; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
  double s = 0.0;
  for (long c = 0; c < cols; ++c) s += exp((double)(x[r * cols + c] - m));
  float lse = m + (float)log(s);
  for (long c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] - lse;
}
