//! SASS listings from `nvdisasm -g[i] -c [-hex]` and `cuobjdump -sass`, parsed
//! into functions, instructions and a source-line → instruction map.
//!
//! Both tools print one instruction per line (`/*0040*/ @P0 LDG.E R2, [R4.64] ;`),
//! optionally followed by the 128-bit encoding as two `/* 0x… */` words (low word
//! on the instruction line, high word on the next). Functions start at
//! `.section .text.NAME` (nvdisasm) or `Function : NAME` (cuobjdump).
//!
//! nvdisasm marks source lines with `//## File "f", line N` comments before the
//! instructions they cover; with `-gi` an inlined body gets
//! `//## File "h", line N inlined at "f", line M` followed by the call site's own
//! marker. An instruction belongs to every (file, line) of the markers in front
//! of it, so a hover on the call site and on the header line both find it.

use crate::control::ControlBits;
use crate::symbol;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instruction {
    /// Byte offset within the function, as printed (`/*0040*/`).
    pub offset: u32,
    /// Guard predicate such as `@P0` or `@!PT`, without the `@`.
    pub predicate: Option<String>,
    /// Opcode with its modifiers, e.g. `LDG.E.128.CONSTANT`.
    pub opcode: String,
    /// Everything between the opcode and the `;`.
    pub operands: String,
    /// The 128-bit encoding as `[low, high]` when the listing had `-hex` words.
    pub encoding: Option<[u64; 2]>,
    pub control: Option<ControlBits>,
}

impl Instruction {
    /// The opcode without modifiers: `LDG` for `LDG.E.128.CONSTANT`.
    pub fn base_opcode(&self) -> &str {
        self.opcode.split('.').next().unwrap_or(&self.opcode)
    }
}

/// A 1-based source line as nvdisasm names it (the path exactly as compiled).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
}

/// The instructions attributed to one source line, by index into `Function::instructions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineInstructions {
    pub source: SourceLine,
    pub instructions: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Function {
    pub mangled: String,
    pub demangled: String,
    /// Demangled without parameters, e.g. `saxpy_fp64`.
    pub name: String,
    /// `sm_90` from the listing's `.target` / `code for` line.
    pub arch: Option<String>,
    pub instructions: Vec<Instruction>,
    /// Sorted by file then line; empty for cuobjdump listings.
    pub lines: Vec<LineInstructions>,
}

impl Function {
    /// Instructions for a 1-based `line` of `file`. Paths match exactly or when one
    /// ends with `/` + the other, because nvcc records the path as it was given.
    pub fn instructions_at(&self, file: &str, line: u32) -> &[usize] {
        let same_file = |recorded: &str| {
            recorded == file || recorded.ends_with(&format!("/{file}")) || file.ends_with(&format!("/{recorded}"))
        };
        self.lines
            .iter()
            .find(|l| l.source.line == line && same_file(&l.source.file))
            .map_or(&[], |l| l.instructions.as_slice())
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Disassembly {
    pub functions: Vec<Function>,
}

impl Disassembly {
    /// Looks a function up by mangled, demangled or short name.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.mangled == name || f.demangled == name || f.name == name)
    }
}

/// Parses `nvdisasm` or `cuobjdump -sass` output; both formats are recognised.
pub fn parse_sass(text: &str) -> Disassembly {
    let mut parser = Parser::default();
    for line in text.lines() {
        parser.line(line);
    }
    parser.finish()
}

#[derive(Default)]
struct Parser {
    arch: Option<String>,
    functions: Vec<Function>,
    /// Source lines of the markers in front of the current instruction run.
    current_sources: Vec<SourceLine>,
    /// Whether the markers seen since the last instruction replace `current_sources`.
    markers_pending: bool,
    line_map: Vec<(SourceLine, usize)>,
    /// Low encoding word of the last instruction, until its high word follows.
    pending_low_word: Option<u64>,
}

impl Parser {
    fn line(&mut self, raw: &str) {
        let line = raw.trim();
        let pending_low_word = self.pending_low_word.take();
        if let Some(arch) = line.strip_prefix(".target").or_else(|| line.strip_prefix("code for")) {
            self.arch = Some(arch.trim().to_string());
        } else if let Some(name) = section_function(line).or_else(|| line.strip_prefix("Function :")) {
            self.start_function(name.trim());
        } else if let Some(marker) = line.strip_prefix("//##") {
            self.marker(marker);
        } else if let (Some(hi), Some(lo)) = (hex_word(line), pending_low_word) {
            self.attach_encoding(lo, hi);
        } else if let Some((instruction, low_word)) = instruction(line) {
            self.push(instruction);
            self.pending_low_word = low_word;
        }
    }

