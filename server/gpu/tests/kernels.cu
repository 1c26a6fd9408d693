// Kernels for the GPU tests (tests/gpu.rs), with their launch specs.
// kernelpro: let N = 1 << 24
// kernelpro: let M = 1 << 26

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
