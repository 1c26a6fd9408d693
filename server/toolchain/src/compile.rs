//! The compile step on save: nvcc to a cubin with line info and the ptxas
//! report, then nvdisasm for SASS with source lines, in a private temp dir.
//!
//! No text of the user's reaches nvcc's command line, which nvcc hands to
//! `/bin/sh` for its host steps: the file is compiled as a copy under a fixed
//! name (`source.cu`) that starts with `#line 1 "<real path>"`, so messages
//! and line info still name the real file and lines; defines go through a
//! generated header (`-include defines.h`); the file's folder is passed as
//! `-I` through a link of a fixed name when its own path holds a shell
//! character; and every argument is checked once more before nvcc starts
//! ([`crate::nvcc_flags::shell_char`]): one that would reach a shell is a
//! diagnostic, never a command.

use crate::nvcc_diag::{self, CompilerMessage};
use kernelpro_model::{Finding, Pos, Related, Severity, Span};
use kernelpro_runner::process::{ToolCommand, ToolError, run_tool};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The path of a document with no place on disk (a non-`file:` URI): being
/// relative, it gives the compile no include directory, no working directory
/// of its own and no compile_commands.json (never the shared temp dir's, nor
/// the server's working directory's: see [`is_unsaved`]).
pub const UNSAVED: &str = "untitled.cu";

/// Whether `path` is [`UNSAVED`], the stand-in for a buffer with no file.
pub fn is_unsaved(path: &Path) -> bool {
    path == Path::new(UNSAVED)
}

/// The copy nvcc compiles, named so that no shell acts on it.
const SOURCE_NAME: &str = "source.cu";
/// The generated header holding the `-D`/`-U` flags as `#define`/`#undef`.
const DEFINES_NAME: &str = "defines.h";
/// A link to the file's folder, for `-I`, when that folder's path holds a shell character.
const HOME_LINK: &str = "home";

/// The directory a file's relative includes resolve against: only a real,
/// absolute one.
fn home_dir(path: &Path) -> Option<&Path> {
    path.parent().filter(|d| d.is_absolute() && d.is_dir())
}

#[derive(Debug, Clone)]
pub struct CompileInput {
    /// Where the file lives (used for relative includes and in messages).
    pub path: PathBuf,
    pub text: String,
    pub nvcc: PathBuf,
    pub arch: String,
    /// Include paths, defines and other flags, as [`crate::nvcc_flags::filter`]
    /// keeps them; defines reach nvcc through a generated header.
    pub flags: Vec<String>,
    pub timeout: Duration,
}

#[derive(Debug, Clone, Default)]
pub struct CompileOutput {
    pub ok: bool,
    pub findings: Vec<Finding>,
    /// ptxas's `-v` resource report lines.
    pub ptxas_report: String,
    /// `nvdisasm -gi -c -hex` output parsed (file paths mapped to the real file):
    /// per-function instructions and the source-line map. The text itself is
    /// not kept: it is several MB for a large file.
    pub disassembly: Option<kernelpro_sass::disasm::Disassembly>,
    /// `ptxas_report` parsed, one entry per function.
    pub resources: Vec<kernelpro_sass::ptxas::KernelResources>,
    pub cubin: Option<Vec<u8>>,
    pub argv: Vec<String>,
    pub compile_time: Duration,
    pub disasm_time: Duration,
    /// The temp copy's path as nvcc recorded it in the line info.
    pub temp_source: String,
    /// Paths nvcc printed that stand for others (the link to the file's
    /// folder), with the real one: `(printed prefix, real prefix)`.
    pub path_map: Vec<(String, String)>,
}

/// One nvcc run prepared in a private folder: its arguments and the files to
/// write there first.
#[derive(Debug, Clone, PartialEq)]
pub struct NvccCall {
    pub argv: Vec<String>,
    /// The copy to compile and its text (`#line` first).
    pub source: (PathBuf, String),
    /// The generated header of defines, when there are any.
    pub defines: Option<(PathBuf, String)>,
    /// A link to make to the file's folder: `(link, folder)`.
    pub home_link: Option<(PathBuf, PathBuf)>,
}