    fn start_function(&mut self, mangled: &str) {
        self.flush_line_map();
        let names = symbol::names(mangled);
        self.functions.push(Function {
            mangled: names.mangled,
            demangled: names.demangled,
            name: names.name,
            arch: self.arch.clone(),
            instructions: Vec::new(),
            lines: Vec::new(),
        });
        self.current_sources.clear();
        self.markers_pending = false;
    }

    fn marker(&mut self, marker: &str) {
        if !self.markers_pending {
            self.current_sources.clear();
            self.markers_pending = true;
        }
        for source in marker_sources(marker) {
            if !self.current_sources.contains(&source) {
                self.current_sources.push(source);
            }
        }
    }

    fn push(&mut self, instruction: Instruction) {
        let Some(function) = self.functions.last_mut() else {
            return;
        };
        let index = function.instructions.len();
        function.instructions.push(instruction);
        self.markers_pending = false;
        self.line_map.extend(self.current_sources.iter().map(|s| (s.clone(), index)));
    }

    fn attach_encoding(&mut self, lo: u64, hi: u64) {
        if let Some(instruction) = self.functions.last_mut().and_then(|f| f.instructions.last_mut()) {
            instruction.encoding = Some([lo, hi]);
            instruction.control = Some(ControlBits::from_hi(hi));
        }
    }

    fn flush_line_map(&mut self) {
        let Some(function) = self.functions.last_mut() else {
            return;
        };
        self.line_map.sort();
        for (source, index) in self.line_map.drain(..) {
            match function.lines.last_mut() {
                Some(last) if last.source == source => last.instructions.push(index),
                _ => function.lines.push(LineInstructions { source, instructions: vec![index] }),
            }
        }
    }

    fn finish(mut self) -> Disassembly {
        self.flush_line_map();
        Disassembly { functions: self.functions }
    }
}

/// `.section .text._Z3fooPf,"ax",@progbits` → `_Z3fooPf`.
fn section_function(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(".section")?.trim_start().strip_prefix(".text.")?;
    Some(rest.split(',').next().unwrap_or(rest))
}

/// Every `"file", line N` pair in a `//##` marker, the innermost first.
fn marker_sources(marker: &str) -> Vec<SourceLine> {
    let mut sources = Vec::new();
    let mut rest = marker;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else { break };
        let file = &after[..close];
        rest = &after[close + 1..];
        let number = rest.trim_start_matches([',', ' ']).strip_prefix("line").map(str::trim_start);
        let digits = number.map(|n| n.split(|c: char| !c.is_ascii_digit()).next().unwrap_or(""));
        if let Some(line) = digits.and_then(|d| d.parse().ok()) {
            sources.push(SourceLine { file: file.to_string(), line });
        }
    }
    sources
}

/// A line holding only `/* 0x0123… */`: the high word of the previous instruction.
fn hex_word(line: &str) -> Option<u64> {
    let inner = line.strip_prefix("/*")?.strip_suffix("*/")?.trim();
    u64::from_str_radix(inner.strip_prefix("0x")?, 16).ok()
}

/// `/*0040*/  @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;  /* 0x… */`, with the low
/// encoding word when the listing has one.
fn instruction(line: &str) -> Option<(Instruction, Option<u64>)> {
    let rest = line.strip_prefix("/*")?;
    let (offset, rest) = rest.split_once("*/")?;
    let offset = u32::from_str_radix(offset.trim(), 16).ok()?;
    let (text, low_word) = match rest.rfind("/*") {
        Some(at) => (&rest[..at], hex_word(rest[at..].trim())),
        None => (rest, None),
    };
    let text = text.trim().strip_suffix(';')?.trim();
    let (predicate, text) = match text.strip_prefix('@') {
        Some(guarded) => {
            let (predicate, rest) = guarded.split_once(char::is_whitespace)?;
            (Some(predicate.to_string()), rest.trim_start())
        }
        None => (None, text),
    };
    let (opcode, operands) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let instruction = Instruction {
        offset,
        predicate,
        opcode: opcode.to_string(),
        operands: operands.trim().to_string(),
        encoding: None,
        control: None,
    };
    Some((instruction, low_word))
}
