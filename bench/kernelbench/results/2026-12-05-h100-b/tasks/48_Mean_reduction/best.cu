// task: 48_Mean_reduction_over_a_dimension
// class: row-reduction
// KernelBench level 1 #48: torch.mean(x, dim=1), x of (128, 4096, 4095) in v0.1; here batch 4
// (256 MiB). A 2D launch: y over the batch, x over the columns; a row pointer walks down.
// torch: y = torch.mean(x.view(B, D1, D2), dim=1).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let D1 = 4096
// kernelpro: let D2 = 4095
// kernelpro: grid = (min(ceil_div(D2, 32), 132 * 8), B)
// kernelpro: block = 512
// kernelpro: y = out float[B * D2]
// kernelpro: x = in float[B * D1 * D2] uniform(0, 1)
// kernelpro: reduce = D1
// kernelpro: inner = D2
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void mean_dim1(float* y, const float* x, int reduce, int inner) {
  // 32 neighbouring units per block, its warps splitting each unit's loop; partials meet in shared memory (kernelpro ColumnUnits).
  const int b = (int)blockIdx.y;
  const int kp_col = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const int kp_row = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5);
  const int kp_nw = (int)((blockDim.x * blockDim.y * blockDim.z) >> 5);
  const long long kp_count = (long long)(inner);
  for (long long kp_base = (long long)blockIdx.x * 32; kp_base < kp_count; kp_base += (long long)gridDim.x * 32) {
    // Lanes past the last unit walk the last one again (every thread meets the barriers) and store nothing.
    const bool kp_active = kp_base + kp_col < kp_count;
    const long long kp_u = kp_active ? kp_base + kp_col : kp_count - 1;
    const int k = (int)(kp_u);
    const float* p = x + (size_t)b * reduce * inner + k;
    float s = 0.0f;
    if (kp_row != 0) s = 0;
    p += (inner) * kp_row;
    for (int j = 0 + kp_row; j < reduce; j += kp_nw, p += (inner) * kp_nw) s += *p;
    { __shared__ decltype(s) kp_x[32][33]; kp_x[kp_row][kp_col] = s; __syncthreads(); s = kp_x[0][kp_col]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) s += kp_x[kp_w][kp_col]; __syncthreads(); }
    if (kp_row == 0 && kp_active) {
      y[(size_t)b * inner + k] = s / reduce;
    }
  }
}
