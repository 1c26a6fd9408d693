//! The CuTe GEMM written for one detected product.
//!
//! The kernel keeps its declaration and launch; its body calls one generated
//! `__device__` function that treats the whole grid as a persistent grid over
//! 128×128 CTA tiles (tile `t` goes to block `t mod gridsize`, linearised
//! from blockIdx), with every thread of the block an MMA thread. Operands go
//! global→shared through a 3-stage `cp.async` pipeline (`make_tiled_copy`)
//! into swizzled (16-bit) or padded (fp32) `tile_to_shape` layouts, then
//! shared→registers (`ldmatrix` for 16-bit) into a `make_tiled_mma`:
//! SM80 `mma.sync` with fp32 accumulation for half/bf16, `UniversalFMA` for
//! fp32 (TF32 is not used: it changes results beyond fp32 tolerances, and
//! the FMA path keeps the naive kernel's summation order exactly). Where
//! nvcc compiles 16-bit inputs for sm_90a, the same file's other main loop
//! (`wgmma.rs`) runs WGMMA from GMMA-swizzled shared memory instead. Sizes
//! that are not multiples of the tile, unaligned pointers or another block
//! size take a plain per-element loop over the same CuTe tensors instead.
//! Static shared memory only (48 KiB at most): the launch's dynamic size is
//! the spec's and cannot grow. [`launch_changing_gemm`] wraps this kernel
//! (as the path under any other launch) in one that asks for its own launch.

use crate::shape::{Elem, GemmShape, Major};
use crate::{warp_specialized, wgmma};
use kernelpro_source::Param;
use std::fmt;

/// Which MMA the generated kernel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Math {
    /// SM80 `mma.sync` m16n8k16 (half or bf16 in, fp32 accumulate); runs on
    /// sm_80+, and is replaced by WGMMA 64x128x16 where built for sm_90a.
    TensorCore,
    /// `UniversalFMA` on fp32 with shared-memory tiling.
    SimtFp32,
}

/// Generated code for one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuteKernel {
    /// Includes and the `__device__` GEMM function, for the helper region directly above the kernel's spec block.
    pub helpers: String,
    /// The kernel's new body, braces included.
    pub body: String,
    /// A qualifier for the kernel's declaration, when the tiling wants one.
    pub launch_bounds: Option<String>,
    pub math: Math,
    /// What the rewrite does, in a few words.
    pub note: String,
    /// The launch the kernel wants instead of its own, for a launch-changing rewrite.
    pub launch: Option<NewLaunch>,
}

/// The launch a launch-changing rewrite asks for: `threads` a block,
/// `smem` bytes of dynamic shared memory, one block a `tile_m`×`tile_n`
/// output tile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLaunch {
    pub threads: u32,
    pub smem: u32,
    pub tile_m: i64,
    pub tile_n: i64,
    pub tile_k: i64,
}

/// Why no CuTe GEMM is generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// A and B differ in element type.
    MixedInputs,
    /// The block's thread count is not 128 or 256.
    Threads(u32),
    /// A, B or C is not a pointer parameter of the kernel (or C is const).
    Operand(String),
    /// The launch-changing rewrite is for 16-bit inputs (tensor cores) only.
    NotTensorCore,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Unsupported::MixedInputs => write!(f, "A and B have different element types"),
            Unsupported::Threads(t) => write!(f, "the block has {t} threads; the CuTe GEMM tiles for 128 or 256"),
            Unsupported::Operand(p) => {
                write!(f, "`{p}` is not a writable pointer parameter of the kernel")
            }
            Unsupported::NotTensorCore => {
                write!(f, "the launch-changing GEMM needs 16-bit (half or bf16) inputs")
            }
        }
    }
}

/// CTA tile sizes in M and N.
const TILE_MN: u32 = 128;
/// What the launch-keeping helper is for: the kernel's body (`Keeping`), or
/// the path under any other launch inside a launch-changing rewrite.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Keeping,
    Fallback,
}

impl Role {
    /// Shared-memory pipeline depth: as a fallback its static shared memory
    /// (32 KiB at depth 2) comes on top of the new launch's dynamic stages,
    /// and leaves room for four of those.
    fn stages(self) -> u32 {
        match self {
            Role::Keeping => 3,
            Role::Fallback => 2,
        }
    }
}

/// The device function the rewritten kernel's body calls.
pub fn helper_name(kernel_name: &str) -> String {
    format!("kp_cute_gemm_{kernel_name}")
}

