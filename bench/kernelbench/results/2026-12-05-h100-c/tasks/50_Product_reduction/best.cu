// task: 50_Product_reduction
// class: row-reduction
// KernelBench level 1 #50: torch.prod(x, dim=1), x of (16, 256, 256) in v0.1; here (64, 1024, 1024)
// (256 MiB), values near 1 so the products stay finite. One thread per output walks dim 1.
// torch: y = torch.prod(x.view(B, D, I), dim=1).reshape(-1)
// kernelpro: let B = 64
// kernelpro: let D = 1024
// kernelpro: let I = 1024
// kernelpro: grid = min(ceil_div((B) * (I), 32), 132 * 16)
// kernelpro: block = 256
// kernelpro: y = out float[B * I]
// kernelpro: x = in float[B * D * I] uniform(0.999, 1.001)
// kernelpro: batch = B
// kernelpro: dim = D
// kernelpro: inner = I
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void prod_dim1(float* y, const float* x, int batch, int dim, int inner) {
  // 32 neighbouring units per block, its warps splitting each unit's loop; partials meet in shared memory (kernelpro ColumnUnits).
  const int kp_col = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const int kp_row = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) >> 5);
  const int kp_nw = (int)((blockDim.x * blockDim.y * blockDim.z) >> 5);
  const long long kp_count = (long long)(batch) * (long long)(inner);
  for (long long kp_base = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * 32; kp_base < kp_count; kp_base += ((long long)gridDim.x * gridDim.y * gridDim.z) * 32) {
    // Lanes past the last unit walk the last one again (every thread meets the barriers) and store nothing.
    const bool kp_active = kp_base + kp_col < kp_count;
    const long long kp_u = kp_active ? kp_base + kp_col : kp_count - 1;
    const int i = (int)(kp_u % (inner));
    const int b = (int)((kp_u / ((long long)(inner))));
    float p = 1.0f;
    if (kp_row != 0) p = 1;
    for (int d = 0 + kp_row; d < dim; d += kp_nw) p = p * x[((size_t)b * dim + d) * inner + i];
    { __shared__ decltype(p) kp_x[32][33]; kp_x[kp_row][kp_col] = p; __syncthreads(); p = kp_x[0][kp_col]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) p *= kp_x[kp_w][kp_col]; __syncthreads(); }
    if (kp_row == 0 && kp_active) {
      y[(b * (inner) + i)] = p;
    }
  }
}
