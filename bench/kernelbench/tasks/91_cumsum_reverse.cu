// task: 91_cumsum_reverse
// class: scan
// KernelBench level 1 #91: torch.cumsum(x.flip(1), 1).flip(1), x of (32768, 32768) in v0.1; here
// 2048 rows of the same length (256 MiB). One thread per row sums from its end down.
// torch: y = torch.cumsum(x.view(ROWS, COLS).flip(1), dim=1).flip(1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void reverse_cumsum_rows(float* y, const float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.0f;
  for (int c = cols - 1; c >= 0; --c) {
    acc = acc + x[(size_t)r * cols + c];
    y[(size_t)r * cols + c] = acc;
  }
}
