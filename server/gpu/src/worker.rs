//! The child side: loads the code, fills the buffers, launches, verifies and
//! times, with the raw CUDA driver API (so nothing else is queued between our
//! events). Buffers are filled, summed and compared on the GPU (device.rs):
//! the worker holds no host copy of them. Every failure becomes a message a
//! user can act on.

use crate::data;
use crate::device::{self, Aux};
use crate::job::*;
use crate::nvml::Nvml;
use crate::process::Reply;
use crate::verify::{ORIGINAL_RUNS, PairStats, Variation, tolerance_used};
use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;
use kernelpro_spec::{Arg, BufferArg, LaunchSpec, ScalarType, ScalarValue};
use std::ffi::{CString, c_void};
use std::io::{BufRead, Read, Write};
use std::time::{Duration, Instant};

pub const NO_DRIVER: &str = "no CUDA driver found (libcuda.so could not be loaded), so kernels cannot run here: \
install the NVIDIA driver, or set the runner setting to run on a GPU machine (e.g. `srun --gres=gpu:1 --` or `ssh gpu-box --`)";

/// Entry point of `kernelpro __gpu-worker`: a [`Job`] as JSON on stdin, a reply line on stdout.
pub fn worker_main() -> i32 {
    // Started before its job exists (a profile begun while the file still
    // compiles): the driver and the device's primary context are opened while
    // the job is awaited, so that start-up (and a profiler's set-up, which a
    // context's creation runs) is not paid after it.
    let early = std::env::var(EARLY_DEVICE_ENV)
        .ok()
        .and_then(|d| d.parse::<i32>().ok())
        .map(|device| std::thread::spawn(move || open_early(device)));
    // Joined before the job opens the device: a profiler's set-up must have ended before a launch.
    let opened_early = move || {
        if let Some(thread) = early {
            let _ = thread.join();
        }
    };
    // A session (a search's long-lived worker) opens with a first line of its own.
    let mut stdin = std::io::stdin().lock();
    let mut input = String::new();
    if let Err(e) = stdin.read_line(&mut input) {
        return answer(Reply::Failed(format!("the GPU worker could not read its job: {e}")));
    }
    if let Some(open) = crate::session::parse_open(&input) {
        opened_early();
        return crate::session::serve::<Resident>(&open, stdin, std::io::stdout().lock());
    }
    let read = stdin.read_to_string(&mut input);
    opened_early();
    let reply = match read {
        Err(e) => Reply::Failed(format!("the GPU worker could not read its job: {e}")),
        Ok(_) => match serde_json::from_str::<Job>(&input) {
            Err(e) => Reply::Failed(format!(
                "the GPU worker got a malformed job ({e}): the worker and the server are different versions?"
            )),
            Ok(job) => match std::panic::catch_unwind(|| execute(&job)) {
                Ok(Ok(result)) => Reply::Done(Box::new(result)),
                Ok(Err(message)) => Reply::Failed(message),
                Err(_) => Reply::Failed(
                    "the GPU worker panicked; this is a KernelPro bug, please report it with the kernel and its spec"
                        .into(),
                ),
            },
        },
    };
    answer(reply)
}

/// The device a worker opens before its job arrives (see [`worker_main`]);
/// the job must name the same one.
pub const EARLY_DEVICE_ENV: &str = "KERNELPRO_WORKER_EARLY_DEVICE";

/// The driver initialised and `device`'s primary context retained (and left
/// retained: the job's [`open_device`] retains the same one); failures are the
/// job's to report.
fn open_early(device: i32) {
    // SAFETY: only probes whether libcuda can be opened.
    if !unsafe { sys::is_culib_present() } || cu::init().is_err() {
        return;
    }
    if let Ok(dev) = cu::device::get(device) {
        // SAFETY: dev is a device handle from cu::device::get.
        let _ = unsafe { cu::primary_ctx::retain(dev) };
    }
}

/// Writes a one-shot job's reply line; the exit code.
fn answer(reply: Reply) -> i32 {
    let code = if matches!(reply, Reply::Done(_)) { 0 } else { 1 };
    let mut line = serde_json::to_string(&reply).expect("replies serialize");
    // The parent must be able to read what we send; say so here rather than
    // let it see an unreadable line and call the worker crashed.
    if let Err(e) = serde_json::from_str::<Reply>(&line) {
        line = serde_json::to_string(&Reply::Failed(format!("the GPU worker's result could not be encoded ({e}); this is a KernelPro bug, please report it with the kernel and its spec"))).expect("replies serialize");
    }
    line.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes()).and_then(|_| out.flush());
    code
}

