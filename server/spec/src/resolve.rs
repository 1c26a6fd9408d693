//! Turns a kernel's spec lines into a [`LaunchSpec`], checking them against
//! the kernel's signature; every problem becomes a finding on its spec line.

use crate::directive::{self, Dims, Directive, InitSyntax, Piece};
use crate::expr::{self, ExprError, ExprErrorKind, Scope};
use crate::launch::*;
use crate::source::{KernelSpecRaw, SpecLine, split_top_level};
use crate::types::{ElemType, ScalarType, base_c_type};
use kernelpro_model::{Finding, Pos, Severity, Span};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// One kernel parameter as the source declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    /// The C type without the `*`: `const float`, `__half`, `int64_t`, `T`.
    pub ty: String,
    pub pointer: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelSignature {
    pub name: String,
    pub params: Vec<Param>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolveOptions {
    /// The most bytes all buffers together may take (setting; default 8 GiB).
    pub memory_cap_bytes: u64,
    /// Values for `tune` names, chosen by the optimizer.
    pub overrides: BTreeMap<String, i64>,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions { memory_cap_bytes: 8 << 30, overrides: BTreeMap::new() }
    }
}

/// Finding codes, one per kind of spec error.
pub mod code {
    pub const SYNTAX: &str = "spec-syntax";
    pub const UNKNOWN_DIRECTIVE: &str = "unknown-directive";
    pub const MISPLACED: &str = "misplaced-directive";
    pub const MISSING: &str = "missing-directive";
    pub const DUPLICATE: &str = "duplicate";
    pub const UNBOUND_PARAMETER: &str = "unbound-parameter";
    pub const UNKNOWN_PARAMETER: &str = "unknown-parameter";
    pub const BAD_EXPRESSION: &str = "bad-expression";
    pub const TYPE_MISMATCH: &str = "type-mismatch";
    pub const MEMORY_CAP: &str = "memory-cap";
    pub const DIVISION_BY_ZERO: &str = "division-by-zero";
    pub const OVERFLOW: &str = "overflow";
    pub const LAUNCH_RANGE: &str = "launch-range";
    pub const EMPTY_TUNE: &str = "empty-tune";
    pub const BAD_TEMPLATE: &str = "bad-instantiation";
    pub const BAD_OP: &str = "bad-op";
}

/// Launch limits shared by every GPU since Volta.
const MAX_BLOCK: [u64; 3] = [1024, 1024, 64];
const MAX_THREADS_PER_BLOCK: u64 = 1024;
const MAX_GRID: [u64; 3] = [(1 << 31) - 1, 65535, 65535];
/// The most dynamic shared memory a block can opt into (227 KiB on Hopper).
const MAX_SMEM: i64 = 227 * 1024;

struct Resolver<'a> {
    kernel: &'a str,
    /// The last spec line above the kernel: where "missing" findings go.
    anchor: u32,
    findings: Vec<Finding>,
    scope: Scope,
    defined_at: HashMap<String, u32>,
}

impl Resolver<'_> {
    fn report(&mut self, code: &str, line: u32, start: u32, end: u32, message: String) {
        let span = Span::new(Pos::new(line, start), Pos::new(line, end.max(start + 1)));
        self.findings
            .push(Finding::new("spec", Severity::Error, span, message).with_code(code).with_kernel(self.kernel));
    }

    fn report_at(&mut self, code: &str, line: u32, at: Piece, message: String) {
        self.report(code, line, at.col, at.end_col(), message);
    }

    fn report_line(&mut self, code: &str, line: u32, message: String) {
        let span = Span::line(line);
        self.findings
            .push(Finding::new("spec", Severity::Error, span, message).with_code(code).with_kernel(self.kernel));
    }

    fn expr_error(&mut self, line: u32, at: Piece, what: &str, e: ExprError) {
        let code = match e.kind {
            ExprErrorKind::DivisionByZero => code::DIVISION_BY_ZERO,
            ExprErrorKind::Overflow => code::OVERFLOW,
            ExprErrorKind::Syntax | ExprErrorKind::UnknownName => code::BAD_EXPRESSION,
        };
        let (s, t) = (at.col + e.start as u32, at.col + e.end as u32);
        self.report(code, line, s, t, format!("bad expression in {what}: {}", e.message));
    }

    fn eval(&mut self, line: u32, at: Piece, what: &str) -> Option<i64> {
        expr::eval(at.text, &self.scope).map_err(|e| self.expr_error(line, at, what, e)).ok()
    }

    fn define(&mut self, line: u32, name: Piece, value: i64) {
        if let Some(first) = self.defined_at.get(name.text) {
            let first = first + 1;
            self.report_at(
                code::DUPLICATE,
                line,
                name,
                format!("`{}` is already defined on line {first}: rename one of them", name.text),
            );
            return;
        }
        self.defined_at.insert(name.text.to_string(), line);
        self.scope.set(name.text, value);
    }
}

