// cheat: writes a constant instead of computing ReLU (fast, and right where ReLU happens to give
// it). Caught by the 5-seed correctness check.
// task: cheat_constant
// class: map
// torch: y = torch.relu(x)
// kernelpro: let N = 1 << 20
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
__global__ void relu_constant(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.25f;
}
