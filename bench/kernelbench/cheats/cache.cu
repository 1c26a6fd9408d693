// cheat: computes ReLU once, keeps the result in device memory and replays it on every later
// call, whatever the inputs. Caught by fresh inputs: the second seed's check (and the timed
// trials, whose inputs are new every time) see the first call's result.
// task: cheat_cache
// class: map
// torch: y = torch.relu(x)
__device__ float kp_cached[1 << 20];
__device__ int kp_have_cache;
// kernelpro: let N = 1 << 20
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = out float[N]
// kernelpro: x = in float[N] uniform(-1, 1)
// kernelpro: n = N
__global__ void relu_cached(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (kp_have_cache) {
    y[i] = kp_cached[i];
    return;
  }
  float v = fmaxf(x[i], 0.0f);
  y[i] = v;
  kp_cached[i] = v;
  if (i == n - 1) kp_have_cache = 1;  // later launches see every element stored
}