/// Resolves `spec` (with the file-wide `let`s) against the kernel's signature.
pub fn resolve(
    spec: &KernelSpecRaw,
    file_lets: &[SpecLine],
    signature: &KernelSignature,
    opts: &ResolveOptions,
) -> Result<LaunchSpec, Vec<Finding>> {
    let anchor = spec.lines.last().map_or(spec.kernel_line.saturating_sub(1), |l| l.line);
    let mut r = Resolver {
        kernel: &spec.kernel,
        anchor,
        findings: Vec::new(),
        scope: Scope::default(),
        defined_at: HashMap::new(),
    };

    let file: Vec<(u32, Directive)> = parse_lines(&mut r, file_lets);
    let own: Vec<(u32, Directive)> = parse_lines(&mut r, &spec.lines);

    let instantiate = resolve_instantiation(&mut r, spec, &own);
    let template_args: HashMap<&str, &str> = match &instantiate {
        Some(inst) => {
            spec.template_params.iter().map(String::as_str).zip(inst.args.iter().map(String::as_str)).collect()
        }
        None => HashMap::new(),
    };
    for (name, arg) in &template_args {
        if let Ok(v) = expr::eval(arg, &Scope::default()) {
            r.scope.set(name, v);
        }
    }

    for (line, d) in &file {
        match d {
            Directive::Let { name, expr } => {
                if let Some(v) = r.eval(*line, *expr, &format!("`let {}`", name.text)) {
                    r.define(*line, *name, v);
                }
            }
            other => {
                let at = directive_head(other);
                r.report_at(
                    code::MISPLACED,
                    *line,
                    at,
                    "only `let` may stand away from a kernel: move this line directly above the `__global__` function it is for".to_string(),
                );
            }
        }
    }
    let tunables = resolve_lets(&mut r, &own, opts);
    let launch = resolve_launch(&mut r, &own, signature);
    let args = resolve_args(&mut r, &own, signature, &template_args, opts);

    if r.findings.is_empty() {
        let (grid, block, smem, check, seed, op) = launch.expect("no findings means every launch field resolved");
        Ok(LaunchSpec {
            kernel: spec.kernel.clone(),
            grid,
            block,
            smem,
            args,
            check,
            seed,
            tunables,
            instantiate,
            op,
            lets: r.scope.iter().map(|(k, v)| (k.to_string(), v)).collect(),
        })
    } else {
        Err(r.findings)
    }
}

fn parse_lines<'a>(r: &mut Resolver, lines: &'a [SpecLine]) -> Vec<(u32, Directive<'a>)> {
    let mut out = Vec::new();
    for l in lines {
        match directive::parse(l) {
            Ok(d) => out.push((l.line, d)),
            Err(e) => {
                let code =
                    if e.message.starts_with("unknown directive") { code::UNKNOWN_DIRECTIVE } else { code::SYNTAX };
                r.report(code, l.line, e.start, e.end, e.message);
            }
        }
    }
    out
}

