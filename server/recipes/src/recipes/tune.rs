//! Tuning: for each `// kernelpro: tune NAME in [...]` line of the kernel,
//! move each other candidate first (the first value is the one launched).

use crate::kernel::Kernel;
use crate::{Recipe, Rewrite};
use kernelpro_model::Code;

pub struct TuneParameter;

impl Recipe for TuneParameter {
    fn name(&self) -> &'static str {
        "TuneParameter"
    }
    fn tier(&self) -> crate::Tier {
        crate::Tier::Rewrite
    }
    fn answers(&self) -> &'static [Code] {
        &[Code::OccupancyLimiter, Code::OccupancyLimit, Code::TailEffect, Code::LaunchOverhead, Code::HighRegisterUsage]
    }
    fn rewrite(&self, text: &str, kernel: &str) -> Vec<Rewrite> {
        let Some(k) = Kernel::find(text, kernel) else { return Vec::new() };
        let mut out = Vec::new();
        for line in k.spec_lines() {
            let Some(rest) = line.text.strip_prefix("tune ") else { continue };
            let (Some(open), Some(close)) = (line.text.find('['), line.text.rfind(']')) else { continue };
            let name = rest.split(" in ").next().unwrap_or("").trim();
            let values: Vec<&str> =
                line.text[open + 1..close].split(',').map(str::trim).filter(|v| !v.is_empty()).collect();
            let list_at = k.spec_offset(line) + open + 1..k.spec_offset(line) + close;
            for (i, first) in values.iter().enumerate().skip(1) {
                let reordered: Vec<&str> = std::iter::once(*first)
                    .chain(values.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, v)| *v))
                    .collect();
                let mut source = text.to_string();
                source.replace_range(list_at.clone(), &reordered.join(", "));
                out.push(Rewrite { source, note: format!("tune {name} = {first}") });
            }
        }
        out
    }
}