/// The CuTe GEMM for `shape` in kernel `kernel_name` with `params`, launched with `threads` threads a block.
pub fn cute_gemm_kernel(
    shape: &GemmShape,
    kernel_name: &str,
    params: &[Param],
    threads: u32,
) -> Result<CuteKernel, Unsupported> {
    gemm_for(shape, kernel_name, params, threads, Role::Keeping)
}

fn gemm_for(
    shape: &GemmShape,
    kernel_name: &str,
    params: &[Param],
    threads: u32,
    role: Role,
) -> Result<CuteKernel, Unsupported> {
    let stages = role.stages();
    if shape.a_type != shape.b_type {
        return Err(Unsupported::MixedInputs);
    }
    if threads != 128 && threads != 256 {
        return Err(Unsupported::Threads(threads));
    }
    for (name, written) in [(&shape.a, false), (&shape.b, false), (&shape.c, true)] {
        if !params.iter().any(|p| &p.name == name && p.pointer && !(written && p.is_const)) {
            return Err(Unsupported::Operand(name.clone()));
        }
    }
    let math = if shape.a_type == Elem::Float { Math::SimtFp32 } else { Math::TensorCore };
    let plan = Plan::new(shape, math, threads, stages);
    let function = helper_name(kernel_name);
    let scale = shape.alpha_beta.as_ref();
    let call_scale = scale.map_or(String::new(), |s| format!(", float({}), float({})", s.alpha, s.beta));
    let body = format!(
        "{{\n  {function}({}, {}, {}, int({}), int({}), int({}){call_scale});\n}}",
        shape.a, shape.b, shape.c, shape.m.expr, shape.n.expr, shape.k.expr
    );
    let (store, fallback_store) = match scale {
        Some(_) => (
            "tCgC(i) = TC(alpha * tCrC(i) + beta * float(tCgC(i)));",
            "mC(m, n) = TC(alpha * acc + beta * float(mC(m, n)));",
        ),
        None => ("tCgC(i) = TC(tCrC(i));", "mC(m, n) = TC(acc);"),
    };
    let replacements = [
        ("@FUNCTION@", function.clone()),
        ("@SCALE_PARAMS@", if scale.is_some() { ", float alpha, float beta".into() } else { String::new() }),
        ("@TA@", shape.a_type.cute().into()),
        ("@TB@", shape.b_type.cute().into()),
        ("@TC@", shape.c_type.cute().into()),
        ("@A_STRIDE@", stride_mk(shape.a_layout, 'M', 'K')),
        ("@B_STRIDE@", stride_mk(shape.b_layout.flip(), 'N', 'K')),
        ("@C_STRIDE@", stride_mk(shape.c_layout, 'M', 'N')),
        ("@THREADS@", threads.to_string()),
        ("@TILE@", TILE_MN.to_string()),
        ("@BK@", plan.bk.to_string()),
        ("@STAGES@", stages.to_string()),
        ("@SMEM_A@", plan.a.smem.clone()),
        ("@SMEM_B@", plan.b.smem.clone()),
        ("@COPY_A@", plan.a.gmem_copy.clone()),
        ("@COPY_B@", plan.b.gmem_copy.clone()),
        ("@S2R_A@", plan.a.s2r.clone()),
        ("@S2R_B@", plan.b.s2r.clone()),
        ("@MMA@", plan.mma.clone()),
        ("@STORE@", store.into()),
        ("@FALLBACK_STORE@", fallback_store.into()),
        ("@SUMMARY@", plan.summary(shape)),
        ("@LIMIT@", limit_comment(math, role).into()),
    ];
    // 16-bit inputs get the WGMMA loop where nvcc compiles for sm_90a and
    // the mma.sync loop elsewhere: the recipe does not know the target arch.
    let template = match math {
        Math::TensorCore => format!(
            "{HEAD}#if defined(CUTE_ARCH_MMA_SM90A_ENABLED)\n{}#else\n{SM80_MAINLOOP}#endif\n}}\n\n",
            wgmma::MAINLOOP
        ),
        Math::SimtFp32 => format!("{HEAD}{SM80_MAINLOOP}}}\n\n"),
    };
    let hopper = wgmma::replacements(shape.a_type, plan.a_k_major, plan.b_k_major, threads);
    let helpers = replacements.iter().chain(hopper.iter()).fold(template, |t, (key, value)| t.replace(key, value));
    // Two CTAs a multiprocessor (96 KiB of shared memory) hide the mma.sync
    // pipeline's latency better than one with more registers: 322 against
    // 218 TFLOP/s for bf16 4096³ on an H200, with a few bytes of spills. The
    // WGMMA loop fits the same bound without spills (about 108 registers).
    let launch_bounds = (math == Math::TensorCore).then(|| format!("__launch_bounds__({threads}, 2)"));
    Ok(CuteKernel { helpers, body, launch_bounds, math, note: plan.summary(shape), launch: None })
}

