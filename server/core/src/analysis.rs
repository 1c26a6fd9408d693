//! The pipeline from a file's text to everything KernelPro shows for it:
//! source structure, compiler messages, and (from later stages) SASS,
//! resources and findings. Results are cached by content and flags.

use kernelpro_config::settings::Settings;
use kernelpro_config::words::Words;
use kernelpro_lints::Needs;
use kernelpro_lints::launch::{Launch, LaunchFrom};
use kernelpro_model::{Finding, Severity, Span};
use kernelpro_runner::process::ToolError;
use kernelpro_sass::disasm::Disassembly;
use kernelpro_sass::occupancy::{ArchLimits, Limiter, Occupancy, occupancy};
use kernelpro_sass::ptxas::KernelResources;
use kernelpro_sass::symbol::plain_name;
use kernelpro_source::{self as source, SourceFile};
use kernelpro_spec::{LaunchSpec, ResolveOptions};
use kernelpro_toolchain::cache::{MemoCache, key_of};
use kernelpro_toolchain::compile::{CompileInput, CompileOutput, compile};
use kernelpro_toolchain::headers::ProjectHeader;
use kernelpro_toolchain::toolchain::{self, Env, Found};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Everything known about one version of one file.
#[derive(Debug, Clone, Default)]
pub struct FileAnalysis {
    pub path: PathBuf,
    /// Built without tools because the workspace is not trusted: how to trust it, in the user's editor's words.
    pub untrusted: Option<&'static str>,
    /// The words of the user's client (from the settings), for the hover's hints.
    pub words: Words,
    pub source: SourceFile,
    pub findings: Vec<Finding>,
    pub compile: Option<Arc<CompileOutput>>,
    /// The compile came from the cache (a save that changed nothing).
    pub cached: bool,
    pub arch: String,
    /// Each kernel's launch where something says it: its spec, an in-file
    /// `<<<…>>>` launch, its `__launch_bounds__` (`kernelpro_lints::launch`).
    pub launches: HashMap<String, Launch>,
    pub default_block_size: u32,
    pub launch_specs: HashMap<String, LaunchSpec>,
    /// SASS and the static tools are in (step two ran, or was not needed).
    pub complete: bool,
    /// The cache key of this version (text, path, flags, compiler).
    pub key: kernelpro_toolchain::cache::Key,
    pub nvcc: Option<PathBuf>,
    /// The project headers the file includes (`kernelpro_toolchain::headers`): their kernels
    /// are analysed with this file's compile, their findings carry `file`.
    pub headers: Vec<ProjectHeader>,
    /// The text this analysis is of (to tell which lines an edit left alone).
    pub text: Arc<str>,
    /// How many of `findings` come before the static tools' (specs, compiler
    /// messages, rejected flags): step two replaces everything after them.
    pub base_findings: usize,
    /// The file is over the analysis budget (`kernelpro_source::budget`): one
    /// finding says so, and no source or SASS tool walks it.
    pub over_budget: bool,
}

impl FileAnalysis {
    /// What needs no external tool: the file's structure and its launch specs.
    /// This is all an untrusted workspace gets.
    pub fn without_tools(path: &Path, text: &str, settings: &Settings) -> FileAnalysis {
        Self::without_tools_within(path, text, settings, &|| false)
    }

    /// [`FileAnalysis::without_tools`] under the analysis budget, stopping
    /// early once `cancelled()` (a newer version started): a file over the
    /// budget gets one finding saying which limit it passed, and nothing else.
    pub fn without_tools_within(
        path: &Path,
        text: &str,
        settings: &Settings,
        cancelled: &dyn Fn() -> bool,
    ) -> FileAnalysis {
        let source = match source::budget::check(text, &source::budget::Budget::default(), cancelled) {
            Ok((tree, _)) => source::of_tree(&tree, text),
            Err(refused) => {
                let finding = Finding::new("kernelpro", Severity::Warning, Span::line(0), refused.message())
                    .with_code("analysis-budget");
                return FileAnalysis {
                    path: path.to_path_buf(),
                    text: Arc::from(text),
                    base_findings: 1,
                    findings: vec![finding],
                    arch: settings.arch.clone(),
                    default_block_size: settings.block_size,
                    over_budget: true,
                    words: settings.words,
                    ..Default::default()
                };
            }
        };
        let (specs, spec_findings) = crate::launch::resolve_all(text, &source, &ResolveOptions::default());
        let mut launches = kernelpro_lints::launch::in_file(text, &source, source.kernels());
        for (k, s) in &specs {
            launches.insert(
                k.clone(),
                Launch { block: s.block.iter().product(), smem: Some(s.smem), from: LaunchFrom::Spec },
            );
        }
        FileAnalysis {
            path: path.to_path_buf(),
            text: Arc::from(text),
            base_findings: spec_findings.len(),
            launches,
            launch_specs: specs,
            findings: spec_findings,
            source,
            arch: settings.arch.clone(),
            default_block_size: settings.block_size,
            untrusted: (!settings.trusted).then(|| settings.words.trust_hint()),
            words: settings.words,
            ..Default::default()
        }
    }

