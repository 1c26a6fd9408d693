// Bias + ReLU over a matrix with a 2D launch whose x index walks rows: neighbouring threads are COLS floats apart.
// class: map
// torch: out = torch.relu(inp.view(ROWS, COLS) + bias).reshape(-1)
// kernelpro: let ROWS = 8192
// kernelpro: let COLS = 4096
// kernelpro: grid = min(ceil_div((ROWS) * (COLS), 256), 132 * 8)
// kernelpro: block = 256
// kernelpro: out = out float[ROWS * COLS]
// kernelpro: inp = in float[ROWS * COLS] uniform(-1, 1)
// kernelpro: bias = in float[COLS] uniform(-1, 1)
// kernelpro: rows = ROWS
// kernelpro: cols = COLS
__global__ void bias_relu(float* __restrict__ out, const float* __restrict__ inp, const float* __restrict__ bias, int rows, int cols) {
  // grid-stride over the units (kernelpro).
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(rows) * (long long)(cols); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int c = (int)(kp_u % (cols));
    const int r = (int)((kp_u / ((long long)(cols))));
    float v = inp[r * cols + c] + (bias ? bias[c] : 0.f);
    out[r * cols + c] = v > 0.f ? v : 0.f;
  }
}
