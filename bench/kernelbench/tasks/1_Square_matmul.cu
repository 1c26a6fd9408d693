// task: 1_Square_matrix_multiplication_
// class: contraction
// KernelBench level 1 #1: torch.matmul(A, B), A and B of (4096, 4096) fp32 as in v0.1. One thread
// per output of a 16x16 block, a dot-product loop over K.
// torch: c = torch.matmul(a.view(N, N), b.view(N, N)).reshape(-1)
// kernelpro: let N = 4096
// kernelpro: grid = (ceil_div(N, 16), ceil_div(N, 16))
// kernelpro: block = (16, 16)
// kernelpro: op = gemm N N N row
// kernelpro: c = out float[N * N]
// kernelpro: a = in float[N * N] uniform(0, 1)
// kernelpro: b = in float[N * N] uniform(0, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void matmul_square(float* c, const float* a, const float* b, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
  c[row * n + col] = acc;
}