/// The launch-changing rewrite of a 16-bit product (see `warp_specialized.rs`):
/// the launch-keeping kernel for `threads` threads stays inside it as the
/// path for any other launch.
pub fn launch_changing_gemm(
    shape: &GemmShape,
    kernel_name: &str,
    params: &[Param],
    threads: u32,
) -> Result<CuteKernel, Unsupported> {
    let keeping = gemm_for(shape, kernel_name, params, threads, Role::Fallback)?;
    if keeping.math != Math::TensorCore {
        return Err(Unsupported::NotTensorCore);
    }
    let ws = warp_specialized::function_name(kernel_name);
    let helpers = keeping.helpers + &warp_specialized::helper(shape, kernel_name, &helper_name(kernel_name));
    let body = keeping.body.replacen(&helper_name(kernel_name), &ws, 1);
    let launch = NewLaunch {
        threads: warp_specialized::THREADS,
        smem: warp_specialized::smem_bytes(),
        tile_m: warp_specialized::TILE_M,
        tile_n: warp_specialized::TILE_N,
        tile_k: warp_specialized::TILE_K,
    };
    Ok(CuteKernel {
        helpers,
        body,
        launch_bounds: Some(format!("__launch_bounds__({}, 1)", launch.threads)),
        math: Math::TensorCore,
        note: format!(
            "CuTe GEMM with its own launch: {}x{}x{} tiles, TMA into {} bytes of dynamic shared memory, WGMMA, {} threads (changes the launch)",
            launch.tile_m, launch.tile_n, launch.tile_k, launch.smem, launch.threads
        ),
        launch: Some(launch),
    })
}

impl Major {
    fn flip(self) -> Major {
        match self {
            Major::Row => Major::Col,
            Major::Col => Major::Row,
        }
    }
}

/// CuTe stride of an (R, C) view of a matrix stored with `major` (rows R, columns C).
pub(crate) fn stride_mk(major: Major, rows: char, cols: char) -> String {
    match major {
        Major::Row => format!("make_stride({cols}, Int<1>{{}})"),
        Major::Col => format!("make_stride(Int<1>{{}}, {rows})"),
    }
}

/// How one operand moves from global memory to registers.
struct Operand {
    smem: String,
    gmem_copy: String,
    s2r: String,
}

struct Plan {
    bk: u32,
    a_k_major: bool,
    b_k_major: bool,
    a: Operand,
    b: Operand,
    mma: String,
    math: Math,
    threads: u32,
    stages: u32,
}

impl Plan {
    fn new(shape: &GemmShape, math: Math, threads: u32, stages: u32) -> Plan {
        let (a_k_major, b_k_major) = shape.k_major();
        let ty = shape.a_type.cute();
        match math {
            Math::TensorCore => {
                let atom = match shape.a_type {
                    Elem::Bf16 => "SM80_16x8x16_F32BF16BF16F32_TN",
                    _ => "SM80_16x8x16_F32F16F16F32_TN",
                };
                let (warps, tile) = if threads == 256 {
                    ("Shape<_2, _4>", "Tile<_32, _64, _16>")
                } else {
                    ("Shape<_2, _2>", "Tile<_32, _32, _16>")
                };
                Plan {
                    bk: 32,
                    a_k_major,
                    b_k_major,
                    a: tensor_core_operand(a_k_major, ty, threads),
                    b: tensor_core_operand(b_k_major, ty, threads),
                    mma: format!("make_tiled_mma({atom}{{}}, Layout<{warps}>{{}}, {tile}{{}})"),
                    math,
                    threads,
                    stages,
                }
            }
            Math::SimtFp32 => {
                let threads_n = threads / 16;
                Plan {
                    bk: 8,
                    a_k_major,
                    b_k_major,
                    a: simt_operand(a_k_major, threads),
                    b: simt_operand(b_k_major, threads),
                    mma: format!(
                        "make_tiled_mma(UniversalFMA<float, float, float>{{}}, Layout<Shape<_16, _{threads_n}, _1>>{{}})"
                    ),
                    math,
                    threads,
                    stages,
                }
            }
        }
    }

