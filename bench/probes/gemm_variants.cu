// Issue 34 item 4: which changes to TiledContraction's 128x128 SIMT form bring the 4096^3 fp32
// GEMM toward cuBLAS (TF32 off). Times the generator's own form (bench/kernels/gemm/
// simt_128x128_2blocks.cu, included as is) beside variants of it: 16-deep slices, a grouped tile
// order (L2 reuse), and cp.async pipelines of 3-4 stages (no register staging). Every variant
// adds the same products in the same order per output, so each must equal the generator's output
// bit for bit. Built here (nvcc -O3 -arch=sm_90 -cudart static), run on the device:
//   ./gemm_variants [N]   prints per variant the median ms of 20 launches and GFLOP/s.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define sgemm_naive kp_generated
#include "../kernels/gemm/simt_128x128_2blocks.cu"
#undef sgemm_naive

constexpr int BM = 128, BN = 128, PAD = 4, G = 8;

// The tile a block owns: row-major over tiles, or in groups of G tile rows (a block's neighbours
// share its B columns and a few A rows, so more of both stay in L2).
template <bool SWZ>
__device__ __forceinline__ void tile_of(int t, int n, int& m0, int& n0) {
  const int tn = n / BN, tm = n / BM;
  if (!SWZ) {
    m0 = t / tn * BM;
    n0 = t % tn * BN;
    return;
  }
  const int per = G * tn, first = t / per * G, rows = min(tm - first, G), r = t % per;
  m0 = (first + r % rows) * BM;
  n0 = r / rows * BN;
}

__device__ __forceinline__ void multiply(const float (*As)[BM + PAD], const float (*Bs)[BN + PAD], int kk, int tr, int tc,
                                         float (&acc)[8][8]) {
  float x[8], y[8];
  const float4 x0 = *reinterpret_cast<const float4*>(&As[kk][4 * tr]);
  const float4 x1 = *reinterpret_cast<const float4*>(&As[kk][4 * tr + 64]);
  const float4 y0 = *reinterpret_cast<const float4*>(&Bs[kk][4 * tc]);
  const float4 y1 = *reinterpret_cast<const float4*>(&Bs[kk][4 * tc + 64]);
  x[0] = x0.x; x[1] = x0.y; x[2] = x0.z; x[3] = x0.w; x[4] = x1.x; x[5] = x1.y; x[6] = x1.z; x[7] = x1.w;
  y[0] = y0.x; y[1] = y0.y; y[2] = y0.z; y[3] = y0.w; y[4] = y1.x; y[5] = y1.y; y[6] = y1.z; y[7] = y1.w;
#pragma unroll
  for (int a = 0; a < 8; ++a)
#pragma unroll
    for (int b = 0; b < 8; ++b) acc[a][b] += x[a] * y[b];
}

__device__ __forceinline__ void store_tile(float* C, int n, int m0, int n0, int tr, int tc, const float (&acc)[8][8]) {
#pragma unroll
  for (int a = 0; a < 8; ++a) {
    const int row = m0 + 4 * tr + (a & 3) + 64 * (a >> 2);
    *reinterpret_cast<float4*>(&C[row * n + n0 + 4 * tc]) = make_float4(acc[a][0], acc[a][1], acc[a][2], acc[a][3]);
    *reinterpret_cast<float4*>(&C[row * n + n0 + 4 * tc + 64]) = make_float4(acc[a][4], acc[a][5], acc[a][6], acc[a][7]);
  }
}