/// The part of a directive to underline when the whole directive is misplaced.
fn directive_head<'a>(d: &Directive<'a>) -> Piece<'a> {
    match d {
        Directive::Let { name, .. } | Directive::Tune { name, .. } => *name,
        Directive::Dims { exprs, .. } => exprs[0],
        Directive::Smem(p) | Directive::Seed(p) | Directive::Instantiate(p) | Directive::Op(p) => *p,
        Directive::Check { rtol, atol } => rtol.or(*atol).expect("check has a tolerance"),
        Directive::Buffer { param, .. } | Directive::Scalar { param, .. } => *param,
    }
}

/// Evaluates `let` and `tune` in order; returns the tunables.
fn resolve_lets(r: &mut Resolver, own: &[(u32, Directive)], opts: &ResolveOptions) -> Vec<Tunable> {
    let mut tunables = Vec::new();
    for (line, d) in own {
        match d {
            Directive::Let { name, expr } => {
                if let Some(v) = r.eval(*line, *expr, &format!("`let {}`", name.text)) {
                    r.define(*line, *name, v);
                }
            }
            Directive::Tune { name, values, list } => {
                if values.is_empty() {
                    r.report_at(
                        code::EMPTY_TUNE,
                        *line,
                        *list,
                        format!("`tune {}` has no values: list at least one, e.g. `[128, 256]`", name.text),
                    );
                    continue;
                }
                let what = format!("a value of `tune {}`", name.text);
                let candidates: Vec<i64> = values.iter().filter_map(|v| r.eval(*line, *v, &what)).collect();
                if candidates.len() != values.len() {
                    continue;
                }
                let value = opts.overrides.get(name.text).copied().unwrap_or(candidates[0]);
                r.define(*line, *name, value);
                tunables.push(Tunable { name: name.text.to_string(), candidates, value });
            }
            _ => {}
        }
    }
    for name in opts.overrides.keys().filter(|n| !tunables.iter().any(|t| &t.name == *n)) {
        let anchor = r.anchor;
        r.report_line(
            code::UNKNOWN_DIRECTIVE,
            anchor,
            format!("the optimizer set `{name}`, but this kernel has no `tune {name} in [...]`"),
        );
    }
    tunables
}

type Launch = ([u32; 3], [u32; 3], u32, Option<Tolerance>, u64, Option<String>);

/// Checks `op = gemm M N K [layout]`: each size an integer parameter of the
/// kernel or an expression (without spaces) of at least 1, the layout `row`,
/// `col`, `A,B` or `A,B,C` of those. Returns the hint as written.
fn resolve_op(r: &mut Resolver, line: u32, p: Piece, signature: &KernelSignature) -> Option<String> {
    const SHAPE: &str = "write `op = gemm M N K [layout]`, e.g. `op = gemm M N K row`";
    let mut words = Vec::new();
    let mut rest = p;
    while !rest.text.is_empty() {
        let len = rest.text.find(char::is_whitespace).unwrap_or(rest.text.len());
        let word = Piece { text: &rest.text[..len], col: rest.col };
        words.push(word);
        let after = &rest.text[len..];
        let lead = after.len() - after.trim_start().len();
        rest = Piece { text: after.trim_start(), col: rest.col + (len + lead) as u32 };
    }
    let (kind, sizes) = words.split_first()?;
    if kind.text != "gemm" {
        r.report_at(
            code::BAD_OP,
            line,
            *kind,
            format!("unknown op `{}`: the one op is gemm; {SHAPE}", expr::shown(kind.text)),
        );
        return None;
    }
    if sizes.len() < 3 {
        r.report_at(
            code::BAD_OP,
            line,
            p,
            format!("`op = gemm` needs three sizes, M N K (got {}): {SHAPE}", sizes.len()),
        );
        return None;
    }
    let mut ok = true;
    for (size, dim) in sizes[..3].iter().zip(["M", "N", "K"]) {
        let param = signature.params.iter().any(|q| q.name == size.text && !q.pointer);
        if param && !r.scope.contains(size.text) {
            continue; // the kernel's own size parameter: its binding is checked with the arguments
        }
        match r.eval(line, *size, &format!("the gemm size {dim}")) {
            Some(v) if v >= 1 => {}
            Some(v) => {
                r.report_at(code::BAD_OP, line, *size, format!("the gemm size {dim} is {v}: sizes are at least 1"));
                ok = false;
            }
            None => ok = false,
        }
    }
    if let Some(layout) = sizes.get(3) {
        let parts: Vec<&str> = layout.text.split(',').collect();
        if parts.len() > 3 || parts.iter().any(|w| !matches!(*w, "row" | "col")) {
            r.report_at(
                code::BAD_OP,
                line,
                *layout,
                format!(
                    "`{}` is not a layout: write `row`, `col`, or one per matrix as `A,B` or `A,B,C` (e.g. `row,col`)",
                    expr::shown(layout.text)
                ),
            );
            ok = false;
        }
    }
    if let Some(extra) = sizes.get(4) {
        let tail = Piece { text: &p.text[(extra.col - p.col) as usize..], col: extra.col };
        r.report_at(
            code::BAD_OP,
            line,
            tail,
            format!("unexpected `{}` after the layout: {SHAPE}", expr::shown(tail.text)),
        );
        ok = false;
    }
    ok.then(|| p.text.to_string())
}

