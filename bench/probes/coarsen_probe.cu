// One element per thread is capped by bytes in flight per SM. With the launch fixed,
// can the first blocks do several blocks' work (more bytes per thread) while the
// blocks past them return at once? Measures what the empty blocks cost.
#include "probe_timer.cuh"
#define W 4096
__global__ void copy1(float* __restrict__ d, const float* __restrict__ s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] = s[i]; }
__global__ void copy4(float4* __restrict__ d, const float4* __restrict__ s, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n / 4) d[i] = s[i]; }
// float4 grid-stride over the launch of copy1: 3/4 of the blocks find no work.
__global__ void copy4_gs(float* __restrict__ d, const float* __restrict__ s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += gridDim.x * blockDim.x) reinterpret_cast<float4*>(d)[i] = reinterpret_cast<const float4*>(s)[i];
}
// C independent scalar elements per thread, block b doing blocks b*C..b*C+C-1; others return.
template <int C> __global__ void copyC(float* __restrict__ d, const float* __restrict__ s, int n) {
  if (blockIdx.x >= (gridDim.x + C - 1) / C) return;
  int base = blockIdx.x * C * blockDim.x + threadIdx.x; float v[C];
#pragma unroll
  for (int c = 0; c < C; c++) { int i = base + c * blockDim.x; if (i < n) v[c] = s[i]; }
#pragma unroll
  for (int c = 0; c < C; c++) { int i = base + c * blockDim.x; if (i < n) d[i] = v[c]; }
}
__global__ void elem(float* y, float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + sqrtf(x[i]) * 0.5f; }
template <int C> __global__ void elemC(float* y, float* x, float a, int n) {
  if (blockIdx.x >= (gridDim.x + C - 1) / C) return;
  int base = blockIdx.x * C * blockDim.x + threadIdx.x; float v[C];
#pragma unroll
  for (int c = 0; c < C; c++) { int i = base + c * blockDim.x; if (i < n) v[c] = x[i]; }
#pragma unroll
  for (int c = 0; c < C; c++) { int i = base + c * blockDim.x; if (i < n) y[i] = a * v[c] + sqrtf(v[c]) * 0.5f; }
}
__global__ void elem4_gs(float* y, float* x, float a, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 4; i += gridDim.x * blockDim.x) {
    float4 v = reinterpret_cast<float4*>(x)[i], o;
    o.x = a * v.x + sqrtf(v.x) * 0.5f; o.y = a * v.y + sqrtf(v.y) * 0.5f; o.z = a * v.z + sqrtf(v.z) * 0.5f; o.w = a * v.w + sqrtf(v.w) * 0.5f;
    reinterpret_cast<float4*>(y)[i] = o;
  }
}
// 2D: 32x32 blocks over a W x W matrix; rows of blocks past gridDim.y/C return, the others do C bands.
__global__ void scopy(float* out, float* in, int w) { int r = blockIdx.y * blockDim.y + threadIdx.y; int c = blockIdx.x * blockDim.x + threadIdx.x; if (r < w && c < w) out[r * w + c] = in[r * w + c]; }
template <int C> __global__ void scopyC(float* out, float* in, int w) {
  if (blockIdx.y >= (gridDim.y + C - 1) / C) return;
  int c = blockIdx.x * blockDim.x + threadIdx.x; float v[C];
#pragma unroll
  for (int k = 0; k < C; k++) { int r = (blockIdx.y * C + k) * blockDim.y + threadIdx.y; if (r < w && c < w) v[k] = in[r * w + c]; }
#pragma unroll
  for (int k = 0; k < C; k++) { int r = (blockIdx.y * C + k) * blockDim.y + threadIdx.y; if (r < w && c < w) out[r * w + c] = v[k]; }
}
// 5-point stencil, 32x8 blocks, C bands per block.
__global__ void stencil(float* out, float* in, int w) {
  int x = blockIdx.x * blockDim.x + threadIdx.x; int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= w) return;
  if (x == 0 || y == 0 || x == w - 1 || y == w - 1) { out[y * w + x] = in[y * w + x]; return; }
  out[y * w + x] = 0.5f * in[y * w + x] + 0.125f * (in[y * w + x - 1] + in[y * w + x + 1] + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}
template <int C> __global__ void stencilC(float* out, float* in, int w) {
  if (blockIdx.y >= (gridDim.y + C - 1) / C) return;
#pragma unroll
  for (int k = 0; k < C; k++) {
    int x = blockIdx.x * blockDim.x + threadIdx.x; int y = (blockIdx.y * C + k) * blockDim.y + threadIdx.y;
    if (x >= w || y >= w) continue;
    if (x == 0 || y == 0 || x == w - 1 || y == w - 1) { out[y * w + x] = in[y * w + x]; continue; }
    out[y * w + x] = 0.5f * in[y * w + x] + 0.125f * (in[y * w + x - 1] + in[y * w + x + 1] + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
  }
}
int main() {
  Probe p; int N = p.n; float *a = p.a, *b = p.b;
  dim3 g2(128, 128), b2(32, 32), g3(128, 512), b3(32, 8); int g1 = N / 256;
  p.bench("copy4 exact grid", [&] { copy4<<<N / 4 / 256, 256>>>((float4*)b, (float4*)a, N); });
  p.bench("copy1", [&] { copy1<<<g1, 256>>>(b, a, N); });
  p.bench("copy4 grid-stride", [&] { copy4_gs<<<g1, 256>>>(b, a, N); });
  p.bench("copy C=2", [&] { copyC<2><<<g1, 256>>>(b, a, N); });
  p.bench("copy C=4", [&] { copyC<4><<<g1, 256>>>(b, a, N); });
  p.bench("copy C=8", [&] { copyC<8><<<g1, 256>>>(b, a, N); });
  p.bench("elem", [&] { elem<<<g1, 256>>>(b, a, 1.5f, N); });
  p.bench("elem float4 gs", [&] { elem4_gs<<<g1, 256>>>(b, a, 1.5f, N); });
  p.bench("elem C=4", [&] { elemC<4><<<g1, 256>>>(b, a, 1.5f, N); });
  p.bench("elem C=8", [&] { elemC<8><<<g1, 256>>>(b, a, 1.5f, N); });
  p.bench("scopy", [&] { scopy<<<g2, b2>>>(b, a, W); });
  p.bench("scopy C=2", [&] { scopyC<2><<<g2, b2>>>(b, a, W); });
  p.bench("scopy C=4", [&] { scopyC<4><<<g2, b2>>>(b, a, W); });
  p.bench("stencil", [&] { stencil<<<g3, b3>>>(b, a, W); });
  p.bench("stencil C=4", [&] { stencilC<4><<<g3, b3>>>(b, a, W); });
  p.bench("stencil C=8", [&] { stencilC<8><<<g3, b3>>>(b, a, W); });
}
