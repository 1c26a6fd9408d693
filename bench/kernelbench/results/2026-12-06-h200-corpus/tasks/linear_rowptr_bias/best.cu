// Linear layer, first version: one thread per output, row pointers into inp (BT, C) and weight (OC, C),
// the token index on x, and a `bias ?` epilogue.
// class: contraction
// torch: out = (inp.view(ROWS, KD) @ weight.view(NO, KD).t() + bias).reshape(-1)
// kernelpro: let ROWS = 4096
// kernelpro: let KD = 768
// kernelpro: let NO = 3072
// kernelpro: grid = (ceil_div(ROWS, 16), ceil_div(NO, 16))
// kernelpro: block = (16, 16)
// kernelpro: out = out float[ROWS * NO]
// kernelpro: inp = in float[ROWS * KD] uniform(-1, 1)
// kernelpro: weight = in float[NO * KD] uniform(-1, 1)
// kernelpro: bias = in float[NO] uniform(-1, 1)
// kernelpro: BT = ROWS
// kernelpro: C = KD
// kernelpro: OC = NO
// kernelpro: check rtol=1e-4 atol=1e-3
// kernelpro: op = gemm ROWS NO KD row,col
__global__ void matmul_forward_v1(float* out, const float* inp, const float* weight, const float* bias, int BT, int C, int OC) {
  // SIMT register-tiled contraction (kernelpro TiledContraction): 64x64 tiles, 16 deep, 4x4 outputs a thread, 256 threads a block.
  __shared__ __align__(16) float kp_As[16][64 + 4];
  __shared__ __align__(16) float kp_Bs[16][64 + 4];
  const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  const int kp_nt = (int)((blockDim.x * blockDim.y * blockDim.z));
  const int kp_tr = kp_tid / 16, kp_tc = kp_tid % 16;
  const long long kp_tiles_n = ((long long)(OC) + 64 - 1) / 64;
  const long long kp_tiles = ((long long)(BT) + 64 - 1) / 64 * kp_tiles_n;
  const long long kp_blocks = ((long long)gridDim.x * gridDim.y * gridDim.z);
  for (long long kp_t = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)); kp_t < kp_tiles; kp_t += kp_blocks) {
    const long long kp_m0 = kp_t / kp_tiles_n * 64, kp_n0 = kp_t % kp_tiles_n * 64;
    float kp_acc[4][4];
    #pragma unroll
    for (int kp_a = 0; kp_a < 4; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const int bt = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int oc = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        kp_acc[kp_a][kp_b] = 0;
        if (bt < BT && oc < OC) {
        float val = (bias != NULL) ? bias[oc] : 0.0f;
        const float* wrow = weight + oc * C;
        const float* inp_bt = inp + bt * C;
        kp_acc[kp_a][kp_b] = val;
        }
      }
    }
    for (long long kp_k0 = 0; kp_k0 < (long long)(C); kp_k0 += 16) {
      #pragma unroll 4
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e % 16, kp_mm = kp_e / 16;
        const int bt = (int)(kp_m0 + kp_mm);
        const int i = (int)(kp_k0 + kp_kk);
        const float* inp_bt = inp + bt * C;
        kp_As[kp_kk][kp_mm] = (bt < BT && i < C) ? (float)(inp_bt[i]) : (float)0;
      }
      #pragma unroll 4
      for (int kp_e = kp_tid; kp_e < 16 * 64; kp_e += kp_nt) {
        const int kp_kk = kp_e % 16, kp_nn = kp_e / 16;
        const int oc = (int)(kp_n0 + kp_nn);
        const int i = (int)(kp_k0 + kp_kk);
        const float* wrow = weight + oc * C;
        kp_Bs[kp_kk][kp_nn] = (oc < OC && i < C) ? (float)(wrow[i]) : (float)0;
      }
      __syncthreads();
      // Threads past the first 256 (a larger block) only help load the tiles.
      if (kp_tid < 256) {
      #pragma unroll
      for (int kp_kk = 0; kp_kk < 16; ++kp_kk) {
        float kp_x[4], kp_y[4];
        const float4 kp_x0 = *reinterpret_cast<const float4*>(&kp_As[kp_kk][4 * kp_tr + 0]);
        kp_x[0] = kp_x0.x;
        kp_x[1] = kp_x0.y;
        kp_x[2] = kp_x0.z;
        kp_x[3] = kp_x0.w;
        const float4 kp_y0 = *reinterpret_cast<const float4*>(&kp_Bs[kp_kk][4 * kp_tc + 0]);
        kp_y[0] = kp_y0.x;
        kp_y[1] = kp_y0.y;
        kp_y[2] = kp_y0.z;
        kp_y[3] = kp_y0.w;
        #pragma unroll
        for (int kp_a = 0; kp_a < 4; ++kp_a)
          #pragma unroll
          for (int kp_b = 0; kp_b < 4; ++kp_b) kp_acc[kp_a][kp_b] += kp_x[kp_a] * kp_y[kp_b];
      }
      }
      __syncthreads();
    }
    // Unrolled so that kp_acc stays in registers (a dynamic index would put it in local memory).
    if (kp_tid < 256) {
    #pragma unroll
    for (int kp_a = 0; kp_a < 4; ++kp_a) {
      #pragma unroll
      for (int kp_b = 0; kp_b < 4; ++kp_b) {
        const int bt = (int)(kp_m0 + (4 * kp_tr + (kp_a & 3) + 64 * (kp_a >> 2)));
        const int oc = (int)(kp_n0 + (4 * kp_tc + (kp_b & 3) + 64 * (kp_b >> 2)));
        if (!(bt < BT && oc < OC)) continue;
        float val = (bias != NULL) ? bias[oc] : 0.0f;
        const float* wrow = weight + oc * C;
        const float* inp_bt = inp + bt * C;
        val = kp_acc[kp_a][kp_b];
        out[bt * OC + oc] = val;
      }
    }
    }
  }
}
