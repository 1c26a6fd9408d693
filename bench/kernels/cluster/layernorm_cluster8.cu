// ClusterUnits' form: one cluster of 8 blocks per unit (r): 3 loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions (sm_90; a launch whose grid is not a multiple of 8 blocks in x fails); launch block = 1024, grid = min(ROWS * 8, 132 * 2)
#include <cooperative_groups.h>
// task: 40_LayerNorm
// class: row-reduction
// KernelBench level 1 #40: nn.LayerNorm((64, 256, 256)) on x of (16, 64, 256, 256), as in v0.1.
// The affine weight and bias are random here (KernelBench starts them at ones and zeros), so a
// kernel that ignores them fails. One thread per row of 4M elements, double sums.
// torch: y = F.layer_norm(x.view(ROWS, D), (D,), w, b, 1e-5).reshape(-1)
// kernelpro: let ROWS = 16
// kernelpro: let D = 64 * 256 * 256
// kernelpro: grid = min(ROWS * 8, 132 * 2)
// kernelpro: block = 1024
// kernelpro: y = out float[ROWS * D]
// kernelpro: x = in float[ROWS * D] uniform(0, 1)
// kernelpro: w = in float[D] uniform(0.5, 1.5)
// kernelpro: b = in float[D] uniform(-0.5, 0.5)
// kernelpro: rows = ROWS
// kernelpro: d = D
// kernelpro: eps = 1e-5
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void __attribute__((cluster_dims(8, 1, 1))) __launch_bounds__(1024) layer_norm_rows(float* y, const float* x, const float* w, const float* b, int rows, int d, float eps) {
  // One thread-block cluster per unit; its blocks' threads split the unit's loops, warps combined through shared memory and blocks through distributed shared memory (kernelpro ClusterUnits).
  const cooperative_groups::cluster_group kp_cluster = cooperative_groups::this_cluster();
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_nw = (int)(blockDim.x * blockDim.y * blockDim.z) >> 5;
  const unsigned kp_cn = kp_cluster.num_blocks();
  const int kp_lane = (int)kp_cluster.block_rank() * (int)(blockDim.x * blockDim.y * blockDim.z) + kp_tid;
  const int kp_team = (int)kp_cn * (int)(blockDim.x * blockDim.y * blockDim.z);
  // Blocks of a cluster are consecutive in x and the grid's x is a multiple of the cluster's.
  for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) / kp_cn; kp_u < (long long)(rows); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z) / kp_cn) {
    const int r = (int)(kp_u);
    const float* xr = x + (size_t)r * d;
    float* yr = y + (size_t)r * d;
    double sum = 0.0;
    if (kp_lane != 0) sum = 0;
    #pragma unroll 4
    for (int i = 0 + kp_lane; i < d; i += kp_team) sum += xr[i];
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, kp_o);
    { __shared__ decltype(sum) kp_x[32]; if ((kp_tid & 31) == 0) { kp_x[kp_tid >> 5] = sum; } __syncthreads(); sum = kp_x[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) { sum += kp_x[kp_w]; } __syncthreads(); }
    { __shared__ decltype(sum) kp_c0; if (kp_tid == 0) { kp_c0 = sum; } kp_cluster.sync(); sum = *kp_cluster.map_shared_rank(&kp_c0, 0u); for (unsigned kp_r = 1; kp_r < kp_cn; ++kp_r) { const auto kp_p0 = *kp_cluster.map_shared_rank(&kp_c0, kp_r); sum += kp_p0; } kp_cluster.sync(); }
    float mean = (float)(sum / d);
    double sq = 0.0;
    if (kp_lane != 0) sq = 0;
    #pragma unroll 4
    for (int i = 0 + kp_lane; i < d; i += kp_team) {
      float t = xr[i] - mean;
      sq += (double)t * t;
    }
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, kp_o);
    { __shared__ decltype(sq) kp_x[32]; if ((kp_tid & 31) == 0) { kp_x[kp_tid >> 5] = sq; } __syncthreads(); sq = kp_x[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) { sq += kp_x[kp_w]; } __syncthreads(); }
    { __shared__ decltype(sq) kp_c0; if (kp_tid == 0) { kp_c0 = sq; } kp_cluster.sync(); sq = *kp_cluster.map_shared_rank(&kp_c0, 0u); for (unsigned kp_r = 1; kp_r < kp_cn; ++kp_r) { const auto kp_p0 = *kp_cluster.map_shared_rank(&kp_c0, kp_r); sq += kp_p0; } kp_cluster.sync(); }
    float rstd = (float)(1.0 / sqrt(sq / d + eps));
    #pragma unroll 4
    for (int i = 0 + kp_lane; i < d; i += kp_team) yr[i] = (xr[i] - mean) * rstd * w[i] + b[i];
    kp_cluster.sync();
  }
}
