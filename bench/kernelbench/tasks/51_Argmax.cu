// task: 51_Argmax_over_a_dimension
// class: row-reduction
// KernelBench level 1 #51: torch.argmax(x, dim=1) (int64), x of (128, 4096, 4095) in v0.1; here
// batch 4 (256 MiB). One thread per output; the first maximum wins, as in PyTorch.
// torch: idx = torch.argmax(x.view(B, D1, D2), dim=1).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let D1 = 4096
// kernelpro: let D2 = 4095
// kernelpro: grid = ceil_div(B * D2, 256)
// kernelpro: block = 256
// kernelpro: idx = out int64[B * D2]
// kernelpro: x = in float[B * D1 * D2] uniform(0, 1)
// kernelpro: batch = B
// kernelpro: reduce = D1
// kernelpro: inner = D2
__global__ void argmax_dim1(long long* idx, const float* x, int batch, int reduce, int inner) {
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= batch * inner) return;
  int b = o / inner, k = o % inner;
  float best = -INFINITY;
  long long at = 0;
  for (int j = 0; j < reduce; ++j) {
    float v = x[((size_t)b * reduce + j) * inner + k];
    if (v > best) {
      best = v;
      at = j;
    }
  }
  idx[o] = at;
}
