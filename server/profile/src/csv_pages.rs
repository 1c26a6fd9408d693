//! Parsers for the CSV pages that `ncu -i REPORT --csv` prints: `--page raw`
//! (one row per launch), `--page details` (section metrics and rule results)
//! and `--page source --print-source cuda,sass` (per-line and per-instruction
//! counters). Pure functions over text: the core crate runs ncu.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One counter value: numbers lose their thousands separators; anything else
/// (`n/a`, `no data`, `(256, 1, 1)`, `Load(2),Store`) stays text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Number(f64),
    Text(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub value: Value,
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub unit: String,
}

impl Metric {
    pub fn number(&self) -> Option<f64> {
        match self.value {
            Value::Number(v) => Some(v),
            Value::Text(_) => None,
        }
    }
    pub fn text(&self) -> Option<&str> {
        match &self.value {
            Value::Text(t) => Some(t),
            Value::Number(_) => None,
        }
    }
    /// The number in base units (ns, byte, hz, byte/s), whatever `--print-units`
    /// the export was made with.
    pub fn base(&self) -> Option<f64> {
        Some(self.number()? * unit_scale(&self.unit))
    }
}

/// Factor from a printed unit to ncu's base unit: `ms` -> 1e6 (ns), `Kbyte` -> 1e3.
fn unit_scale(unit: &str) -> f64 {
    let (head, per_second) = match unit.split_once('/') {
        Some((h, "s" | "second")) => (h, true),
        _ => (unit, false),
    };
    let time = |u: &str| match u {
        "s" | "second" => Some(1e9),
        "ms" | "msecond" => Some(1e6),
        "us" | "usecond" => Some(1e3),
        "ns" | "nsecond" => Some(1.0),
        _ => None,
    };
    if let (false, Some(f)) = (per_second, time(head)) {
        return f;
    }
    let prefixed = |base: &str| -> Option<f64> {
        let rest = head.strip_suffix(base)?;
        match rest {
            "" => Some(1.0),
            "K" | "k" => Some(1e3),
            "M" => Some(1e6),
            "G" => Some(1e9),
            "T" => Some(1e12),
            _ => None,
        }
    };
    prefixed("byte").or_else(|| prefixed("hz")).or_else(|| prefixed("Hz")).unwrap_or(1.0)
}

pub type Metrics = BTreeMap<String, Metric>;

/// A rule result of the details page (`UncoalescedGlobalAccess`, `CPIStall`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleResult {
    pub section: String,
    pub rule: String,
    /// `OPT`, `INF`, `WRN`, `ERR`.
    pub kind: String,
    pub description: String,
    /// `global` or `local` speedup, as ncu labels it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub speedup_type: Option<String>,
    /// Estimated reduction of the kernel's run time, in percent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub estimated_speedup_pct: Option<f64>,
}

/// Everything known about one profiled kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct KernelProfile {
    /// ncu's launch ID, which ties the raw, details and source pages together.
    pub id: u32,
    /// The function name without parameters or return type: `saxpy_fp64`.
    pub kernel: String,
    /// The name as ncu printed it (with parameters).
    pub signature: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mangled: Option<String>,
    pub metrics: Metrics,
    /// Section metrics of the details page, keyed `Section/Metric Name`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub details: Metrics,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub rules: Vec<RuleResult>,
}

impl KernelProfile {
    pub fn num(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).and_then(Metric::number)
    }
    /// The first of several equivalent metric names that the report holds
    /// (sections name the same quantity differently across ncu versions).
    pub fn first(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.num(n))
    }
    pub fn text(&self, name: &str) -> Option<&str> {
        self.metrics.get(name).and_then(Metric::text)
    }
    /// A metric in base units (see [`Metric::base`]).
    pub fn base(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).and_then(Metric::base)
    }
    /// This profile (stage 2's) with the metrics it lacks taken from
    /// `stage1`, the same kernel's first pass.
    pub fn completed_with(&self, stage1: &KernelProfile) -> KernelProfile {
        let mut merged = self.clone();
        for (k, v) in &stage1.metrics {
            merged.metrics.entry(k.clone()).or_insert_with(|| v.clone());
        }
        merged
    }
}

