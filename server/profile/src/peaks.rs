//! Peak compute and bandwidth of a GPU, for the roofline: a small spec-sheet
//! table keyed by the device name ncu reports, and a fallback computed from
//! the device attributes of the raw page.

use crate::csv_pages::KernelProfile;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Peaks {
    /// Non-tensor FP32 FLOP/s.
    pub fp32_flops: f64,
    pub fp64_flops: f64,
    /// Bytes per second of each memory level.
    pub dram_bw: f64,
    pub l2_bw: f64,
    pub l1_bw: f64,
}

/// (name fragment, FP32 TFLOP/s, FP64 TFLOP/s, DRAM TB/s, L2 TB/s, L1 TB/s).
/// More specific fragments come first. L2 figures are measured microbenchmark
/// values, L1 is SMs x 128 B/clk x boost clock.
const TABLE: &[(&str, f64, f64, f64, f64, f64)] = &[
    ("H200", 67.0, 34.0, 4.8, 10.0, 33.5),
    ("H100 PCIe", 51.2, 25.6, 2.0, 7.5, 29.3),
    ("H100", 67.0, 34.0, 3.35, 10.0, 33.5),
    ("A100-PCIE-40GB", 19.5, 9.7, 1.555, 5.0, 19.5),
    ("A100-SXM4-40GB", 19.5, 9.7, 1.555, 5.0, 19.5),
    ("A100", 19.5, 9.7, 2.039, 5.0, 19.5),
    ("L40S", 91.6, 1.4, 0.864, 5.0, 45.8),
];

pub fn peaks_for(profile: &KernelProfile) -> Option<Peaks> {
    profile.text("device__attribute_display_name").and_then(from_table).or_else(|| from_attributes(profile))
}

pub fn from_table(device_name: &str) -> Option<Peaks> {
    TABLE.iter().find(|row| device_name.contains(row.0)).map(|&(_, fp32, fp64, dram, l2, l1)| Peaks {
        fp32_flops: fp32 * 1e12,
        fp64_flops: fp64 * 1e12,
        dram_bw: dram * 1e12,
        l2_bw: l2 * 1e12,
        l1_bw: l1 * 1e12,
    })
}

/// Peaks from clocks and unit counts: FP32 lanes per SM by compute capability,
/// DRAM as a double-data-rate bus, L1 128 B/clk per SM, L2 a third of L1.
pub fn from_attributes(p: &KernelProfile) -> Option<Peaks> {
    let sms = p.num("device__attribute_multiprocessor_count")?;
    let clock_hz = p.num("device__attribute_clock_rate")? * 1e3;
    let major = p.num("device__attribute_compute_capability_major")?;
    let minor = p.num("device__attribute_compute_capability_minor").unwrap_or(0.0);
    let (fp32_lanes, fp64_lanes) = match (major as u32, minor as u32) {
        (8, 0) => (64.0, 32.0),
        (9, 0) => (128.0, 64.0),
        (7, _) => (64.0, 32.0),
        _ => (128.0, 2.0),
    };
    let mem_clock_hz = p.num("device__attribute_memory_clock_rate")? * 1e3;
    let bus_bits = p.num("device__attribute_global_memory_bus_width")?;
    let l1_bw = sms * 128.0 * clock_hz;
    Some(Peaks {
        fp32_flops: sms * fp32_lanes * 2.0 * clock_hz,
        fp64_flops: sms * fp64_lanes * 2.0 * clock_hz,
        dram_bw: mem_clock_hz * 2.0 * bus_bits / 8.0,
        l2_bw: l1_bw / 3.0,
        l1_bw,
    })
}
