//! A structural recipe's rewrites of one text are the parameter points of one
//! form (its launches, vector widths, tiles, float math): each tagged with its
//! point and a roofline prior, a lower bound on its time from the bytes and
//! FLOPs the spec's problem needs and the device's peaks, so the search orders
//! the points and never compiles one that cannot beat the best verified time.

use crate::Rewrite;
use crate::kernel::Kernel;
use kernelpro_search::{Point, Tag};
use kernelpro_spec::{Dir, LaunchSpec};

/// The target, as the launch tuner assumes (H100 or H200 SXM: 132 SMs, the same FLOP and L2
/// peaks): peaks from the device table, the H200's DRAM bandwidth (the higher), so that the bound
/// holds on either.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Device {
    pub sms: u32,
    /// DRAM bytes a second.
    pub dram_bw: f64,
    /// FP32 FLOPs a second (no tensor cores).
    pub fp32_flops: f64,
    /// Bytes a second one SM can draw: twice its share of the L2's bandwidth.
    pub sm_bw: f64,
    pub threads_per_sm: u32,
    /// A DRAM load's latency, on the short side: the bytes in flight a second is bandwidth at most.
    pub latency_s: f64,
}

impl Device {
    pub(crate) fn hopper() -> Device {
        let peaks = kernelpro_profile::peaks::from_table("H200").expect("the device table has the H200");
        let sms = crate::structural::SMS;
        Device {
            sms,
            dram_bw: peaks.dram_bw,
            fp32_flops: peaks.fp32_flops,
            sm_bw: 2.0 * peaks.l2_bw / sms as f64,
            threads_per_sm: 2048,
            latency_s: 400e-9,
        }
    }
}

/// What the spec's problem needs at least: every input read and every output written once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Problem {
    pub bytes: f64,
    pub flops: f64,
}

impl Problem {
    pub(crate) fn of(launch: &LaunchSpec) -> Problem {
        let bytes = launch.buffers().map(|b| b.size_bytes() as f64 * if b.dir == Dir::Inout { 2.0 } else { 1.0 }).sum();
        Problem { bytes, flops: gemm_flops(launch).unwrap_or(0.0) }
    }
}

/// `op = gemm M N K ...`: 2·M·N·K, each size a number or a `let`.
fn gemm_flops(launch: &LaunchSpec) -> Option<f64> {
    let mut words = launch.op.as_deref()?.split_whitespace();
    if words.next()? != "gemm" {
        return None;
    }
    let mut flops = 2.0;
    for w in words.take(3) {
        let v = w.parse::<i64>().ok().or_else(|| launch.lets.get(w).copied())?;
        flops *= v as f64;
    }
    Some(flops)
}

/// One point's launch and its threads' work, as the prior needs them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    pub block: u64,
    pub grid: u64,
    /// Bytes one thread loads at a time (its vector width times the element size).
    pub load_bytes: u64,
    /// Per-thread array elements (register tiles, accumulators), in 32-bit registers.
    pub thread_registers: u64,
}

/// Registers a thread may give its arrays before they spill to local memory (255 less the
/// indices, addresses and loop counters around them).
const ARRAY_REGISTERS: u64 = 224;

/// Independent loads one thread may have in flight, at most, as the bound assumes.
const LOADS_IN_FLIGHT: f64 = 8.0;

/// Seconds no run of `shape` on `device` can beat for `problem` (infinite when it cannot run well
/// at all: per-thread arrays past the registers spill): the bytes over the bandwidth its loads in
/// flight and its SMs can draw, and the FLOPs over its SMs' share of the peak.
pub(crate) fn lower_bound_s(problem: Problem, shape: Shape, device: Device) -> f64 {
    if shape.thread_registers > ARRAY_REGISTERS || shape.block == 0 || shape.grid == 0 {
        return f64::INFINITY;
    }
    let active_sms = shape.grid.min(device.sms as u64) as f64;
    let resident = ((shape.block * shape.grid) as f64).min(active_sms * device.threads_per_sm as f64);
    // A bound must not prune what runs faster: eight independent loads a thread in flight (a
    // loop the compiler or the form unrolls by 4 keeps 4-8). With two, the H100's BlockUnits
    // layer norm (16 blocks of 1024 threads) ran 1.57 ms under its 1.74 ms "bound" (2026-12-07).
    let in_flight = resident * shape.load_bytes.max(1) as f64 * LOADS_IN_FLIGHT;
    let bw = device.dram_bw.min(in_flight / device.latency_s).min(active_sms * device.sm_bw);
    let memory = problem.bytes / bw;
    let compute = problem.flops / (device.fp32_flops * active_sms / device.sms as f64);
    memory.max(compute)
}