/// One CUDA source line of the source page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceLine {
    pub file: String,
    /// 1-based, as ncu prints it.
    pub line: u32,
    pub text: String,
    pub metrics: Metrics,
}

/// One SASS instruction of the source page, linked to the CUDA line it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SassRow {
    pub address: String,
    pub text: String,
    /// The 1-based CUDA line the instruction is listed under, if any.
    pub line: Option<u32>,
    pub file: Option<String>,
    pub metrics: Metrics,
}

impl SassRow {
    /// The opcode with its modifiers and without a predicate: `F2F.F64.F32`.
    pub fn opcode(&self) -> &str {
        let mut words = self.text.split_whitespace();
        let first = words.next().unwrap_or("");
        if first.starts_with('@') { words.next().unwrap_or("") } else { first }
    }
    pub fn num(&self, name: &str) -> Option<f64> {
        self.metrics.get(name).and_then(Metric::number)
    }
    /// The instruction's address as a number (`0x7f925b7a0100`).
    pub fn address_value(&self) -> Option<u64> {
        u64::from_str_radix(self.address.trim_start_matches("0x"), 16).ok()
    }
    /// Which memory an atomic or reduction instruction updates, if it is one.
    pub fn atomic(&self) -> Option<AtomicSpace> {
        let base = self.opcode().split('.').next().unwrap_or("");
        match base {
            "ATOMS" => Some(AtomicSpace::Shared),
            // REDUX is a warp-level register reduction, not a memory update.
            "RED" | "REDG" | "ATOM" | "ATOMG" => Some(AtomicSpace::Global),
            _ => None,
        }
    }
}

/// Where an atomic instruction's update lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AtomicSpace {
    /// `RED`/`ATOM`/`ATOMG`: performed at L2 (global memory).
    Global,
    /// `ATOMS`: performed in shared memory.
    Shared,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SourcePage {
    pub kernel: String,
    pub signature: String,
    /// The kernel's own file: the one its entry instruction comes from
    /// (`entry_file`), not the one ncu happens to list first (an H100 page
    /// listed CUDA's atomic header first, 2026-12-07). Lines of other files
    /// (CUDA's headers, where `atomicAdd` and `sinf` are inlined from) keep
    /// their own `file`.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub file: String,
    pub lines: Vec<SourceLine>,
    pub instructions: Vec<SassRow>,
}

/// The file of the function's lowest-addressed instruction that has a
/// source line: its entry, which is the function's own code (the prologue,
/// on the kernel's opening line), never a body inlined from a header.
pub fn entry_file(instructions: &[SassRow]) -> Option<&str> {
    instructions
        .iter()
        .filter_map(|r| Some((r.address_value()?, r.file.as_deref()?)))
        .min_by_key(|(a, _)| *a)
        .map(|(_, f)| f)
}