    /// This step-one analysis as a save first shows it: with the previous
    /// analysis's SASS-tool findings (which only step two brings) on lines this
    /// version left unchanged, so a save never hides them until their
    /// replacements are ready.
    pub fn keeping_sass_findings_of(&self, previous: &FileAnalysis) -> FileAnalysis {
        let mut shown = self.clone();
        if self.complete {
            return shown;
        }
        let codes = kernelpro_lints::codes_needing(Needs::Sass);
        let old: Vec<&str> = previous.text.lines().collect();
        let new: Vec<&str> = self.text.lines().collect();
        let unchanged = |span: &Span| {
            (span.start.line..=span.end.line)
                .all(|l| old.get(l as usize).is_some() && old.get(l as usize) == new.get(l as usize))
        };
        shown.findings.extend(
            previous
                .findings
                .iter()
                .filter(|f| f.file.is_none())
                .filter(|f| f.code.as_deref().is_some_and(|c| codes.contains(&c)))
                .filter(|f| unchanged(&f.span))
                .cloned(),
        );
        shown
    }

    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error && f.file.is_none())
    }
}

/// Why an analysis produced nothing to publish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalysisError {
    #[error("cancelled by a newer version")]
    Cancelled,
}

pub struct Analyzer {
    compiles: MemoCache<CompileOutput>,
    /// Finished analyses (both steps), so a save that changes nothing costs a hash.
    complete: MemoCache<FileAnalysis>,
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer { compiles: MemoCache::new(64), complete: MemoCache::new(64) }
    }
}

impl Analyzer {
    pub fn find_nvcc(settings: &Settings) -> Option<Found> {
        toolchain::find_tool("nvcc", settings.nvcc.as_deref(), "KERNELPRO_NVCC", &Env::for_settings(settings))
    }

    /// The full set of nvcc flags for a file: settings then compile_commands.json,
    /// through the one filter (`nvcc_flags`).
    pub fn flags_for(path: &Path, settings: &Settings) -> Vec<String> {
        kernelpro_toolchain::nvcc_flags::for_file(path, settings).kept
    }

    /// Both steps: compile, then SASS and the static tools.
    pub async fn analyze(
        &self,
        path: &Path,
        text: &str,
        settings: &Settings,
        cancel: &CancellationToken,
    ) -> Result<FileAnalysis, AnalysisError> {
        let first = self.compile_step(path, text, settings, cancel).await?;
        if first.complete {
            return Ok(first);
        }
        self.machine_code_step(&first, text, settings, cancel).await
    }