    fn summary(&self, shape: &GemmShape) -> String {
        let math = match self.math {
            Math::TensorCore => format!(
                "SM80 mma.sync {} tensor cores (WGMMA 64x128x16 on sm_90a), fp32 accumulate",
                if shape.a_type == Elem::Bf16 { "bf16" } else { "fp16" }
            ),
            Math::SimtFp32 => "fp32 UniversalFMA".to_string(),
        };
        format!(
            "CuTe GEMM: {TILE_MN}x{TILE_MN}x{} CTA tiles, {}-stage cp.async pipeline, {math}, {} threads as a persistent grid",
            self.bk, self.stages, self.threads
        )
    }
}

/// What the user should know before accepting a tensor-core rewrite: the
/// launch-keeping one is bounded by the launch it keeps (docs/benchmarks.md,
/// "CuTe GEMM main-loop probes"; measured on an H200). Inside a
/// launch-changing rewrite the same helper is the other path.
fn limit_comment(math: Math, role: Role) -> &'static str {
    match (math, role) {
        (Math::TensorCore, Role::Keeping) => {
            "// It keeps the kernel's launch, so its pipeline has the 48 KiB of shared memory a launch
// without dynamic shared memory gets: about half of cuBLAS's speed on an H200. The recipe's
// other rewrite changes the launch (384 threads, dynamic shared memory) and is about 1.7x faster.
"
        }
        (Math::TensorCore, Role::Fallback) => {
            "// The path for any launch other than the spec's, and where nvcc does not target sm_90a.
"
        }
        (Math::SimtFp32, _) => "",
    }
}

/// 16-bit operand: 64-byte (K-major, bK = 32) or 128-byte (MN-major) swizzled rows, 16-byte cp.async, ldmatrix.
fn tensor_core_operand(k_major: bool, ty: &str, threads: u32) -> Operand {
    if k_major {
        Operand {
            smem: "composition(Swizzle<2, 3, 3>{}, Layout<Shape<_8, _32>, Stride<_32, _1>>{})".into(),
            gmem_copy: format!(
                "make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>, {ty}>{{}}, Layout<Shape<_{}, _4>, Stride<_4, _1>>{{}}, Layout<Shape<_1, _8>>{{}})",
                threads / 4
            ),
            s2r: format!("Copy_Atom<SM75_U32x4_LDSM_N, {ty}>"),
        }
    } else {
        Operand {
            smem: "composition(Swizzle<3, 3, 3>{}, Layout<Shape<_64, _8>, Stride<_1, _64>>{})".into(),
            gmem_copy: format!(
                "make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>, {ty}>{{}}, Layout<Shape<_16, _{}>, Stride<_1, _16>>{{}}, Layout<Shape<_8, _1>>{{}})",
                threads / 16
            ),
            s2r: format!("Copy_Atom<SM75_U16x8_LDSM_T, {ty}>"),
        }
    }
}

/// fp32 operand, stored MN-major in shared memory for the FMA threads: K-major
/// sources go element by element into a padded tile (no bank conflicts on the
/// transposing store), MN-major ones 16 bytes at a time.
fn simt_operand(k_major: bool, threads: u32) -> Operand {
    let s2r = "Copy_Atom<AutoVectorizingCopy, float>".to_string();
    if k_major {
        Operand {
            smem: format!("Layout<Shape<_{TILE_MN}, _8>, Stride<_1, Int<{}>>>{{}}", TILE_MN + 1),
            gmem_copy: format!(
                "make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<float>, float>{{}}, Layout<Shape<_{}, _8>, Stride<_8, _1>>{{}}, Layout<Shape<_1, _1>>{{}})",
                threads / 8
            ),
            s2r,
        }
    } else {
        Operand {
            smem: format!("Layout<Shape<_{TILE_MN}, _8>>{{}}"),
            gmem_copy: format!(
                "make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, float>{{}}, Layout<Shape<_32, _{}>>{{}}, Layout<Shape<_4, _1>>{{}})",
                threads / 32
            ),
            s2r,
        }
    }
}

/// Views of the operands, the tile sizes and the per-element fallback; the
/// function's body continues with one of the main loops.
const HEAD: &str = r#"#include <cute/tensor.hpp>
#include <cstdint>

