//! The pipeline from a file's text to everything KernelPro shows for it:
//! source structure, compiler messages, and (from later stages) SASS,
//! resources and findings. Results are cached by content and flags.

use crate::cache::{MemoCache, key_of};
use crate::compile::{CompileInput, CompileOutput, compile};
use crate::process::ToolError;
use crate::settings::Settings;
use crate::source::{self, SourceFile};
use crate::toolchain::{self, Env, Found};
use kernelpro_model::{Finding, Severity, Span};
use kernelpro_sass::disasm::Disassembly;
use kernelpro_sass::occupancy::{ArchLimits, Limiter, Occupancy, occupancy};
use kernelpro_sass::ptxas::KernelResources;
use kernelpro_spec::{LaunchSpec, ResolveOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Everything known about one version of one file.
#[derive(Debug, Clone, Default)]
pub struct FileAnalysis {
    pub path: PathBuf,
    pub source: SourceFile,
    pub findings: Vec<Finding>,
    pub compile: Option<Arc<CompileOutput>>,
    /// The compile came from the cache (a save that changed nothing).
    pub cached: bool,
    pub arch: String,
    /// Launch block size per kernel, from launch specs.
    pub block_sizes: HashMap<String, u32>,
    pub default_block_size: u32,
    pub launch_specs: HashMap<String, LaunchSpec>,
    /// SASS and the static tools are in (step two ran, or was not needed).
    pub complete: bool,
    /// The cache key of this version (text, path, flags, compiler).
    pub key: crate::cache::Key,
    pub nvcc: Option<PathBuf>,
}

impl FileAnalysis {
    /// What needs no external tool: the file's structure and its launch specs.
    /// This is all an untrusted workspace gets.
    pub fn without_tools(path: &Path, text: &str, settings: &Settings) -> FileAnalysis {
        let source = source::parse(text);
        let (specs, spec_findings) = crate::launch::resolve_all(text, &source, &ResolveOptions::default());
        FileAnalysis {
            path: path.to_path_buf(),
            block_sizes: specs.iter().map(|(k, s)| (k.clone(), s.block.iter().product())).collect(),
            launch_specs: specs,
            findings: spec_findings,
            source,
            arch: settings.arch.clone(),
            default_block_size: settings.block_size,
            ..Default::default()
        }
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
        toolchain::find_tool("nvcc", settings.nvcc.as_deref(), "KERNELPRO_NVCC", &Env::process())
    }

    /// The full set of nvcc flags for a file: settings then compile_commands.json.
    pub fn flags_for(path: &Path, settings: &Settings) -> Vec<String> {
        let mut flags: Vec<String> = settings.include_paths.iter().map(|p| format!("-I{}", p.display())).collect();
        flags.extend(settings.extra_flags.iter().cloned());
        flags.extend(crate::compile_db::flags_for(path));
        flags
    }

    /// Both steps: compile, then SASS and the static tools.
    pub async fn analyze(&self, path: &Path, text: &str, settings: &Settings, cancel: &CancellationToken) -> Result<FileAnalysis, AnalysisError> {
        let first = self.compile_step(path, text, settings, cancel).await?;
        if first.complete {
            return Ok(first);
        }
        self.machine_code_step(&first, text, settings, cancel).await
    }

    /// Step one: the compiler's messages and the ptxas resources. When the same
    /// text was fully analysed before, the whole earlier result comes back
    /// (`complete` is then true and step two is not needed).
    pub async fn compile_step(&self, path: &Path, text: &str, settings: &Settings, cancel: &CancellationToken) -> Result<FileAnalysis, AnalysisError> {
        let Some(nvcc) = Self::find_nvcc(settings) else {
            let mut analysis = FileAnalysis::without_tools(path, text, settings);
            analysis.findings.push(
                Finding::new("kernelpro", Severity::Warning, Span::line(0), format!("nvcc was not found, so this file is not compiled. {}", toolchain::NVCC_INSTALL_HINT))
                    .with_code("no-nvcc"),
            );
            analysis.complete = true;
            return Ok(analysis);
        };
        let input = CompileInput {
            path: path.to_path_buf(),
            text: text.to_string(),
            nvcc: nvcc.path.clone(),
            arch: settings.arch.clone(),
            flags: Self::flags_for(path, settings),
            timeout: Duration::from_secs(settings.compile_timeout_secs.max(1)),
        };
        let stamp = std::fs::metadata(&nvcc.path).and_then(|m| m.modified()).map(|t| format!("{t:?}")).unwrap_or_default();
        let key = key_of(&[text.as_bytes(), path.as_os_str().as_encoded_bytes(), input.arch.as_bytes(), input.flags.join("\0").as_bytes(), nvcc.path.as_os_str().as_encoded_bytes(), stamp.as_bytes(), &settings.block_size.to_le_bytes()]);
        // Checked before anything is parsed: an unchanged save costs this hash.
        if let Some(done) = self.complete.get(&key) {
            let mut again = (*done).clone();
            again.cached = true;
            return Ok(again);
        }
        let mut analysis = FileAnalysis::without_tools(path, text, settings);
        analysis.key = key;
        analysis.nvcc = Some(nvcc.path.clone());
        let compiled = match self.compiles.get(&key) {
            Some(hit) => {
                analysis.cached = true;
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
                    analysis.findings.push(Finding::new("kernelpro", Severity::Error, Span::line(0), format!("compile failed: {e}")).with_code("compile-failed"));
                    analysis.complete = true;
                    return Ok(analysis);
                }
            },
        };
        analysis.findings.extend(compiled.findings.iter().cloned());
        analysis.complete = !compiled.ok;
        analysis.compile = Some(compiled);
        Ok(analysis)
    }

    /// Step two: SASS with source lines, then the static tools over it.
    pub async fn machine_code_step(&self, first: &FileAnalysis, text: &str, settings: &Settings, cancel: &CancellationToken) -> Result<FileAnalysis, AnalysisError> {
        let mut analysis = first.clone();
        let (Some(compiled), Some(nvcc)) = (first.compile.clone(), first.nvcc.clone()) else { return Ok(analysis) };
        let timeout = Duration::from_secs(settings.compile_timeout_secs.max(1));
        let full = match crate::compile::disassemble(&compiled, &nvcc, &first.path, timeout, cancel).await {
            Ok(out) => Arc::new(out),
            Err(ToolError::Cancelled { .. }) => return Err(AnalysisError::Cancelled),
            Err(e) => {
                analysis.findings.push(Finding::new("kernelpro", Severity::Information, Span::line(0), format!("no SASS for this file: {e}")));
                return Ok(analysis);
            }
        };
        analysis.findings = first.findings.clone();
        analysis.findings.extend(full.findings.iter().skip(compiled.findings.len()).cloned());
        let path_str = first.path.display().to_string();
        let blocks = |k: &str| first.block_sizes.get(k).copied();
        let block_dims = |k: &str| first.launch_specs.get(k).map(|s| s.block);
        let input = kernelpro_lints::LintInput {
            path: &path_str,
            text,
            source: &first.source,
            sass: full.disassembly.as_ref(),
            resources: &full.resources,
            arch: &first.arch,
            block_sizes: &blocks,
            default_block: first.default_block_size,
            block_dims: &block_dims,
        };
        analysis.findings.extend(kernelpro_lints::run_all(&input));
        analysis.compile = Some(full);
        analysis.complete = true;
        self.complete.insert(first.key, Arc::new(analysis.clone()));
        Ok(analysis)
    }
}

