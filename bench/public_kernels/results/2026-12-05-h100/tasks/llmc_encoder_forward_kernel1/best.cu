// task: llmc_encoder_forward_kernel1
// class: gather
// karpathy/llm.c dev/cuda/encoder_forward.cu: encoder_forward_kernel1, verbatim below the spec.
#include <cuda_runtime.h>
#define floatX float
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)
// torch: out = (wte.view(V, CH)[inp.long().view(B, T)] + wpe.view(T, CH).unsqueeze(0)).reshape(-1)
// kernelpro: let B = 8
// kernelpro: let T = 1024
// kernelpro: let CH = 768
// kernelpro: let V = 50257
// kernelpro: grid = 132 * 16
// kernelpro: block = 256
// kernelpro: out = out float[B * T * CH]
// kernelpro: inp = in int[B * T] randint(0, 50256)
// kernelpro: wte = in float[V * CH] uniform(-1, 1)
// kernelpro: wpe = in float[T * CH] uniform(-1, 1)
// kernelpro: B = B
// kernelpro: T = T
// kernelpro: C = CH
// kernelpro: check rtol=1e-5 atol=1e-5
__global__ void encoder_forward_kernel1(floatX* out,
                               const int* inp, const floatX* wte, const floatX* wpe,
                               int B, int T, int C) {
                                 // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
                                 int N = B * T;
                                 const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
                                 const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
                                 for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(N); kp_u += kp_warps) {
                                   const int idx = (int)(kp_u);
                                   int b = idx / T;
                                   int t = idx % T;
                                   floatX* out_bt = out + b * T * C + t * C;
                                   int ix = inp[b * T + t];
                                   const floatX* wte_ix = wte + ix * C;
                                   const floatX* wpe_t = wpe + t * C;
                                   for (int i = 0 + kp_lane; i < C; i += 32) {
                                       out_bt[i] = (floatX)((float)wte_ix[i] + (float)wpe_t[i]);
                                   }
                                   __syncwarp();
                                 }
                               }