// Register-staged (the generator's scheme): the next slice in registers while this one is used.
template <int BK, bool SWZ, int MINB>
__global__ void __launch_bounds__(256, MINB) staged(const float* A, const float* B, float* C, int n) {
  __shared__ __align__(16) float As[2][BK][BM + PAD];
  __shared__ __align__(16) float Bs[2][BK][BN + PAD];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int tr = warp / 2 * 4 + lane / 8, tc = warp % 2 * 8 + lane % 8;
  int m0, n0;
  tile_of<SWZ>(blockIdx.x, n, m0, n0);
  constexpr int QA = BM * BK / 4 / 256, QB = BN * BK / 4 / 256;
  float4 ra[QA], rb[QB];
  float acc[8][8] = {};
  auto fetch = [&](int k0) {
#pragma unroll
    for (int q = 0; q < QA; ++q) {
      const int e = tid + 256 * q, kk = e % (BK / 4) * 4, m = e / (BK / 4);
      ra[q] = *reinterpret_cast<const float4*>(&A[(m0 + m) * n + k0 + kk]);
    }
#pragma unroll
    for (int q = 0; q < QB; ++q) {
      const int e = tid + 256 * q, kk = e / (BN / 4), x = e % (BN / 4) * 4;
      rb[q] = *reinterpret_cast<const float4*>(&B[(k0 + kk) * n + n0 + x]);
    }
  };
  auto put = [&](int s) {
#pragma unroll
    for (int q = 0; q < QA; ++q) {
      const int e = tid + 256 * q, kk = e % (BK / 4) * 4, m = e / (BK / 4);
      As[s][kk][m] = ra[q].x; As[s][kk + 1][m] = ra[q].y; As[s][kk + 2][m] = ra[q].z; As[s][kk + 3][m] = ra[q].w;
    }
#pragma unroll
    for (int q = 0; q < QB; ++q) {
      const int e = tid + 256 * q, kk = e / (BN / 4), x = e % (BN / 4) * 4;
      *reinterpret_cast<float4*>(&Bs[s][kk][x]) = rb[q];
    }
  };
  fetch(0);
  put(0);
  __syncthreads();
  int s = 0;
  for (int k0 = 0; k0 < n; k0 += BK) {
    const bool more = k0 + BK < n;
    if (more) fetch(k0 + BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) multiply(As[s], Bs[s], kk, tr, tc, acc);
    if (more) put(s ^ 1);
    __syncthreads();
    s ^= 1;
  }
  store_tile(C, n, m0, n0, tr, tc, acc);
}

