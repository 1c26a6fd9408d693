// 5-point Jacobi step (zero boundary) with the row index on threadIdx.x: strided and re-read neighbours.
// class: stencil
// torch: unew = F.conv2d(u.view(1, 1, IMH, IMW), torch.tensor([[0.0, 0.25, 0.0], [0.25, 0.0, 0.25], [0.0, 0.25, 0.0]], device=u.device).view(1, 1, 3, 3), padding=1).reshape(-1)
// kernelpro: let IMH = 4096
// kernelpro: let IMW = 4096
// kernelpro: grid = min(ceil_div((IMH) * (IMW), 256), 132 * 8)
// kernelpro: block = 256
// kernelpro: unew = out float[IMH * IMW]
// kernelpro: u = in float[IMH * IMW] uniform(-1, 1)
// kernelpro: nx = IMH
// kernelpro: ny = IMW
// kernelpro: check rtol=1e-4 atol=1e-5
__global__ void jacobi_step(float* unew, const float* u, int nx, int ny) {
  // grid-stride over the units (kernelpro).
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(nx) * (long long)(ny); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int j = (int)(kp_u % (ny));
    const int i = (int)((kp_u / ((long long)(ny))));
    float up = i > 0 ? u[(i - 1) * ny + j] : 0.f;
    float down = i < nx - 1 ? u[(i + 1) * ny + j] : 0.f;
    float left = j > 0 ? u[i * ny + j - 1] : 0.f;
    float right = j < ny - 1 ? u[i * ny + j + 1] : 0.f;
    unew[i * ny + j] = 0.25f * (up + down + left + right);
  }
}