/// `s` as the inside of a C string literal.
fn c_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if c.is_ascii_control() => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

impl CompileInput {
    /// The name the compile's messages and line info give the file: its path
    /// as given, with any control character (a newline in a file name) as `?`,
    /// since nvcc would print it raw and split the message's file name.
    pub fn line_name(&self) -> String {
        self.path.display().to_string().chars().map(|c| if c.is_control() { '?' } else { c }).collect()
    }

    /// The nvcc run for a compile in the private folder `work` into `cubin`.
    pub fn nvcc_call(&self, work: &Path, cubin: &Path) -> NvccCall {
        let mut call = self.in_folder(work, &["-cubin", "-lineinfo", "-Xptxas", "-v"]);
        // `-x cu`: headers and files without the .cu suffix are CUDA too.
        let source = call.source.0.display().to_string();
        call.argv.extend(["-o".into(), cubin.display().to_string(), "-x".into(), "cu".into(), source]);
        call
    }

    /// The file made ready for nvcc in the private folder `work`: `-arch`, `options`, the file's
    /// folder to include from (through a link where its path has a character a shell acts on), the
    /// flags and the header of defines; the copy (`#line` back to the file) is the caller's to name
    /// with its outputs. Every compile of a user's file starts here: the save's, a program's.
    pub fn in_folder(&self, work: &Path, options: &[&str]) -> NvccCall {
        let mut args = vec![format!("-arch={}", self.arch)];
        args.extend(options.iter().map(|o| o.to_string()));
        let mut home_link = None;
        if let Some(dir) = home_dir(&self.path) {
            let shown = dir.display().to_string();
            if crate::nvcc_flags::shell_char(&shown).is_none() {
                args.push(format!("-I{shown}"));
            } else {
                let link = work.join(HOME_LINK);
                args.push(format!("-I{}", link.display()));
                home_link = Some((link, dir.to_path_buf()));
            }
        }
        let (header, flags) = crate::nvcc_flags::defines_header(&self.flags);
        args.extend(flags);
        let defines = (!header.is_empty()).then(|| (work.join(DEFINES_NAME), header));
        if let Some((path, _)) = &defines {
            args.extend(["-include".into(), path.display().to_string()]);
        }
        // A byte-order mark is allowed only at a file's start, which is now the `#line`.
        let body = self.text.strip_prefix('\u{feff}').unwrap_or(&self.text);
        let text = format!("#line 1 \"{}\"\n{body}", c_string(&self.line_name()));
        NvccCall { argv: args, source: (work.join(SOURCE_NAME), text), defines, home_link }
    }
}

impl NvccCall {
    /// Writes the copy and the header of defines and makes the link to the file's folder; where one
    /// fails, what it was doing.
    pub fn write(&self) -> Result<(), (&'static str, std::io::Error)> {
        let (src, text) = &self.source;
        std::fs::write(src, text).map_err(|e| ("write the temp copy", e))?;
        if let Some((path, header)) = &self.defines {
            std::fs::write(path, header).map_err(|e| ("write the defines header", e))?;
        }
        if let Some((link, home)) = &self.home_link {
            std::os::unix::fs::symlink(home, link).map_err(|e| ("link the file's folder", e))?;
        }
        Ok(())
    }
}

fn spawn_error(what: &str, e: std::io::Error) -> ToolError {
    ToolError::Spawn { tool: "nvcc".into(), message: format!("cannot {what}: {e}") }
}

