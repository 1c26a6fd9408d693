// task: 15_Matmul_for_lower_triangular_matrices
// class: contraction
// KernelBench level 1 #15: torch.tril(A @ B) for lower-triangular A, B of (4096, 4096) in v0.1;
// here (2048, 2048). One thread per output (1D launch split by / and %), k from j up to i; the
// upper part is zero (the loop does not run).
// torch: y = torch.tril(torch.tril(A.view(N, N)) @ torch.tril(B.view(N, N))).reshape(-1)
// kernelpro: let N = 2048
// kernelpro: grid = ceil_div(N * N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N * N]
// kernelpro: A = in float[N * N] uniform(-1, 1)
// kernelpro: B = in float[N * N] uniform(-1, 1)
// kernelpro: n = N
// kernelpro: check rtol=1e-3 atol=1e-3
__global__ void tril_matmul(float* y, const float* A, const float* B, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n * n) {
    int row = t / n;
    int col = t % n;
    float acc = 0;
    for (int k = col; k <= row; k++) acc += A[row * n + k] * B[k * n + col];
    y[t] = acc;
  }
}
