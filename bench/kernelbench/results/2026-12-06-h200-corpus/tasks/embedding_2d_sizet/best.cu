// Token embedding lookup launched 2D: token on x, batch on blockIdx.y; size_t index arithmetic.
// class: gather
// torch: emb = table.view(V, CH)[tokens.long()].reshape(-1)
// kernelpro: let BATCH = 8
// kernelpro: let SEQ = 1024
// kernelpro: let CH = 1024
// kernelpro: let V = 32000
// kernelpro: grid = (min(ceil_div(SEQ, 8), 132 * 16), BATCH)
// kernelpro: block = 256
// kernelpro: emb = out float[BATCH * SEQ * CH]
// kernelpro: tokens = in int[BATCH * SEQ] randint(0, 31999)
// kernelpro: table = in float[V * CH] uniform(-1, 1)
// kernelpro: seq_len = SEQ
// kernelpro: dim = CH
__global__ void embedding_lookup(float* __restrict__ emb, const int* __restrict__ tokens, const float* __restrict__ table, int seq_len, int dim) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  const int b = (int)blockIdx.y;
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * (blockDim.x * blockDim.y * blockDim.z)) >> 5;
  for (long long kp_u = ((long long)blockIdx.x * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(seq_len); kp_u += kp_warps) {
    const int t = (int)(kp_u);
    size_t tok = (size_t)tokens[(size_t)b * seq_len + t];
    for (int c = 0 + kp_lane; c < dim; c += 32) {
      emb[((size_t)b * seq_len + t) * dim + c] = table[tok * dim + c]; // expect: UncoalescedAccess|RowWalk
    }
    __syncwarp();
  }
}
