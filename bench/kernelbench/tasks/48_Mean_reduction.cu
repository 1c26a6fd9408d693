// task: 48_Mean_reduction_over_a_dimension
// class: row-reduction
// KernelBench level 1 #48: torch.mean(x, dim=1), x of (128, 4096, 4095) in v0.1; here batch 4
// (256 MiB). A 2D launch: y over the batch, x over the columns; a row pointer walks down.
// torch: y = torch.mean(x.view(B, D1, D2), dim=1).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let D1 = 4096
// kernelpro: let D2 = 4095
// kernelpro: grid = (ceil_div(D2, 128), B)
// kernelpro: block = 128
// kernelpro: y = out float[B * D2]
// kernelpro: x = in float[B * D1 * D2] uniform(0, 1)
// kernelpro: reduce = D1
// kernelpro: inner = D2
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void mean_dim1(float* y, const float* x, int reduce, int inner) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  int b = blockIdx.y;
  if (k >= inner) return;
  const float* p = x + (size_t)b * reduce * inner + k;
  float s = 0.0f;
  for (int j = 0; j < reduce; ++j, p += inner) s += *p;
  y[(size_t)b * inner + k] = s / reduce;
}
