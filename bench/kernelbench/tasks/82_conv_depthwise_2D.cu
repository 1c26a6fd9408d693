// task: 82_conv_depthwise_2D_square_input_square_kernel
// class: stencil
// KernelBench level 1 #82: nn.Conv2d(64, 64, 3, groups=64, bias=False) on x of (16, 64, 512, 512)
// in v0.1; here batch 4 (256 MiB). The weight is uniform in +-1/3 (PyTorch's default init bound).
// One thread per output, a 3x3 loop.
// torch: y = F.conv2d(x.view(B, C, H, W), wt.view(C, 1, KS, KS), stride=S, padding=0, groups=C).reshape(-1)
// kernelpro: let B = 4
// kernelpro: let C = 64
// kernelpro: let H = 512
// kernelpro: let W = 512
// kernelpro: let KS = 3
// kernelpro: let S = 1
// kernelpro: let OH = (H - KS) / S + 1
// kernelpro: let OW = (W - KS) / S + 1
// kernelpro: grid = (ceil_div(OW, 32), ceil_div(OH, 8), B * C)
// kernelpro: block = (32, 8)
// kernelpro: y = out float[B * C * OH * OW]
// kernelpro: x = in float[B * C * H * W] uniform(0, 1)
// kernelpro: wt = in float[C * KS * KS] uniform(-0.3333, 0.3333)
// kernelpro: channels = C
// kernelpro: h = H
// kernelpro: w = W
// kernelpro: oh = OH
// kernelpro: ow = OW
// kernelpro: ks = KS
// kernelpro: stride = S
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void depthwise_conv2d(float* y, const float* x, const float* wt, int channels, int h, int w, int oh, int ow, int ks, int stride) {
  int ox = blockIdx.x * blockDim.x + threadIdx.x;
  int oy = blockIdx.y * blockDim.y + threadIdx.y;
  int plane = blockIdx.z;
  if (ox >= ow || oy >= oh) return;
  int c = plane % channels;
  const float* xp = x + (size_t)plane * h * w;
  const float* wp = wt + c * ks * ks;
  float acc = 0.0f;
  for (int i = 0; i < ks; ++i)
    for (int j = 0; j < ks; ++j) acc += xp[(oy * stride + i) * w + ox * stride + j] * wp[i * ks + j];
  y[((size_t)plane * oh + oy) * ow + ox] = acc;
}