/// A CUDA error with what we were doing and what to change.
pub(crate) fn explain(e: DriverError, during: &str) -> String {
    let name = format!("{:?}", e.0);
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let advice = match name.as_str() {
        "CUDA_ERROR_ILLEGAL_ADDRESS" => {
            "the kernel read or wrote outside its buffers: check its index arithmetic and bounds checks against the element counts in the spec (`compute-sanitizer` shows the faulting access)"
        }
        "CUDA_ERROR_MISALIGNED_ADDRESS" => {
            "a vector load/store (float4, int2...) used an address that is not a multiple of its size"
        }
        "CUDA_ERROR_ASSERT" => "a device-side assert() failed",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION" | "CUDA_ERROR_HARDWARE_STACK_ERROR" => {
            "the kernel hit an illegal instruction or overflowed its stack (deep recursion, large local arrays)"
        }
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" => {
            "registers per thread × threads per block exceed the SM: lower `block` or add __launch_bounds__"
        }
        "CUDA_ERROR_INVALID_VALUE" => "a launch setting is out of range for this GPU: check grid, block and smem",
        "CUDA_ERROR_INVALID_CLUSTER_SIZE" | "CUDA_ERROR_CLUSTER_OUT_OF_RESOURCES" => {
            "the kernel's thread-block cluster (__cluster_dims__) does not fit this launch: the grid must be a multiple of the cluster, and the cluster's blocks must fit the GPU together"
        }
        "CUDA_ERROR_NO_BINARY_FOR_GPU"
        | "CUDA_ERROR_INVALID_IMAGE"
        | "CUDA_ERROR_INVALID_PTX"
        | "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" => {
            "the code was not built for this GPU or needs a newer driver: compile for this GPU's architecture (-arch=sm_XY)"
        }
        "CUDA_ERROR_OUT_OF_MEMORY" => "the buffers do not fit in GPU memory: lower the counts in the spec",
        "CUDA_ERROR_NO_DEVICE" | "CUDA_ERROR_INVALID_DEVICE" => {
            "no usable GPU: check CUDA_VISIBLE_DEVICES and the device index"
        }
        "CUDA_ERROR_LAUNCH_TIMEOUT" => "the display watchdog stopped a long kernel",
        _ => "",
    };
    let advice = if advice.is_empty() { String::new() } else { format!(": {advice}") };
    format!("{during} failed with {name} ({text}){advice}")
}

