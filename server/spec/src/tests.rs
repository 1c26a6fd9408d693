//! End-to-end tests: source text in, launch spec or findings out.

use crate::*;
use expect_test::{Expect, expect};

/// A signature from a C parameter list, e.g. `float* y, const float* x, int n`.
fn signature(name: &str, params: &str) -> KernelSignature {
    let params = params
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let p = p.trim();
            let split = p.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).expect("type and name");
            let (ty, name) = (p[..=split].trim(), &p[split + 1..]);
            let pointer = ty.ends_with('*');
            Param { name: name.to_string(), ty: ty.trim_end_matches('*').trim().to_string(), pointer }
        })
        .collect();
    KernelSignature { name: name.to_string(), params }
}

fn run(source: &str, params: &str, opts: &ResolveOptions) -> String {
    let specs = parse_file(source);
    let kernel = &specs.kernels[0];
    match resolve(kernel, &specs.file_lets, &signature(&kernel.kernel, params), opts) {
        Ok(spec) => serde_json::to_string_pretty(&spec).unwrap(),
        Err(findings) => findings
            .iter()
            .map(|f| {
                let end = if f.span.end.col == u32::MAX { "end".to_string() } else { f.span.end.col.to_string() };
                let line = source.lines().nth(f.span.start.line as usize).unwrap_or("");
                let marked =
                    line.get(f.span.start.col as usize..f.span.end.col.min(line.len() as u32) as usize).unwrap_or(line);
                format!(
                    "{}:{}-{} [{}] `{}` {}\n",
                    f.span.start.line,
                    f.span.start.col,
                    end,
                    f.code.as_deref().unwrap_or(""),
                    marked,
                    f.message
                )
            })
            .collect(),
    }
}

fn check(source: &str, params: &str, expected: Expect) {
    expected.assert_eq(&run(source, params, &ResolveOptions::default()));
}

const SAXPY: &str = "\
// kernelpro: let N = 1 << 24
// kernelpro: tune B in [128, 256, 512]
// kernelpro: grid = ceil_div(N, B)
// kernelpro: block = B
// kernelpro: y = inout float[N]
// kernelpro: x = in float[N] uniform(-2, 2)
// kernelpro: a = 2.0
// kernelpro: n = N
__global__ void saxpy(float* y, const float* x, float a, int n)
";
const SAXPY_PARAMS: &str = "float* y, const float* x, float a, int n";

