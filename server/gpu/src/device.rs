//! The harness's own kernels (device.cu, embedded as PTX): the seeded fill,
//! checksums and comparisons run where the buffers are, so a job of many
//! GiB needs no host copies and no host time.

use crate::data::{FillPlan, elem_code};
use crate::job::Checksum;
use crate::verify::PairStats;
use crate::worker::{DeviceBuffer, explain};
use cudarc::driver::result as cu;
use cudarc::driver::sys;
use kernelpro_spec::{BufferArg, Tolerance};
use std::ffi::{CString, c_void};

/// device.cu compiled by `nvcc -ptx -arch=compute_75 -O3 -fmad=false`, with
/// the `.version` line lowered to 7.0 (it uses nothing newer), so that any
/// driver since CUDA 11 JIT-compiles it for its GPU. The test
/// `the_embedded_ptx_is_current` regenerates it (`UPDATE_PTX=1`).
pub(crate) const PTX: &str = include_str!("device.ptx");

const BLOCK: u32 = 256;
/// Blocks of the reductions: fixed (for a given count), so sums are added in the same order on every run.
const REDUCE_BLOCKS: u64 = 1024;
const FILL_BLOCKS: u64 = 8192;

pub(crate) struct Aux {
    fill: sys::CUfunction,
    checksum: sys::CUfunction,
    compare: sys::CUfunction,
    /// One 32- or 64-byte partial result per block of a reduction.
    partials: DeviceBuffer,
}

/// One kernel argument's bytes.
fn arg<T: Copy>(v: T) -> Vec<u8> {
    // SAFETY: T is a plain value (integer, float or device pointer); its bytes are its ABI representation.
    unsafe { std::slice::from_raw_parts(&v as *const T as *const u8, std::mem::size_of::<T>()).to_vec() }
}

fn blocks(count: u64, cap: u64) -> u32 {
    count.div_ceil(BLOCK as u64).clamp(1, cap) as u32
}

impl Aux {
    pub(crate) fn load() -> Result<Aux, String> {
        let image = CString::new(PTX).expect("the embedded PTX has no NUL");
        // SAFETY: NUL-terminated PTX that outlives the call.
        let module = unsafe { cu::module::load_data(image.as_ptr() as *const c_void) }
            .map_err(|e| explain(e, "loading the harness's fill and compare kernels"))?;
        let get = |name: &str| {
            // SAFETY: module was just loaded.
            unsafe { cu::module::get_function(module, CString::new(name).expect("no NUL")) }
                .map_err(|e| explain(e, &format!("finding the harness kernel {name}")))
        };
        Ok(Aux {
            fill: get("kp_fill")?,
            checksum: get("kp_checksum")?,
            compare: get("kp_compare")?,
            partials: DeviceBuffer::new(REDUCE_BLOCKS as usize * 64, "the harness's partial results")?,
        })
    }

    fn launch(
        &self,
        f: sys::CUfunction,
        grid: u32,
        stream: sys::CUstream,
        args: &mut [Vec<u8>],
        during: &str,
    ) -> Result<(), String> {
        let mut params: Vec<*mut c_void> = args.iter_mut().map(|a| a.as_mut_ptr() as *mut c_void).collect();
        // SAFETY: params point to live bytes of each parameter's type in device.cu.
        unsafe { cu::launch_kernel(f, (grid, 1, 1), (BLOCK, 1, 1), 0, stream, &mut params) }
            .map_err(|e| explain(e, during))
    }

    /// Fills buffer number `index` with its initial contents for `seed` (queued on `stream`).
    pub(crate) fn fill(
        &self,
        stream: sys::CUstream,
        buf: &BufferArg,
        ptr: sys::CUdeviceptr,
        seed: u64,
        index: usize,
    ) -> Result<(), String> {
        let (mode, stream_seed, lo, hi, ilo, ihi, pattern) = match FillPlan::of(buf, seed, index) {
            FillPlan::Pattern(bits) => (0i32, 0u64, 0.0, 0.0, 0i64, 0i64, bits),
            FillPlan::Uniform { stream, lo, hi } => (1, stream, lo, hi, 0, 0, 0),
            FillPlan::Randint { stream, lo, hi } => (2, stream, 0.0, 0.0, lo, hi, 0),
            FillPlan::Iota => (3, 0, 0.0, 0.0, 0, 0, 0),
        };
        let mut args = [
            arg(ptr),
            arg(buf.count),
            arg(elem_code(buf.elem)),
            arg(mode),
            arg(stream_seed),
            arg(lo),
            arg(hi),
            arg(ilo),
            arg(ihi),
            arg(pattern),
        ];
        self.launch(self.fill, blocks(buf.count, FILL_BLOCKS), stream, &mut args, &format!("filling `{}`", buf.name))
    }

    /// The checksum of an output buffer (waits for the stream).
    pub(crate) fn checksum(
        &self,
        stream: sys::CUstream,
        buf: &BufferArg,
        ptr: sys::CUdeviceptr,
    ) -> Result<Checksum, String> {
        let grid = blocks(buf.count, REDUCE_BLOCKS);
        let mut args = [arg(ptr), arg(buf.count), arg(elem_code(buf.elem)), arg(self.partials.ptr)];
        self.launch(self.checksum, grid, stream, &mut args, &format!("summing `{}`", buf.name))?;
        let words = self.partials(stream, grid as usize * 4)?;
        let (mut sum, mut abs_sum, mut unwritten, mut hash) = (0.0, 0.0, 0, 0u64);
        for b in words.chunks(4) {
            sum += f64::from_bits(b[0]);
            abs_sum += f64::from_bits(b[1]);
            unwritten += b[2];
            hash = hash.wrapping_add(b[3]);
        }
        Ok(Checksum { name: buf.name.clone(), sum, abs_sum, unwritten, hash: format!("{hash:016x}") })
    }