/// Device memory freed on drop.
pub(crate) struct DeviceBuffer {
    pub(crate) ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl DeviceBuffer {
    pub(crate) fn new(bytes: usize, what: &str) -> Result<DeviceBuffer, String> {
        // SAFETY: a context is current (set up in `execute` before any allocation).
        let ptr = unsafe { cu::malloc_sync(bytes.max(1)) }
            .map_err(|e| explain(e, &format!("allocating {bytes} bytes for {what}")))?;
        Ok(DeviceBuffer { ptr, bytes })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: ptr came from malloc_sync and is freed once.
        let _ = unsafe { cu::free_sync(self.ptr) };
    }
}

struct Gpu {
    stream: sys::CUstream,
    scratch: Option<DeviceBuffer>,
    nvml: Result<Nvml, String>,
    aux: Aux,
    phases: Phases,
    /// The kernel's launch: its buffers' inits and seed fill the inputs of every run, the reference's too.
    inputs: LaunchSpec,
}

struct Loaded {
    module: sys::CUmodule,
    function: sys::CUfunction,
    job: KernelJob,
}

/// A GPU opened for work: its context, stream, L2 flush buffer and the harness's own kernels.
struct Opened {
    gpu: Gpu,
    device_name: String,
    cc: (i32, i32),
}

/// Initialises the driver and opens `device` (its primary context, a stream,
/// the L2 flush buffer when asked for, the harness's kernels, NVML).
fn open_device(device: u32, flush_l2: bool, inputs: LaunchSpec) -> Result<Opened, String> {
    // SAFETY: only probes whether libcuda can be opened.
    if !unsafe { sys::is_culib_present() } {
        return Err(NO_DRIVER.to_string());
    }
    cu::init().map_err(|e| explain(e, "initialising the CUDA driver"))?;
    let count = cu::device::get_count().map_err(|e| explain(e, "counting GPUs"))?;
    if device as i32 >= count {
        return Err(format!("GPU {device} was asked for, but this machine shows {count} (check CUDA_VISIBLE_DEVICES)"));
    }
    let dev = cu::device::get(device as i32).map_err(|e| explain(e, "opening the GPU"))?;
    // SAFETY: dev is valid; the primary context stays retained for the life of the process.
    unsafe {
        let ctx = cu::primary_ctx::retain(dev).map_err(|e| explain(e, "creating a CUDA context"))?;
        cu::ctx::set_current(ctx).map_err(|e| explain(e, "creating a CUDA context"))?;
    }
    // SAFETY: dev is a device handle from cu::device::get and `a` an attribute
    // the driver defines; the call only reads that attribute's value.
    let attr = |a| unsafe { cu::device::get_attribute(dev, a) }.unwrap_or(0);
    let cc = (
        attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    );
    let l2_bytes = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).max(0) as usize;
    let device_name = cu::device::get_name(dev).unwrap_or_else(|_| "unknown GPU".into());
    let stream =
        cu::stream::create(cu::stream::StreamKind::NonBlocking).map_err(|e| explain(e, "creating a stream"))?;
    let scratch =
        if flush_l2 && l2_bytes > 0 { Some(DeviceBuffer::new(2 * l2_bytes, "the L2 flush buffer")?) } else { None };
    let aux = Aux::load()?;
    let gpu = Gpu {
        stream,
        scratch,
        nvml: pci_bus_id(dev).and_then(|id| Nvml::open(&id)),
        aux,
        phases: Phases::default(),
        inputs,
    };
    Ok(Opened { gpu, device_name, cc })
}

/// Runs a job in this process. Faults poison the CUDA context, so the server
/// calls this only through the child process ([`crate::run_job`]).
pub fn execute(job: &Job) -> Result<JobResult, String> {
    let started = Instant::now();
    let Opened { mut gpu, device_name, cc } = open_device(job.device, job.flush_l2, job.kernel.launch.clone())?;
    let kernel = load(&job.kernel, cc)?;
    let reference = job.reference.as_ref().map(|r| load(r, cc)).transpose()?;
    if let Some(r) = &reference {
        same_buffers(&job.kernel.launch, &r.job.launch)?;
    }
    let launch = &job.kernel.launch;
    let device = allocate(launch)?;
    gpu.phases.setup_ms = ms_since(started);

    // The original first: its first outputs are the reference, its later runs on the same inputs measure its own variation.
    let original = match &reference {
        None => None,
        Some(r) => Some(run_original(&mut gpu, r, &device)?),
    };
    let (kernel_outputs, comparison) = check_kernel(&mut gpu, &kernel, &device, original.as_ref())?;
    // A wrong kernel's time is of no use to a search: it asks to skip it.
    let timed = job.time_if_wrong || comparison.iter().all(|c| c.bad == 0);
    let kernel_run = if timed {
        time_kernel(&mut gpu, job, &kernel, &device, kernel_outputs)?
    } else {
        untimed(&kernel, kernel_outputs)
    };
    let reference_run = match (&reference, original) {
        (Some(r), Some(o)) if timed && job.time_reference => Some(time_kernel(&mut gpu, job, r, &device, o.checksums)?),
        _ => None,
    };
    Ok(JobResult {
        device_name,
        compute_capability: cc,
        kernel: kernel_run,
        reference: reference_run,
        comparison,
        phases: gpu.phases,
    })
}

/// One device buffer per buffer of `launch`.
fn allocate(launch: &LaunchSpec) -> Result<Vec<DeviceBuffer>, String> {
    launch.buffers().map(|b| DeviceBuffer::new(b.size_bytes() as usize, &format!("`{}`", b.name))).collect()
}

/// The originals' runs kept per input seed: the search's seed, then each held-out one.
const KEPT_ORIGINALS: usize = 2;

/// A long-lived worker's state ([`crate::session`]): the GPU opened once, the
/// original loaded once, its buffers allocated once, and its outputs (and
/// run-to-run variation) per input seed measured once. Each candidate is then
/// loaded, checked on fresh inputs against the kept outputs, timed (after its
/// own fresh fill, with the L2 flushed before every timed launch) and unloaded.
pub struct Resident {
    gpu: Gpu,
    device_name: String,
    cc: (i32, i32),
    reference: Loaded,
    buffers: Vec<DeviceBuffer>,
    /// (seed, the original's outputs on that seed's inputs), the newest last.
    originals: Vec<(u64, Original)>,
}

