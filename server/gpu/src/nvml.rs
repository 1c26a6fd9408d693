//! NVML, loaded at run time (libnvidia-ml ships with the driver): the total
//! energy counter and the current clocks. Missing NVML is reported, not fatal.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};

type Device = *mut c_void;
const NVML_CLOCK_SM: c_uint = 1;
const NVML_CLOCK_MEM: c_uint = 2;

pub struct Nvml {
    device: Device,
    energy: unsafe extern "C" fn(Device, *mut u64) -> c_int,
    clock: unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int,
}

/// Looks up `name` in `lib`.
///
/// # Safety
/// `F` must be the C signature of that symbol.
unsafe fn symbol<F: Copy>(lib: *mut c_void, name: &str) -> Result<F, String> {
    let c = CString::new(name).expect("symbol names have no NUL");
    // SAFETY: lib is a live dlopen handle; the caller guarantees F.
    let ptr = unsafe { libc::dlsym(lib, c.as_ptr()) };
    if ptr.is_null() {
        return Err(format!("libnvidia-ml has no `{name}` (driver too old?)"));
    }
    // SAFETY: F is a function pointer type of the same size as ptr.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&ptr) })
}

impl Nvml {
    /// Opens NVML for the GPU at `pci_bus_id` (as the CUDA driver names it).
    pub fn open(pci_bus_id: &str) -> Result<Nvml, String> {
        // SAFETY: dlopen and dlsym get NUL-terminated names; the library stays
        // loaded for the process (never dlclosed), so the function pointers stay
        // valid; each symbol is read as the signature nvml.h declares for it;
        // NVML is initialised before the device lookup, and nvmlErrorString
        // returns a static NUL-terminated string for any code.
        unsafe {
            let lib = libc::dlopen(c"libnvidia-ml.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if lib.is_null() {
                return Err("libnvidia-ml.so.1 could not be loaded, so energy and clocks are not measured".to_string());
            }
            let init: unsafe extern "C" fn() -> c_int = symbol(lib, "nvmlInit_v2")?;
            let by_bus: unsafe extern "C" fn(*const c_char, *mut Device) -> c_int =
                symbol(lib, "nvmlDeviceGetHandleByPciBusId_v2")?;
            let error_string: unsafe extern "C" fn(c_int) -> *const c_char = symbol(lib, "nvmlErrorString")?;
            let check = |what: &str, rc: c_int| {
                if rc == 0 {
                    Ok(())
                } else {
                    Err(format!("NVML {what} failed: {}", CStr::from_ptr(error_string(rc)).to_string_lossy()))
                }
            };
            check("init", init())?;
            let bus = CString::new(pci_bus_id).map_err(|e| e.to_string())?;
            let mut device: Device = std::ptr::null_mut();
            check("device lookup", by_bus(bus.as_ptr(), &mut device))?;
            Ok(Nvml {
                device,
                energy: symbol(lib, "nvmlDeviceGetTotalEnergyConsumption")?,
                clock: symbol(lib, "nvmlDeviceGetClockInfo")?,
            })
        }
    }

    /// Millijoules used by the GPU since the driver loaded; `None` if this GPU has no counter.
    pub fn energy_mj(&self) -> Option<u64> {
        let mut mj = 0u64;
        // SAFETY: device came from NVML; the out pointer is valid.
        (unsafe { (self.energy)(self.device, &mut mj) } == 0).then_some(mj)
    }

    /// (SM, memory) clocks in MHz right now.
    pub fn clocks(&self) -> Option<(u32, u32)> {
        let (mut sm, mut mem) = (0, 0);
        // SAFETY: device came from NVML and stays valid (NVML is never shut down);
        // both out pointers are valid for the calls.
        let ok = unsafe {
            (self.clock)(self.device, NVML_CLOCK_SM, &mut sm) == 0
                && (self.clock)(self.device, NVML_CLOCK_MEM, &mut mem) == 0
        };
        ok.then_some((sm, mem))
    }
}
