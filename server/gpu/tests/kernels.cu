// Kernels for the GPU tests (tests/gpu.rs), with their launch specs.
// kernelpro: let N = 1 << 24
// kernelpro: let M = 1 << 26
// kernelpro: let G = 1 << 30
// kernelpro: let P = (1 << 20) + 3

// kernelpro: tune B in [256, 128, 512]
// kernelpro: grid = ceil_div(N, B)
// kernelpro: block = B
// kernelpro: y = inout float[N]
// kernelpro: x = in float[N] uniform(-2, 2)
// kernelpro: a = 2.0
// kernelpro: n = N
extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// kernelpro: grid = 264
// kernelpro: block = 512
// kernelpro: y = inout float[N]
// kernelpro: x = in float[N] uniform(-2, 2)
// kernelpro: a = 2.0
// kernelpro: n = N
extern "C" __global__ void saxpy_stride(float* y, const float* x, float a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}

// Forgets one element: the comparison must name it.
// kernelpro: grid = ceil_div(N, 256)
// kernelpro: block = 256
// kernelpro: y = inout float[N]
// kernelpro: x = in float[N] uniform(-2, 2)
// kernelpro: a = 2.0
// kernelpro: n = N
extern "C" __global__ void saxpy_wrong(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i != 12345) y[i] = a * x[i] + y[i];
}

// kernelpro: grid = 1
// kernelpro: block = 32
// kernelpro: flag = inout int[1] zeros
extern "C" __global__ void hang(volatile int* flag) {
    while (flag[0] == 0) {}
}

// kernelpro: grid = 1
// kernelpro: block = 32
// kernelpro: y = out float[32]
extern "C" __global__ void oob(float* y) {
    y[threadIdx.x + (1ll << 36)] = 1.0f;
}

// A bandwidth-bound copy, 16 bytes per thread.
// kernelpro: grid = ceil_div(M / 4, 256)
// kernelpro: block = 256
// kernelpro: dst = out float[M]
// kernelpro: src = in float[M]
// kernelpro: n4 = M / 4
extern "C" __global__ void copy4(float4* dst, const float4* src, long long n4) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) dst[i] = src[i];
}

// A 4 GiB buffer (2^30 floats) scaled in place: its set-up (a host fill and
// copy took longer than the 10 s run timeout) must leave the timeout to the kernel.
// kernelpro: grid = 132 * 16
// kernelpro: block = 256
// kernelpro: x = inout float[G] uniform(-1, 1)
// kernelpro: n = G
extern "C" __global__ void scale_4g(float* x, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] *= 2.0f;
}

// Changes its input by whole ulps (integer arithmetic on the bits, so the host
// can do the same) and plants a NaN: the device comparison must count and
// pick the worst element exactly as the host's does.
// kernelpro: grid = 64
// kernelpro: block = 256
// kernelpro: x = inout float[P] uniform(-2, 2)
// kernelpro: n = P
extern "C" __global__ void perturb_ulps(float* x, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] = i == 777 ? __int_as_float(0x7fc00000) : __int_as_float(__float_as_int(x[i]) + (int)(i % 7) * 150);
}

// The same buffers, untouched.
// kernelpro: grid = 1
// kernelpro: block = 32
// kernelpro: x = inout float[P] uniform(-2, 2)
// kernelpro: n = P
extern "C" __global__ void leave_alone(float* x, long long n) {}

// Takes no parameters: the fill test gives it any buffers it likes.
extern "C" __global__ void noop() {}
