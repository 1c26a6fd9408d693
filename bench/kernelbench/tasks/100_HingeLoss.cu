// task: 100_HingeLoss
// class: scalar-reduction
// KernelBench level 1 #100: torch.mean(torch.clamp(1 - p * t, min=0)) with t broadcast along the
// rows, p of (32768, 32768) in v0.1; here 2048 rows of the same length (256 MiB). KernelBench's
// targets are -1 or +1; here uniform in [-1, 1] (the spec has no two-value fill; same work).
// torch: out = torch.mean(torch.clamp(1 - p.view(ROWS, COLS) * t.view(1, COLS), min=0)).reshape(1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = ceil_div(ROWS * COLS, 256)
// kernelpro: block = 256
// kernelpro: out = inout double[1] zeros
// kernelpro: p = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: t = in float[COLS] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void hinge_loss(double* out, const float* p, const float* t, int rows, int cols) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  size_t n = (size_t)rows * cols;
  if (i >= n) return;
  float v = fmaxf(1.0f - p[i] * t[i % cols], 0.0f);
  atomicAdd(out, (double)v / (double)n);
}