__device__ __forceinline__ void cp4(void* dst, const void* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void cp16(void* dst, const void* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void wait_pending() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// cp.async pipeline of ST stages: A's elements copied 4 bytes each into its transposed slice, B's
// 16 bytes each; no registers hold a slice in flight.
template <int BK, int ST, bool SWZ, int MINB>
__global__ void __launch_bounds__(256, MINB) piped(const float* A, const float* B, float* C, int n) {
  extern __shared__ __align__(16) float smem[];
  float(*As)[BK][BM + PAD] = reinterpret_cast<float(*)[BK][BM + PAD]>(smem);
  float(*Bs)[BK][BN + PAD] = reinterpret_cast<float(*)[BK][BN + PAD]>(smem + ST * BK * (BM + PAD));
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int tr = warp / 2 * 4 + lane / 8, tc = warp % 2 * 8 + lane % 8;
  int m0, n0;
  tile_of<SWZ>(blockIdx.x, n, m0, n0);
  float acc[8][8] = {};
  const int slices = n / BK;
  auto load = [&](int slice, int s) {
    const int k0 = slice * BK;
#pragma unroll
    for (int q = 0; q < BM * BK / 256; ++q) {  // a warp: 32/BK rows' whole 32-byte sectors; the transposed stores' banks (4 kk + m) differ for BK = 8
      const int e = tid + 256 * q, kk = e % BK, m = e / BK;
      cp4(&As[s][kk][m], &A[(m0 + m) * n + k0 + kk]);
    }
#pragma unroll
    for (int q = 0; q < BN * BK / 4 / 256; ++q) {
      const int e = tid + 256 * q, kk = e / (BN / 4), x = e % (BN / 4) * 4;
      cp16(&Bs[s][kk][x], &B[(k0 + kk) * n + n0 + x]);
    }
  };
#pragma unroll
  for (int i = 0; i < ST - 1; ++i) {
    if (i < slices) load(i, i);
    commit();
  }
  for (int i = 0; i < slices; ++i) {
    wait_pending<ST - 2>();
    __syncthreads();  // slice i is in; every thread is past slice i-1, whose buffer the next load reuses
    const int nxt = i + ST - 1;
    if (nxt < slices) load(nxt, nxt % ST);
    commit();
    const int s = i % ST;
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) multiply(As[s], Bs[s], kk, tr, tc, acc);
  }
  store_tile(C, n, m0, n0, tr, tc, acc);
}

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      printf("%s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);            \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

typedef void (*Kern)(const float*, const float*, float*, int);

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4096;
  const size_t bytes = (size_t)n * n * sizeof(float);
  std::vector<float> h(n * (size_t)n);
  unsigned s = 12345;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = (s >> 8) / 8388608.0f - 1.0f; }
  float *A, *B, *C, *R;
  CHECK(cudaMalloc(&A, bytes)); CHECK(cudaMalloc(&B, bytes)); CHECK(cudaMalloc(&C, bytes)); CHECK(cudaMalloc(&R, bytes));
  CHECK(cudaMemcpy(A, h.data(), bytes, cudaMemcpyHostToDevice));
  std::reverse(h.begin(), h.end());
  CHECK(cudaMemcpy(B, h.data(), bytes, cudaMemcpyHostToDevice));
  std::vector<float> ref(h.size()), got(h.size());
  struct V { const char* name; Kern k; int smem; };
  const V vs[] = {
      {"generated 128x128x8 2 blocks", kp_generated, 0},
      {"staged bk8", staged<8, false, 2>, 0},
      {"staged bk16", staged<16, false, 2>, 0},
      {"staged bk8 grouped", staged<8, true, 2>, 0},
      {"staged bk16 grouped", staged<16, true, 2>, 0},
      {"cp.async bk8 3 stages grouped", piped<8, 3, true, 2>, 3 * 8 * (BM + PAD + BN + PAD) * 4},
      {"cp.async bk8 4 stages grouped", piped<8, 4, true, 2>, 4 * 8 * (BM + PAD + BN + PAD) * 4},
      {"cp.async bk16 3 stages grouped", piped<16, 3, true, 2>, 3 * 16 * (BM + PAD + BN + PAD) * 4},
      {"cp.async bk8 3 stages", piped<8, 3, false, 2>, 3 * 8 * (BM + PAD + BN + PAD) * 4},
  };
  const int blocks = (n / BM) * (n / BN);
  for (int i = 0; i < (int)(sizeof(vs) / sizeof(vs[0])); ++i) {
    const V& v = vs[i];
    if (v.smem > 48 * 1024) CHECK(cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    CHECK(cudaMemset(C, 0xff, bytes));
    auto launch = [&] { v.k<<<blocks, 256, v.smem>>>(A, B, C, n); };
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got.data(), C, bytes, cudaMemcpyDeviceToHost));
    if (i == 0) ref = got;
    size_t diff = 0;
    for (size_t j = 0; j < got.size(); ++j) diff += memcmp(&got[j], &ref[j], 4) != 0;
    for (int w = 0; w < 2; ++w) launch();
    std::vector<float> ms;
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a)); CHECK(cudaEventCreate(&b));
    for (int r = 0; r < 20; ++r) {
      CHECK(cudaEventRecord(a)); launch(); CHECK(cudaEventRecord(b)); CHECK(cudaEventSynchronize(b));
      float t; CHECK(cudaEventElapsedTime(&t, a, b)); ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    printf("%-34s %8.3f ms %8.0f GFLOP/s  outputs differing from the generated form: %zu\n", v.name, med,
           2.0 * n * n * (double)n / med / 1e6, diff);
  }
  return 0;
}