    /// Step one: the compiler's messages and the ptxas resources. When the same
    /// text was fully analysed before, the whole earlier result comes back
    /// (`complete` is then true and step two is not needed).
    #[tracing::instrument(level = "debug", name = "analysis.compile", skip_all, fields(file = %path.display()))]
    pub async fn compile_step(
        &self,
        path: &Path,
        text: &str,
        settings: &Settings,
        cancel: &CancellationToken,
    ) -> Result<FileAnalysis, AnalysisError> {
        // nvcc runs in the file's directory with `-I` that directory: a relative
        // path (`check dir/file.cu`) would apply `dir` twice to `#include "…"`.
        // An unsaved buffer stays relative: it has no folder (never the server's working directory).
        let absolute = if kernelpro_toolchain::compile::is_unsaved(path) {
            path.to_path_buf()
        } else {
            std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
        };
        let path = absolute.as_path();
        let started = Instant::now();
        let Some(nvcc) = Self::find_nvcc(settings) else {
            tracing::debug!("nvcc not found: nothing compiled");
            let mut analysis = FileAnalysis::without_tools(path, text, settings);
            analysis.findings.push(
                Finding::new(
                    "kernelpro",
                    Severity::Warning,
                    Span::line(0),
                    format!(
                        "nvcc was not found, so this file is not compiled. {}",
                        toolchain::nvcc_install_hint(settings.words)
                    ),
                )
                .with_code("no-nvcc"),
            );
            analysis.complete = true;
            return Ok(analysis);
        };
        let flags = kernelpro_toolchain::nvcc_flags::for_file(path, settings);
        let input = CompileInput {
            path: path.to_path_buf(),
            text: text.to_string(),
            nvcc: nvcc.path.clone(),
            arch: settings.arch.clone(),
            flags: flags.kept,
            timeout: Duration::from_secs(settings.compile_timeout_secs.max(1)),
        };
        let stamp =
            std::fs::metadata(&nvcc.path).and_then(|m| m.modified()).map(|t| format!("{t:?}")).unwrap_or_default();
        let toolkit = nvcc.path.parent().and_then(Path::parent);
        let headers = kernelpro_toolchain::headers::project_headers(path, text, &input.flags, toolkit);
        // A header edited on disk changes the result as much as the file does.
        let header_parts: Vec<&[u8]> =
            headers.iter().flat_map(|h| [h.path.as_os_str().as_encoded_bytes(), h.text.as_bytes()]).collect();
        let joined_flags = input.flags.join("\0");
        let mut parts: Vec<&[u8]> = vec![
            text.as_bytes(),
            path.as_os_str().as_encoded_bytes(),
            input.arch.as_bytes(),
            joined_flags.as_bytes(),
            nvcc.path.as_os_str().as_encoded_bytes(),
            stamp.as_bytes(),
        ];
        let block = settings.block_size.to_le_bytes();
        parts.push(&block);
        parts.extend(header_parts);
        let key = key_of(&parts);
        // Checked before anything is parsed: an unchanged save costs this hash.
        if let Some(done) = self.complete.get(&key) {
            tracing::debug!("the same text was analysed before: its result again");
            let mut again = (*done).clone();
            again.cached = true;
            return Ok(again);
        }
        // The file's structure, its specs and the source tools (kernel model)
        // need no compile: a blocking thread works them out while nvcc runs,
        // and they are published with its messages.
        let prepared = {
            let (path, text, settings) = (path.to_path_buf(), text.to_string(), settings.clone());
            let nvcc = nvcc.path.clone();
            let token = cancel.clone();
            tokio::task::spawn_blocking(move || {
                // A newer save stops the parse and the budget's walk at once.
                let mut analysis =
                    FileAnalysis::without_tools_within(&path, &text, &settings, &|| token.is_cancelled());
                analysis.key = key;
                analysis.nvcc = Some(nvcc);
                analysis.headers = headers;
                let found = static_findings(&analysis, None, &[], |n| n == Needs::Source);
                (analysis, found)
            })
        };
        let prepared = async { prepared.await.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())) };
        let mut cached = false;
        let compiled = match self.compiles.get(&key) {
            Some(hit) => {
                cached = true;
                hit
            }
            None => match compile(&input, cancel).await {
                Ok(out) => {
                    let out = Arc::new(out);
                    self.compiles.insert(key, out.clone());
                    out
                }
                Err(ToolError::Cancelled { .. }) => return Err(AnalysisError::Cancelled),
                Err(e) => {
                    tracing::debug!(error = %e, "nvcc did not run to its end");
                    let (mut analysis, _) = prepared.await;
                    analysis.findings.push(
                        Finding::new("kernelpro", Severity::Error, Span::line(0), format!("compile failed: {e}"))
                            .with_code("compile-failed"),
                    );
                    analysis.complete = true;
                    return Ok(analysis);
                }
            },
        };
        let (mut analysis, source_found) = prepared.await;
        analysis.cached = cached;
        analysis.findings.extend(compiled.findings.iter().cloned());
        for r in &flags.rejected {
            analysis.findings.push(
                Finding::new(
                    "kernelpro",
                    Severity::Warning,
                    Span::line(0),
                    kernelpro_toolchain::nvcc_flags::rejection_message(r, settings.words),
                )
                .with_code("flag-rejected"),
            );
        }
        analysis.base_findings = analysis.findings.len();
        analysis.complete = !compiled.ok;
        // A file that does not compile gets the compiler's word only.
        if compiled.ok {
            let mut found = source_found;
            found.extend(static_findings(&analysis, None, &compiled.resources, |n| n == Needs::Resources));
            analysis.findings.extend(found.finish(text));
        }
        tracing::debug!(
            ok = compiled.ok,
            cached,
            findings = analysis.findings.len(),
            ms = started.elapsed().as_millis() as u64,
            "compile step done"
        );
        analysis.compile = Some(compiled);
        Ok(analysis)
    }

    /// Step two: SASS with source lines, then the static tools over it.
    #[tracing::instrument(level = "debug", name = "analysis.sass", skip_all, fields(file = %first.path.display()))]
    pub async fn machine_code_step(
        &self,
        first: &FileAnalysis,
        text: &str,
        settings: &Settings,
        cancel: &CancellationToken,
    ) -> Result<FileAnalysis, AnalysisError> {
        let mut analysis = first.clone();
        let (Some(compiled), Some(nvcc)) = (first.compile.clone(), first.nvcc.clone()) else {
            return Ok(analysis);
        };
        let timeout = Duration::from_secs(settings.compile_timeout_secs.max(1));
        let started = Instant::now();
        let full = match kernelpro_toolchain::compile::disassemble(&compiled, &nvcc, &first.path, timeout, cancel).await
        {
            Ok(out) => Arc::new(out),
            Err(ToolError::Cancelled { .. }) => return Err(AnalysisError::Cancelled),
            Err(e) => {
                tracing::debug!(error = %e, "no SASS");
                analysis.findings.push(Finding::new(
                    "kernelpro",
                    Severity::Information,
                    Span::line(0),
                    format!("no SASS for this file: {e}"),
                ));
                return Ok(analysis);
            }
        };
        // Step one's static findings are replaced by the full run's (with SASS evidence).
        analysis.findings.truncate(first.base_findings);
        analysis.findings.extend(full.findings.iter().skip(compiled.findings.len()).cloned());
        analysis.base_findings = analysis.findings.len();
        debug_assert_eq!(&*first.text, text);
        let found = static_findings(first, full.disassembly.as_ref(), &full.resources, |_| true);
        analysis.findings.extend(found.finish(text));
        analysis.compile = Some(full);
        analysis.complete = true;
        tracing::debug!(
            findings = analysis.findings.len(),
            ms = started.elapsed().as_millis() as u64,
            "machine-code step done"
        );
        self.complete.insert(first.key, Arc::new(analysis.clone()));
        Ok(analysis)
    }
}

