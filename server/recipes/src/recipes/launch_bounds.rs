//! `__launch_bounds__(B)` with B the largest block the spec can launch, so the
//! compiler may budget registers for it.

use crate::kernel::Kernel;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;

pub struct LaunchBounds;

impl Recipe for LaunchBounds {
    fn name(&self) -> &'static str {
        "LaunchBounds"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Micro
    }
    fn answers(&self) -> &'static [Code] {
        &[
            Code::OccupancyLimiter,
            Code::OccupancyLimit,
            Code::HighRegisterUsage,
            Code::RegisterSpill,
            Code::LocalMemorySpill,
        ]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        if k.launch_bounds().is_some() {
            return Vec::new();
        }
        let Some(launches) = k.all_launches() else { return Vec::new() };
        let Some(threads) = launches.iter().map(|l| l.block.iter().map(|&d| d as u64).product::<u64>()).max() else {
            return Vec::new();
        };
        let mut source = text.to_string();
        source.insert_str(k.func.name_byte, &format!("__launch_bounds__({threads}) "));
        vec![Rewrite { source, note: format!("__launch_bounds__({threads})") }]
    }
}
