// What the bandwidth probes (map_variants.cu, column_variants.cu) share: CHECK, and the median time
// of a launch after an L2 flush (as bench/kernelbench/run.py times): 3 warm-ups, 20 timed runs.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t e = (x);                                                                  \
    if (e != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

__global__ void kp_flush(int* b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] += 1;
}

// Median ms of `launch()` over 20 runs, each after writing a 256 MiB buffer (the L2 flushed).
template <class Launch>
double flushed_median_ms(Launch launch) {
  static int* buffer = nullptr;
  const size_t n = (256u << 20) / 4;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (!buffer) CHECK(cudaMalloc(&buffer, n * 4));
  std::vector<float> ms;
  cudaEvent_t a, z;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&z));
  for (int r = 0; r < 23; ++r) {
    kp_flush<<<sms * 8, 256>>>(buffer, n);
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(z));
    CHECK(cudaEventSynchronize(z));
    float t;
    CHECK(cudaEventElapsedTime(&t, a, z));
    if (r >= 3) ms.push_back(t);
  }
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(z));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}
