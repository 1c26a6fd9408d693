// The naive fp32 GEMM the SIMT forms are measured on (bench/gemm_gpu.sh, tests/gpu.rs): one thread
// an output, row-major A and B. The other files here are TiledContraction's forms of it, kept equal
// to the generator's output by `cargo test -p kernelpro-recipes gemm_tests` (UPDATE_EXPECT=1
// rewrites them); bench/gemm_gpu.sh changes `let N` for other sizes.
// kernelpro: let N = 4096
// kernelpro: grid = (ceil_div(N, 16), ceil_div(N, 16))
// kernelpro: block = (16, 16)
// kernelpro: A = in float[N * N] uniform(-1, 1)
// kernelpro: B = in float[N * N] uniform(-1, 1)
// kernelpro: C = out float[N * N]
// kernelpro: n = N
// kernelpro: check rtol=1e-5 atol=1e-5
// kernelpro: op = gemm N N N row
__global__ void sgemm_naive(const float* A, const float* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
    C[row * n + col] = acc;
  }
}
