// task: 94_MSELoss
// class: scalar-reduction
// KernelBench level 1 #94: torch.mean((p - t) ** 2), p and t of (32768, 32768) in v0.1; here 2048
// rows of the same length (2 x 256 MiB). One thread per element adds its term to one double
// accumulator (a float one loses the small terms at this size); the result is kept in double.
// torch: out = torch.mean((p - t) ** 2).reshape(1)
// kernelpro: let ROWS = 2048
// kernelpro: let COLS = 32768
// kernelpro: grid = ceil_div(ROWS * COLS, 256)
// kernelpro: block = 256
// kernelpro: out = inout double[1] zeros
// kernelpro: p = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: t = in float[ROWS * COLS] uniform(0, 1)
// kernelpro: n = ROWS * COLS
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void mse_loss(double* out, const float* p, const float* t, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float d = p[i] - t[i];
    atomicAdd(out, (double)(d * d) / n);
  }
}
