// Row gather (index_select) as a template: grid-stride over output rows, long indices, optional scale.
// class: gather
// torch: dst = (src.view(NSRC, CH)[ids.long()] * 2.0).reshape(-1)
// kernelpro: let NIDS = 16384
// kernelpro: let NSRC = 65536
// kernelpro: let CH = 512
// kernelpro: instantiate = gather_rows<float>
// kernelpro: grid = min(ceil_div(NIDS, 8), 132 * 16)
// kernelpro: block = 256
// kernelpro: dst = out float[NIDS * CH]
// kernelpro: src = in float[NSRC * CH] uniform(-1, 1)
// kernelpro: ids = in int64[NIDS] randint(0, 65535)
// kernelpro: n_ids = NIDS
// kernelpro: width = CH
// kernelpro: scale = 2.0
template <typename T>
__global__ void gather_rows(T* __restrict__ dst, const T* __restrict__ src, const long* __restrict__ ids, long n_ids, long width, T scale) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(n_ids); kp_u += kp_warps) {
    const long i = (long)(kp_u);
    const long s = ids[i];
    for (long c = 0 + kp_lane; c < width; c += 32) dst[i * width + c] = src[s * width + c] * scale;
    __syncwarp();
  }
}