impl SourcePage {
    /// A 1-based line of the kernel's own file.
    pub fn line(&self, line: u32) -> Option<&SourceLine> {
        self.own_lines().find(|l| l.line == line)
    }
    /// The lines of the kernel's own file (line numbers of other files
    /// would point at unrelated lines of it).
    pub fn own_lines(&self) -> impl Iterator<Item = &SourceLine> {
        self.lines.iter().filter(move |l| self.is_own(&l.file))
    }
    fn is_own(&self, file: &str) -> bool {
        self.file.is_empty() || file == self.file
    }
    /// The instructions listed under one 1-based line of the kernel's own file.
    pub fn instructions_of(&self, line: u32) -> impl Iterator<Item = &SassRow> {
        self.instructions.iter().filter(move |i| i.line == Some(line) && self.is_own(i.file.as_deref().unwrap_or("")))
    }
    /// The line of the kernel's own file an instruction belongs to. One
    /// listed under another file was inlined (CUDA's `atomicAdd` comes from
    /// `device_atomic_functions.hpp`): it belongs to the own-file line whose
    /// instructions come right before it in the code.
    pub fn own_line_of(&self, row: &SassRow) -> Option<u32> {
        if row.file.as_deref().is_some_and(|f| self.is_own(f)) {
            return row.line;
        }
        let at = row.address_value()?;
        self.instructions
            .iter()
            .filter(|i| i.file.as_deref().is_some_and(|f| self.is_own(f)) && i.line.is_some())
            .filter_map(|i| Some((i.address_value()?, i.line?)))
            .filter(|(a, _)| *a < at)
            .max_by_key(|(a, _)| *a)
            .map(|(_, l)| l)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// Parses one CSV cell. Empty cells are absent values, not zeros.
pub fn parse_value(cell: &str) -> Option<Value> {
    let cell = cell.trim();
    if cell.is_empty() || cell == "-" {
        return None;
    }
    let plain: String = cell.chars().filter(|&c| c != ',').collect();
    let numeric = plain.chars().any(|c| c.is_ascii_digit())
        && plain.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    match plain.parse::<f64>() {
        Ok(v) if numeric => Some(Value::Number(v)),
        _ => Some(Value::Text(cell.to_string())),
    }
}

/// The kernel's identifier from what ncu prints: drops the return type, the
/// parameter list, and demangles `_Z...` names.
pub fn kernel_base_name(printed: &str) -> (String, Option<String>) {
    let printed = printed.trim();
    if printed.starts_with("_Z") {
        let demangled =
            cpp_demangle::Symbol::new(printed).ok().map(|s| s.to_string()).unwrap_or_else(|| printed.to_string());
        return (strip_params(&demangled), Some(printed.to_string()));
    }
    (strip_params(printed), None)
}

fn strip_params(name: &str) -> String {
    let mut angle = 0i32;
    let mut end = name.len();
    let mut start = 0;
    for (i, c) in name.char_indices() {
        match c {
            '<' => angle += 1,
            '>' => angle -= 1,
            '(' if angle == 0 => {
                end = i;
                break;
            }
            ' ' if angle == 0 => start = i + 1,
            _ => {}
        }
    }
    name[start.min(end)..end].trim().to_string()
}

fn reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes())
}

fn records(text: &str) -> Result<Vec<Vec<String>>, ParseError> {
    reader(text)
        .records()
        .map(|r| r.map(|rec| rec.iter().map(str::to_string).collect()).map_err(|e| ParseError(format!("ncu CSV: {e}"))))
        .collect()
}

/// ncu prints `==PROF==`/`==WARNING==` lines and blank lines around the CSV.
fn csv_body(text: &str) -> String {
    text.lines().filter(|l| !l.starts_with("==") && !l.trim().is_empty()).collect::<Vec<_>>().join("\n")
}

/// `--page raw`: row 0 holds metric names, row 1 units, then one row per launch.
pub fn parse_raw(text: &str) -> Result<Vec<KernelProfile>, ParseError> {
    let rows = records(&csv_body(text))?;
    let Some((header, rest)) = rows.split_first() else {
        return Ok(Vec::new());
    };
    let col = |name: &str| header.iter().position(|h| h == name);
    let name_col = col("Kernel Name").ok_or_else(|| ParseError("raw page: no \"Kernel Name\" column".into()))?;
    let id_col = col("ID");
    // The units row is recognisable by its empty ID/name cells.
    let (units, launches) = match rest.split_first() {
        Some((u, l)) if u.get(name_col).is_none_or(|c| c.is_empty()) => (u.clone(), l),
        _ => (Vec::new(), rest),
    };
    let mut out = Vec::new();
    for row in launches {
        let signature = row.get(name_col).cloned().unwrap_or_default();
        let (kernel, mangled) = kernel_base_name(&signature);
        let mut metrics = Metrics::new();
        for (i, name) in header.iter().enumerate() {
            if Some(i) == id_col || i == name_col {
                continue;
            }
            if let Some(value) = row.get(i).and_then(|c| parse_value(c)) {
                let unit = units.get(i).cloned().unwrap_or_default();
                metrics.insert(name.clone(), Metric { value, unit });
            }
        }
        let id = id_col.and_then(|c| row.get(c)).and_then(|c| c.trim().parse().ok()).unwrap_or(out.len() as u32);
        out.push(KernelProfile { id, kernel, signature, mangled, metrics, ..Default::default() });
    }
    Ok(out)
}

