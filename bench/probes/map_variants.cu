// Issue 34 item 4: which form of a float map (y[i] = relu(x[i]), KernelBench 19's 4096x16384,
// 256 MiB in and 256 MiB out) comes closest to the device's copy bandwidth, and so past PyTorch's
// own elementwise kernel (0.87-0.90 of torch's copy_ in the slice). Each variant is timed after an
// L2 flush (as bench/kernelbench/run.py times), median of 20; every output is checked.
// Built here (nvcc -O3 -arch=sm_90 -cudart static), run on the device:
//   ./map_variants [N]   prints per variant the median ms and GB/s (read + write).
#include "flushed_timing.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

__device__ __forceinline__ float f(float v) { return fmaxf(v, 0.0f); }
__device__ __forceinline__ float4 f4(float4 v) { return make_float4(f(v.x), f(v.y), f(v.z), f(v.w)); }

// The user's kernel: one element a thread.
__global__ void naive(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = f(x[i]);
}

// V float4s a thread, the block's threads adjacent for each of them (coalesced), exact grid.
template <int V, bool STREAM>
__global__ void vec_exact(float* __restrict__ y, const float* __restrict__ x, int n) {
  const int n4 = n / 4;
  const int base = blockIdx.x * blockDim.x * V + threadIdx.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  float4 v[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    int k = base + j * blockDim.x;
    if (k < n4) v[j] = STREAM ? __ldcs(&x4[k]) : x4[k];
  }
#pragma unroll
  for (int j = 0; j < V; ++j) {
    int k = base + j * blockDim.x;
    if (k < n4) {
      if (STREAM) __stcs(&y4[k], f4(v[j])); else y4[k] = f4(v[j]);
    }
  }
  // Scalar tail (n not a multiple of 4).
  if (blockIdx.x == 0 && threadIdx.x < (n & 3)) y[n4 * 4 + threadIdx.x] = f(x[n4 * 4 + threadIdx.x]);
}

// Grid-stride float4, V vectors in flight an iteration; the grid a few waves of full blocks.
template <int V, bool STREAM>
__global__ void vec_stride(float* __restrict__ y, const float* __restrict__ x, int n) {
  const int n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  const int stride = gridDim.x * blockDim.x;
  for (int base = blockIdx.x * blockDim.x + threadIdx.x; base < n4; base += stride * V) {
    float4 v[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
      int k = base + j * stride;
      if (k < n4) v[j] = STREAM ? __ldcs(&x4[k]) : x4[k];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      int k = base + j * stride;
      if (k < n4) {
        if (STREAM) __stcs(&y4[k], f4(v[j])); else y4[k] = f4(v[j]);
      }
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < (n & 3)) y[n4 * 4 + threadIdx.x] = f(x[n4 * 4 + threadIdx.x]);
}

// Scalar units, U a thread with the block's threads adjacent (the unit body kept as written), exact grid.
template <int U>
__global__ void scalar_exact(float* __restrict__ y, const float* __restrict__ x, int n) {
  const int base = blockIdx.x * blockDim.x * U + threadIdx.x;
#pragma unroll
  for (int j = 0; j < U; ++j) {
    int i = base + j * blockDim.x;
    if (i < n) y[i] = f(x[i]);
  }
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4096 * 16384;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t bytes = (size_t)n * 4;
  std::vector<float> h(n);
  unsigned s = 12345;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = (s >> 8) / 8388608.0f - 1.0f; }
  float *x, *y;
  CHECK(cudaMalloc(&x, bytes)); CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice));
  std::vector<float> got(n);
  const int n4 = n / 4;
  auto blocks = [](long work, int per) { return (int)((work + per - 1) / per); };
  struct V { const char* name; void (*k)(float*, const float*, int); int grid, block; };
  const V vs[] = {
      {"naive, 1 a thread", naive, blocks(n, 256), 256},
      {"scalar, 4 a thread (adjacent)", scalar_exact<4>, blocks(n, 1024), 256},
      {"scalar, 8 a thread (adjacent)", scalar_exact<8>, blocks(n, 2048), 256},
      {"float4, 1 a thread", vec_exact<1, false>, blocks(n4, 256), 256},
      {"float4, 2 a thread", vec_exact<2, false>, blocks(n4, 512), 256},
      {"float4, 4 a thread", vec_exact<4, false>, blocks(n4, 1024), 256},
      {"float4, 1 a thread, streaming", vec_exact<1, true>, blocks(n4, 256), 256},
      {"float4, 2 a thread, streaming", vec_exact<2, true>, blocks(n4, 512), 256},
      {"float4, 4 a thread, streaming", vec_exact<4, true>, blocks(n4, 1024), 256},
      {"float4 stride 1, SMs x 8 x 256", vec_stride<1, false>, sms * 8, 256},
      {"float4 stride 2, SMs x 8 x 256", vec_stride<2, false>, sms * 8, 256},
      {"float4 stride 4, SMs x 8 x 256", vec_stride<4, false>, sms * 8, 256},
      {"float4 stride 2, SMs x 4 x 512", vec_stride<2, false>, sms * 4, 512},
      {"float4 stride 4, SMs x 16 x 128", vec_stride<4, false>, sms * 16, 128},
      {"float4 stride 2 streaming, SMs x 8", vec_stride<2, true>, sms * 8, 256},
      {"float4 stride 4 streaming, SMs x 8", vec_stride<4, true>, sms * 8, 256},
  };
  for (const V& v : vs) {
    CHECK(cudaMemset(y, 0xff, bytes));
    auto launch = [&] { v.k<<<v.grid, v.block>>>(y, x, n); };
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got.data(), y, bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int j = 0; j < n; ++j) bad += got[j] != fmaxf(h[j], 0.0f);
    const double med = flushed_median_ms(launch);
    printf("%-36s %8.4f ms %6.0f GB/s  wrong outputs: %zu\n", v.name, med, 2.0 * bytes / med / 1e6, bad);
  }
  return 0;
}