pub async fn compile(input: &CompileInput, cancel: &CancellationToken) -> Result<CompileOutput, ToolError> {
    let dir =
        tempfile::Builder::new().prefix("kernelpro-").tempdir().map_err(|e| spawn_error("create a temp dir", e))?;
    let cubin = dir.path().join("out.cubin");
    let call = input.nvcc_call(dir.path(), &cubin);
    let argv = call.argv.clone();
    // The last word: nothing a shell acts on reaches nvcc, whatever its source.
    if let Some((arg, c)) = argv.iter().find_map(|a| crate::nvcc_flags::shell_char(a).map(|c| (a.clone(), c))) {
        let mut result = CompileOutput { argv, ..Default::default() };
        result.findings.push(
            Finding::new(
                "kernelpro",
                Severity::Error,
                Span::line(0),
                format!(
                    "not compiled: nvcc's argument `{}` holds {c:?}, which a shell acts on (nvcc runs its host steps through /bin/sh); check the arch setting, the include paths and the temp folder (TMPDIR)",
                    arg.escape_debug()
                ),
            )
            .with_code("unsafe-argument"),
        );
        return Ok(result);
    }
    let src = &call.source.0;
    call.write().map_err(|(what, e)| spawn_error(what, e))?;
    let mut path_map = Vec::new();
    if let Some((link, home)) = &call.home_link {
        path_map.push((format!("{}/", link.display()), format!("{}/", home.display())));
    }
    let cwd = home_dir(&input.path).map(Path::to_path_buf).unwrap_or_else(|| dir.path().to_path_buf());
    let cmd = ToolCommand::new(&input.nvcc, input.timeout).args(argv.iter()).cwd(&cwd);
    let out = run_tool(&cmd, cancel).await?;
    let mut result = CompileOutput { argv, compile_time: out.elapsed, path_map, ..Default::default() };
    let combined = format!("{}{}", out.stderr, out.stdout);
    result.ptxas_report = combined
        .lines()
        .filter(|l| l.starts_with("ptxas info") || l.starts_with("    "))
        .collect::<Vec<_>>()
        .join("\n");
    result.resources = kernelpro_sass::ptxas::parse_ptxas(&result.ptxas_report);
    let messages = nvcc_diag::parse(&combined);
    result.findings = map_messages(&messages, input, src, &cwd, &result.path_map);
    // No host compiler: nvcc's words do not say what to install.
    for f in result.findings.iter_mut().filter(|f| f.message.contains("Failed to preprocess host compiler properties"))
    {
        f.message = format!(
            "{} nvcc found no host C++ compiler (g++ on PATH, or NVCC_CCBIN): {} (`kernelpro doctor` checks it).",
            f.message.trim_end(),
            crate::toolchain::HOST_COMPILER_HINT
        );
    }
    result.ok = out.success() && cubin.exists();
    if !result.ok && !result.findings.iter().any(|f| f.severity == Severity::Error) {
        let tail: Vec<&str> = combined.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
        result.findings.push(Finding::new(
            "nvcc",
            Severity::Error,
            Span::line(0),
            format!("nvcc failed (exit {:?}) without a message KernelPro could place:\n{}", out.code, tail.join("\n")),
        ));
    }
    if out.truncated {
        result.findings.push(Finding::new(
            "nvcc",
            Severity::Warning,
            Span::line(0),
            "nvcc printed more than 4 MiB; the rest of its output was dropped",
        ));
    }
    if result.ok {
        result.cubin = std::fs::read(&cubin).ok();
    }
    result.temp_source = src.display().to_string();
    Ok(result)
}