impl FileAnalysis {
    pub fn resources(&self, kernel: &str) -> Option<&KernelResources> {
        self.compile.as_ref()?.resources.iter().find(|r| r.entry && r.name == kernel)
    }
    pub fn disassembly(&self) -> Option<&Disassembly> {
        self.compile.as_ref()?.disassembly.as_ref()
    }
    /// The block size a kernel is launched with: its launch spec, else the setting.
    pub fn block_size(&self, kernel: &str) -> u32 {
        self.block_sizes.get(kernel).copied().unwrap_or(self.default_block_size)
    }
    pub fn occupancy(&self, kernel: &str) -> Option<Occupancy> {
        let r = self.resources(kernel)?;
        let limits = ArchLimits::for_arch(&self.arch)?;
        Some(occupancy(&limits, self.block_size(kernel), r.registers, r.shared_static))
    }
    /// One line for the kernel's code lens, once resources are known:
    /// `32 regs · 0 B spill · 4 KB smem · occupancy 100% (limit: warps)`.
    pub fn kernel_summary(&self, kernel: &str) -> Option<String> {
        let r = self.resources(kernel)?;
        let mut s = format!("{} regs · {} spill · {} smem", r.registers, bytes(r.spill_stores + r.spill_loads), bytes(r.shared_static));
        if let Some(o) = self.occupancy(kernel) {
            s.push_str(&format!(" · occupancy {:.0}% (limit: {})", o.percent, limiter_name(o.limiter)));
        }
        Some(s)
    }
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
