//! The harness's device code (src/device.cu) compiled for the host with a
//! shim (tests/emulate/: one block of 256 std::threads, a barrier for
//! `__syncthreads`) and checked against its host definitions in data.rs:
//! fills bit for bit, checksums, and comparisons. Needs a C++20 compiler
//! (`CXX`, default `g++`), not a GPU; the GPU tests check the real thing.

use kernelpro_gpu::{FillPlan, PairStats, checksum, elem_code, element, fill, pair_stats};
use kernelpro_spec::{BufferArg, Dir, ElemType, Init, Tolerance};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The driver, built once per test run.
fn driver() -> &'static Path {
    static EXE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &EXE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("driver");
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/emulate/driver.cpp");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
        let status = Command::new(&cxx)
            .args(["-std=c++20", "-O1", "-pthread", "-o"])
            .arg(&exe)
            .arg(&source)
            .status()
            .unwrap_or_else(|e| panic!("{cxx}: {e}"));
        assert!(status.success(), "{cxx} could not build the emulation");
        (dir, exe)
    })
    .1
}

/// Sends each command to the driver, one answer line each.
fn emulate(commands: &[String]) -> Vec<String> {
    let mut child = Command::new(driver()).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = commands.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let lines: Vec<String> = BufReader::new(child.stdout.take().unwrap()).lines().map(Result::unwrap).collect();
    writer.join().unwrap().unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(lines.len(), commands.len());
    lines
}

const ELEMS: [ElemType; 9] = [
    ElemType::Float,
    ElemType::Double,
    ElemType::Half,
    ElemType::Bfloat16,
    ElemType::Int,
    ElemType::Unsigned,
    ElemType::Int8,
    ElemType::Uint8,
    ElemType::Int64,
];

fn buffers() -> Vec<BufferArg> {
    let mut out = Vec::new();
    for elem in ELEMS {
        for (init, dir) in [
            (Init::Uniform { lo: -2.0, hi: 2.0 }, Dir::In),
            (Init::Uniform { lo: -1e5, hi: 1e5 }, Dir::In),
            (Init::Randint { lo: -300, hi: 300 }, Dir::Inout),
            (Init::Randint { lo: i64::MIN, hi: i64::MAX }, Dir::In),
            (Init::Randint { lo: 0, hi: 0 }, Dir::In),
            (Init::Iota, Dir::In),
            (Init::Fill { value: -1.5 }, Dir::Inout),
            (Init::Zeros, Dir::Out),
        ] {
            out.push(BufferArg {
                name: format!("{} {init:?} {dir:?}", elem.spec_name()),
                dir,
                elem,
                count: 1000 + 17,
                init,
            });
        }
    }
    out
}

fn fill_command(b: &BufferArg, seed: u64, index: usize) -> String {
    let (mode, stream, lo, hi, ilo, ihi, pattern) = match FillPlan::of(b, seed, index) {
        FillPlan::Pattern(bits) => (0, 0, 0.0, 0.0, 0, 0, bits),
        FillPlan::Uniform { stream, lo, hi } => (1, stream, lo, hi, 0, 0, 0),
        FillPlan::Randint { stream, lo, hi } => (2, stream, 0.0, 0.0, lo, hi, 0),
        FillPlan::Iota => (3, 0, 0.0, 0.0, 0, 0, 0),
    };
    format!("fill {} {} {mode} {stream} {lo:e} {hi:e} {ilo} {ihi} {pattern}", elem_code(b.elem), b.count)
}

#[test]
fn the_device_fill_is_the_host_fill() {
    let bufs = buffers();
    let commands: Vec<String> = bufs.iter().enumerate().map(|(i, b)| fill_command(b, 42, i)).collect();
    for ((i, b), got) in bufs.iter().enumerate().zip(emulate(&commands)) {
        assert_eq!(got, hex(&fill(b, 42, i)), "{}", b.name);
    }
}