impl crate::session::Backend for Resident {
    fn open(open: &crate::session::Open) -> Result<(Resident, String), String> {
        let started = Instant::now();
        let Opened { mut gpu, device_name, cc } =
            open_device(open.device, open.flush_l2, open.reference.launch.clone())?;
        let reference = load(&open.reference, cc)?;
        let buffers = allocate(&open.reference.launch)?;
        gpu.phases.setup_ms = ms_since(started);
        let name = device_name.clone();
        Ok((Resident { gpu, device_name, cc, reference, buffers, originals: Vec::new() }, name))
    }

    fn evaluate(&mut self, e: &crate::session::Evaluation) -> Result<JobResult, String> {
        let started = Instant::now();
        self.gpu.phases = Phases::default();
        same_buffers(&e.kernel.launch, &self.reference.job.launch)?;
        // Every run of this evaluation (the original's too) fills from the original's buffers with the seed asked for.
        let mut inputs = self.reference.job.launch.clone();
        inputs.seed = e.kernel.launch.seed;
        self.gpu.inputs = inputs;
        let kernel = load(&e.kernel, self.cc)?;
        self.gpu.phases.setup_ms = ms_since(started);
        let result = self.evaluate_loaded(e, &kernel);
        // SAFETY: the module was loaded by `load` and nothing of it is used after this.
        let _ = unsafe { cu::module::unload(kernel.module) };
        result
    }
}