/// `--page details`: adds the section metrics and rule results to the
/// launches of a raw page (matched by ID), or creates launches for IDs the
/// raw page did not have.
pub fn parse_details(text: &str, profiles: &mut Vec<KernelProfile>) -> Result<(), ParseError> {
    let rows = records(&csv_body(text))?;
    let Some((header, rows)) = rows.split_first() else {
        return Ok(());
    };
    let col = |name: &str| header.iter().position(|h| h == name);
    let need = |name: &str| col(name).ok_or_else(|| ParseError(format!("details page: no \"{name}\" column")));
    let (id_c, name_c, sec_c, met_c) = (need("ID")?, need("Kernel Name")?, need("Section Name")?, need("Metric Name")?);
    let (unit_c, val_c) = (col("Metric Unit"), col("Metric Value"));
    let (rule_c, type_c, desc_c) = (col("Rule Name"), col("Rule Type"), col("Rule Description"));
    let (sp_type_c, sp_c) = (col("Estimated Speedup Type"), col("Estimated Speedup"));
    let cell = |row: &Vec<String>, c: Option<usize>| {
        c.and_then(|c| row.get(c)).map(|s| s.trim().to_string()).unwrap_or_default()
    };
    for row in rows {
        let id: u32 = cell(row, Some(id_c)).parse().map_err(|_| ParseError("details page: bad ID".into()))?;
        let index = match profiles.iter().position(|p| p.id == id) {
            Some(i) => i,
            None => {
                let signature = cell(row, Some(name_c));
                let (kernel, mangled) = kernel_base_name(&signature);
                profiles.push(KernelProfile { id, kernel, signature, mangled, ..Default::default() });
                profiles.len() - 1
            }
        };
        let profile = &mut profiles[index];
        let section = cell(row, Some(sec_c));
        let rule = cell(row, rule_c);
        if !rule.is_empty() {
            let sp_type = cell(row, sp_type_c);
            profile.rules.push(RuleResult {
                section,
                rule,
                kind: cell(row, type_c),
                description: cell(row, desc_c),
                speedup_type: (!sp_type.is_empty()).then_some(sp_type),
                estimated_speedup_pct: parse_value(&cell(row, sp_c)).and_then(|v| match v {
                    Value::Number(n) => Some(n),
                    Value::Text(_) => None,
                }),
            });
        } else if let Some(value) = parse_value(&cell(row, val_c)) {
            let key = format!("{section}/{}", cell(row, Some(met_c)));
            profile.details.insert(key, Metric { value, unit: cell(row, unit_c) });
        }
    }
    Ok(())
}

