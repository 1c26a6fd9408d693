// task: 47_Sum_reduction_over_a_dimension
// class: row-reduction
// KernelBench level 1 #47: torch.sum(x, dim=1, keepdim=True), x of (128, 4096, 4095) in v0.1; here
// batch 4 (256 MiB). One thread per output walks the 4096 rows of its column.
// torch: y = torch.sum(x.view(B, D1, D2), dim=1, keepdim=True).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let D1 = 4096
// kernelpro: let D2 = 4095
// kernelpro: grid = min(ceil_div((B) * (D2), 32), 132 * 16)
// kernelpro: block = 256
// kernelpro: y = out float[B * D2]
// kernelpro: x = in float[B * D1 * D2] uniform(0, 1)
// kernelpro: batch = B
// kernelpro: reduce = D1
// kernelpro: inner = D2
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void sum_dim1(float* y, const float* x, int batch, int reduce, int inner) {
  // 32 neighbouring units per block, its warps splitting each unit's loop; partials meet in shared memory (kernelpro ColumnUnits).
  const int kp_col = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const int kp_row = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5);
  const int kp_nw = (int)((blockDim.x * blockDim.y * blockDim.z) >> 5);
  const long long kp_count = (long long)(batch) * (long long)(inner);
  for (long long kp_base = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * 32; kp_base < kp_count; kp_base += ((long long)gridDim.x * gridDim.y * gridDim.z) * 32) {
    // Lanes past the last unit walk the last one again (every thread meets the barriers) and store nothing.
    const bool kp_active = kp_base + kp_col < kp_count;
    const long long kp_u = kp_active ? kp_base + kp_col : kp_count - 1;
    const int k = (int)(kp_u % (inner));
    const int b = (int)((kp_u / ((long long)(inner))));
    float s = 0.0f;
    if (kp_row != 0) s = 0;
    for (int j = 0 + kp_row; j < reduce; j += kp_nw) s += x[((size_t)b * reduce + j) * inner + k];
    { __shared__ decltype(s) kp_x[32][33]; kp_x[kp_row][kp_col] = s; __syncthreads(); s = kp_x[0][kp_col]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) s += kp_x[kp_w][kp_col]; __syncthreads(); }
    if (kp_row == 0 && kp_active) {
      y[(b * (inner) + k)] = s;
    }
  }
}
