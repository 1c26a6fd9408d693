// One element per thread is stuck at ~0.65 of a float4 copy (too few bytes in flight per SM).
// Do L2 prefetches of data that later blocks will read close the gap?
#include "probe_timer.cuh"
#define W 4096
__device__ __forceinline__ void pf(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
__device__ __forceinline__ void pf_last(const void* p) { asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p)); }
__device__ __forceinline__ void bulk_pf(const void* p, unsigned bytes) { asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory"); }
__device__ __forceinline__ float ld256(const float* p) { float v; asm volatile("ld.global.nc.L2::256B.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v; }
__global__ void copy4(float4* __restrict__ d, const float4* __restrict__ s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n / 4) d[i] = s[i]; }
__global__ void copy1(float* __restrict__ d, const float* __restrict__ s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] = s[i]; }
__global__ void copy1_256(float* __restrict__ d, const float* __restrict__ s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] = ld256(s + i); }
template <int D> __global__ void copy1_pf(float* __restrict__ d, const float* __restrict__ s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i + D < n) pf(s + i + D); if (i < n) d[i] = s[i]; }
template <int D> __global__ void copy1_bulk(float* __restrict__ d, const float* __restrict__ s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; int b0 = blockIdx.x * blockDim.x + D;
  if (threadIdx.x == 0 && b0 + (int)blockDim.x <= n) bulk_pf(s + b0, blockDim.x * 4);
  if (i < n) d[i] = s[i];
}
template <int D> __global__ void elem_pf(float* __restrict__ y, const float* __restrict__ x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i + D < n) pf(x + i + D); if (i < n) y[i] = a * x[i] + sqrtf(x[i]) * 0.5f; }
__global__ void scopy(float* out, float* in, int w) { int r = blockIdx.y * blockDim.y + threadIdx.y; int c = blockIdx.x * blockDim.x + threadIdx.x; if (r < w && c < w) out[r * w + c] = in[r * w + c]; }
template <int K> __global__ void scopy_pf(float* out, float* in, int w) { int r = blockIdx.y * blockDim.y + threadIdx.y; int c = blockIdx.x * blockDim.x + threadIdx.x; if (r + K * 32 < w && c < w) pf(in + (r + K * 32) * w + c); if (r < w && c < w) out[r * w + c] = in[r * w + c]; }
template <int K> __global__ void scopy_bulk(float* out, float* in, int w) { int r = blockIdx.y * blockDim.y + threadIdx.y; int c = blockIdx.x * blockDim.x + threadIdx.x; if (threadIdx.x == 0 && r + K * 32 < w) bulk_pf(in + (r + K * 32) * w + blockIdx.x * 32, 128); if (r < w && c < w) out[r * w + c] = in[r * w + c]; }
template <int K> __global__ void transpose_pf(float* __restrict__ out, const float* __restrict__ in, int n) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  if (K > 0 && y + K * 32 < n) pf(in + (y + K * 32) * n + x);
  tile[threadIdx.y][threadIdx.x] = in[y * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  out[y * n + x] = tile[threadIdx.x][threadIdx.y];
}
template <int K> __global__ void stencil_pf(float* out, float* in, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x; int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= w) return;
  if (K > 0 && y + K * 8 < w) pf(in + (y + K * 8) * w + x);
  if (x == 0 || y == 0 || x == w - 1 || y == w - 1) { out[y * w + x] = in[y * w + x]; return; }
  out[y * w + x] = 0.5f * in[y * w + x] + 0.125f * (in[y * w + x - 1] + in[y * w + x + 1] + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}
int main() {
  Probe p; int N = p.n; float *a = p.a, *b = p.b;
  dim3 g2(128, 128), b2(32, 32), g3(128, 512), b3(32, 8); int g1 = N / 256;
  p.bench("copy4", [&] { copy4<<<N / 4 / 256, 256>>>((float4*)b, (float4*)a, N); });
  p.bench("copy1", [&] { copy1<<<g1, 256>>>(b, a, N); });
  p.bench("copy1 ld L2::256B", [&] { copy1_256<<<g1, 256>>>(b, a, N); });
  p.bench("copy1 pf 128K", [&] { copy1_pf<1 << 17><<<g1, 256>>>(b, a, N); });
  p.bench("copy1 pf 256K", [&] { copy1_pf<1 << 18><<<g1, 256>>>(b, a, N); });
  p.bench("copy1 pf 512K", [&] { copy1_pf<1 << 19><<<g1, 256>>>(b, a, N); });
  p.bench("copy1 pf 1M", [&] { copy1_pf<1 << 20><<<g1, 256>>>(b, a, N); });
  p.bench("copy1 bulk 256K", [&] { copy1_bulk<1 << 18><<<g1, 256>>>(b, a, N); });
  p.bench("copy1 bulk 512K", [&] { copy1_bulk<1 << 19><<<g1, 256>>>(b, a, N); });
  p.bench("copy1 bulk 1M", [&] { copy1_bulk<1 << 20><<<g1, 256>>>(b, a, N); });
  p.bench("elem pf 512K", [&] { elem_pf<1 << 19><<<g1, 256>>>(b, a, 1.5f, N); });
  p.bench("scopy", [&] { scopy<<<g2, b2>>>(b, a, W); });
  p.bench("scopy pf 2 bands", [&] { scopy_pf<2><<<g2, b2>>>(b, a, W); });
  p.bench("scopy pf 4 bands", [&] { scopy_pf<4><<<g2, b2>>>(b, a, W); });
  p.bench("scopy bulk 2 bands", [&] { scopy_bulk<2><<<g2, b2>>>(b, a, W); });
  p.bench("scopy bulk 4 bands", [&] { scopy_bulk<4><<<g2, b2>>>(b, a, W); });
  p.bench("transpose pad", [&] { transpose_pf<0><<<g2, b2>>>(b, a, W); });
  p.bench("transpose pf 2", [&] { transpose_pf<2><<<g2, b2>>>(b, a, W); });
  p.bench("transpose pf 4", [&] { transpose_pf<4><<<g2, b2>>>(b, a, W); });
  p.bench("stencil", [&] { stencil_pf<0><<<g3, b3>>>(b, a, W); });
  p.bench("stencil pf 8", [&] { stencil_pf<8><<<g3, b3>>>(b, a, W); });
  p.bench("stencil pf 16", [&] { stencil_pf<16><<<g3, b3>>>(b, a, W); });
}
