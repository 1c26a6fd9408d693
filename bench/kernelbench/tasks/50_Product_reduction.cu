// task: 50_Product_reduction
// class: row-reduction
// KernelBench level 1 #50: torch.prod(x, dim=1), x of (16, 256, 256) in v0.1; here (64, 1024, 1024)
// (256 MiB), values near 1 so the products stay finite. One thread per output walks dim 1.
// torch: y = torch.prod(x.view(B, D, I), dim=1).reshape(-1)
// kernelpro: let B = 64
// kernelpro: let D = 1024
// kernelpro: let I = 1024
// kernelpro: grid = ceil_div(B * I, 256)
// kernelpro: block = 256
// kernelpro: y = out float[B * I]
// kernelpro: x = in float[B * D * I] uniform(0.999, 1.001)
// kernelpro: batch = B
// kernelpro: dim = D
// kernelpro: inner = I
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void prod_dim1(float* y, const float* x, int batch, int dim, int inner) {
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= batch * inner) return;
  int b = o / inner;
  int i = o % inner;
  float p = 1.0f;
  for (int d = 0; d < dim; d++) p = p * x[((size_t)b * dim + d) * inner + i];
  y[o] = p;
}
