// The harness's own device code: the seeded input fill, output checksums and
// the tolerance comparison, run next to the user's kernel so that no buffer
// is generated, copied or compared on the host.
//
// Each function mirrors its host definition in data.rs bit for bit (checked
// on the host by tests/emulate.rs, which compiles this file as C++ with a
// shim, and on the GPU by tests/gpu.rs): the same SplitMix64 stream (element i of a buffer is
// mix(seed + (i+1)*GAMMA), a counter-based generator), the same encodings
// (the f16/bf16 conversions are ports of data.rs, not the hardware's), and
// every floating-point step written with _rn intrinsics so that nothing is
// contracted into an FMA. Sums are reduced per block in a fixed order, so a
// checksum is the same on every run.
//
// Regenerate device.ptx after editing:
//   UPDATE_PTX=1 cargo test -p kernelpro-gpu the_embedded_ptx_is_current

typedef unsigned long long u64;
typedef long long i64;

#define BLOCK 256
#define GAMMA 0x9e3779b97f4a7c15ULL

// The element codes of data.rs's `elem_code`.
enum { F32 = 0, F64 = 1, F16 = 2, BF16 = 3, I32 = 4, U32 = 5, I8 = 6, U8 = 7, I64 = 8 };

__device__ __forceinline__ u64 mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ unsigned elem_size(int e) {
    switch (e) {
    case F64: case I64: return 8;
    case F16: case BF16: return 2;
    case I8: case U8: return 1;
    default: return 4;
    }
}

__device__ unsigned short f32_to_f16_bits(float x) {
    unsigned b = __float_as_uint(x);
    unsigned short sign = (unsigned short)((b >> 16) & 0x8000);
    int exp = (int)((b >> 23) & 0xff);
    unsigned man = b & 0x7fffff;
    if (exp == 0xff) return sign | 0x7c00 | (man != 0 ? 0x200 : 0);
    int e = exp - 127 + 15;
    if (e >= 0x1f) return sign | 0x7c00;
    if (e <= 0) {
        if (e < -10) return sign;
        unsigned m = man | 0x800000;
        unsigned shift = (unsigned)(14 - e);
        unsigned half = 1u << (shift - 1);
        unsigned rest = m & ((1u << shift) - 1);
        unsigned r = m >> shift;
        if (rest > half || (rest == half && (r & 1) == 1)) r += 1;
        return sign | (unsigned short)r;
    }
    unsigned r = ((unsigned)e << 10) | (man >> 13);
    unsigned rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (r & 1) == 1)) r += 1;
    return sign | (unsigned short)r;
}

__device__ float f16_bits_to_f32(unsigned short h) {
    unsigned sign = ((unsigned)(h & 0x8000)) << 16;
    unsigned exp = (h >> 10) & 0x1f;
    unsigned man = h & 0x3ff;
    unsigned bits;
    if (exp == 0 && man == 0) {
        bits = sign;
    } else if (exp == 0) {
        float value = __fmul_rn(__uint2float_rn(man), 1.0f / 16777216.0f);
        return sign != 0 ? -value : value;
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    return __uint_as_float(bits);
}

__device__ unsigned short f32_to_bf16_bits(float x) {
    if (x != x) return 0x7fc0;
    unsigned b = __float_as_uint(x);
    return (unsigned short)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
}

// Rust's saturating `f64 as iN`: NaN is 0, out-of-range values clamp.
__device__ i64 sat_trunc(double v, double lo, double hi) {
    if (v != v) return 0;
    if (v <= lo) return (i64)lo;
    if (v >= hi) return (i64)hi;
    return __double2ll_rz(v);
}

__device__ i64 sat_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return 0x7fffffffffffffffLL;
    if (v <= -9223372036854775808.0) return (i64)0x8000000000000000ULL;
    return __double2ll_rz(v);
}

// data.rs `push`: one element of type `e` with value `v`.
__device__ void store(unsigned char* p, int e, double v) {
    switch (e) {
    case F32: *(float*)p = __double2float_rn(v); break;
    case F64: *(double*)p = v; break;
    case F16: *(unsigned short*)p = f32_to_f16_bits(__double2float_rn(v)); break;
    case BF16: *(unsigned short*)p = f32_to_bf16_bits(__double2float_rn(v)); break;
    case I32: *(int*)p = (int)sat_trunc(v, -2147483648.0, 2147483647.0); break;
    case U32: *(unsigned*)p = (unsigned)sat_trunc(v, 0.0, 4294967295.0); break;
    case I8: *(signed char*)p = (signed char)sat_trunc(v, -128.0, 127.0); break;
    case U8: *p = (unsigned char)sat_trunc(v, 0.0, 255.0); break;
    default: *(i64*)p = sat_i64(v); break;
    }
}

// data.rs `element`: the value of one element as a double.
__device__ double load(const unsigned char* p, int e) {
    switch (e) {
    case F32: return (double)*(const float*)p;
    case F64: return *(const double*)p;
    case F16: return (double)f16_bits_to_f32(*(const unsigned short*)p);
    case BF16: return (double)__uint_as_float(((unsigned)*(const unsigned short*)p) << 16);
    case I32: return (double)*(const int*)p;
    case U32: return __uint2double_rn(*(const unsigned*)p);
    case I8: return (double)*(const signed char*)p;
    case U8: return (double)*p;
    default: return __ll2double_rn(*(const i64*)p);
    }
}

// The raw bits of one element, zero-extended.
__device__ u64 raw(const unsigned char* p, unsigned size) {
    switch (size) {
    case 1: return *p;
    case 2: return *(const unsigned short*)p;
    case 4: return *(const unsigned*)p;
    default: return *(const u64*)p;
    }
}

// Modes of kp_fill (data.rs `FillMode`).
enum { PATTERN = 0, UNIFORM = 1, RANDINT = 2, IOTA = 3 };

