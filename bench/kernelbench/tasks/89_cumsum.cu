// task: 89_cumsum
// class: scan
// KernelBench level 1 #89: torch.cumsum(x, dim=1), x of (32768, 32768) in v0.1; here 2048 rows of
// the same length (256 MiB). One thread per row scans it serially.
// torch: y = torch.cumsum(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void cumsum_rows(float* y, const float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.0f;
  for (int c = 0; c < cols; ++c) {
    acc += x[(size_t)r * cols + c];
    y[(size_t)r * cols + c] = acc;
  }
}