// @SUMMARY@.
@LIMIT@static __device__ __forceinline__ void @FUNCTION@(const void* a_ptr, const void* b_ptr, void* c_ptr, int M, int N, int K@SCALE_PARAMS@) {
  using namespace cute;
  using TA = @TA@;
  using TB = @TB@;
  using TC = @TC@;
  const TA* A = static_cast<const TA*>(a_ptr);
  const TB* B = static_cast<const TB*>(b_ptr);
  TC* C = static_cast<TC*>(c_ptr);
  // (M,K), (N,K) and (M,N) views of the three matrices.
  Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), @A_STRIDE@);
  Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), @B_STRIDE@);
  Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), @C_STRIDE@);
  const int threads = blockDim.x * blockDim.y * blockDim.z;
  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const int cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int ctas = gridDim.x * gridDim.y * gridDim.z;
  auto bM = Int<@TILE@>{};
  auto bN = Int<@TILE@>{};
  auto bK = Int<@BK@>{};
  auto bP = Int<@STAGES@>{};
  const bool aligned = ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B)) % 16) == 0;
  if (threads != @THREADS@ || M % bM != 0 || N % bN != 0 || K % bK != 0 || K < bK || !aligned) {
    // Outside what the tiles cover: one thread per output over the same tensors.
    for (long long i = (long long)cta * threads + tid; i < (long long)M * N; i += (long long)ctas * threads) {
      const int m = int(i / N), n = int(i % N);
      float acc = 0.f;
      for (int k = 0; k < K; ++k) acc += float(mA(m, k)) * float(mB(n, k));
      @FALLBACK_STORE@
    }
    return;
  }
  auto cta_tiler = make_shape(bM, bN, bK);
"#;