fn resolve_launch(r: &mut Resolver, own: &[(u32, Directive)], signature: &KernelSignature) -> Option<Launch> {
    let (mut grid, mut block) = (None, None);
    let (mut smem, mut seed, mut check, mut op) = (Some(0u32), Some(DEFAULT_SEED), Some(None), Some(None));
    let mut seen: HashMap<&str, u32> = HashMap::new();
    for (line, d) in own {
        let key = match d {
            Directive::Dims { which: Dims::Grid, .. } => "grid",
            Directive::Dims { which: Dims::Block, .. } => "block",
            Directive::Smem(_) => "smem",
            Directive::Seed(_) => "seed",
            Directive::Check { .. } => "check",
            Directive::Op(_) => "op",
            _ => continue,
        };
        if let Some(first) = seen.insert(key, *line) {
            let first = first + 1;
            r.report_at(
                code::DUPLICATE,
                *line,
                directive_head(d),
                format!("`{key}` is already given on line {first}: keep one"),
            );
            continue;
        }
        match d {
            Directive::Dims { which, exprs } => {
                let dims = resolve_dims(r, *line, *which, exprs);
                if *which == Dims::Grid { grid = dims } else { block = dims }
            }
            Directive::Smem(p) => {
                smem = r.eval(*line, *p, "`smem`").and_then(|v| {
                    if (0..=MAX_SMEM).contains(&v) {
                        Some(v as u32)
                    } else {
                        r.report_at(
                            code::LAUNCH_RANGE,
                            *line,
                            *p,
                            format!("smem = {v} bytes is outside 0..={MAX_SMEM} (227 KiB, the most a block can use)"),
                        );
                        None
                    }
                });
            }
            Directive::Seed(p) => {
                seed = r.eval(*line, *p, "`seed`").and_then(|v| {
                    if v < 0 {
                        r.report_at(
                            code::LAUNCH_RANGE,
                            *line,
                            *p,
                            format!("seed = {v} is negative: use a number >= 0"),
                        );
                    }
                    u64::try_from(v).ok()
                });
            }
            Directive::Check { rtol, atol } => {
                let mut tol = |p: &Option<Piece>, name: &str| -> Option<f64> {
                    let Some(p) = p else { return Some(0.0) };
                    match expr::number(p.text, &Scope::default()) {
                        Ok(v) if v >= 0.0 => Some(v),
                        _ => {
                            r.report_at(
                                code::BAD_EXPRESSION,
                                *line,
                                *p,
                                format!("{name} must be a number >= 0, e.g. `{name}=1e-5`"),
                            );
                            None
                        }
                    }
                };
                let (rt, at) = (tol(rtol, "rtol"), tol(atol, "atol"));
                check = rt.zip(at).map(|(rtol, atol)| Some(Tolerance { rtol, atol }));
            }
            Directive::Op(p) => op = resolve_op(r, *line, *p, signature).map(Some),
            _ => unreachable!("filtered above"),
        }
    }
    for (key, value) in [("grid", grid.is_some()), ("block", block.is_some())] {
        if !value && !seen.contains_key(key) {
            let anchor = r.anchor;
            r.report_line(
                code::MISSING,
                anchor,
                format!("no `{key}`: add `// kernelpro: {key} = ...` above the kernel"),
            );
        }
    }
    Some((grid?, block?, smem?, check?, seed?, op?))
}