#[test]
fn resolves_the_issue_saxpy_example() {
    check(
        SAXPY,
        SAXPY_PARAMS,
        expect![[r#"
            {
              "kernel": "saxpy",
              "grid": [
                131072,
                1,
                1
              ],
              "block": [
                128,
                1,
                1
              ],
              "smem": 0,
              "args": [
                {
                  "kind": "buffer",
                  "name": "y",
                  "dir": "inout",
                  "elem": "float",
                  "count": 16777216,
                  "init": {
                    "uniform": {
                      "lo": -1.0,
                      "hi": 1.0
                    }
                  }
                },
                {
                  "kind": "buffer",
                  "name": "x",
                  "dir": "in",
                  "elem": "float",
                  "count": 16777216,
                  "init": {
                    "uniform": {
                      "lo": -2.0,
                      "hi": 2.0
                    }
                  }
                },
                {
                  "kind": "scalar",
                  "name": "a",
                  "ty": "f32",
                  "value": {
                    "f64": 2.0
                  }
                },
                {
                  "kind": "scalar",
                  "name": "n",
                  "ty": "i32",
                  "value": {
                    "i64": 16777216
                  }
                }
              ],
              "check": null,
              "seed": 42,
              "tunables": [
                {
                  "name": "B",
                  "candidates": [
                    128,
                    256,
                    512
                  ],
                  "value": 128
                }
              ],
              "instantiate": null,
              "op": null,
              "lets": {
                "B": 128,
                "N": 16777216
              }
            }"#]],
    );
}

#[test]
fn tune_overrides_change_the_launch() {
    let opts = ResolveOptions { overrides: [("B".to_string(), 512)].into(), ..Default::default() };
    let spec = parse_file(SAXPY);
    let launch = resolve(&spec.kernels[0], &spec.file_lets, &signature("saxpy", SAXPY_PARAMS), &opts).unwrap();
    assert_eq!((launch.grid, launch.block, launch.tunables[0].value), ([32768, 1, 1], [512, 1, 1], 512));

    let opts = ResolveOptions { overrides: [("TILE".to_string(), 64)].into(), ..Default::default() };
    expect![[r#"
        7:0-end [unknown-directive] `// kernelpro: n = N` the optimizer set `TILE`, but this kernel has no `tune TILE in [...]`
    "#]]
    .assert_eq(&run(SAXPY, SAXPY_PARAMS, &opts));
}

#[test]
fn resolves_templates_with_file_lets_and_all_directives() {
    check(
        "// kernelpro: let M = 256
// kernelpro: let K = 2 * M
template <typename T, int TILE>
__device__ T helper(T x) { return x; }

// kernelpro: instantiate = mm<__half, 32>
// kernelpro: grid = (ceil_div(M, TILE), M / TILE)
// kernelpro: block = (TILE, 8)
// kernelpro: smem = 2 * TILE * TILE * 2
// kernelpro: seed = 7
// kernelpro: check rtol=1e-2 atol=1e-3
// kernelpro: op = gemm M M K row
// kernelpro: a = in half[M * K] randint(-3, 3)
// kernelpro: c = out half[M * M]
// kernelpro: idx = in int[M] iota
// kernelpro: alpha = 1
// kernelpro: k = K
template <typename T, int TILE>
__global__ void mm(const T* a, T* c, const int* idx, T alpha, size_t k)
",
        "const T* a, T* c, const int* idx, T alpha, size_t k",
        expect![[r#"
            {
              "kernel": "mm",
              "grid": [
                8,
                8,
                1
              ],
              "block": [
                32,
                8,
                1
              ],
              "smem": 4096,
              "args": [
                {
                  "kind": "buffer",
                  "name": "a",
                  "dir": "in",
                  "elem": "half",
                  "count": 131072,
                  "init": {
                    "randint": {
                      "lo": -3,
                      "hi": 3
                    }
                  }
                },
                {
                  "kind": "buffer",
                  "name": "c",
                  "dir": "out",
                  "elem": "half",
                  "count": 65536,
                  "init": {
                    "uniform": {
                      "lo": -1.0,
                      "hi": 1.0
                    }
                  }
                },
                {
                  "kind": "buffer",
                  "name": "idx",
                  "dir": "in",
                  "elem": "int",
                  "count": 256,
                  "init": "iota"
                },
                {
                  "kind": "scalar",
                  "name": "alpha",
                  "ty": "f16",
                  "value": {
                    "f64": 1.0
                  }
                },
                {
                  "kind": "scalar",
                  "name": "k",
                  "ty": "u64",
                  "value": {
                    "i64": 512
                  }
                }
              ],
              "check": {
                "rtol": 0.01,
                "atol": 0.001
              },
              "seed": 7,
              "tunables": [],
              "instantiate": {
                "name": "mm",
                "args": [
                  "__half",
                  "32"
                ]
              },
              "op": "gemm M M K row",
              "lets": {
                "K": 512,
                "M": 256,
                "TILE": 32
              }
            }"#]],
    );
}

#[test]
fn reports_unknown_directives_and_misplaced_lines() {
    check(
        "// kernelpro: let N = 64
// kernelpro: block = 32
int x;
// kernelpro: launch N
// kernelpro: grid = 1
// kernelpro: block = 32
// kernelpro: n = N
__global__ void k(int n)
",
        "int n",
        expect![[r#"
            3:14-20 [unknown-directive] `launch` unknown directive `launch`: a spec line is one of let, tune, grid, block, smem, seed, check, instantiate, op, or PARAM = ...
            6:18-19 [bad-expression] `N` bad expression in the value of `n`: unknown name `N`: define it with `let N = ...` above this line (no names are defined yet)
        "#]],
    );
}

#[test]
fn reports_unbound_and_unknown_parameters() {
    check(
        "// kernelpro: grid = 1
// kernelpro: block = 32
// kernelpro: y = inout float[32]
// kernelpro: z = 3
__global__ void saxpy(float* y, const __half* x, float a, int n)
",
        "float* y, const __half* x, float a, int n",
        expect![[r#"
            3:14-15 [unknown-parameter] `z` `saxpy` has no parameter `z`: its parameters are y, x, a, n
            3:0-end [unbound-parameter] `// kernelpro: z = 3` parameter `x` (const __half*) is not bound: add `// kernelpro: x = in half[N]`
            3:0-end [unbound-parameter] `// kernelpro: z = 3` parameter `a` (float) is not bound: add `// kernelpro: a = 1.0`
            3:0-end [unbound-parameter] `// kernelpro: z = 3` parameter `n` (int) is not bound: add `// kernelpro: n = N`
        "#]],
    );
}

#[test]
fn reports_type_mismatches() {
    check(
        "// kernelpro: grid = 1
// kernelpro: block = 32
// kernelpro: y = out half[32]
// kernelpro: x = inout float[32]
// kernelpro: a = in float[4]
// kernelpro: n = 2.5
// kernelpro: p = 3
// kernelpro: i = in int[4] uniform(0, 1)
// kernelpro: w = in double[4]
// kernelpro: v = 1
__global__ void k(float* y, const float* x, float a, int n, float* p, int* i, T* w, float4 v)
",
        "float* y, const float* x, float a, int n, float* p, int* i, T* w, float4 v",
        expect![[r#"
            2:22-26 [type-mismatch] `half` `half[...]` does not match parameter `y` of type `float*`: write `float[...]`
            3:24-29 [type-mismatch] `float` `x` points to const data, so the kernel cannot write it: make it `in`
            4:14-15 [type-mismatch] `a` `a` is a `float` value, not a pointer: bind it to a number, e.g. `a = 1.0`
            5:18-21 [type-mismatch] `2.5` `2.5` is a float literal but `n` is `int`: write an integer
            6:14-15 [type-mismatch] `p` `p` is a pointer (`float*`): bind it to a buffer, e.g. `p = in float[N]`
            7:28-35 [type-mismatch] `uniform` `uniform` fills floating types; for int use `randint(lo, hi)`
            9:18-19 [type-mismatch] `1` cannot pass `v` of type `float4`: KernelPro passes bool, integer and floating scalars
        "#]],
    );
}

#[test]
fn reports_bad_expressions_with_their_column() {
    check(
        "// kernelpro: let N = 1 << 10
// kernelpro: let Z = N - 1024
// kernelpro: let BIG = N * N * N * N * N * N * N
// kernelpro: grid = ceil_div(N, Z)
// kernelpro: block = (M, 2)
// kernelpro: x = in float[N +]
// kernelpro: n = 1 << 40
// kernelpro: m = N % Z
__global__ void k(float* x, int n, int m)
",
        "float* x, int n, int m",
        expect![[r#"
            2:46-47 [overflow] `*` bad expression in `let BIG`: `1152921504606846976 * 1024` overflows a 64-bit integer
            3:33-34 [division-by-zero] `Z` bad expression in `grid`: division by zero: the second argument of ceil_div is 0
            4:23-24 [bad-expression] `M` bad expression in `block`: unknown name `M`: define it with `let M = ...` above this line (defined names: N, Z)
            5:30-31 [bad-expression] `]` bad expression in the element count of `x`: expression ends too early: expected a number, a name or `(`
            6:18-25 [overflow] `1 << 40` 1099511627776 does not fit in `int` (-2147483648..=2147483647)
            7:22-23 [division-by-zero] `Z` bad expression in the value of `m`: division by zero: the right side of `%` is 0
        "#]],
    );
}

#[test]
fn reports_buffers_over_the_memory_cap() {
    check(
        "// kernelpro: let N = 1 << 30
// kernelpro: grid = 1
// kernelpro: block = 1
// kernelpro: a = in float[N]
// kernelpro: b = in double[N]
__global__ void k(float* a, double* b)
",
        "float* a, double* b",
        expect![[r#"
            4:28-29 [memory-cap] `N` buffers reach 12.00 GiB with `b` (8589934592 bytes), over the 8.00 GiB memory cap: use a smaller count or raise the cap setting
        "#]],
    );
}

#[test]
fn reports_launch_shapes_out_of_range() {
    check(
        "// kernelpro: grid = (1 << 31, 65536)
// kernelpro: block = (64, 32)
// kernelpro: smem = 300 * 1024
__global__ void k()
",
        "",
        expect![[r#"
            0:22-29 [launch-range] `1 << 31` grid.x = 2147483648 is outside 1..=2147483647: CUDA rejects such a launch
            0:31-36 [launch-range] `65536` grid.y = 65536 is outside 1..=65535: CUDA rejects such a launch
            1:23-29 [launch-range] `64, 32` block has 2048 threads, more than 1024: make x*y*z at most 1024
            2:21-31 [launch-range] `300 * 1024` smem = 307200 bytes is outside 0..=232448 (227 KiB, the most a block can use)
        "#]],
    );
    check(
        "// kernelpro: block = (1, 1, 65)
__global__ void k()
",
        "",
        expect![[r#"
            0:29-31 [launch-range] `65` block.z = 65 is outside 1..=64: CUDA rejects such a launch
            0:0-end [missing-directive] `// kernelpro: block = (1, 1, 65)` no `grid`: add `// kernelpro: grid = ...` above the kernel
        "#]],
    );
}

#[test]
fn reports_empty_tune_lists_and_duplicates() {
    check(
        "// kernelpro: tune B in []
// kernelpro: let N = 4
// kernelpro: let N = 8
// kernelpro: grid = 1
// kernelpro: grid = 2
// kernelpro: block = 1
// kernelpro: n = N
// kernelpro: n = 2
__global__ void k(int n)
",
        "int n",
        expect![[r#"
            0:24-26 [empty-tune] `[]` `tune B` has no values: list at least one, e.g. `[128, 256]`
            2:18-19 [duplicate] `N` `N` is already defined on line 2: rename one of them
            4:21-22 [duplicate] `2` `grid` is already given on line 4: keep one
            7:14-15 [duplicate] `n` `n` is already bound on line 7: keep one
        "#]],
    );
}

#[test]
fn reports_bad_instantiations() {
    let params = "const T* a";
    check(
        "// kernelpro: grid = 1
// kernelpro: block = 1
// kernelpro: a = in float[1]
template <typename T, int B>
__global__ void k(const T* a)
",
        params,
        expect![[r#"
            2:0-end [bad-instantiation] `// kernelpro: a = in float[1]` `k` is a template: add `// kernelpro: instantiate = k<T_VALUE, B_VALUE>`
        "#]],
    );
    check(
        "// kernelpro: instantiate = k<float>
// kernelpro: grid = 1
// kernelpro: block = 1
// kernelpro: a = in float[1]
template <typename T, int B>
__global__ void k(const T* a)
",
        params,
        expect![[r#"
            0:28-36 [bad-instantiation] `k<float>` 1 template arguments given, `k` takes 2 (T, B)
        "#]],
    );
    check(
        "// kernelpro: instantiate = k<double, 4>
// kernelpro: grid = B
// kernelpro: block = 1
// kernelpro: a = in float[1]
template <typename T, int B>
__global__ void k(const T* a)
",
        params,
        expect![[r#"
            3:21-26 [type-mismatch] `float` `float[...]` does not match parameter `a` of type `const double*`: write `double[...]`
        "#]],
    );
}

#[test]
fn reports_bad_fills() {
    check(
        "// kernelpro: grid = 1
// kernelpro: block = 1
// kernelpro: a = out float[4] zeros
// kernelpro: b = in int8[4] randint(0, 300)
// kernelpro: c = in float[4] gauss(0, 1)
// kernelpro: d = in float[4] uniform(1)
__global__ void k(float* a, const int8_t* b, const float* c, const float* d)
",
        "float* a, const int8_t* b, const float* c, const float* d",
        expect![[r#"
            2:31-36 [spec-syntax] `zeros` an `out` buffer is filled with NaN before each run so unwritten elements show: drop `zeros` or make the buffer `inout`
            3:29-36 [overflow] `randint` randint(0, 300) must have lo <= hi within -128..=127 for int8
            4:30-35 [spec-syntax] `gauss` unknown fill `gauss`: use uniform(lo, hi), randint(lo, hi), zeros, ones, iota or fill(v)
            5:30-37 [spec-syntax] `uniform` `uniform` takes 0 or 2 arguments, not 1
        "#]],
    );
}

#[test]
fn reports_bad_gemm_hints() {
    let params = "int m";
    let spec = |op: &str| {
        format!(
            "// kernelpro: let N = 64\n// kernelpro: grid = 1\n// kernelpro: block = 1\n// kernelpro: op = {op}\n// kernelpro: m = N\n__global__ void k(int m)\n"
        )
    };
    // The issue's line: a negative size, a zero, a number past 64 bits, a word that is no layout.
    check(
        &spec("gemm -1 0 99999999999999999999 xx"),
        params,
        expect![[r#"
            3:24-26 [bad-op] `-1` the gemm size M is -1: sizes are at least 1
            3:27-28 [bad-op] `0` the gemm size N is 0: sizes are at least 1
            3:29-49 [bad-expression] `99999999999999999999` bad expression in the gemm size K: `99999999999999999999` is not an integer: write a decimal or 0x-hex integer that fits in 64 bits
            3:50-52 [bad-op] `xx` `xx` is not a layout: write `row`, `col`, or one per matrix as `A,B` or `A,B,C` (e.g. `row,col`)
        "#]],
    );
    check(
        &spec("conv N N N"),
        params,
        expect![[r#"
            3:19-23 [bad-op] `conv` unknown op `conv`: the one op is gemm; write `op = gemm M N K [layout]`, e.g. `op = gemm M N K row`
        "#]],
    );
    check(
        &spec("gemm N N"),
        params,
        expect![[r#"
            3:19-27 [bad-op] `gemm N N` `op = gemm` needs three sizes, M N K (got 2): write `op = gemm M N K [layout]`, e.g. `op = gemm M N K row`
        "#]],
    );
    check(
        &spec("gemm N N X row col"),
        params,
        expect![[r#"
            3:28-29 [bad-expression] `X` bad expression in the gemm size K: unknown name `X`: define it with `let X = ...` above this line (defined names: N)
            3:34-37 [bad-op] `col` unexpected `col` after the layout: write `op = gemm M N K [layout]`, e.g. `op = gemm M N K row`
        "#]],
    );
    // Sizes may be the kernel's own integer parameters, expressions without spaces, and layouts per matrix.
    let ok = run(&spec("gemm m N*2 ceil_div(N,2) row,col"), params, &ResolveOptions::default());
    assert!(ok.contains(r#""op": "gemm m N*2 ceil_div(N,2) row,col""#), "{ok}");
}

#[test]
fn caps_tune_lists_names_and_nesting() {
    let values: Vec<String> = (1..=5000).map(|v| v.to_string()).collect();
    let long = "n".repeat(100_000);
    let source = format!(
        "// kernelpro: tune B in [{}]\n// kernelpro: let {long} = 1\n// kernelpro: let D = {}1{}\n// kernelpro: grid = 1\n// kernelpro: block = 1\n__global__ void k()\n",
        values.join(", "),
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let got = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || run(&source, "", &ResolveOptions::default()))
        .unwrap()
        .join()
        .expect("no stack overflow");
    // Each line is `L:C-C [code] `marked` message`; the marked text is long here.
    let messages: Vec<&str> =
        got.lines().filter_map(|l| l.split_once("] `")?.1.split_once("` ").map(|(_, m)| m)).collect();
    expect![[r#"
        [
            "`tune B` lists 5000 values: at most 64 (the optimizer tries each one)",
            "`nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn…` is 100000 characters long: names have at most 256",
            "bad expression in `let D`: the expression nests deeper than 64 levels of parentheses, calls or signs: simplify it, or name parts with `let`",
        ]
    "#]]
    .assert_debug_eq(&messages);
}
