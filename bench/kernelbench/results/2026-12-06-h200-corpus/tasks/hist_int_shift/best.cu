// Histogram of 10-bit values into 256 bins (value >> 2) through pointer arithmetic, one element per thread.
// class: histogram
// torch: hist = hist + torch.bincount((vals >> 2).long(), minlength=256).int()
// kernelpro: let N = 1 << 24
// kernelpro: grid = min(ceil_div(N, 512), 132 * 2)
// kernelpro: block = 512
// kernelpro: hist = inout int[256] zeros
// kernelpro: vals = in int[N] randint(0, 1023)
// kernelpro: count = N
__global__ void histo_shift(int* hist, const int* vals, int count) {
  // 256 bins of hist per block in shared memory, one atomic per bin per block (kernelpro).
  __shared__ int kp_bins[256];
  for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) kp_bins[kp_j] = 0;
  __syncthreads();
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(count); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int tid = (int)(kp_u);
    int bin = __ldg(&vals[tid]) >> 2;
    { const long long kp_b = (long long)(bin); if (kp_b >= 0 && kp_b < 256) atomicAdd(&kp_bins[kp_b], 1); else atomicAdd(&hist[kp_b], 1); }
  }
  __syncthreads();
  for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) {
    const int kp_c = kp_bins[kp_j];
    if (kp_c != 0) atomicAdd(&hist[kp_j], kp_c);
  }
}
