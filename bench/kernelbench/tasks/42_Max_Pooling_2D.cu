// task: 42_Max_Pooling_2D
// class: pool
// KernelBench level 1 #42: nn.MaxPool2d(kernel_size=4, stride=1, padding=1, dilation=1) on x of
// (32, 64, 512, 512) in v0.1; here batch 4 (256 MiB). One thread per output.
// torch: y = F.max_pool2d(x.view(B, C, H, W), kernel_size=K, stride=S, padding=P, dilation=DIL).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let C = 64
// kernelpro: let H = 512
// kernelpro: let W = 512
// kernelpro: let K = 4
// kernelpro: let S = 1
// kernelpro: let P = 1
// kernelpro: let DIL = 1
// kernelpro: let OH = (H + 2 * P - DIL * (K - 1) - 1) / S + 1
// kernelpro: let OW = (W + 2 * P - DIL * (K - 1) - 1) / S + 1
// kernelpro: grid = ceil_div(B * C * OH * OW, 256)
// kernelpro: block = 256
// kernelpro: y = out float[B * C * OH * OW]
// kernelpro: x = in float[B * C * H * W] uniform(0, 1)
// kernelpro: planes = B * C
// kernelpro: h = H
// kernelpro: w = W
// kernelpro: oh = OH
// kernelpro: ow = OW
// kernelpro: k = K
// kernelpro: stride = S
// kernelpro: pad = P
// kernelpro: dil = DIL
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void max_pool2d(float* y, const float* x, int planes, int h, int w, int oh, int ow, int k, int stride, int pad, int dil) {
  long o = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (o >= (long)planes * oh * ow) return;
  int ox = o % ow;
  int oy = (o / ow) % oh;
  long plane = o / ((long)oh * ow);
  const float* xp = x + plane * h * w;
  float m = -INFINITY;
  for (int ky = 0; ky < k; ++ky) {
    int iy = oy * stride - pad + ky * dil;
    if (iy < 0 || iy >= h) continue;
    for (int kx = 0; kx < k; ++kx) {
      int ix = ox * stride - pad + kx * dil;
      if (ix < 0 || ix >= w) continue;
      m = fmaxf(m, xp[iy * w + ix]);
    }
  }
  y[o] = m;
}