impl Resident {
    fn evaluate_loaded(&mut self, e: &crate::session::Evaluation, kernel: &Loaded) -> Result<JobResult, String> {
        let seed = self.gpu.inputs.seed;
        if e.compare && !self.originals.iter().any(|(s, _)| *s == seed) {
            let original = run_original(&mut self.gpu, &self.reference, &self.buffers)?;
            if self.originals.len() >= KEPT_ORIGINALS {
                self.originals.remove(0);
            }
            self.originals.push((seed, original));
        }
        let original = if e.compare { self.originals.iter().find(|(s, _)| *s == seed).map(|(_, o)| o) } else { None };
        let (kernel_outputs, comparison) = check_kernel(&mut self.gpu, kernel, &self.buffers, original)?;
        let job = e.job_settings();
        let timed = job.time_if_wrong || comparison.iter().all(|c| c.bad == 0);
        let kernel_run = if timed {
            time_kernel(&mut self.gpu, &job, kernel, &self.buffers, kernel_outputs)?
        } else {
            untimed(kernel, kernel_outputs)
        };
        let reference_run = match original {
            Some(o) if timed && job.time_reference => {
                let checksums = o.checksums.clone();
                Some(time_kernel(&mut self.gpu, &job, &self.reference, &self.buffers, checksums)?)
            }
            _ => None,
        };
        Ok(JobResult {
            device_name: self.device_name.clone(),
            compute_capability: self.cc,
            kernel: kernel_run,
            reference: reference_run,
            comparison,
            phases: self.gpu.phases,
        })
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn pci_bus_id(dev: sys::CUdevice) -> Result<String, String> {
    let mut buf = [0 as std::ffi::c_char; 64];
    // SAFETY: buf is writable for its length.
    unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, dev) }
        .result()
        .map_err(|e| explain(e, "reading the PCI bus id"))?;
    // SAFETY: the driver NUL-terminates within len.
    Ok(unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

fn load(k: &KernelJob, cc: (i32, i32)) -> Result<Loaded, String> {
    let image: Vec<u8> = match &k.image {
        Image::Cubin(path) => {
            std::fs::read(path).map_err(|e| format!("cannot read the compiled kernel {}: {e}", path.display()))?
        }
        Image::Ptx(text) => {
            CString::new(text.as_str()).map_err(|_| "the PTX text holds a NUL byte".to_string())?.into_bytes_with_nul()
        }
    };
    let during = format!("loading the code of `{}` on a compute capability {}.{} GPU", k.function, cc.0, cc.1);
    // SAFETY: image is a complete cubin/fatbin or NUL-terminated PTX and outlives the call.
    let module = unsafe { cu::module::load_data(image.as_ptr() as *const c_void) }.map_err(|e| explain(e, &during))?;
    let name = CString::new(k.function.as_str()).map_err(|_| "the function name holds a NUL byte".to_string())?;
    // SAFETY: module was just loaded.
    let function = unsafe { cu::module::get_function(module, name) }.map_err(|_| {
        format!("the compiled code has no function `{}`: give the mangled name that ptxas prints (\"Compiling entry function '_Z...'\") or declare the kernel extern \"C\"", k.function)
    })?;
    // Static shared memory counts against the default 48 KiB too, so any dynamic amount may need the opt-in.
    if k.launch.smem > 0 {
        // SAFETY: function is valid; the attribute takes a byte count.
        unsafe {
            cu::function::set_function_attribute(
                function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                k.launch.smem as i32,
            )
        }
        .map_err(|e| {
            explain(e, &format!("allowing {} bytes of dynamic shared memory for `{}`", k.launch.smem, k.function))
        })?;
    }
    Ok(Loaded { module, function, job: k.clone() })
}

/// Both kernels must take the same buffers in the same order to share inputs.
fn same_buffers(kernel: &LaunchSpec, reference: &LaunchSpec) -> Result<(), String> {
    let shape = |s: &LaunchSpec| s.buffers().map(|b| (b.dir, b.elem, b.count)).collect::<Vec<_>>();
    if shape(kernel) != shape(reference) {
        let show = |s: &LaunchSpec| {
            s.buffers()
                .map(|b| format!("{:?} {}[{}]", b.dir, b.elem.spec_name(), b.count).to_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(format!(
            "`{}` and the reference `{}` take different buffers ({} vs {}): give both specs the same buffers in the same order",
            kernel.kernel,
            reference.kernel,
            show(kernel),
            show(reference)
        ));
    }
    Ok(())
}

/// The bytes of one scalar argument as the kernel expects it.
fn scalar_bytes(ty: ScalarType, value: ScalarValue) -> Vec<u8> {
    let (i, f) = match value {
        ScalarValue::I64(i) => (i, i as f64),
        ScalarValue::F64(f) => (f as i64, f),
    };
    match ty {
        ScalarType::Bool | ScalarType::I8 | ScalarType::U8 => vec![i as u8],
        ScalarType::I16 | ScalarType::U16 => (i as u16).to_le_bytes().to_vec(),
        ScalarType::I32 | ScalarType::U32 => (i as u32).to_le_bytes().to_vec(),
        ScalarType::I64 | ScalarType::U64 => i.to_le_bytes().to_vec(),
        ScalarType::F16 => data::f32_to_f16_bits(f as f32).to_le_bytes().to_vec(),
        ScalarType::Bf16 => data::f32_to_bf16_bits(f as f32).to_le_bytes().to_vec(),
        ScalarType::F32 => (f as f32).to_le_bytes().to_vec(),
        ScalarType::F64 => f.to_le_bytes().to_vec(),
    }
}

/// Argument storage for cuLaunchKernel: one byte vector per parameter.
fn argument_bytes(launch: &LaunchSpec, device: &[DeviceBuffer]) -> Vec<Vec<u8>> {
    let mut buffers = device.iter();
    launch
        .args
        .iter()
        .map(|a| match a {
            Arg::Buffer(_) => buffers.next().expect("one device buffer per buffer argument").ptr.to_le_bytes().to_vec(),
            Arg::Scalar(s) => scalar_bytes(s.ty, s.value),
        })
        .collect()
}

fn enqueue(gpu: &Gpu, k: &Loaded, args: &mut [Vec<u8>]) -> Result<(), DriverError> {
    let l = &k.job.launch;
    let mut params: Vec<*mut c_void> = args.iter_mut().map(|a| a.as_mut_ptr() as *mut c_void).collect();
    // SAFETY: params point to live argument bytes of the kernel's parameter sizes.
    unsafe {
        cu::launch_kernel(
            k.function,
            (l.grid[0], l.grid[1], l.grid[2]),
            (l.block[0], l.block[1], l.block[2]),
            l.smem,
            gpu.stream,
            &mut params,
        )
    }
}

fn sync(gpu: &Gpu, during: &str) -> Result<(), String> {
    // SAFETY: the stream is live.
    unsafe { cu::stream::synchronize(gpu.stream) }.map_err(|e| explain(e, during))
}

/// Fills every buffer with its initial contents (the kernel's spec and seed), on the GPU.
fn fill_all(gpu: &mut Gpu, device: &[DeviceBuffer]) -> Result<(), String> {
    let t = Instant::now();
    for (i, (b, d)) in gpu.inputs.buffers().zip(device).enumerate() {
        gpu.aux.fill(gpu.stream, b, d.ptr, gpu.inputs.seed, i)?;
    }
    sync(gpu, "filling the inputs")?;
    gpu.phases.fill_ms += ms_since(t);
    Ok(())
}

/// One launch of `k` on fresh inputs, waited for.
fn run_once(gpu: &mut Gpu, k: &Loaded, device: &[DeviceBuffer]) -> Result<(), String> {
    fill_all(gpu, device)?;
    let name = &k.job.function;
    let mut args = argument_bytes(&k.job.launch, device);
    enqueue(gpu, k, &mut args).map_err(|e| explain(e, &format!("launching `{name}`")))?;
    sync(gpu, &format!("running `{name}`"))
}

/// The outputs (buffer, device memory) of a launch.
fn outputs<'a>(
    launch: &'a LaunchSpec,
    device: &'a [DeviceBuffer],
) -> impl Iterator<Item = (&'a BufferArg, &'a DeviceBuffer)> {
    launch.buffers().zip(device).filter(|(b, _)| b.dir.is_output())
}

/// The original's first outputs (kept in their own device memory) and how much its later runs differ from them.
struct Original {
    saved: Vec<DeviceBuffer>,
    checksums: Vec<Checksum>,
    variation: Vec<Option<Variation>>,
}

/// Runs the original on fresh inputs, keeps its outputs, then runs it again
/// on the same inputs (up to [`ORIGINAL_RUNS`] in all, stopping after the
/// second when that gives the same bits) to measure its own variation.
fn run_original(gpu: &mut Gpu, r: &Loaded, device: &[DeviceBuffer]) -> Result<Original, String> {
    let launch = &r.job.launch;
    run_once(gpu, r, device)?;
    let t = Instant::now();
    let mut saved = Vec::new();
    let mut checksums = Vec::new();
    for (b, d) in outputs(launch, device) {
        checksums.push(gpu.aux.checksum(gpu.stream, b, d.ptr)?);
        let copy = DeviceBuffer::new(
            d.bytes,
            &format!(
                "a copy of the reference's `{}` (outputs are compared on the GPU, so they must fit twice)",
                b.name
            ),
        )?;
        // SAFETY: both hold d.bytes bytes. On our stream, so the next fill waits for the copy.
        unsafe { cu::memcpy_dtod_async(copy.ptr, d.ptr, d.bytes, gpu.stream) }
            .map_err(|e| explain(e, "saving the reference's outputs"))?;
        saved.push(copy);
    }
    gpu.phases.verify_ms += ms_since(t);
    let mut later: Vec<Vec<PairStats>> = vec![Vec::new(); saved.len()];
    for run in 1..ORIGINAL_RUNS {
        run_once(gpu, r, device)
            .map_err(|e| format!("{e} (the reference's run {} of {ORIGINAL_RUNS} on the same inputs)", run + 1))?;
        let t = Instant::now();
        for (((b, d), s), l) in outputs(launch, device).zip(&saved).zip(&mut later) {
            l.push(gpu.aux.compare(gpu.stream, b, launch.tolerance_for(b.elem), s.ptr, d.ptr)?);
        }
        gpu.phases.verify_ms += ms_since(t);
        if run == 1 && later.iter().all(|l| l[0].differing == 0) {
            break;
        }
    }
    Ok(Original { saved, checksums, variation: later.iter().map(|l| Variation::of_runs(l)).collect() })
}

/// Runs the kernel on fresh inputs: its output checksums, and its outputs
/// compared with the original's first (with the tolerance its variation allows).
fn check_kernel(
    gpu: &mut Gpu,
    k: &Loaded,
    device: &[DeviceBuffer],
    original: Option<&Original>,
) -> Result<(Vec<Checksum>, Vec<BufferComparison>), String> {
    run_once(gpu, k, device)?;
    let t = Instant::now();
    let launch = &k.job.launch;
    let mut checksums = Vec::new();
    let mut comparison = Vec::new();
    for (i, (b, d)) in outputs(launch, device).enumerate() {
        checksums.push(gpu.aux.checksum(gpu.stream, b, d.ptr)?);
        let Some(o) = original else { continue };
        let spec = launch.tolerance_for(b.elem);
        let variation = o.variation[i];
        let (used, _) = tolerance_used(spec, b.elem, variation.as_ref());
        let stats = gpu.aux.compare(gpu.stream, b, used, o.saved[i].ptr, d.ptr)?;
        let worst = match stats.worst {
            Some(index) => Some(Mismatch {
                index,
                reference: device::element(b, o.saved[i].ptr, index)?,
                got: device::element(b, d.ptr, index)?,
            }),
            None => None,
        };
        comparison.push(BufferComparison::new(b, spec, variation, stats.bad, worst));
    }
    gpu.phases.verify_ms += ms_since(t);
    Ok((checksums, comparison))
}

/// A kernel that was checked but not timed (its output was wrong).
fn untimed(k: &Loaded, checksums: Vec<Checksum>) -> KernelRun {
    KernelRun {
        function: k.job.function.clone(),
        timing: Timing { runs: 0, warmup: 0, median_ms: 0.0, min_ms: 0.0, max_ms: 0.0, stddev_ms: 0.0 },
        clocks: None,
        energy: Err("not timed: its output was wrong".into()),
        outputs: checksums,
        dram_gbps_estimate: 0.0,
        tflops: None,
    }
}

/// Times `k` on fresh inputs (and measures its energy).
fn time_kernel(
    gpu: &mut Gpu,
    job: &Job,
    k: &Loaded,
    device: &[DeviceBuffer],
    checksums: Vec<Checksum>,
) -> Result<KernelRun, String> {
    fill_all(gpu, device)?;
    let t = Instant::now();
    let name = &k.job.function;
    let launch = &k.job.launch;
    let mut args = argument_bytes(launch, device);
    let (timing, clocks) = time(gpu, job, k, &mut args)?;
    let energy = match &gpu.nvml {
        Err(why) => Err(why.clone()),
        Ok(_) if job.energy_window_ms == 0 => Err("energy not asked for (energy window 0)".into()),
        Ok(nvml) => measure_energy(
            gpu,
            nvml,
            k,
            &mut args,
            timing.median_ms,
            Duration::from_millis(job.energy_window_ms as u64),
        )?,
    };
    gpu.phases.timing_ms += ms_since(t);
    let seconds = timing.median_ms / 1e3;
    let bytes: u64 = launch
        .buffers()
        .map(|b: &BufferArg| b.size_bytes() * if b.dir == kernelpro_spec::Dir::Inout { 2 } else { 1 })
        .sum();
    Ok(KernelRun {
        function: name.clone(),
        timing,
        clocks,
        energy,
        outputs: checksums,
        dram_gbps_estimate: if seconds > 0.0 { bytes as f64 / seconds / 1e9 } else { 0.0 },
        tflops: crate::metrics::flops(launch).filter(|_| seconds > 0.0).map(|f| f / seconds / 1e12),
    })
}

fn time(gpu: &Gpu, job: &Job, k: &Loaded, args: &mut [Vec<u8>]) -> Result<(Timing, Option<Clocks>), String> {
    let name = &k.job.function;
    // The first warm-up launch, alone, says how long one takes: a slow kernel
    // gets fewer warm-ups and timed launches (`timed_runs`), not minutes of them.
    let first = Instant::now();
    if job.warmup > 0 {
        enqueue(gpu, k, args).map_err(|e| explain(e, &format!("launching `{name}`")))?;
        sync(gpu, &format!("running `{name}` (warm-up)"))?;
    }
    let launch_ms = if job.warmup > 0 { ms_since(first) } else { 0.0 };
    let budget_ms = job.timing_budget_ms as f64;
    let more_warmups = if launch_ms * job.warmup as f64 > budget_ms / 4.0 { 0 } else { job.warmup.saturating_sub(1) };
    for _ in 0..more_warmups {
        enqueue(gpu, k, args).map_err(|e| explain(e, &format!("launching `{name}`")))?;
    }
    sync(gpu, &format!("running `{name}` (warm-up)"))?;
    let runs = crate::job::timed_runs_within(job.runs, launch_ms, budget_ms) as usize;
    let event =
        || cu::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT).map_err(|e| explain(e, "creating timing events"));
    let events: Vec<(sys::CUevent, sys::CUevent)> =
        (0..runs).map(|_| Ok((event()?, event()?))).collect::<Result<_, String>>()?;
    for (i, (start, stop)) in events.iter().enumerate() {
        // SAFETY: stream, scratch and events are live.
        unsafe {
            if let Some(s) = &gpu.scratch {
                cu::memset_d8_async(s.ptr, i as u8, s.bytes, gpu.stream).map_err(|e| explain(e, "flushing L2"))?;
            }
            cu::event::record(*start, gpu.stream).map_err(|e| explain(e, "recording an event"))?;
        }
        enqueue(gpu, k, args).map_err(|e| explain(e, &format!("launching `{name}`")))?;
        // SAFETY: the stream and the event are live (created above, destroyed only after the sync below).
        unsafe { cu::event::record(*stop, gpu.stream) }.map_err(|e| explain(e, "recording an event"))?;
    }
    // Read the clocks while the queued launches run.
    let clocks = gpu.nvml.as_ref().ok().and_then(Nvml::clocks).map(|(sm_mhz, mem_mhz)| Clocks { sm_mhz, mem_mhz });
    sync(gpu, &format!("running `{name}` (timed)"))?;
    let mut samples = Vec::with_capacity(runs);
    for (start, stop) in events {
        // SAFETY: both events completed; they are destroyed once.
        unsafe {
            samples.push(cu::event::elapsed(start, stop).map_err(|e| explain(e, "reading events"))? as f64);
            let _ = cu::event::destroy(start);
            let _ = cu::event::destroy(stop);
        }
    }
    let (median_ms, min_ms, max_ms, stddev_ms) = data::stats(&samples);
    Ok((Timing { runs: runs as u32, warmup: job.warmup, median_ms, min_ms, max_ms, stddev_ms }, clocks))
}

/// Energy per launch from NVML's total-energy counter over a loop of back-to-back launches.
fn measure_energy(
    gpu: &Gpu,
    nvml: &Nvml,
    k: &Loaded,
    args: &mut [Vec<u8>],
    median_ms: f64,
    window: Duration,
) -> Result<Result<Energy, String>, String> {
    let name = &k.job.function;
    let Some(before) = nvml.energy_mj() else {
        return Ok(Err("this GPU has no NVML energy counter".into()));
    };
    // Batches of about a tenth of the window keep the queue short and the loop on time.
    let batch = ((window.as_secs_f64() * 1e3 / median_ms.max(1e-3)) / 10.0).clamp(1.0, 100_000.0) as u64;
    let start = Instant::now();
    let mut launches = 0u64;
    while start.elapsed() < window {
        for _ in 0..batch {
            enqueue(gpu, k, args).map_err(|e| explain(e, &format!("launching `{name}`")))?;
        }
        launches += batch;
        sync(gpu, &format!("running `{name}` (energy loop)"))?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let after = nvml.energy_mj().unwrap_or(before);
    if after <= before {
        return Ok(Err(format!("the energy counter did not advance in {elapsed:.2} s: lengthen the energy window")));
    }
    let joules = (after - before) as f64 / 1e3;
    Ok(Ok(Energy {
        joules_per_launch: joules / launches as f64,
        average_watts: joules / elapsed,
        launches,
        window_s: elapsed,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_scalars_by_their_c_type() {
        assert_eq!(scalar_bytes(ScalarType::F32, ScalarValue::F64(2.0)), 2.0f32.to_le_bytes());
        assert_eq!(scalar_bytes(ScalarType::I32, ScalarValue::I64(-1)), [0xff; 4]);
        assert_eq!(scalar_bytes(ScalarType::U64, ScalarValue::I64(1 << 40)), (1u64 << 40).to_le_bytes());
        assert_eq!(scalar_bytes(ScalarType::F16, ScalarValue::I64(1)), [0x00, 0x3c]);
        assert_eq!(scalar_bytes(ScalarType::Bool, ScalarValue::I64(1)), [1]);
    }

    #[test]
    fn says_clearly_when_there_is_no_driver() {
        // SAFETY: only probes for the library.
        if unsafe { sys::is_culib_present() } {
            return; // a machine with a driver: covered by the GPU tests
        }
        let job: Job = serde_json::from_str(include_str!("../tests/no_driver_job.json")).unwrap();
        assert_eq!(execute(&job).unwrap_err(), NO_DRIVER);
    }
}
