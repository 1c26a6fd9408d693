// Lets device.cu compile as host C++ (tests/emulate.rs): one block of
// threads, each a std::thread, __syncthreads a barrier, and the _rn
// intrinsics plain IEEE operations (volatile: never contracted).
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static

struct Dim { unsigned x = 0; };
static Dim blockIdx, blockDim{1}, gridDim{1};
thread_local Dim threadIdx;
static std::barrier<>* block_barrier;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }

inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
inline double __dsub_rn(double a, double b) { volatile double r = a - b; return r; }
inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
inline float __double2float_rn(double d) { return (float)d; }
inline double __ull2double_rn(unsigned long long x) { return (double)x; }
inline double __ll2double_rn(long long x) { return (double)x; }
inline double __uint2double_rn(unsigned x) { return (double)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline long long __double2ll_rz(double d) { return (long long)d; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