/// `--page source --print-source cuda,sass` (or only `cuda` or `sass`).
/// ncu lists each CUDA line followed by its instructions, sometimes twice
/// around a `...` row; instructions are kept once, by address.
pub fn parse_source(text: &str) -> Result<Vec<SourcePage>, ParseError> {
    let rows = records(&csv_body(text))?;
    let mut pages: Vec<SourcePage> = Vec::new();
    let mut file = String::new();
    let mut layout: Option<SourceLayout> = None;
    let mut current_line: Option<u32> = None;
    for row in rows {
        let first = row.first().map(String::as_str).unwrap_or("");
        match first {
            "File Path" => {
                file = row.get(1).cloned().unwrap_or_default();
                continue;
            }
            "Function Name" => {
                let signature = row.get(1).cloned().unwrap_or_default();
                current_line = None;
                // The same function again under another file: its inlined code.
                if pages.last().is_some_and(|p| p.signature == signature) {
                    continue;
                }
                let (kernel, _) = kernel_base_name(&signature);
                pages.push(SourcePage { kernel, signature, file: file.clone(), ..Default::default() });
                continue;
            }
            _ => {}
        }
        if row.iter().any(|c| c == "Address") || row.first().is_some_and(|c| c == "Line No") {
            layout = Some(SourceLayout::new(&row));
            continue;
        }
        let (Some(layout), Some(page)) = (&layout, pages.last_mut()) else {
            continue;
        };
        if let Some(line) = layout.line_no.and_then(|c| row.get(c)).and_then(|c| c.trim().parse::<u32>().ok()) {
            current_line = Some(line);
            let text = layout.cuda_text.and_then(|c| row.get(c)).cloned().unwrap_or_default();
            page.lines.push(SourceLine { file: file.clone(), line, text, metrics: layout.metrics(&row) });
            continue;
        }
        let Some(address) = layout.address.and_then(|c| row.get(c)).map(|a| a.trim()) else {
            continue;
        };
        if address.is_empty() || address == "..." || page.instructions.iter().any(|i| i.address == address) {
            continue;
        }
        page.instructions.push(SassRow {
            address: address.to_string(),
            text: layout.sass_text.and_then(|c| row.get(c)).map(|t| t.trim().to_string()).unwrap_or_default(),
            line: current_line,
            file: current_line.map(|_| file.clone()),
            metrics: layout.metrics(&row),
        });
    }
    for page in &mut pages {
        if let Some(own) = entry_file(&page.instructions) {
            page.file = own.to_string();
        }
    }
    Ok(pages)
}

/// Column roles of a source page: two columns are both called "Source".
struct SourceLayout {
    header: Vec<String>,
    line_no: Option<usize>,
    cuda_text: Option<usize>,
    address: Option<usize>,
    sass_text: Option<usize>,
}

impl SourceLayout {
    fn new(header: &[String]) -> Self {
        let pos = |name: &str| header.iter().position(|h| h == name);
        let line_no = pos("Line No");
        let address = pos("Address");
        let source_after =
            |c: Option<usize>| c.filter(|&c| header.get(c + 1).is_some_and(|h| h == "Source")).map(|c| c + 1);
        SourceLayout {
            header: header.to_vec(),
            line_no,
            cuda_text: source_after(line_no),
            address,
            sass_text: source_after(address),
        }
    }
    fn metrics(&self, row: &[String]) -> Metrics {
        let roles = [self.line_no, self.cuda_text, self.address, self.sass_text];
        self.header
            .iter()
            .enumerate()
            .filter(|(i, _)| !roles.contains(&Some(*i)))
            .filter_map(|(i, name)| {
                let value = parse_value(row.get(i)?)?;
                Some((name.clone(), Metric { value, unit: String::new() }))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_lose_separators_and_keep_text() {
        assert_eq!(parse_value("3,198,570,151.92"), Some(Value::Number(3_198_570_151.92)));
        assert_eq!(parse_value("n/a"), Some(Value::Text("n/a".into())));
        assert_eq!(parse_value("(256, 1, 1)"), Some(Value::Text("(256, 1, 1)".into())));
        assert_eq!(parse_value("Load(2),Store"), Some(Value::Text("Load(2),Store".into())));
        assert_eq!(parse_value(""), None);
    }

    #[test]
    fn units_scale_to_base() {
        let m = |v: f64, unit: &str| Metric { value: Value::Number(v), unit: unit.into() }.base();
        assert_eq!(m(0.058688, "ms"), Some(58_688.0));
        assert_eq!(m(2.0, "Kbyte"), Some(2_000.0));
        assert_eq!(m(3.0, "Gbyte/s"), Some(3e9));
        assert_eq!(m(7.0, "%"), Some(7.0));
    }

    #[test]
    fn kernel_names_lose_return_type_and_params() {
        assert_eq!(kernel_base_name("saxpy_fp64(float *, const float *, float, int)").0, "saxpy_fp64");
        assert_eq!(kernel_base_name("void gemm<float, (int)16>(float *, int)").0, "gemm<float, (int)16>");
        let (name, mangled) = kernel_base_name("_Z10saxpy_fp64PfPKffi");
        assert_eq!((name.as_str(), mangled.as_deref()), ("saxpy_fp64", Some("_Z10saxpy_fp64PfPKffi")));
    }
}
