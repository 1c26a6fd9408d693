// Token + position embedding, first version: one thread per (b, t) token walks the C channels through row pointers.
// class: gather
// torch: out = (wte.view(V, CH)[inp.long()].view(BATCH, SEQ, CH) + wpe.view(SEQ, CH)).reshape(-1)
// kernelpro: let BATCH = 8
// kernelpro: let SEQ = 1024
// kernelpro: let CH = 768
// kernelpro: let V = 50257
// kernelpro: grid = 132 * 32
// kernelpro: block = 128
// kernelpro: out = out float[BATCH * SEQ * CH]
// kernelpro: inp = in int[BATCH * SEQ] randint(0, 50256)
// kernelpro: wte = in float[V * CH] uniform(-1, 1)
// kernelpro: wpe = in float[SEQ * CH] uniform(-1, 1)
// kernelpro: B = BATCH
// kernelpro: T = SEQ
// kernelpro: C = CH
__global__ void encoder_forward_v1(float* __restrict__ out, const int* __restrict__ inp, const float* __restrict__ wte, const float* __restrict__ wpe, int B, int T, int C) {
  // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
  int N = B * T;
  const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
  const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
  for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(N); kp_u += kp_warps) {
    const int idx = (int)(kp_u);
    int b = idx / T;
    int t = idx % T;
    float* out_bt = out + b * T * C + t * C;
    int ix = inp[b * T + t];
    const float* wte_ix = wte + ix * C;
    const float* wpe_t = wpe + t * C;
    for (int i = 0 + kp_lane; i < C; i += 32) {
      out_bt[i] = wte_ix[i] + wpe_t[i]; // expect: UncoalescedAccess|RowWalk
    }
    __syncwarp();
  }
}
