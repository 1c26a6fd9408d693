// task: 14_Matmul_for_upper_triangular_matrices
// class: contraction
// KernelBench level 1 #14: torch.triu(A @ B) for upper-triangular A, B of (4096, 4096) in v0.1;
// here (2048, 2048). One thread per output sums only k in [i, j], under `if (i <= j)`.
// torch: y = torch.triu(torch.triu(A.view(N, N)) @ torch.triu(B.view(N, N))).reshape(-1)
// kernelpro: let N = 2048
// kernelpro: grid = (ceil_div(N, 16), ceil_div(N, 16))
// kernelpro: block = (16, 16)
// kernelpro: y = out float[N * N]
// kernelpro: A = in float[N * N] uniform(-1, 1)
// kernelpro: B = in float[N * N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-3 atol=1e-3
__global__ void triu_matmul(float* y, const float* A, const float* B, int n) {
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || j >= n) return;
  float s = 0.0f;
  if (i <= j)
    for (int k = i; k <= j; ++k) s += A[i * n + k] * B[k * n + j];
  y[i * n + j] = s;
}
