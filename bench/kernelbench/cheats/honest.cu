// cheat: none
// The control for `run.py --selftest-cheats`: a correct ReLU that every check must pass.
// task: cheat_control_relu
// class: map
// torch: y = torch.relu(x)
// kernelpro: let N = 1 << 20
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
__global__ void relu(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
