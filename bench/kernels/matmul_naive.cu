// Naive matrix multiply: no tiling, every thread re-reads a row and a column.
// kernelpro: let N = 2048
// kernelpro: grid = (N / 16, N / 16)
// kernelpro: block = (16, 16)
// kernelpro: A = in float[N * N]
// kernelpro: B = in float[N * N]
// kernelpro: C = out float[N * N]
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-3
// kernelpro: op = gemm N N N row
__global__ void matmul_naive(float* A, float* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    float acc = 0.f;
    for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
  }
}