/// The widest vector type the kernel's body names: its threads' loads are that wide.
fn vector_width(body: &str) -> u64 {
    let named = |ty: &str| {
        body.match_indices(ty).any(|(at, _)| !body[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    if ["float4", "int4", "uint4"].iter().any(|t| named(t)) {
        4
    } else if ["float2", "double2", "int2", "uint2", "longlong2"].iter().any(|t| named(t)) {
        2
    } else {
        1
    }
}

/// 32-bit registers of the body's per-thread arrays with literal sizes (`float acc[8][8];`), not
/// `__shared__` ones.
fn thread_array_registers(body: &str) -> u64 {
    let mut total = 0u64;
    for decl in body.split([';', '{', '}']) {
        let decl = decl.trim();
        if decl.contains("__shared__") || decl.contains('=') || !decl.contains('[') {
            continue;
        }
        let Some(ty) = decl.split_whitespace().next() else { continue };
        let regs = match ty {
            "float" | "int" | "unsigned" => 1,
            "double" | "float2" | "long" => 2,
            "float4" | "int4" => 4,
            _ => continue,
        };
        let mut count = 1u64;
        for part in decl.split('[').skip(1) {
            match part.split(']').next().and_then(|n| n.trim().parse::<u64>().ok()) {
                Some(n) => count = count.saturating_mul(n),
                None => {
                    count = 0;
                    break;
                }
            }
        }
        total = total.saturating_add(count.saturating_mul(regs));
    }
    total
}

/// The kernel's thread-block cluster size, `__cluster_dims__(C, …)` (or its expansion,
/// `__attribute__((cluster_dims(C, …)))`) in its head.
fn cluster_size(source: &str, k: &Kernel) -> Option<u64> {
    let head = &source[k.func.start_byte..k.body().start_byte()];
    let (_, rest) = head.split_once("cluster_dims")?;
    rest.trim_start_matches('_').trim_start().strip_prefix('(')?.split([',', ')']).next()?.trim().parse().ok()
}

/// Tags each of a structural recipe's rewrites of `text` (the first `float_math` of them with
/// float math composed) as a point of the recipe's form: its launch (block and grid threads
/// as the rewritten spec resolves them), vector width, cluster size where it has one, float math
/// and body (the index of its kernel text among the distinct ones, spec lines aside), with its lower bound on the H100 or H200.
pub(crate) fn tag(text: &str, kernel: &str, recipe: &str, rewrites: &[Rewrite], float_math: usize) -> Vec<Option<Tag>> {
    if rewrites.len() < 2 {
        return vec![None; rewrites.len()];
    }
    let problem = Kernel::find(text, kernel).and_then(|k| k.launch()).map(|l| Problem::of(&l));
    let device = Device::hopper();
    let mut bodies: Vec<String> = Vec::new();
    rewrites
        .iter()
        .enumerate()
        .map(|(i, rw)| {
            let k = Kernel::find(&rw.source, kernel)?;
            let launch = k.launch()?;
            let body = k.text_of(k.body()).to_string();
            let index = bodies.iter().position(|b| *b == body).unwrap_or_else(|| {
                bodies.push(body.clone());
                bodies.len() - 1
            });
            let elem = launch.buffers().map(|b| b.elem.size_bytes()).max().unwrap_or(4);
            let vec = vector_width(&body);
            let shape = Shape {
                block: launch.block.iter().map(|&d| d as u64).product(),
                grid: launch.grid.iter().map(|&d| d as u64).product(),
                load_bytes: vec * elem,
                thread_registers: thread_array_registers(&body),
            };
            let mut point = vec![("body", index as u64), ("block", shape.block), ("grid", shape.grid), ("vec", vec)];
            if let Some(c) = cluster_size(&rw.source, &k) {
                point.push(("cluster", c));
            }
            if i < float_math {
                point.push(("float_math", 1));
            }
            Some(Tag {
                form: recipe.to_string(),
                point: Point::new(point),
                lower_bound_s: problem.map(|p| lower_bound_s(p, shape, device)),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    /// Each point `(block, grid, load bytes, array registers)` with its bound, in the order the
    /// search offers them (lowest bound first), and `pruned` where the bound reaches `best_s`.
    fn check(problem: Problem, points: &[(u64, u64, u64, u64)], best_s: f64, expected: Expect) {
        let device = Device::hopper();
        let mut rows: Vec<(f64, String)> = points
            .iter()
            .map(|&(block, grid, load_bytes, thread_registers)| {
                let lb = lower_bound_s(problem, Shape { block, grid, load_bytes, thread_registers }, device);
                let pruned = if lb >= best_s { " pruned" } else { "" };
                (
                    lb,
                    format!(
                        "block={block} grid={grid} load={load_bytes}B regs={thread_registers}: {:.1} us{pruned}",
                        lb * 1e6
                    ),
                )
            })
            .collect();
        rows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let text: Vec<String> = rows.into_iter().map(|r| r.1).collect();
        expected.assert_eq(&(text.join("\n") + "\n"));
    }

    const MIB: f64 = 1024.0 * 1024.0;

    /// A 64 MiB in, 64 MiB out map whose best verified run took 50 us: float4 over a full grid
    /// first; one block (fewer threads than the bandwidth needs, one SM) and a grid of 16 blocks
    /// (fewer than the SMs) cannot beat it.
    #[test]
    fn a_memory_bound_map_prefers_enough_loads_in_flight() {
        let map = Problem { bytes: 128.0 * MIB, flops: 0.0 };
        check(
            map,
            &[
                (256, 1, 4, 0),
                (256, 16, 4, 0),
                (256, 132 * 8, 4, 0),
                (256, 4096, 16, 0),
                (1024, 132 * 2, 4, 0),
                (128, 132, 4, 0),
            ],
            50e-6,
            expect![[r#"
                block=256 grid=1056 load=4B regs=0: 28.0 us
                block=256 grid=4096 load=16B regs=0: 28.0 us
                block=1024 grid=264 load=4B regs=0: 28.0 us
                block=128 grid=132 load=4B regs=0: 99.3 us pruned
                block=256 grid=16 load=4B regs=0: 409.6 us pruned
                block=256 grid=1 load=4B regs=0: 6553.6 us pruned
            "#]],
        );
    }

    /// A 4096³ fp32 GEMM (its best verified run 4 ms): compute-bound at a full grid; 64 blocks
    /// leave half the SMs idle and a tile whose per-thread accumulators exceed the registers cannot
    /// run well at all.
    #[test]
    fn a_gemm_tile_past_the_registers_is_hopeless() {
        let n = 4096.0;
        let gemm = Problem { bytes: 3.0 * n * n * 4.0, flops: 2.0 * n * n * n };
        check(
            gemm,
            &[(256, 1024, 16, 64), (256, 256, 16, 256), (256, 64, 16, 64), (64, 4096, 4, 16)],
            4e-3,
            expect![[r#"
                block=256 grid=1024 load=16B regs=64: 2051.3 us
                block=64 grid=4096 load=4B regs=16: 2051.3 us
                block=256 grid=64 load=16B regs=64: 4230.9 us pruned
                block=256 grid=256 load=16B regs=256: inf us pruned
            "#]],
        );
    }

    fn bench_kernel(file: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/kernels").join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn problems_and_body_facts_come_from_the_spec_and_the_text() {
        let gemm = bench_kernel("matmul_naive.cu");
        let k = Kernel::find(&gemm, "matmul_naive").unwrap();
        let p = Problem::of(&k.launch().unwrap());
        assert!(p.flops > 1e9 && p.bytes > 1e6, "{p:?}");
        assert_eq!(vector_width("float4 v = reinterpret_cast<const float4*>(x)[i];"), 4);
        assert_eq!(vector_width("my_float4 v; float s;"), 1);
        assert_eq!(
            thread_array_registers("float acc[8][8]; __shared__ float As[64][64]; float a[8]; int i = x[3];"),
            72
        );
    }
}