/// The second step of a save: SASS with source lines (`nvdisasm -gi -c -hex`),
/// which costs about half a compile, so callers publish the compiler's
/// messages before running it.
pub async fn disassemble(
    compiled: &CompileOutput,
    nvcc: &Path,
    real_path: &Path,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Result<CompileOutput, ToolError> {
    let mut result = compiled.clone();
    let Some(cubin) = &compiled.cubin else { return Ok(result) };
    let dir = tempfile::Builder::new()
        .prefix("kernelpro-")
        .tempdir()
        .map_err(|e| ToolError::Spawn { tool: "nvdisasm".into(), message: format!("cannot create a temp dir: {e}") })?;
    let path = dir.path().join("out.cubin");
    std::fs::write(&path, cubin)
        .map_err(|e| ToolError::Spawn { tool: "nvdisasm".into(), message: format!("cannot write the cubin: {e}") })?;
    // `-ndf`: the dataflow pass only labels branch-stack jumps, which GPUs since
    // Volta (all nvcc 13 targets) do not have; the listing is the same, a quarter faster.
    let cmd = ToolCommand::new(nvcc.with_file_name("nvdisasm"), timeout).args(["-ndf", "-gi", "-c", "-hex"]).arg(&path);
    match run_tool(&cmd, cancel).await {
        Ok(d) if d.success() => {
            result.disasm_time = d.elapsed;
            let mut sass = d.stdout.replace(&compiled.temp_source, &real_path.display().to_string());
            for (printed, real) in &compiled.path_map {
                sass = sass.replace(printed, real);
            }
            result.disassembly = Some(kernelpro_sass::disasm::parse_sass(&sass));
        }
        Ok(d) => result.findings.push(Finding::new(
            "kernelpro",
            Severity::Information,
            Span::line(0),
            format!("nvdisasm failed; no SASS for this file: {}", d.stderr.trim()),
        )),
        Err(ToolError::Cancelled { tool }) => return Err(ToolError::Cancelled { tool }),
        Err(e) => result.findings.push(Finding::new(
            "kernelpro",
            Severity::Information,
            Span::line(0),
            format!("no SASS for this file: {e}"),
        )),
    }
    Ok(result)
}

fn map_messages(
    messages: &[CompilerMessage],
    input: &CompileInput,
    tmp_src: &Path,
    cwd: &Path,
    path_map: &[(String, String)],
) -> Vec<Finding> {
    let lines: Vec<&str> = input.text.lines().collect();
    let line_name = input.line_name();
    // Parsed only for a message that names a kernel and no line (most compiles have none).
    let source = std::cell::OnceCell::new();
    let mut headers: std::collections::HashMap<PathBuf, String> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for m in messages {
        let code = m.code.clone();
        let mut span = Span::line(0);
        let mut other_file: Option<PathBuf> = None;
        match (&m.file, m.line) {
            (Some(f), Some(line)) => {
                let mapped = path_map
                    .iter()
                    .find_map(|(from, to)| f.strip_prefix(from.as_str()).map(|rest| format!("{to}{rest}")));
                let printed = Path::new(mapped.as_deref().unwrap_or(f));
                let resolved = if printed.is_absolute() { printed.to_path_buf() } else { cwd.join(printed) };
                // nvcc prints the main file by its `#line` name: the real path.
                let is_main = *f == line_name || printed == tmp_src || resolved == tmp_src;
                let l0 = line.saturating_sub(1);
                if is_main {
                    span = message_span(&lines, l0, m);
                } else {
                    // A header's message gets its column the same way, from the header's text.
                    let header_text = headers.entry(resolved.clone()).or_insert_with(|| header_text(&resolved));
                    let header_lines: Vec<&str> = header_text.lines().collect();
                    span = message_span(&header_lines, l0, m);
                    other_file = Some(resolved);
                }
            }
            _ if m.tool == "end-of-source" => {
                let last = lines.len().saturating_sub(1) as u32;
                span = Span::line(last);
            }
            _ => {
                // ptxas names kernels by mangled name: put it on that kernel.
                let source = source.get_or_init(|| kernelpro_source::parse(&input.text));
                if let Some(k) = source.kernels().find(|k| mentions_kernel(&m.message, &k.name)) {
                    span = k.name_span;
                }
            }
        }
        let text = if m.tool == "ptxas" { format!("ptxas: {}", demangle_in(&m.message)) } else { m.message.clone() };
        let mut f = Finding::new("nvcc", m.severity, span, text);
        f.code = code;
        if let Some(header) = other_file {
            // Publish on the header, and point from the #include line in this file.
            let mut in_header = f.clone();
            in_header.file = Some(header.clone());
            let in_header_span = in_header.span;
            out.push(in_header);
            let name = header.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let include_line =
                lines.iter().position(|l| l.trim_start().starts_with("#include") && l.contains(&name)).unwrap_or(0)
                    as u32;
            f.span = Span::line(include_line);
            f.message = format!("in included file {name}: {}", m.message);
            f.related.push(Related { file: header, span: in_header_span, message: m.message.clone() });
        }
        out.push(f);
    }
    out
}

/// Where message `m` points on 0-based line `l0` of a file with `lines`:
/// its column (given, or found from nvcc's echoed line and caret) and the
/// word there, else the whole line.
fn message_span(lines: &[&str], l0: u32, m: &CompilerMessage) -> Span {
    let col = m.col.or_else(|| {
        let real = lines.get(l0 as usize)?;
        let (echo, caret) = m.echo.as_ref()?;
        nvcc_diag::caret_column(real, echo, *caret)
    });
    match col {
        Some(c) => {
            let real = lines.get(l0 as usize).copied().unwrap_or("");
            let len = real.get(c as usize..).map_or(1, |rest| {
                rest.chars()
                    .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
                    .map(char::len_utf8)
                    .sum::<usize>()
                    .max(1)
            });
            Span::new(Pos::new(l0, c), Pos::new(l0, c + len as u32))
        }
        None => Span::line(l0),
    }
}

/// A header's text for placing its messages: only a regular file, at most 16 MiB
/// (nvcc has just read it; anything else gives whole-line spans).
fn header_text(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() <= 16 << 20 => std::fs::read_to_string(path).unwrap_or_default(),
        _ => String::new(),
    }
}