    /// `got` against `want` with `tol` (waits for the stream).
    pub(crate) fn compare(
        &self,
        stream: sys::CUstream,
        buf: &BufferArg,
        tol: Tolerance,
        want: sys::CUdeviceptr,
        got: sys::CUdeviceptr,
    ) -> Result<PairStats, String> {
        let grid = blocks(buf.count, REDUCE_BLOCKS);
        let mut args = [
            arg(want),
            arg(got),
            arg(buf.count),
            arg(elem_code(buf.elem)),
            arg(tol.rtol),
            arg(tol.atol),
            arg(self.partials.ptr),
        ];
        self.launch(self.compare, grid, stream, &mut args, &format!("comparing `{}`", buf.name))?;
        let words = self.partials(stream, grid as usize * 8)?;
        let mut s = PairStats::default();
        let mut worst = (f64::NEG_INFINITY, u64::MAX);
        for b in words.chunks(8) {
            s.bad += b[0];
            s.differing += b[1];
            s.one_nan += b[2];
            let (excess, index) = (f64::from_bits(b[4]), b[3]);
            if excess > worst.0 || (excess == worst.0 && index < worst.1) {
                worst = (excess, index);
            }
            s.max_abs_diff = s.max_abs_diff.max(f64::from_bits(b[5]));
            s.max_abs = s.max_abs.max(f64::from_bits(b[6]));
        }
        s.worst = (worst.1 != u64::MAX).then_some(worst.1);
        Ok(s)
    }

    fn partials(&self, stream: sys::CUstream, words: usize) -> Result<Vec<u64>, String> {
        let mut out = vec![0u64; words];
        // SAFETY: the reduction wrote these words; the copy waits for the stream first.
        unsafe {
            cu::stream::synchronize(stream).map_err(|e| explain(e, "running the harness's reduction"))?;
            cu::memcpy_dtoh_sync(&mut out, self.partials.ptr)
                .map_err(|e| explain(e, "reading the harness's reduction"))?;
        }
        Ok(out)
    }
}

/// The value of element `i` of a device buffer (one small copy).
pub(crate) fn element(buf: &BufferArg, ptr: sys::CUdeviceptr, i: u64) -> Result<f64, String> {
    let size = buf.elem.size_bytes();
    let mut bytes = vec![0u8; size as usize];
    // SAFETY: i < buf.count, so the element lies inside the allocation.
    unsafe { cu::memcpy_dtoh_sync(&mut bytes, ptr + i * size) }
        .map_err(|e| explain(e, "reading a mismatching element"))?;
    Ok(crate::data::element(&bytes, buf.elem, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The PTX ISA version the embedded code declares.
    const PTX_VERSION: &str = ".version 7.0";

    fn nvcc() -> PathBuf {
        std::env::var_os("KERNELPRO_NVCC").map(PathBuf::from).unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc")
        })
    }

    /// What nvcc makes of device.cu, with the version lowered.
    fn generate(nvcc: &Path) -> String {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let out = tempfile::tempdir().unwrap();
        let ptx = out.path().join("device.ptx");
        let status = Command::new(nvcc)
            .args(["-ptx", "-arch=compute_75", "-O3", "-fmad=false", "-o"])
            .arg(&ptx)
            .arg(dir.join("device.cu"))
            .status()
            .expect("nvcc runs");
        assert!(status.success(), "nvcc failed on device.cu");
        let text = std::fs::read_to_string(&ptx).unwrap();
        let version = text.lines().find(|l| l.starts_with(".version ")).expect("PTX declares a version");
        text.replacen(version, PTX_VERSION, 1)
    }

    /// The embedded PTX is what the pinned nvcc makes of device.cu, and ptxas
    /// accepts it for Turing and Hopper. `UPDATE_PTX=1` rewrites it.
    #[test]
    fn the_embedded_ptx_is_current() {
        let nvcc = nvcc();
        assert!(nvcc.exists(), "nvcc not found at {}: set KERNELPRO_NVCC or run scripts/setup.sh", nvcc.display());
        let fresh = generate(&nvcc);
        if std::env::var_os("UPDATE_PTX").is_some() {
            std::fs::write(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/device.ptx"), &fresh).unwrap();
        } else {
            assert!(
                fresh == PTX,
                "device.ptx is stale: run `UPDATE_PTX=1 cargo test -p kernelpro-gpu the_embedded_ptx_is_current`"
            );
        }
        let ptxas = nvcc.with_file_name("ptxas");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.ptx"), PTX).unwrap();
        for arch in ["sm_75", "sm_90"] {
            let status = Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg("-o")
                .arg(dir.path().join("d.cubin"))
                .arg(dir.path().join("d.ptx"))
                .status()
                .expect("ptxas runs");
            assert!(status.success(), "ptxas rejects device.ptx for {arch}");
        }
        assert!(PTX.contains(&format!("\n{PTX_VERSION}\n")));
    }
}