impl FileAnalysis {
    /// The resources of a kernel compiled once (not a template, or a template
    /// with one instantiation); see [`FileAnalysis::instantiations`] for all.
    pub fn resources(&self, kernel: &str) -> Option<&KernelResources> {
        match self.instantiations(kernel).as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }
    /// Every compiled version of a kernel: one per template instantiation (or
    /// overload), matched by the plain name (`scale<float>` → `scale`).
    pub fn instantiations(&self, kernel: &str) -> Vec<&KernelResources> {
        let Some(compile) = self.compile.as_ref() else {
            return Vec::new();
        };
        compile.resources.iter().filter(|r| r.entry && plain_name(&r.name) == kernel).collect()
    }
    pub fn disassembly(&self) -> Option<&Disassembly> {
        self.compile.as_ref()?.disassembly.as_ref()
    }
    /// The launch a kernel's occupancy is computed for: its own, else the setting's block size.
    pub fn launch(&self, kernel: &str) -> Launch {
        self.launches.get(kernel).copied().unwrap_or(Launch::assumed(self.default_block_size))
    }
    /// The block size a kernel is launched with (see [`FileAnalysis::launch`]).
    pub fn block_size(&self, kernel: &str) -> u32 {
        self.launch(kernel).block
    }
    /// Occupancy of one compiled version under the kernel's launch (static plus known dynamic shared memory).
    pub fn occupancy_of(&self, kernel: &str, r: &KernelResources) -> Option<Occupancy> {
        let limits = ArchLimits::for_arch(&self.arch)?;
        let launch = self.launch(kernel);
        Some(occupancy(&limits, launch.block, r.registers, r.shared_static + launch.smem.unwrap_or(0)))
    }
    pub fn occupancy(&self, kernel: &str) -> Option<Occupancy> {
        self.occupancy_of(kernel, self.resources(kernel)?)
    }
    /// One line for the kernel's code lens, once resources are known:
    /// `32 regs · 0 B spill · 4 KB smem · occupancy 100% (limit: warps)`, and for
    /// a template `3 instantiations · 32–40 regs · 0 B spill · … · occupancy 75–100%`.
    pub fn kernel_summary(&self, kernel: &str) -> Option<String> {
        let all = self.instantiations(kernel);
        if let [r] = all.as_slice() {
            let mut s = format!(
                "{} regs · {} spill · {} smem",
                r.registers,
                bytes(r.spill_stores + r.spill_loads),
                bytes(r.shared_static)
            );
            if let Some(o) = self.occupancy_of(kernel, r) {
                s.push_str(&format!(" · occupancy {:.0}% (limit: {})", o.percent, limiter_name(o.limiter)));
            }
            return Some(s);
        }
        let range = |values: Vec<u32>, show: &dyn Fn(u32) -> String| {
            let (lo, hi) = (values.iter().min().copied()?, values.iter().max().copied()?);
            Some(if lo == hi { show(lo) } else { format!("{}–{}", show(lo), show(hi)) })
        };
        let regs = range(all.iter().map(|r| r.registers).collect(), &|v| v.to_string())?;
        let spill = range(all.iter().map(|r| r.spill_stores + r.spill_loads).collect(), &|v| bytes(v))?;
        let smem = range(all.iter().map(|r| r.shared_static).collect(), &|v| bytes(v))?;
        let mut s = format!("{} instantiations · {regs} regs · {spill} spill · {smem} smem", all.len());
        let occ: Vec<u32> =
            all.iter().filter_map(|r| self.occupancy_of(kernel, r)).map(|o| o.percent.round() as u32).collect();
        if let Some(o) = range(occ, &|v| v.to_string()) {
            s.push_str(&format!(" · occupancy {o}%"));
        }
        Some(s)
    }
}

