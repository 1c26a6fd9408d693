// task: llmc_layernorm_forward_kernel1
// class: row-reduction
// karpathy/llm.c dev/cuda/layernorm_forward.cu: layernorm_forward_kernel1, verbatim below the spec.
#include <cuda_runtime.h>
#define floatX float
#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)
// torch: out = F.layer_norm(inp.view(BT, CH), (CH,), weight, bias, eps=1e-5).reshape(-1)
// torch: mean = inp.view(BT, CH).mean(1)
// torch: rstd = torch.rsqrt(inp.view(BT, CH).var(1, unbiased=False) + 1e-5)
// kernelpro: let BT = 8 * 1024
// kernelpro: let CH = 768
// kernelpro: grid = min(ceil_div(BT, 16), 132 * 8)
// kernelpro: block = 512
// kernelpro: out = out float[BT * CH]
// kernelpro: mean = out float[BT]
// kernelpro: rstd = out float[BT]
// kernelpro: inp = in float[BT * CH] uniform(-1, 1)
// kernelpro: weight = in float[CH] uniform(-1, 1)
// kernelpro: bias = in float[CH] uniform(-1, 1)
// kernelpro: N = BT
// kernelpro: C = CH
// kernelpro: check rtol=1e-4 atol=1e-4
__global__ void layernorm_forward_kernel1(float* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
                                 const float* __restrict__ inp, const float* __restrict__ weight, const float* __restrict__ bias,
                                 int N, int C) {
                                   // One warp per unit; lanes split the unit's loops (kernelpro WarpUnits).
                                   float eps = 1e-5f;
                                   const int kp_lane = (int)((threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 31u);
                                   const long long kp_warps = ((long long)gridDim.x * gridDim.y * gridDim.z * blockDim.x * blockDim.y * blockDim.z) >> 5;
                                   for (long long kp_u = (((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) * (blockDim.x * blockDim.y * blockDim.z) + (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))) >> 5; kp_u < (long long)(N); kp_u += kp_warps) {
                                     const int idx = (int)(kp_u);
                                     const float* x = inp + idx * C;
                                     float m = 0.0f;
                                     if (kp_lane != 0) m = 0;
                                     for (int i = 0 + kp_lane; i < C; i += 32) {
                                         m += x[i];
                                     }
                                     for (int kp_o = 16; kp_o > 0; kp_o >>= 1) m += __shfl_xor_sync(0xffffffffu, m, kp_o);
                                     m = m / C;
                                     float v = 0.0f;
                                     if (kp_lane != 0) v = 0;
                                     for (int i = 0 + kp_lane; i < C; i += 32) {
                                         float xshift = x[i] - m;
                                         v += xshift * xshift;
                                     }
                                     for (int kp_o = 16; kp_o > 0; kp_o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, kp_o);
                                     v = v / C;
                                     float s = 1.0f / sqrtf(v + eps);
                                     float* out_idx = out + idx * C;
                                     for (int i = 0 + kp_lane; i < C; i += 32) {
                                         float n = (s * (x[i] - m)); // normalized output
                                         float o = n * weight[i] + bias[i]; // scale and shift it
                                         out_idx[i] = o; // write
                                     }
                                     __syncwarp();
                                     if (kp_lane == 0) {
                                       mean[idx] = m;
                                     }
                                     __syncwarp();
                                     if (kp_lane == 0) {
                                       rstd[idx] = s;
                                     }
                                     __syncwarp();
                                   }
                                 }
