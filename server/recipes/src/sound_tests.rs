//! Sound rewrites: regression fixtures (fixtures/sound) on which a recipe once produced a
//! candidate that failed to compile or to launch. Every candidate is compiled with the real nvcc
//! (templates with their instantiation).

use crate::structural::tests::compile_errors;
use crate::{Recipe, Rewrite, all};
use std::path::Path;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sound").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn recipe(name: &str) -> Box<dyn Recipe> {
    all().into_iter().find(|r| r.name() == name).unwrap_or_else(|| panic!("no recipe {name}"))
}

fn assert_compiles(what: &str, rw: &Rewrite) {
    if let Some(e) = compile_errors(&rw.source) {
        panic!("{what} ({}) does not compile:\n{e}\n{}", rw.note, rw.source);
    }
}

/// The original compiles: the fixture itself is valid CUDA.
fn valid(name: &str) -> String {
    let text = fixture(name);
    assert_eq!(compile_errors(&text), None, "{name} itself");
    text
}

#[test]
fn const_follows_every_write() {
    let text = valid("restrict_writes.cu");
    let rws = recipe("RestrictConst").rewrite(&text, "scatter");
    let [rw] = &rws[..] else { panic!("one rewrite: {rws:?}") };
    // Only `x` is only read; the atomics' targets (through parentheses, `&p[i]` and a bare
    // pointer), the member store and the reference argument keep their pointers non-const.
    assert_eq!(
        rw.note,
        "__restrict__ sum, __restrict__ hist, __restrict__ pairs, __restrict__ dst, __restrict__ best, const x, __restrict__ x"
    );
    assert_compiles("RestrictConst", rw);
    // Ldg reads the same facts: it has no const pointer to load through.
    assert!(recipe("Ldg").rewrite(&text, "scatter").is_empty());
}

/// A pointer passed to the file's own function-like macro may be cast and written through it
/// (`#define F4(p) (reinterpret_cast<float4*>(&(p))[0])`, `F4(y[i]) = v`): RestrictConst leaves every
/// such pointer non-const (the fetched corpus's vec4 kernels failed with "cannot cast away const"),
/// and Ldg does not wrap a load inside the macro's `&(...)`.
#[test]
fn pointers_through_a_cast_macro_stay_non_const() {
    let text = valid("relu_float4_cast_macro.cu");
    let rws = recipe("RestrictConst").rewrite(&text, "relu_vec4_cast");
    let [rw] = &rws[..] else { panic!("one rewrite: {rws:?}") };
    assert_eq!(rw.note, "__restrict__ x, __restrict__ y");
    assert_compiles("RestrictConst", rw);
    assert!(recipe("Ldg").rewrite(&text, "relu_vec4_cast").is_empty());
}

#[test]
fn specialisations_and_instantiations_keep_the_primarys_signature() {
    let text = valid("template_specialised.cu");
    let rws = recipe("RestrictConst").rewrite(&text, "mul");
    let [rw] = &rws[..] else { panic!("one rewrite: {rws:?}") };
    // `b` is written by the `half` specialisation: it stays non-const everywhere; `a` becomes
    // const in the primary, the specialisation and the instantiation.
    assert_eq!(rw.note, "__restrict__ out, const a, __restrict__ a, __restrict__ b");
    assert!(rw.source.contains("__global__ void mul<half>(half* out, const half* a, half* b, int n)"), "{}", rw.source);
    assert!(
        rw.source.contains("template __global__ void mul<float>(float*, const float*, float*, int);"),
        "{}",
        rw.source
    );
    assert_compiles("RestrictConst", rw);
    // The specialisation rewritten on its own keeps the primary's types: `__restrict__` only.
    let rws = recipe("RestrictConst").rewrite(&text, "mul<half>");
    let [rw] = &rws[..] else { panic!("one rewrite: {rws:?}") };
    assert_eq!(rw.note, "__restrict__ out, __restrict__ a, __restrict__ b");
    assert_compiles("RestrictConst of mul<half>", rw);
    // Every other recipe's candidates of the template compile with its instantiation too.
    for r in all() {
        for rw in r.rewrite(&text, "mul") {
            assert_compiles(r.name(), &rw);
        }
    }
}

