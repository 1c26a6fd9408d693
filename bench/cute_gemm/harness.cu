// Standalone timing and checking harness for one generated CuTe GEMM.
// Built by bench/cute_gemm_gpu.sh with `-include <generated .cu>` and:
//   KP_KERNEL   the generated kernel's name
//   KP_T        its element type (float, __half, __nv_bfloat16)
//   KP_NDIMS    how many size arguments follow (A, B, C): 1 (`n`) or 3 (`n, n, n`)
//   KP_B_COL    defined when B is column-major (B[k + n*col])
//   KP_BX/KP_BY the launch spec's block; the grid is ceil(n/KP_BX) x ceil(n/KP_BY),
//               or, for a launch-changing rewrite, one block per KP_TILE_M x KP_TILE_N
//               tile (or KP_GRID blocks, for probes), with KP_DYN_SMEM bytes of
//               dynamic shared memory
// It launches the generated kernel with that launch, checks it against a
// naive fp32-accumulating kernel (16x16 blocks), times both with CUDA events, and writes
// A, B and the generated C as raw files for torch_ref.py.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>

// Dynamic shared memory for the generated kernel: 0 where a rewrite keeps the
// launch; a launch-changing rewrite's spec (and the main-loop probes) set more.
#ifndef KP_DYN_SMEM
#define KP_DYN_SMEM 0
#endif
#define KP_STR2(x) #x
#define KP_STR(x) KP_STR2(x)
#if KP_NDIMS == 3
#define KP_DIMS n, n, n
#else
#define KP_DIMS n
#endif
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__device__ __host__ inline float kp_to_float(float x) { return x; }
__device__ __host__ inline float kp_to_float(__half x) { return __half2float(x); }
__device__ __host__ inline float kp_to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class T> __host__ inline T kp_from_float(float x);
template <> __host__ inline float kp_from_float<float>(float x) { return x; }
template <> __host__ inline __half kp_from_float<__half>(float x) { return __float2half(x); }
template <> __host__ inline __nv_bfloat16 kp_from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

// The naive kernel the recipe replaces (one thread per output, fp32 accumulation).
__global__ void kp_naive(const KP_T* A, const KP_T* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n) {
    float acc = 0.f;
#ifdef KP_B_COL
    for (int k = 0; k < n; ++k) acc += kp_to_float(A[row * n + k]) * kp_to_float(B[col * n + k]);
#else
    for (int k = 0; k < n; ++k) acc += kp_to_float(A[row * n + k]) * kp_to_float(B[k * n + col]);
#endif
    C[row * n + col] = acc;
  }
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4096;
  const char* dump = argc > 2 ? argv[2] : nullptr;
  const size_t count = size_t(n) * n;
  std::vector<KP_T> hA(count), hB(count), hC(count);
  uint64_t s = 12345;
  auto next = [&] { s = s * 6364136223846793005ull + 1442695040888963407ull; return float((s >> 40) & 0xffffff) / float(1 << 24) * 2.f - 1.f; };
  for (auto& x : hA) x = kp_from_float<KP_T>(next());
  for (auto& x : hB) x = kp_from_float<KP_T>(next());
  KP_T *A, *B, *C;
  float* R;
  CHECK(cudaMalloc(&A, count * sizeof(KP_T)));
  CHECK(cudaMalloc(&B, count * sizeof(KP_T)));
  CHECK(cudaMalloc(&C, count * sizeof(KP_T)));
  CHECK(cudaMalloc(&R, count * sizeof(float)));
  CHECK(cudaMemcpy(A, hA.data(), count * sizeof(KP_T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(B, hB.data(), count * sizeof(KP_T), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(C, 0xff, count * sizeof(KP_T)));  // NaN: unwritten outputs show
  dim3 block(KP_BX, KP_BY), grid((n + KP_BX - 1) / KP_BX, (n + KP_BY - 1) / KP_BY);
#if defined(KP_TILE_M)
  grid = dim3(((n + KP_TILE_M - 1) / KP_TILE_M) * ((n + KP_TILE_N - 1) / KP_TILE_N));
#elif defined(KP_GRID)
  grid = dim3(KP_GRID);
#endif
  const dim3 naive_block(16, 16), naive_grid((n + 15) / 16, (n + 15) / 16);
  if (KP_DYN_SMEM > 0) CHECK(cudaFuncSetAttribute(KP_KERNEL, cudaFuncAttributeMaxDynamicSharedMemorySize, KP_DYN_SMEM));
  auto run_generated = [&] { KP_KERNEL<<<grid, block, KP_DYN_SMEM>>>(A, B, C, KP_DIMS); };
  auto run_naive = [&] { kp_naive<<<naive_grid, naive_block>>>(A, B, R, n); };
  auto time_ms = [&](auto launch, int iters) {
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a);
    for (int i = 0; i < iters; ++i) launch();
    cudaEventRecord(b);
    CHECK(cudaEventSynchronize(b));
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    return ms / iters;
  };
  const double flop = 2.0 * n * double(n) * n;
  float naive_ms = time_ms(run_naive, 3);
  float gen_ms = time_ms(run_generated, 20);
  std::vector<float> hR(count);
  CHECK(cudaMemcpy(hC.data(), C, count * sizeof(KP_T), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hR.data(), R, count * sizeof(float), cudaMemcpyDeviceToHost));
  // fp32 accumulation in both; the generated kernel rounds its output to KP_T once.
  const double rtol = sizeof(KP_T) == 4 ? 1e-4 : 1e-2, atol = sizeof(KP_T) == 4 ? 1e-3 : 1e-2;
  size_t bad = 0, worst = 0;
  double worst_err = 0;
  for (size_t i = 0; i < count; ++i) {
    double got = kp_to_float(hC[i]), want = hR[i], err = fabs(got - want);
    if (!(err <= atol + rtol * fabs(want))) {
      ++bad;
      if (!(err <= worst_err)) worst_err = err, worst = i;
    }
  }
  printf("%s n=%d: generated %.3f ms %.1f TFLOP/s | naive %.3f ms %.2f TFLOP/s | speedup %.1fx | mismatches %zu/%zu",
         KP_STR(KP_KERNEL), n, gen_ms, flop / gen_ms / 1e9, naive_ms, flop / naive_ms / 1e9, naive_ms / gen_ms, bad, count);
  if (bad) printf(" (worst at %zu: got %g want %g)", worst, kp_to_float(hC[worst]), hR[worst]);
  printf("\n");
  if (dump) {
    for (auto [name, ptr] : {std::pair{"A", (void*)hA.data()}, {"B", (void*)hB.data()}, {"C", (void*)hC.data()}}) {
      char path[512];
      snprintf(path, sizeof path, "%s.%s.bin", dump, name);
      FILE* f = fopen(path, "wb");
      fwrite(ptr, sizeof(KP_T), count, f);
      fclose(f);
    }
  }
  return bad ? 2 : 0;
}