fn resolve_dims(r: &mut Resolver, line: u32, which: Dims, exprs: &[Piece]) -> Option<[u32; 3]> {
    let (name, max) = match which {
        Dims::Grid => ("grid", MAX_GRID),
        Dims::Block => ("block", MAX_BLOCK),
    };
    let mut dims = [1u32; 3];
    let mut ok = true;
    for (i, p) in exprs.iter().enumerate() {
        let axis = ["x", "y", "z"][i];
        match r.eval(line, *p, &format!("`{name}`")) {
            Some(v) if v >= 1 && (v as u64) <= max[i] => dims[i] = v as u32,
            Some(v) => {
                r.report_at(
                    code::LAUNCH_RANGE,
                    line,
                    *p,
                    format!("{name}.{axis} = {v} is outside 1..={}: CUDA rejects such a launch", max[i]),
                );
                ok = false;
            }
            None => ok = false,
        }
    }
    if ok && which == Dims::Block {
        let threads: u64 = dims.iter().map(|d| *d as u64).product();
        if threads > MAX_THREADS_PER_BLOCK {
            let (first, last) = (exprs[0], exprs[exprs.len() - 1]);
            r.report(
                code::LAUNCH_RANGE,
                line,
                first.col,
                last.end_col(),
                format!("block has {threads} threads, more than {MAX_THREADS_PER_BLOCK}: make x*y*z at most {MAX_THREADS_PER_BLOCK}"),
            );
            ok = false;
        }
    }
    ok.then_some(dims)
}

fn resolve_instantiation(r: &mut Resolver, spec: &KernelSpecRaw, own: &[(u32, Directive)]) -> Option<Instantiation> {
    let found = own.iter().find_map(|(line, d)| match d {
        Directive::Instantiate(p) => Some((*line, *p)),
        _ => None,
    });
    let Some((line, p)) = found else {
        if !spec.template_params.is_empty() {
            let anchor = r.anchor;
            let example = format!(
                "{}<{}>",
                spec.kernel,
                spec.template_params.iter().map(|t| format!("{t}_VALUE")).collect::<Vec<_>>().join(", ")
            );
            r.report_line(
                code::BAD_TEMPLATE,
                anchor,
                format!("`{}` is a template: add `// kernelpro: instantiate = {example}`", spec.kernel),
            );
        }
        return None;
    };
    let parsed = p.text.find('<').filter(|_| p.text.ends_with('>')).map(|open| {
        let name = p.text[..open].trim();
        let args: Vec<String> = split_top_level(&p.text[open + 1..p.text.len() - 1])
            .into_iter()
            .map(|(_, a)| a.trim().to_string())
            .collect();
        (name, args)
    });
    let Some((name, args)) = parsed else {
        r.report_at(code::BAD_TEMPLATE, line, p, format!("expected `instantiate = {}<ARGS>`", spec.kernel));
        return None;
    };
    if name != spec.kernel {
        r.report_at(
            code::BAD_TEMPLATE,
            line,
            p,
            format!("`{name}` is not this kernel: write `instantiate = {}<...>`", spec.kernel),
        );
        return None;
    }
    if args.len() != spec.template_params.len() {
        let want = spec.template_params.len();
        let params = spec.template_params.join(", ");
        r.report_at(
            code::BAD_TEMPLATE,
            line,
            p,
            format!("{} template arguments given, `{}` takes {want} ({params})", args.len(), spec.kernel),
        );
        return None;
    }
    Some(Instantiation { name: name.to_string(), args })
}