/// The SM80 main loop: `cp.async` into swizzled (or padded) shared memory,
/// `ldmatrix` (or plain loads) into registers, `mma.sync` (or FMA).
const SM80_MAINLOOP: &str = r#"  auto sA_layout = tile_to_shape(@SMEM_A@, make_shape(bM, bK, bP));
  auto sB_layout = tile_to_shape(@SMEM_B@, make_shape(bN, bK, bP));
  __shared__ alignas(128) TA smem_a[cosize_v<decltype(sA_layout)>];
  __shared__ alignas(128) TB smem_b[cosize_v<decltype(sB_layout)>];
  Tensor sA = make_tensor(make_smem_ptr(smem_a), sA_layout);  // (BLK_M,BLK_K,PIPE)
  Tensor sB = make_tensor(make_smem_ptr(smem_b), sB_layout);  // (BLK_N,BLK_K,PIPE)
  TiledCopy copy_a = @COPY_A@;
  TiledCopy copy_b = @COPY_B@;
  TiledMMA mma = @MMA@;
  @S2R_A@ s2r_atom_a;
  @S2R_B@ s2r_atom_b;
  CUTE_STATIC_ASSERT_V(size(copy_a) == size(mma));
  CUTE_STATIC_ASSERT_V(size(copy_b) == size(mma));
  CUTE_STATIC_ASSERT_V(size(mma) == Int<@THREADS@>{});

  ThrCopy thr_copy_a = copy_a.get_slice(tid);
  ThrCopy thr_copy_b = copy_b.get_slice(tid);
  ThrMMA thr_mma = mma.get_slice(tid);
  ThrCopy s2r_thr_copy_a = make_tiled_copy_A(s2r_atom_a, mma).get_slice(tid);
  ThrCopy s2r_thr_copy_b = make_tiled_copy_B(s2r_atom_b, mma).get_slice(tid);
  Tensor tAsA = thr_copy_a.partition_D(sA);        // (CPY,CPY_M,CPY_K,PIPE)
  Tensor tBsB = thr_copy_b.partition_D(sB);        // (CPY,CPY_N,CPY_K,PIPE)
  Tensor tXsA = s2r_thr_copy_a.partition_S(sA);    // (CPY,MMA_M,MMA_K,PIPE)
  Tensor tXsB = s2r_thr_copy_b.partition_S(sB);    // (CPY,MMA_N,MMA_K,PIPE)
  Tensor tCrA = thr_mma.partition_fragment_A(sA(_, _, 0));  // (MMA,MMA_M,MMA_K)
  Tensor tCrB = thr_mma.partition_fragment_B(sB(_, _, 0));  // (MMA,MMA_N,MMA_K)
  Tensor tXrA = s2r_thr_copy_a.retile_D(tCrA);
  Tensor tXrB = s2r_thr_copy_b.retile_D(tCrB);
  auto K_PIPE_MAX = size<3>(tAsA);
  auto K_BLOCK_MAX = size<2>(tCrA);

  const int tiles_m = M / bM;
  for (int tile = cta; tile < tiles_m * (N / bN); tile += ctas) {
    auto cta_coord = make_coord(tile % tiles_m, tile / tiles_m, _);
    Tensor gA = local_tile(mA, cta_tiler, cta_coord, Step<_1, X, _1>{});  // (BLK_M,BLK_K,k)
    Tensor gB = local_tile(mB, cta_tiler, cta_coord, Step<X, _1, _1>{});  // (BLK_N,BLK_K,k)
    Tensor gC = local_tile(mC, cta_tiler, cta_coord, Step<_1, _1, X>{});  // (BLK_M,BLK_N)
    Tensor tAgA = thr_copy_a.partition_S(gA);
    Tensor tBgB = thr_copy_b.partition_S(gB);
    Tensor tCgC = thr_mma.partition_C(gC);
    Tensor tCrC = thr_mma.make_fragment_C(tCgC);
    clear(tCrC);

    // Fill all stages but one.
    int k_tile_count = size<3>(tAgA);
    int k_tile_next = 0;
    CUTE_UNROLL
    for (int k_pipe = 0; k_pipe < K_PIPE_MAX - 1; ++k_pipe) {
      copy(copy_a, tAgA(_, _, _, k_tile_next), tAsA(_, _, _, k_pipe));
      copy(copy_b, tBgB(_, _, _, k_tile_next), tBsB(_, _, _, k_pipe));
      cp_async_fence();
      --k_tile_count;
      if (k_tile_count > 0) ++k_tile_next;
    }
    int smem_pipe_read = 0;
    int smem_pipe_write = K_PIPE_MAX - 1;
    Tensor tXsA_p = tXsA(_, _, _, smem_pipe_read);
    Tensor tXsB_p = tXsB(_, _, _, smem_pipe_read);
    cp_async_wait<K_PIPE_MAX - 2>();
    __syncthreads();
    copy(s2r_atom_a, tXsA_p(_, _, Int<0>{}), tXrA(_, _, Int<0>{}));
    copy(s2r_atom_b, tXsB_p(_, _, Int<0>{}), tXrB(_, _, Int<0>{}));

    // Main loop: global->shared for a later k-tile, shared->registers for the
    // next k-block and the MMAs of this one all overlap.
    CUTE_NO_UNROLL
    while (k_tile_count > -(K_PIPE_MAX - 1)) {
      CUTE_UNROLL
      for (int k_block = 0; k_block < K_BLOCK_MAX; ++k_block) {
        if (k_block == K_BLOCK_MAX - 1) {
          tXsA_p = tXsA(_, _, _, smem_pipe_read);
          tXsB_p = tXsB(_, _, _, smem_pipe_read);
          cp_async_wait<K_PIPE_MAX - 2>();
          __syncthreads();
        }
        auto k_block_next = (k_block + Int<1>{}) % K_BLOCK_MAX;
        copy(s2r_atom_a, tXsA_p(_, _, k_block_next), tXrA(_, _, k_block_next));
        copy(s2r_atom_b, tXsB_p(_, _, k_block_next), tXrB(_, _, k_block_next));
        if (k_block == 0) {
          copy(copy_a, tAgA(_, _, _, k_tile_next), tAsA(_, _, _, smem_pipe_write));
          copy(copy_b, tBgB(_, _, _, k_tile_next), tBsB(_, _, _, smem_pipe_write));
          cp_async_fence();
          --k_tile_count;
          if (k_tile_count > 0) ++k_tile_next;
          smem_pipe_write = smem_pipe_read;
          smem_pipe_read = (smem_pipe_read == K_PIPE_MAX - 1) ? 0 : smem_pipe_read + 1;
        }
        gemm(mma, tCrA(_, _, k_block), tCrB(_, _, k_block), tCrC);
      }
    }

    CUTE_UNROLL
    for (int i = 0; i < size(tCrC); ++i) @STORE@
    // The next tile's prologue overwrites the stages.
    cp_async_wait<0>();
    __syncthreads();
  }
"#;