/// What the static tools found in a file and in each project header it
/// includes that defines kernels (findings on the header carry `file`).
#[derive(Default)]
struct StaticFindings {
    main: Vec<Finding>,
    /// Per header with kernels, in include order: (include line, file name, kernels, findings).
    headers: Vec<(u32, String, usize, Vec<Finding>)>,
}

impl StaticFindings {
    /// Adds a later run of other tools over the same file and headers.
    fn extend(&mut self, more: StaticFindings) {
        self.main.extend(more.main);
        if self.headers.is_empty() {
            self.headers = more.headers;
            return;
        }
        for (mine, theirs) in self.headers.iter_mut().zip(more.headers) {
            mine.3.extend(theirs.3);
        }
    }

    /// The findings to publish: the file's, each header's, and one summary per
    /// `#include` line of the file (`3 kernels in kernels.cuh: 5 findings`).
    fn finish(self, text: &str) -> Vec<Finding> {
        let mut out = self.main;
        out.sort_by(|a, b| (a.span.start, &a.code).cmp(&(b.span.start, &b.code)));
        // include line → (header name, kernels, findings), in include order.
        type Header = (String, usize, Vec<Finding>);
        let mut summaries: Vec<(u32, Vec<Header>)> = Vec::new();
        for (line, name, kernels, mut found) in self.headers {
            found.sort_by(|a, b| (a.span.start, &a.code).cmp(&(b.span.start, &b.code)));
            match summaries.iter_mut().find(|(l, _)| *l == line) {
                Some((_, list)) => list.push((name, kernels, found.clone())),
                None => summaries.push((line, vec![(name, kernels, found.clone())])),
            }
            out.extend(found);
        }
        for (line, list) in summaries {
            out.push(header_summary(text, line, &list));
        }
        out
    }
}

/// The static tools whose needs pass `which` over the file and each included
/// project header that defines kernels.
fn static_findings(
    first: &FileAnalysis,
    sass: Option<&Disassembly>,
    resources: &[KernelResources],
    which: impl Fn(Needs) -> bool,
) -> StaticFindings {
    if first.over_budget {
        return StaticFindings { main: Vec::new(), headers: Vec::new() };
    }
    let text = &*first.text;
    let thresholds = kernelpro_lints::Thresholds::default();
    let path_str = first.path.display().to_string();
    let launches = |k: &str| first.launches.get(k).copied();
    let block_dims = |k: &str| first.launch_specs.get(k).map(|s| s.block);
    let spec_values =
        |k: &str| first.launch_specs.get(k).map(kernelpro_spec::LaunchSpec::int_scalars).unwrap_or_default();
    let main = kernelpro_lints::LintInput {
        path: &path_str,
        text,
        source: &first.source,
        sass,
        resources,
        arch: &first.arch,
        launches: &launches,
        default_block: first.default_block_size,
        block_dims: &block_dims,
        spec_values: &spec_values,
    };
    let mut out =
        StaticFindings { main: kernelpro_lints::run_needing(&main, &thresholds, &which), headers: Vec::new() };
    let main_sites = kernelpro_lints::launch::launch_sites(text, &first.source);
    for header in &first.headers {
        let source = source::parse(&header.text);
        let kernels = source.kernels().count();
        if kernels == 0 {
            continue;
        }
        let mut launches = kernelpro_lints::launch::in_file(&header.text, &source, source.kernels());
        for (k, site) in &main_sites {
            let theirs = launches.get(k).is_some_and(|l| matches!(l.from, LaunchFrom::Site { .. }));
            if source.kernel(k).is_some() && !theirs {
                launches.insert(k.clone(), *site);
            }
        }
        let lookup = |k: &str| launches.get(k).copied();
        let path = header.path.display().to_string();
        let input =
            kernelpro_lints::LintInput { path: &path, text: &header.text, source: &source, launches: &lookup, ..main };
        let mut found = kernelpro_lints::run_needing(&input, &thresholds, &which);
        for f in &mut found {
            f.file = Some(header.path.clone());
        }
        let name = header.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        out.headers.push((header.include_line, name, kernels, found));
    }
    out
}

