// task: 93_masked_cumsum
// class: scan
// KernelBench level 1 #93: torch.cumsum(x * mask, dim=1) with a random boolean mask, x of
// (32768, 32768) in v0.1; here 2048 rows of the same length (256 MiB; the mask as bytes).
// A grid-stride loop over rows; each row adds only its masked elements.
// torch: y = torch.cumsum(x.view(ROWS, COLS) * mask.view(ROWS, COLS).float(), dim=1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = ceil_div(ROWS, 256)
// kernelpro: block = 256
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: mask = in uint8[ROWS * COLS] randint(0, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void masked_cumsum_rows(float* y, const float* x, const unsigned char* mask, int rows, int cols) {
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += blockDim.x * gridDim.x) {
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
      size_t at = (size_t)r * cols + c;
      if (mask[at]) acc += x[at];
      y[at] = acc;
    }
  }
}
