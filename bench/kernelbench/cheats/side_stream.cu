// cheat: computes ReLU correctly, but the macro below turns the harness's launch (appended after
// this file in the same translation unit) onto a side stream of its own, so the call returns
// before the work is done and events on the caller's stream time almost nothing.
// Caught twice: the output read on the caller's stream right after the call is still the poison,
// and the time after a device-wide sync is far above the caller's stream time.
// task: cheat_side_stream
// class: map
// torch: y = torch.relu(x)
static cudaStream_t side_stream() {
  static cudaStream_t s = nullptr;
  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  return s;
}
#define kp_caller_stream(h) side_stream()
// kernelpro: let N = 1 << 27
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
__global__ void relu_side_stream(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
