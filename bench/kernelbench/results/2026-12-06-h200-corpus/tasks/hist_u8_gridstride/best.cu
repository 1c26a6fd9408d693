// 256-bin byte histogram, first version: grid-stride loop, one global atomic per byte.
// class: histogram
// torch: bins = bins + torch.bincount(data.long(), minlength=256).int()
// kernelpro: let N = 1 << 24
// kernelpro: grid = min(ceil_div(N, 512), 132 * 2)
// kernelpro: block = 512
// kernelpro: bins = inout int[256] zeros
// kernelpro: data = in uint8[N] randint(0, 255)
// kernelpro: n = N
__global__ void byte_histogram(int* bins, const unsigned char* data, int n) {
  // 256 bins of bins per block in shared memory, one atomic per bin per block (kernelpro).
  __shared__ int kp_bins[256];
  for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) kp_bins[kp_j] = 0;
  __syncthreads();
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int i = (int)(kp_u);
    { const long long kp_b = (long long)(data[i]); if (kp_b >= 0 && kp_b < 256) atomicAdd(&kp_bins[kp_b], 1); else atomicAdd(&bins[kp_b], 1); }
  }
  __syncthreads();
  for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) {
    const int kp_c = kp_bins[kp_j];
    if (kp_c != 0) atomicAdd(&bins[kp_j], kp_c);
  }
}
