// Grey-level histogram of an image, 2D launch (column on x, row on y), size_t pixel index.
// class: histogram
// torch: hist = hist + torch.bincount(img.long(), minlength=256).int()
// kernelpro: let H = 4096
// kernelpro: let W = 4096
// kernelpro: grid = min(ceil_div((H) * (W), 512), 132 * 2)
// kernelpro: block = 512
// kernelpro: hist = inout int[256] zeros
// kernelpro: img = in uint8[H * W] randint(0, 255)
// kernelpro: width = W
// kernelpro: height = H
__global__ void image_hist(int* hist, const unsigned char* img, int width, int height) {
  // 256 bins of hist per block in shared memory, one atomic per bin per block (kernelpro).
  __shared__ int kp_bins[256];
  for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) kp_bins[kp_j] = 0;
  __syncthreads();
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(height) * (long long)(width); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const int x = (int)(kp_u % (width));
    const int y = (int)((kp_u / ((long long)(width))));
    size_t p = (size_t)y * width + x;
    unsigned v = img[p];
    { const long long kp_b = (long long)(v); if (kp_b >= 0 && kp_b < 256) atomicAdd(&kp_bins[kp_b], 1); else atomicAdd(&hist[kp_b], 1); }
  }
  __syncthreads();
  for (int kp_j = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); kp_j < 256; kp_j += (blockDim.x * blockDim.y * blockDim.z)) {
    const int kp_c = kp_bins[kp_j];
    if (kp_c != 0) atomicAdd(&hist[kp_j], kp_c);
  }
}