extern "C" __global__ void kp_fill(unsigned char* dst, u64 n, int elem, int mode, u64 seed, double lo, double hi, i64 ilo, i64 ihi, u64 pattern) {
    unsigned size = elem_size(elem);
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned char* p = dst + i * size;
        if (mode == PATTERN) {
            switch (size) {
            case 1: *p = (unsigned char)pattern; break;
            case 2: *(unsigned short*)p = (unsigned short)pattern; break;
            case 4: *(unsigned*)p = (unsigned)pattern; break;
            default: *(u64*)p = pattern; break;
            }
            continue;
        }
        double v;
        if (mode == IOTA) {
            v = __ull2double_rn(i);
        } else {
            u64 z = mix(seed + (i + 1) * GAMMA);
            if (mode == UNIFORM) {
                double u = __dmul_rn(__ull2double_rn(z >> 11), 1.0 / 9007199254740992.0);
                v = __dadd_rn(lo, __dmul_rn(__dsub_rn(hi, lo), u));
            } else {
                // (hi - lo + 1) wraps to 0 only for the whole i64 range, where every value is taken.
                u64 span = (u64)ihi - (u64)ilo + 1;
                u64 r = span == 0 ? z : z % span;
                v = __ll2double_rn((i64)((u64)ilo + r));
            }
        }
        store(p, elem, v);
    }
}

struct Sums {
    double sum, abs_sum;
    u64 unwritten, hash;
};

// data.rs `checksum`: one Sums per block; the host adds them in block order.
extern "C" __global__ void kp_checksum(const unsigned char* buf, u64 n, int elem, Sums* out) {
    __shared__ double s[BLOCK], a[BLOCK];
    __shared__ u64 u[BLOCK], h[BLOCK];
    unsigned size = elem_size(elem);
    bool is_float = elem == F32 || elem == F64 || elem == F16 || elem == BF16;
    u64 sentinel = 0x7f7f7f7f7f7f7f7fULL >> (64 - 8 * size);
    double sum = 0.0, abs_sum = 0.0;
    u64 unwritten = 0, hash = 0;
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned char* p = buf + i * size;
        u64 bits = raw(p, size);
        hash += mix(bits ^ mix((i + 1) * GAMMA));
        double v = load(p, elem);
        if (is_float ? v != v : bits == sentinel) {
            unwritten += 1;
            continue;
        }
        sum = __dadd_rn(sum, v);
        abs_sum = __dadd_rn(abs_sum, fabs(v));
    }
    unsigned t = threadIdx.x;
    s[t] = sum; a[t] = abs_sum; u[t] = unwritten; h[t] = hash;
    __syncthreads();
    for (unsigned w = BLOCK / 2; w > 0; w /= 2) {
        if (t < w) {
            s[t] = __dadd_rn(s[t], s[t + w]);
            a[t] = __dadd_rn(a[t], a[t + w]);
            u[t] += u[t + w];
            h[t] += h[t + w];
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = Sums{s[0], a[0], u[0], h[0]};
}

struct Pair {
    u64 bad, differing, one_nan, worst_index;
    double worst_excess, max_abs_diff, max_abs, unused;
};

// The larger excess wins; on a tie the smaller index (the first, as on the host).
__device__ __forceinline__ bool worse(double e, u64 i, double best, u64 best_i) {
    return e > best || (e == best && i < best_i);
}

// data.rs `pair_stats`: `got` against `want` with tolerance (rtol, atol).
extern "C" __global__ void kp_compare(const unsigned char* want, const unsigned char* got, u64 n, int elem, double rtol, double atol, Pair* out) {
    __shared__ Pair sh[BLOCK];
    unsigned size = elem_size(elem);
    Pair m = {0, 0, 0, ~0ULL, -INFINITY, 0.0, 0.0, 0.0};
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned char *pw = want + i * size, *pg = got + i * size;
        double w = load(pw, elem), g = load(pg, elem);
        bool wn = w != w, gn = g != g;
        if (wn && gn) continue;
        if (raw(pw, size) != raw(pg, size)) m.differing += 1;
        if (!wn && fabs(w) != INFINITY) m.max_abs = fmax(m.max_abs, fabs(w));
        if (wn != gn) {
            m.one_nan += 1;
        } else {
            double d = w == g ? 0.0 : fabs(__dsub_rn(g, w));
            m.max_abs_diff = fmax(m.max_abs_diff, d);
        }
        if (w == g || fabs(__dsub_rn(g, w)) <= __dadd_rn(atol, __dmul_rn(rtol, fabs(w)))) continue;
        m.bad += 1;
        double excess = (wn || gn) ? INFINITY : __dsub_rn(__dsub_rn(fabs(__dsub_rn(g, w)), atol), __dmul_rn(rtol, fabs(w)));
        if (worse(excess, i, m.worst_excess, m.worst_index)) {
            m.worst_excess = excess;
            m.worst_index = i;
        }
    }
    unsigned t = threadIdx.x;
    sh[t] = m;
    __syncthreads();
    for (unsigned w = BLOCK / 2; w > 0; w /= 2) {
        if (t < w) {
            Pair o = sh[t + w];
            sh[t].bad += o.bad;
            sh[t].differing += o.differing;
            sh[t].one_nan += o.one_nan;
            if (worse(o.worst_excess, o.worst_index, sh[t].worst_excess, sh[t].worst_index)) {
                sh[t].worst_excess = o.worst_excess;
                sh[t].worst_index = o.worst_index;
            }
            sh[t].max_abs_diff = fmax(sh[t].max_abs_diff, o.max_abs_diff);
            sh[t].max_abs = fmax(sh[t].max_abs, o.max_abs);
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = sh[0];
}
