// cheat: writes nothing, so the output holds whatever the buffer held before: a harness that
// computes the reference into the same memory (PyTorch's caching allocator hands it back) passes
// it. Caught because every output is poisoned (NaN) before every call.
// task: cheat_stale_output
// class: map
// torch: y = torch.relu(x)
// kernelpro: let N = 1 << 20
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
__global__ void relu_stale(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && x[i] != x[i]) y[i] = 0.0f;  // never true for finite inputs: nothing is written
}
