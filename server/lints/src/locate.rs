//! From a kernel to its SASS: the functions compiled for it and the
//! instructions each line of the analysed file produced.

use kernelpro_sass::disasm::{Disassembly, Function, Instruction};

/// SASS functions compiled for `kernel` (several for a template).
pub fn sass_functions<'s>(sass: &'s Disassembly, kernel: &str) -> Vec<&'s Function> {
    sass.functions.iter().filter(|f| short_name(&f.name) == kernel).collect()
}

pub use kernelpro_sass::symbol::plain_name as short_name;

/// Whether a path recorded by nvcc names the analysed file: equal, one a
/// `/`-suffix of the other, or the same file name.
pub fn same_file(recorded: &str, path: &str) -> bool {
    let file_name = |p: &str| p.rsplit(['/', '\\']).next().unwrap_or(p).to_string();
    recorded == path
        || recorded.ends_with(&format!("/{path}"))
        || path.ends_with(&format!("/{recorded}"))
        || file_name(recorded) == file_name(path)
}

/// 1-based lines of `path` in `function` with the instructions on each that `wanted` accepts.
pub fn lines_with<'f>(
    function: &'f Function,
    path: &str,
    wanted: impl Fn(&Instruction) -> bool,
) -> Vec<(u32, Vec<&'f Instruction>)> {
    function
        .lines
        .iter()
        .filter(|l| same_file(&l.source.file, path))
        .filter_map(|l| {
            let hits: Vec<&Instruction> =
                l.instructions.iter().map(|&i| &function.instructions[i]).filter(|i| wanted(i)).collect();
            (!hits.is_empty()).then_some((l.source.line, hits))
        })
        .collect()
}

/// The instructions on one 1-based line of `path`, over all `functions`.
pub fn instructions_on<'f>(functions: &[&'f Function], path: &str, line: u32) -> Vec<&'f Instruction> {
    functions
        .iter()
        .flat_map(|f| lines_with(f, path, |_| true).into_iter().filter(|(l, _)| *l == line).flat_map(|(_, i)| i))
        .collect()
}

/// `0x0120 F2F.F64.F32, 0x0130 DMUL` for evidence, at most `cap` listed.
pub fn listing(instructions: &[&Instruction], cap: usize) -> String {
    let mut shown: Vec<String> =
        instructions.iter().take(cap).map(|i| format!("{:#06x} {}", i.offset, i.opcode)).collect();
    if instructions.len() > cap {
        shown.push(format!("… {} more", instructions.len() - cap));
    }
    shown.join(", ")
}
