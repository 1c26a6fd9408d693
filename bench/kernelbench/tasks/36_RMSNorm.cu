// task: 36_RMSNorm_
// class: row-reduction
// KernelBench level 1 #36: x / sqrt(mean(x^2 over dim 1) + eps), x of (112, 64, 512, 512) in v0.1;
// here batch 4 (256 MiB). One thread per (batch, position) walks the 64 features.
// torch: y = (x.view(B, C, HW) / torch.sqrt(torch.mean(x.view(B, C, HW) ** 2, dim=1, keepdim=True) + 1e-5)).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let C = 64
// kernelpro: let HW = 512 * 512
// kernelpro: grid = ceil_div(B * HW, 256)
// kernelpro: block = 256
// kernelpro: y = out float[B * C * HW]
// kernelpro: x = in float[B * C * HW] uniform(0, 1)
// kernelpro: batch = B
// kernelpro: features = C
// kernelpro: spatial = HW
// kernelpro: eps = 1e-5
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void rms_norm(float* y, const float* x, int batch, int features, int spatial, float eps) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= batch * spatial) return;
  int b = idx / spatial;
  int s = idx % spatial;
  size_t base = (size_t)b * features * spatial + s;
  float sumsq = 0.0f;
  for (int f = 0; f < features; ++f) {
    float v = x[base + (size_t)f * spatial];
    sumsq += v * v;
  }
  float inv = 1.0f / sqrtf(sumsq / features + eps);
  for (int f = 0; f < features; ++f) y[base + (size_t)f * spatial] = x[base + (size_t)f * spatial] * inv;
}