#[test]
fn launch_variants_stay_within_the_devices_limits() {
    let text = valid("map_launch_bounds.cu");
    let rws = recipe("GridStrideMap").rewrite(&text, "scale");
    assert!(!rws.is_empty());
    for rw in &rws {
        assert!(
            !rw.note.contains("block = 512") && !rw.note.contains("block = 1024"),
            "a variant over the kernel's __launch_bounds__(256): {}",
            rw.note
        );
        let k = crate::kernel::Kernel::find(&rw.source, "scale").unwrap();
        for l in k.all_launches().unwrap() {
            assert!(l.block.iter().product::<u32>() <= 256 && l.grid[1] <= 65535 && l.grid[2] <= 65535);
        }
    }
    // The limits themselves.
    let spec = |grid: &str, block: &str, smem: &str| {
        text.replace("grid = ceil_div(N, 256)", &format!("grid = {grid}"))
            .replace("block = 256", &format!("block = {block}"))
            .replace("// kernelpro: n = N", &format!("// kernelpro: n = N\n// kernelpro: smem = {smem}"))
            .replace("__launch_bounds__(256) ", "")
    };
    let limits = |s: &str| crate::structural::launch_limits(s, "scale", None);
    assert_eq!(limits(&spec("ceil_div(N, 256)", "256", "0")), Ok(()));
    assert_eq!(limits(&spec("ceil_div(N, 256)", "(32, 32, 2)", "0")), Err("the launch spec does not resolve".into()));
    // The spec's resolver rejects grids and blocks past the hardware's limits itself.
    assert_eq!(limits(&spec("(1, 70000)", "256", "0")), Err("the launch spec does not resolve".into()));
    assert_eq!(limits(&spec("ceil_div(N, 256)", "(1, 1, 128)", "0")), Err("the launch spec does not resolve".into()));
    // Dynamic shared memory within the spec's own limit, plus the kernel's static arrays, past the SM's.
    let static_shared = spec("ceil_div(N, 256)", "256", "100000")
        .replace("  int i = blockIdx.x", "  __shared__ float kp_big[10][4000];\n  int i = blockIdx.x");
    assert_eq!(limits(&static_shared), Err("260000 bytes of shared memory a block (limit 232448)".into()));
    assert_eq!(
        crate::structural::launch_limits(&spec("ceil_div(N, 256)", "1024", "0"), "scale", Some(128)),
        Err("128 registers a thread × 1024 threads exceed the SM's 65536".into())
    );
}

/// The proposer's candidates (every recipe, through the fresh-name helper) on a file whose macros
/// are spelled like generated names: all compile, and the file's own names are kept.
#[test]
fn generated_names_never_meet_the_files_macros() {
    use kernelpro_search::{NodeId, ProposeContext, Proposer, SearchMemory};
    let text = valid("macro_names.cu");
    for kernel in ["gelu", "row_sum"] {
        let memory = SearchMemory::default();
        let ctx = ProposeContext {
            parent: NodeId(0),
            source: &text,
            depth: 0,
            speedup: Some(1.0),
            best_speedup: 1.0,
            findings: &[],
            failure: None,
            memory: &memory,
            wanted: 200,
        };
        let proposals = crate::RecipeProposer::new(kernel).propose(&ctx);
        assert!(proposals.iter().any(|p| p.recipe == if kernel == "gelu" { "GridStrideMap" } else { "WarpUnits" }));
        let mut seen = std::collections::HashSet::new();
        for p in &proposals {
            let code: String = p
                .source
                .lines()
                .filter(|l| !l.trim_start().starts_with("// kernelpro:"))
                .collect::<Vec<_>>()
                .join("\n");
            if !seen.insert(code) {
                continue;
            }
            assert!(p.source.starts_with("// Short author macros"), "the file's head is kept");
            assert!(p.source.contains("#define kp_u 0.5f") && p.source.contains("#define kp_lane 0.7978845608f"));
            if let Some(e) = compile_errors(&p.source) {
                panic!("{} on {kernel} does not compile:\n{e}\n{}", p.recipe, p.source);
            }
        }
    }
}

/// Every rewrite of every recipe on the templates of the shared corpora, compiled with their
/// instantiation (nvcc checks a template's body only there): prints each failure.
#[test]
#[ignore = "a probe over the corpora's templates (slow: one nvcc run per distinct candidate)"]
fn probe_templates_instantiated() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut stack = vec![
        root.join("../../tests/fixtures/naive"),
        root.join("fixtures"),
        root.join("../../bench/kernelbench/tasks"),
    ];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "cu") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut failures = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        if !text.contains("instantiate") {
            continue;
        }
        for k in kernelpro_source::parse(&text).kernels().filter(|k| k.is_template) {
            for r in all() {
                let mut seen = std::collections::HashSet::new();
                for rw in r.rewrite(&text, &k.name) {
                    let code: String =
                        rw.source.lines().filter(|l| !l.trim_start().starts_with("// kernelpro:")).collect();
                    if !seen.insert(code) {
                        continue;
                    }
                    if let Some(e) = compile_errors(&rw.source) {
                        failures += 1;
                        println!(
                            "FAIL {} {} {} ({}):\n{}",
                            f.display(),
                            k.name,
                            r.name(),
                            rw.note,
                            e.lines().take(6).collect::<Vec<_>>().join("\n")
                        );
                    }
                }
            }
        }
    }
    println!("{failures} failures");
}