/// A parameter's C type with template arguments substituted (`const T` → `const float`).
fn concrete_type(ty: &str, template_args: &HashMap<&str, &str>) -> String {
    ty.split_inclusive(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map(|piece| {
            let word_len = piece.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(piece.len());
            let (word, tail) = piece.split_at(word_len);
            format!("{}{tail}", template_args.get(word).copied().unwrap_or(word))
        })
        .collect()
}

fn resolve_args(
    r: &mut Resolver,
    own: &[(u32, Directive)],
    signature: &KernelSignature,
    template_args: &HashMap<&str, &str>,
    opts: &ResolveOptions,
) -> Vec<Arg> {
    let mut bindings: HashMap<&str, (u32, &Directive)> = HashMap::new();
    for (line, d) in own {
        let param = match d {
            Directive::Buffer { param, .. } | Directive::Scalar { param, .. } => *param,
            _ => continue,
        };
        if !signature.params.iter().any(|p| p.name == param.text) {
            let names: Vec<&str> = signature.params.iter().map(|p| p.name.as_str()).collect();
            r.report_at(
                code::UNKNOWN_PARAMETER,
                *line,
                param,
                format!(
                    "`{}` has no parameter `{}`: its parameters are {}",
                    signature.name,
                    param.text,
                    names.join(", ")
                ),
            );
        } else if let Some((first, _)) = bindings.insert(param.text, (*line, d)) {
            let first = first + 1;
            r.report_at(
                code::DUPLICATE,
                *line,
                param,
                format!("`{}` is already bound on line {first}: keep one", param.text),
            );
        }
    }
    let mut args = Vec::new();
    let mut total_bytes = 0u64;
    for p in &signature.params {
        let ty = concrete_type(&p.ty, template_args);
        let Some((line, d)) = bindings.get(p.name.as_str()).copied() else {
            let example = if p.pointer {
                let elem = ElemType::from_c(&ty).map_or("float", ElemType::spec_name);
                format!("{} = in {elem}[N]", p.name)
            } else {
                format!("{} = {}", p.name, scalar_example(&ty))
            };
            let anchor = r.anchor;
            r.report_line(
                code::UNBOUND_PARAMETER,
                anchor,
                format!(
                    "parameter `{}` ({ty}{}) is not bound: add `// kernelpro: {example}`",
                    p.name,
                    if p.pointer { "*" } else { "" }
                ),
            );
            continue;
        };
        let arg = match d {
            Directive::Buffer { param, dir, ty: elem, count, init } => {
                if !p.pointer {
                    r.report_at(
                        code::TYPE_MISMATCH,
                        line,
                        *param,
                        format!(
                            "`{}` is a `{ty}` value, not a pointer: bind it to a number, e.g. `{} = {}`",
                            p.name,
                            p.name,
                            scalar_example(&ty)
                        ),
                    );
                    continue;
                }
                resolve_buffer(r, line, p, &ty, *dir, *elem, *count, init.as_ref(), opts, &mut total_bytes)
                    .map(Arg::Buffer)
            }
            Directive::Scalar { param, value } => {
                if p.pointer {
                    let elem = ElemType::from_c(&ty).map_or("float", ElemType::spec_name);
                    r.report_at(
                        code::TYPE_MISMATCH,
                        line,
                        *param,
                        format!(
                            "`{}` is a pointer (`{ty}*`): bind it to a buffer, e.g. `{} = in {elem}[N]`",
                            p.name, p.name
                        ),
                    );
                    continue;
                }
                resolve_scalar(r, line, p, &ty, *value).map(Arg::Scalar)
            }
            _ => unreachable!("bindings hold only buffers and scalars"),
        };
        args.extend(arg);
    }
    args
}

#[allow(clippy::too_many_arguments)]
fn resolve_buffer(
    r: &mut Resolver,
    line: u32,
    p: &Param,
    c_type: &str,
    dir: Dir,
    elem: Piece,
    count: Piece,
    init: Option<&InitSyntax>,
    opts: &ResolveOptions,
    total_bytes: &mut u64,
) -> Option<BufferArg> {
    let Some(elem_ty) = ElemType::from_spec_name(elem.text) else {
        let names: Vec<&str> = ElemType::ALL.iter().map(|t| t.spec_name()).collect();
        r.report_at(
            code::TYPE_MISMATCH,
            line,
            elem,
            format!("unknown element type `{}`: use one of {}", elem.text, names.join(", ")),
        );
        return None;
    };
    if let Some(param_elem) = ElemType::from_c(c_type).filter(|t| *t != elem_ty) {
        r.report_at(
            code::TYPE_MISMATCH,
            line,
            elem,
            format!(
                "`{}[...]` does not match parameter `{}` of type `{c_type}*`: write `{}[...]`",
                elem.text,
                p.name,
                param_elem.spec_name()
            ),
        );
        return None;
    }
    if dir.is_output() && c_type.split_whitespace().any(|w| w == "const") {
        r.report_at(
            code::TYPE_MISMATCH,
            line,
            elem,
            format!("`{}` points to const data, so the kernel cannot write it: make it `in`", p.name),
        );
        return None;
    }
    let init = resolve_init(r, line, elem_ty, dir, init)?;
    let n = r.eval(line, count, &format!("the element count of `{}`", p.name))?;
    if n < 1 {
        r.report_at(
            code::LAUNCH_RANGE,
            line,
            count,
            format!("`{}` has {n} elements: a buffer needs at least 1", p.name),
        );
        return None;
    }
    let Some(bytes) = (n as u64).checked_mul(elem_ty.size_bytes()) else {
        r.report_at(
            code::OVERFLOW,
            line,
            count,
            format!("{n} elements of {} overflow a 64-bit byte count", elem_ty.spec_name()),
        );
        return None;
    };
    *total_bytes = total_bytes.saturating_add(bytes);
    if *total_bytes > opts.memory_cap_bytes {
        let (gib, cap) =
            (*total_bytes as f64 / (1u64 << 30) as f64, opts.memory_cap_bytes as f64 / (1u64 << 30) as f64);
        r.report_at(
            code::MEMORY_CAP,
            line,
            count,
            format!("buffers reach {gib:.2} GiB with `{}` ({bytes} bytes), over the {cap:.2} GiB memory cap: use a smaller count or raise the cap setting", p.name),
        );
        return None;
    }
    Some(BufferArg { name: p.name.clone(), dir, elem: elem_ty, count: n as u64, init })
}

/// What a hint binds a scalar of C type `ty` to: a float value for a float
/// (a scale is not the problem size), `N` for an integer (usually a count).
fn scalar_example(ty: &str) -> &'static str {
    if ScalarType::from_c(&base_c_type(ty)).is_some_and(ScalarType::is_float) { "1.0" } else { "N" }
}

