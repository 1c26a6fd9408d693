// task: 4_Matrix_vector_multiplication_
// class: contraction
// KernelBench level 1 #4: torch.matmul(A, B), A of (2048, 1048576) and B of (1048576, 1) in v0.1;
// here K = 32768 (256 MiB). One thread per output row walks its row.
// torch: y = torch.matmul(a.view(M, K), v.view(K, 1)).reshape(-1)
// kernelpro: let M = 2048
// kernelpro: let K = 32768
// kernelpro: grid = min(ceil_div(M, 1), 132 * 4)
// kernelpro: block = 512
// kernelpro: y = out float[M]
// kernelpro: a = in float[M * K] uniform(0, 1)
// kernelpro: v = in float[K] uniform(0, 1)
// kernelpro: m = M
// kernelpro: k = K
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void matvec(float* y, const float* a, const float* v, int m, int k) {
  // One block per unit; its threads split the unit's loops, warps combined through shared memory (kernelpro BlockUnits).
  const int kp_lane = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_team = (int)(blockDim.x * blockDim.y * blockDim.z);
  const int kp_nw = kp_team >> 5;
  for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_u < (long long)(m); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z)) {
    const int row = (int)(kp_u);
    float acc = 0.0f;
    if (kp_lane != 0) acc = 0;
    #pragma unroll 4
    for (int j = 0 + kp_lane; j < k; j += kp_team) acc += a[(size_t)row * k + j] * v[j];
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, kp_o);
    { __shared__ decltype(acc) kp_x[32]; if ((kp_lane & 31) == 0) kp_x[kp_lane >> 5] = acc; __syncthreads(); acc = kp_x[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) acc += kp_x[kp_w]; __syncthreads(); }
    if (kp_lane == 0) {
      y[row] = acc;
    }
    __syncthreads();
  }
}
