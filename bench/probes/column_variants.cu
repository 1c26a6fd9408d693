// Issue 34 item 4: how fast a sum down the middle axis of (B, R, C) can go (KernelBench 47/48/50/51:
// B=4, R=4096, C=4095, 256 MiB read; PyTorch's own kernel 0.132 ms, 0.68 of the copy bandwidth,
// ColumnUnits' form 0.135). Variants of ColumnUnits' shape (a block takes 32 neighbouring columns
// as its lanes, its warps split the rows): warps a block, loads in flight a thread (independent
// partial sums), and a split of the rows across blocks (atomicAdd into a zeroed output, or a
// second pass). Each timed after an L2 flush, median of 20, checked against a double sum.
//   ./column_variants   prints per variant the median ms and GB/s read.
#include "flushed_timing.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int B = 4, R = 4096, C = 4095;

__global__ void naive(float* y, const float* x, int batch, int reduce, int inner) {
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= batch * inner) return;
  int b = o / inner, k = o % inner;
  float s = 0.0f;
  for (int j = 0; j < reduce; ++j) s += x[((size_t)b * reduce + j) * inner + k];
  y[o] = s;
}

// A block of 32 x W threads: lane = column of the block's 32, warp w takes rows w, w+W, ...
// (U independent partial sums a thread, rows w + W*(U*t + u)); the W partials meet in shared memory.
// With SPLIT > 1, blockIdx.y takes one of SPLIT row ranges and adds its sum to y atomically.
template <int W, int U, int SPLIT>
__global__ void lanes(float* __restrict__ y, const float* __restrict__ x, int batch, int reduce, int inner) {
  __shared__ float part[W][33];
  const int groups = (inner + 31) / 32;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int b = blockIdx.x / groups, k = (blockIdx.x % groups) * 32 + lane;
  const int per = reduce / SPLIT, j0 = blockIdx.y * per, j1 = blockIdx.y == SPLIT - 1 ? reduce : j0 + per;
  float s[U];
#pragma unroll
  for (int u = 0; u < U; ++u) s[u] = 0.0f;
  if (k < inner) {
    const float* p = x + (size_t)b * reduce * inner + k;
    int j = j0 + w;
    for (; j + (U - 1) * W < j1; j += U * W) {
#pragma unroll
      for (int u = 0; u < U; ++u) s[u] += p[(size_t)(j + u * W) * inner];
    }
    for (; j < j1; j += W) s[0] += p[(size_t)j * inner];
  }
  float t = 0.0f;
#pragma unroll
  for (int u = 0; u < U; ++u) t += s[u];
  part[w][lane] = t;
  __syncthreads();
  if (w == 0 && k < inner) {
    float r = 0.0f;
    for (int v = 0; v < W; ++v) r += part[v][lane];
    if (SPLIT == 1) y[(size_t)b * inner + k] = r; else atomicAdd(&y[(size_t)b * inner + k], r);
  }
}

int main() {
  const size_t n = (size_t)B * R * C, bytes = n * 4, out = (size_t)B * C;
  std::vector<float> h(n);
  unsigned s = 12345;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = (s >> 8) / 16777216.0f; }
  std::vector<double> ref(out, 0.0);
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < R; ++j)
      for (int k = 0; k < C; ++k) ref[(size_t)b * C + k] += h[((size_t)b * R + j) * C + k];
  float *x, *y;
  CHECK(cudaMalloc(&x, bytes)); CHECK(cudaMalloc(&y, out * 4));
  CHECK(cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice));
  const int groups = B * ((C + 31) / 32);
  typedef void (*K)(float*, const float*, int, int, int);
  struct V { const char* name; K k; dim3 grid; int block; bool zero; };
  const V vs[] = {
      {"naive, a thread a column", naive, dim3((B * C + 255) / 256), 256, false},
      {"32 lanes x 8 warps, 1 in flight", lanes<8, 1, 1>, dim3(groups), 256, false},
      {"32 lanes x 8 warps, 4 in flight", lanes<8, 4, 1>, dim3(groups), 256, false},
      {"32 lanes x 8 warps, 8 in flight", lanes<8, 8, 1>, dim3(groups), 256, false},
      {"32 lanes x 16 warps, 4 in flight", lanes<16, 4, 1>, dim3(groups), 512, false},
      {"32 lanes x 32 warps, 2 in flight", lanes<32, 2, 1>, dim3(groups), 1024, false},
      {"32 lanes x 32 warps, 4 in flight", lanes<32, 4, 1>, dim3(groups), 1024, false},
      {"8 warps, 4 in flight, rows split 2", lanes<8, 4, 2>, dim3(groups, 2), 256, true},
      {"8 warps, 4 in flight, rows split 4", lanes<8, 4, 4>, dim3(groups, 4), 256, true},
      {"8 warps, 8 in flight, rows split 4", lanes<8, 8, 4>, dim3(groups, 4), 256, true},
  };
  std::vector<float> got(out);
  for (const V& v : vs) {
    auto launch = [&] {
      if (v.zero) cudaMemsetAsync(y, 0, out * 4);
      v.k<<<v.grid, v.block>>>(y, x, B, R, C);
    };
    CHECK(cudaMemset(y, 0xff, out * 4));
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got.data(), y, out * 4, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (size_t j = 0; j < out; ++j) worst = std::max(worst, std::fabs(got[j] - ref[j]) / std::fabs(ref[j]));
    const double med = flushed_median_ms(launch);
    printf("%-38s %8.4f ms %6.0f GB/s  worst relative error %.1e\n", v.name, med, bytes / med / 1e6, worst);
  }
  return 0;
}
