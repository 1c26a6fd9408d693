// task: 4_Matrix_vector_multiplication_
// class: contraction
// KernelBench level 1 #4: torch.matmul(A, B), A of (2048, 1048576) and B of (1048576, 1) in v0.1;
// here K = 32768 (256 MiB). One thread per output row walks its row.
// torch: y = torch.matmul(a.view(M, K), v.view(K, 1)).reshape(-1)
// kernelpro: let M = 2048
// kernelpro: let K = 32768
// kernelpro: grid = ceil_div(M, 256)
// kernelpro: block = 256
// kernelpro: y = out float[M]
// kernelpro: a = in float[M * K] uniform(0, 1)
// kernelpro: v = in float[K] uniform(0, 1)
// kernelpro: m = M
// kernelpro: k = K
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void matvec(float* y, const float* a, const float* v, int m, int k) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m) return;
  float acc = 0.0f;
  for (int j = 0; j < k; ++j) acc += a[(size_t)row * k + j] * v[j];
  y[row] = acc;
}
