// task: 47_Sum_reduction_over_a_dimension
// class: row-reduction
// KernelBench level 1 #47: torch.sum(x, dim=1, keepdim=True), x of (128, 4096, 4095) in v0.1; here
// batch 4 (256 MiB). One thread per output walks the 4096 rows of its column.
// torch: y = torch.sum(x.view(B, D1, D2), dim=1, keepdim=True).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let D1 = 4096
// kernelpro: let D2 = 4095
// kernelpro: grid = ceil_div(B * D2, 256)
// kernelpro: block = 256
// kernelpro: y = out float[B * D2]
// kernelpro: x = in float[B * D1 * D2] uniform(0, 1)
// kernelpro: batch = B
// kernelpro: reduce = D1
// kernelpro: inner = D2
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void sum_dim1(float* y, const float* x, int batch, int reduce, int inner) {
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= batch * inner) return;
  int b = o / inner, k = o % inner;
  float s = 0.0f;
  for (int j = 0; j < reduce; ++j) s += x[((size_t)b * reduce + j) * inner + k];
  y[o] = s;
}