fn mentions_kernel(message: &str, name: &str) -> bool {
    // ptxas names kernels by their mangled symbol; the source knows the short name.
    message
        .split(['\'', ' ', '"'])
        .any(|w| w == name || kernelpro_sass::symbol::names(w).name.rsplit("::").next() == Some(name))
}

fn demangle_in(message: &str) -> String {
    message
        .split('\'')
        .enumerate()
        .map(|(i, part)| if i % 2 == 1 { kernelpro_sass::symbol::names(part).demangled } else { part.to_string() })
        .collect::<Vec<_>>()
        .join("'")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(path: &str, flags: &[&str]) -> CompileInput {
        CompileInput {
            path: path.into(),
            text: "__global__ void k() {}\n".into(),
            nvcc: "nvcc".into(),
            arch: "sm_90".into(),
            flags: flags.iter().map(|f| f.to_string()).collect(),
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn an_unsaved_buffer_gets_no_include_dir() {
        let dir = std::env::temp_dir();
        let with_dir = input(&dir.join("k.cu").display().to_string(), &[])
            .nvcc_call(Path::new("/s"), Path::new("/s/out.cubin"))
            .argv;
        assert!(with_dir.contains(&format!("-I{}", dir.display())), "{with_dir:?}");
        let unsaved = input(UNSAVED, &[]).nvcc_call(Path::new("/s"), Path::new("/s/out.cubin")).argv;
        assert!(!unsaved.iter().any(|a| a.starts_with("-I")), "{unsaved:?}");
    }

    /// The file's name, its folder and its defines never reach nvcc's argv.
    #[test]
    fn no_text_of_the_user_reaches_the_command_line() {
        let t = tempfile::tempdir().unwrap();
        let folder = t.path().join("a $(touch X) \"b\"");
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join("$(touch Y).cu");
        let call = input(&path.display().to_string(), &["-DA=$(touch Z)", "-DB", "-UC", "-I/inc", "-isystem", "/sys"])
            .nvcc_call(Path::new("/s"), Path::new("/s/out.cubin"));
        assert_eq!(
            call.argv,
            [
                "-arch=sm_90",
                "-cubin",
                "-lineinfo",
                "-Xptxas",
                "-v",
                "-I/s/home",
                "-I/inc",
                "-isystem",
                "/sys",
                "-include",
                "/s/defines.h",
                "-o",
                "/s/out.cubin",
                "-x",
                "cu",
                "/s/source.cu"
            ]
        );
        assert_eq!(call.home_link, Some((PathBuf::from("/s/home"), folder.clone())));
        assert_eq!(
            call.defines,
            Some((PathBuf::from("/s/defines.h"), "#define A $(touch Z)\n\n#define B 1\n\n#undef C\n".into()))
        );
        let (src, text) = call.source;
        assert_eq!(src, Path::new("/s/source.cu"));
        let mut bom = input(UNSAVED, &[]);
        bom.text.insert(0, '\u{feff}');
        let with_bom = bom.nvcc_call(Path::new("/s"), Path::new("/s/out.cubin")).source.1;
        assert_eq!(with_bom, "#line 1 \"untitled.cu\"\n__global__ void k() {}\n");
        let escaped = path.display().to_string().replace('"', "\\\"");
        assert_eq!(text, format!("#line 1 \"{escaped}\"\n__global__ void k() {{}}\n"));
    }
}
