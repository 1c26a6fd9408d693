// Integer total with a grid-stride loop and size_t indices: one atomicAdd on *total per element.
// class: scalar-reduction
// torch: total = (total.long() + data.long().sum()).int()
// kernelpro: let N = 1 << 24
// kernelpro: grid = min(ceil_div(N, 512), 132 * 2)
// kernelpro: block = 512
// kernelpro: total = inout int[1] zeros
// kernelpro: data = in int[N] randint(-100, 100)
// kernelpro: n = N
__global__ void total_kernel(int* total, const int* data, size_t n) {
  // grid-stride sum, warp shuffles, one atomic per block (kernelpro).
  int kp_acc = 0;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))); kp_u < (long long)(n); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z)) {
    const size_t i = (size_t)(kp_u);
    kp_acc += data[i];
  }
  __shared__ int kp_part[32];
  const unsigned kp_tid = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_acc += __shfl_down_sync(0xffffffffu, kp_acc, kp_o);
  if ((kp_tid & 31u) == 0) kp_part[kp_tid >> 5] = kp_acc;
  __syncthreads();
  if (kp_tid < 32u) {
    int kp_v = kp_tid < (blockDim.x * blockDim.y * blockDim.z) / 32u ? kp_part[kp_tid] : (int)0;
    for (int kp_o = 16; kp_o > 0; kp_o >>= 1) kp_v += __shfl_down_sync(0xffffffffu, kp_v, kp_o);
    if (kp_tid == 0) atomicAdd(total, kp_v);
  }
}
