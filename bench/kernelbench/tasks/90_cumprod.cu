// task: 90_cumprod
// class: scan
// KernelBench level 1 #90: torch.cumprod(x, dim=1), x of (32768, 32768) in v0.1; here 2048 rows of
// the same length (256 MiB), values near 1 so the products stay finite. One thread per row
// multiplies along it through row pointers.
// torch: y = torch.cumprod(x.view(ROWS, COLS), dim=1).reshape(-1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = ceil_div(ROWS, 128)
// kernelpro: block = 128
// kernelpro: y = out float[ROWS * COLS]
// kernelpro: x = in float[ROWS * COLS] uniform(0.999, 1.001)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-3 atol=1e-5
__global__ void cumprod_rows(float* y, const float* x, long rows, long cols) {
  long r = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (r < rows) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float p = 1.0f;
    for (long c = 0; c < cols; c++) {
      p *= xr[c];
      yr[c] = p;
    }
  }
}