/// One `#include` line's summary of the kernels its headers define.
fn header_summary(text: &str, line: u32, list: &[(String, usize, Vec<Finding>)]) -> Finding {
    let parts: Vec<String> = list
        .iter()
        .map(|(name, kernels, found)| {
            let k = if *kernels == 1 { "1 kernel".to_string() } else { format!("{kernels} kernels") };
            let warnings = found.iter().filter(|f| matches!(f.severity, Severity::Error | Severity::Warning)).count();
            let f = match (found.len(), warnings) {
                (0, _) => "no findings".to_string(),
                (1, _) => "1 finding".to_string(),
                (n, 0) => format!("{n} findings"),
                (n, w) => format!("{n} findings ({w} warning{})", if w == 1 { "" } else { "s" }),
            };
            format!("{k} in {name}: {f}")
        })
        .collect();
    let mut summary = Finding::new("kernelpro", Severity::Information, line_span(text, line), parts.join("; "))
        .with_code("header-kernels");
    for (_, _, found) in list {
        for f in found.iter().take(5) {
            if let Some(file) = &f.file {
                summary.related.push(kernelpro_model::Related {
                    file: file.clone(),
                    span: f.span,
                    message: f.message.clone(),
                });
            }
        }
    }
    summary
}

/// The non-blank part of a 0-based line.
fn line_span(text: &str, line: u32) -> Span {
    let content = text.lines().nth(line as usize).unwrap_or("");
    let start = content.len() - content.trim_start().len();
    let end = content.trim_end().len().max(start);
    Span::new(kernelpro_model::Pos::new(line, start as u32), kernelpro_model::Pos::new(line, end as u32))
}

pub fn limiter_name(l: Limiter) -> &'static str {
    match l {
        Limiter::Warps => "warps",
        Limiter::Blocks => "blocks",
        Limiter::Registers => "registers",
        Limiter::SharedMemory => "shared memory",
    }
}

/// `0 B`, `512 B`, `4 KB`, `1.5 KB`.
pub fn bytes(n: u32) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n.is_multiple_of(1024) {
        format!("{} KB", n / 1024)
    } else {
        format!("{:.1} KB", n as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis(text: &str, findings: Vec<Finding>) -> FileAnalysis {
        FileAnalysis { text: Arc::from(text), findings, ..Default::default() }
    }

    fn on(line: u32, code: &str) -> Finding {
        Finding::new("kernelpro", Severity::Warning, Span::line(line), code).with_code(code)
    }

    /// The first publish of a save keeps the last SASS findings on lines the
    /// save left alone, and only those: the source tools' own come fresh.
    #[test]
    fn first_publish_keeps_sass_findings_on_unchanged_lines() {
        let before =
            analysis("a\nb\nc\n", vec![on(0, "Fp64Promotion"), on(1, "LocalMemorySpill"), on(2, "UncoalescedAccess")]);
        let now = analysis("a\nB\nc\n", vec![on(2, "UncoalescedAccess")]);
        let shown = now.keeping_sass_findings_of(&before);
        let codes: Vec<_> = shown.findings.iter().map(|f| (f.span.start.line, f.code.clone().unwrap())).collect();
        assert_eq!(codes, [(2, "UncoalescedAccess".into()), (0, "Fp64Promotion".into())]);
        // A complete analysis has its own SASS findings: nothing is carried.
        let done = FileAnalysis { complete: true, ..now };
        assert_eq!(done.keeping_sass_findings_of(&before).findings.len(), 1);
    }
}