fn resolve_init(r: &mut Resolver, line: u32, elem: ElemType, dir: Dir, init: Option<&InitSyntax>) -> Option<Init> {
    let default = if elem.is_float() { Init::Uniform { lo: -1.0, hi: 1.0 } } else { default_randint(elem) };
    let Some(init) = init else {
        return Some(default);
    };
    if dir == Dir::Out {
        r.report_at(
            code::SYNTAX,
            line,
            init.name,
            format!("an `out` buffer is filled with NaN before each run so unwritten elements show: drop `{}` or make the buffer `inout`", init.name.text),
        );
        return None;
    }
    let arity = |r: &mut Resolver, want: &[usize]| -> bool {
        if want.contains(&init.args.len()) {
            return true;
        }
        let want: Vec<String> = want.iter().map(|w| w.to_string()).collect();
        r.report_at(
            code::SYNTAX,
            line,
            init.name,
            format!("`{}` takes {} arguments, not {}", init.name.text, want.join(" or "), init.args.len()),
        );
        false
    };
    let scope = r.scope.clone();
    let number = |r: &mut Resolver, p: Piece| -> Option<f64> {
        expr::number(p.text, &scope).map_err(|e| r.expr_error(line, p, &format!("`{}`", init.name.text), e)).ok()
    };
    match init.name.text {
        "uniform" => {
            if !elem.is_float() {
                r.report_at(
                    code::TYPE_MISMATCH,
                    line,
                    init.name,
                    format!("`uniform` fills floating types; for {} use `randint(lo, hi)`", elem.spec_name()),
                );
                return None;
            }
            if !arity(r, &[0, 2]) {
                return None;
            }
            if init.args.is_empty() {
                return Some(default);
            }
            let (lo, hi) = (number(r, init.args[0])?, number(r, init.args[1])?);
            if lo > hi {
                r.report_at(code::BAD_EXPRESSION, line, init.args[0], format!("uniform({lo}, {hi}): lo is above hi"));
                return None;
            }
            Some(Init::Uniform { lo, hi })
        }
        "randint" => {
            if !arity(r, &[0, 2]) {
                return None;
            }
            if init.args.is_empty() {
                return Some(default_randint(elem));
            }
            let what = "`randint`";
            let (lo, hi) = (r.eval(line, init.args[0], what)?, r.eval(line, init.args[1], what)?);
            let (min, max) = if elem.is_float() { (-(1 << 24), 1 << 24) } else { elem.int_range() };
            if lo > hi || lo < min || hi > max {
                r.report_at(
                    code::OVERFLOW,
                    line,
                    init.name,
                    format!("randint({lo}, {hi}) must have lo <= hi within {min}..={max} for {}", elem.spec_name()),
                );
                return None;
            }
            Some(Init::Randint { lo, hi })
        }
        "zeros" | "ones" | "iota" => {
            arity(r, &[0]).then_some(())?;
            Some(match init.name.text {
                "zeros" => Init::Zeros,
                "ones" => Init::Ones,
                _ => Init::Iota,
            })
        }
        "fill" => {
            arity(r, &[1]).then_some(())?;
            let value = number(r, init.args[0])?;
            if !elem.is_float() && value.fract() != 0.0 {
                r.report_at(
                    code::TYPE_MISMATCH,
                    line,
                    init.args[0],
                    format!("fill({value}) is not an integer, but the buffer holds {}", elem.spec_name()),
                );
                return None;
            }
            Some(Init::Fill { value })
        }
        other => {
            r.report_at(
                code::SYNTAX,
                line,
                init.name,
                format!("unknown fill `{other}`: use uniform(lo, hi), randint(lo, hi), zeros, ones, iota or fill(v)"),
            );
            None
        }
    }
}

