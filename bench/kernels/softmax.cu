// Row softmax, one thread per row, with double-precision exp().
// kernelpro: let ROWS = 16384
// kernelpro: let COLS = 1024
// kernelpro: tune B in [128, 64, 256]
// kernelpro: grid = ceil_div(ROWS, B)
// kernelpro: block = B
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(-4, 4)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-6
__global__ void softmax_rows(float* y, float* x, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float m = -1e30f;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, x[r * cols + c]);
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) s += exp(x[r * cols + c] - m);
  for (int c = 0; c < cols; ++c) y[r * cols + c] = exp(x[r * cols + c] - m) / s;
}