#[test]
fn the_device_checksum_is_the_host_checksum() {
    let bufs = buffers();
    let host: Vec<Vec<u8>> = bufs.iter().enumerate().map(|(i, b)| fill(b, 7, i)).collect();
    let commands: Vec<String> =
        bufs.iter().zip(&host).map(|(b, h)| format!("checksum {} {} {}", elem_code(b.elem), b.count, hex(h))).collect();
    for ((b, h), got) in bufs.iter().zip(&host).zip(emulate(&commands)) {
        let want = checksum(b, h);
        let f: Vec<&str> = got.split(' ').collect();
        assert_eq!((f[2].parse::<u64>().unwrap(), f[3]), (want.unwritten, want.hash.as_str()), "{}", b.name);
        for (x, y) in [(f[0].parse::<f64>().unwrap(), want.sum), (f[1].parse::<f64>().unwrap(), want.abs_sum)] {
            assert!(
                (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-12 * want.abs_sum,
                "{}: {got} vs {want:?}",
                b.name
            );
        }
    }
}

/// Every element of `bytes` moved by a few ulps (a float's bits plus i % 7 × 15,
/// an integer plus i % 3).
fn perturb(b: &BufferArg, bytes: &[u8]) -> Vec<u8> {
    let n = b.elem.size_bytes() as usize;
    let mut out = bytes.to_vec();
    for (i, e) in out.chunks_mut(n).enumerate() {
        let mut word = [0u8; 8];
        word[..n].copy_from_slice(e);
        let step = if b.elem.is_float() { (i % 7) as u64 * 15 } else { (i % 3) as u64 };
        e.copy_from_slice(&u64::from_le_bytes(word).wrapping_add(step).to_le_bytes()[..n]);
    }
    out
}

/// The driver's `bad differing one_nan worst max_abs_diff max_abs` line.
fn parse_stats(line: &str) -> PairStats {
    let f: Vec<&str> = line.split(' ').collect();
    let worst: i64 = f[3].parse().unwrap();
    PairStats {
        bad: f[0].parse().unwrap(),
        differing: f[1].parse().unwrap(),
        one_nan: f[2].parse().unwrap(),
        worst: (worst >= 0).then_some(worst as u64),
        max_abs_diff: f[4].parse().unwrap(),
        max_abs: f[5].parse().unwrap(),
    }
}

#[test]
fn the_device_comparison_is_the_host_comparison() {
    let tolerances = [Tolerance { rtol: 1e-5, atol: 1e-6 }, Tolerance { rtol: 1e-3, atol: 1e-3 }, Tolerance::EXACT];
    let mut cases = Vec::new();
    for (i, b) in buffers().into_iter().enumerate().filter(|(_, b)| b.dir != Dir::Out) {
        let want = fill(&b, 3, i);
        let mut got = perturb(&b, &want);
        let mut want = want;
        if b.elem.is_float() {
            // NaN in one, in the other, in both; nothing else is NaN (-1e5..1e5 halves overflow to ±inf).
            let (n, nan_bytes) =
                (b.elem.size_bytes() as usize, fill(&BufferArg { count: 1, dir: Dir::Out, ..b.clone() }, 0, 0));
            let nan = |v: &mut Vec<u8>, at: usize| v[at * n..(at + 1) * n].copy_from_slice(&nan_bytes);
            nan(&mut want, 5);
            nan(&mut got, 600);
            nan(&mut want, 900);
            nan(&mut got, 900);
        }
        for tol in tolerances {
            cases.push((b.clone(), tol, want.clone(), got.clone()));
        }
    }
    let commands: Vec<String> = cases
        .iter()
        .map(|(b, t, w, g)| {
            format!("compare {} {} {:e} {:e} {} {}", elem_code(b.elem), b.count, t.rtol, t.atol, hex(w), hex(g))
        })
        .collect();
    for ((b, tol, w, g), got) in cases.iter().zip(emulate(&commands)) {
        let want = pair_stats(b, *tol, w, g);
        assert_eq!(parse_stats(&got), want, "{} with {tol:?}", b.name);
        if let Some(i) = want.worst {
            assert!(!tol.accepts(element(w, b.elem, i as usize), element(g, b.elem, i as usize)));
        }
    }
}
