// Shared scaffold of the bandwidth probes: two 64 MiB float buffers, an L2
// flush by memset before every launch (the harness's flush), and the median of
// 50 timed launches after 3 warm-ups, printed with the bandwidth of one read
// and one write of a buffer.
#pragma once
#include <cstdio>
#include <cuda_runtime.h>

struct Probe {
  int n = 1 << 24;
  size_t bytes = (size_t)n * 4;
  float *a, *b;
  char* flush;
  size_t flush_bytes;
  cudaEvent_t e0, e1;
  Probe() {
    cudaMalloc(&a, bytes); cudaMalloc(&b, bytes); cudaMemset(a, 0, bytes);
    int l2; cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0); flush_bytes = 2 * (size_t)l2;
    cudaMalloc(&flush, flush_bytes);
    cudaEventCreate(&e0); cudaEventCreate(&e1);
  }
  template <class Launch> void bench(const char* name, Launch launch) {
    float ts[50];
    for (int r = 0; r < 53; r++) {
      cudaMemsetAsync(flush, r, flush_bytes); cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1);
      if (r >= 3) cudaEventElapsedTime(&ts[r - 3], e0, e1);
    }
    for (int i = 0; i < 50; i++) for (int j = i + 1; j < 50; j++) if (ts[j] < ts[i]) { float t = ts[i]; ts[i] = ts[j]; ts[j] = t; }
    printf("%-22s median %.4f ms  %5.0f GB/s  %s\n", name, ts[25], 2.0 * bytes / ts[25] / 1e6, cudaGetErrorString(cudaGetLastError()));
  }
};