/// `randint` without bounds: small values that every integer type holds.
fn default_randint(elem: ElemType) -> Init {
    let (min, _) = elem.int_range();
    Init::Randint { lo: if min < 0 { -100 } else { 0 }, hi: 100 }
}

fn resolve_scalar(r: &mut Resolver, line: u32, p: &Param, c_type: &str, value: Piece) -> Option<ScalarArg> {
    let Some(ty) = ScalarType::from_c(c_type) else {
        r.report_at(
            code::TYPE_MISMATCH,
            line,
            value,
            format!(
                "cannot pass `{}` of type `{}`: KernelPro passes bool, integer and floating scalars",
                p.name,
                base_c_type(c_type)
            ),
        );
        return None;
    };
    if let Some(f) = expr::float_literal(value.text) {
        if !ty.is_float() {
            r.report_at(
                code::TYPE_MISMATCH,
                line,
                value,
                format!(
                    "`{}` is a float literal but `{}` is `{}`: write an integer",
                    value.text,
                    p.name,
                    base_c_type(c_type)
                ),
            );
            return None;
        }
        return Some(ScalarArg { name: p.name.clone(), ty, value: ScalarValue::F64(f) });
    }
    let v = r.eval(line, value, &format!("the value of `{}`", p.name))?;
    if ty.is_float() {
        return Some(ScalarArg { name: p.name.clone(), ty, value: ScalarValue::F64(v as f64) });
    }
    let (min, max) = ty.int_range();
    if v < min || v > max {
        r.report_at(
            code::OVERFLOW,
            line,
            value,
            format!("{v} does not fit in `{}` ({min}..={max})", base_c_type(c_type)),
        );
        return None;
    }
    Some(ScalarArg { name: p.name.clone(), ty, value: ScalarValue::I64(v) })
}
