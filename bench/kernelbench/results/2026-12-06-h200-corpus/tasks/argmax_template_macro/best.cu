// Row argmax as a template with an element macro and a 2D launch (rows on x, blockIdx.y splits the rows in two halves).
// class: row-reduction
// torch: out = torch.argmax(vals.view(ROWS, COLS), dim=1).int()
#define ELEM(i, j) vals[(size_t)(i) * ncol + (j)]
// kernelpro: let ROWS = 8192
// kernelpro: let COLS = 2048
// kernelpro: instantiate = argmax_kernel<float>
// kernelpro: grid = (min(ceil_div(ROWS / 2, 8), 132 * 16), 2)
// kernelpro: block = 256
// kernelpro: out = out int[ROWS]
// kernelpro: vals = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: nrow = ROWS
// kernelpro: ncol = COLS
template <typename T>
__global__ void argmax_kernel(int* out, const T* vals, int nrow, int ncol) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const long long kp_by = (long long)blockIdx.y;
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * (blockDim.x * blockDim.y * blockDim.z)) >> 5;
  for (long long kp_u = ((long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(nrow / 2); kp_u += kp_warps) {
    const long long kp_gx = (long long)(kp_u);
    int i = (kp_by * (nrow / 2)) + kp_gx;
    T m = ELEM(i, 0);
    int a = 0;
    #pragma unroll 4
    for (int j = 1 + kp_lane; j < ncol; j += 32) {
      T v = ELEM(i, j); // expect: UncoalescedAccess|RowWalk
      if (v > m) { m = v; a = j; }
    }
    #pragma unroll
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_t = __shfl_xor_sync(0xffffffffu, m, kp_o); const auto kp_j = __shfl_xor_sync(0xffffffffu, a, kp_o); if (kp_t > m || (kp_t == m && kp_j < a)) { m = kp_t; a = kp_j; } }
    if (kp_lane == 0) {
      out[i] = a;
    }
    __syncwarp();
  }
}
