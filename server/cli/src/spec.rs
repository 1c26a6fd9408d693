//! `kernelpro spec`: one kernel's resolved launch spec as JSON, for scripts
//! that launch the kernel themselves (the KernelBench harness builds its
//! PyTorch wrapper from it). Nothing is compiled or run.

use crate::CompileArgs;
use crate::check::compiler_line;
use kernelpro_core::analysis::FileAnalysis;
use kernelpro_model::Severity;
use kernelpro_spec::{Arg, LaunchSpec, Param, base_c_type};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct SpecArgs {
    pub file: PathBuf,
    /// The kernel (default: the only one with a launch spec).
    #[arg(long)]
    pub kernel: Option<String>,
    #[command(flatten)]
    pub compile: CompileArgs,
}

pub fn run(args: &SpecArgs) -> ExitCode {
    let text = match crate::check::read_text(&args.file) {
        Ok(t) => t,
        Err(e) => return fail(&format!("{}: cannot read: {e}", args.file.display())),
    };
    match resolved(&args.file, &text, args.kernel.as_deref(), &args.compile) {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v).expect("json"));
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("kernelpro spec: {message}");
    ExitCode::from(1)
}

/// The spec of `kernel` (or the file's only specified kernel) with what a
/// launcher needs beside it: each parameter's C type, each output's
/// tolerance, the nvcc flags and architecture the file needs, FLOPs and bytes.
pub fn resolved(path: &Path, text: &str, kernel: Option<&str>, compile: &CompileArgs) -> Result<Value, String> {
    let settings = compile.settings().with_projects_of(&[path]);
    let analysis = FileAnalysis::without_tools(path, text, &settings);
    let name = match kernel {
        Some(k) => k.to_string(),
        None => {
            let mut names: Vec<&String> = analysis.launch_specs.keys().collect();
            names.sort();
            match names.as_slice() {
                [one] => (*one).clone(),
                [] => {
                    return Err(spec_errors(path, &analysis, None)
                        .unwrap_or_else(|| format!("{}: no kernel has a launch spec", path.display())));
                }
                many => {
                    return Err(format!(
                        "{}: several kernels have launch specs ({}): pick one with --kernel",
                        path.display(),
                        many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    };
    let Some(function) = analysis.source.kernel(&name) else {
        return Err(format!("{}: no __global__ function named `{name}`", path.display()));
    };
    let Some(spec) = analysis.launch_specs.get(&name) else {
        return Err(spec_errors(path, &analysis, Some(&name))
            .unwrap_or_else(|| format!("{}: `{name}` has no launch spec", path.display())));
    };
    let signature = kernelpro_spec::KernelSignature::of(function);
    let compile_settings = kernelpro_optimize::cute_settings(text, &settings)?;
    let mut launch = serde_json::to_value(spec).map_err(|e| e.to_string())?;
    without_output_inits(&mut launch);
    Ok(json!({
        "file": path,
        "kernel": name,
        "launch_name": spec.instantiate.as_ref().map_or(name.clone(), |i| i.text()),
        "launch": launch,
        "params": params(spec, &signature.params),
        "tolerances": spec.buffers().filter(|b| b.dir.is_output()).map(|b| {
            let t = spec.tolerance_for(b.elem);
            (b.name.clone(), json!({ "rtol": t.rtol, "atol": t.atol }))
        }).collect::<serde_json::Map<_, _>>(),
        "bytes": spec.buffers().map(|b| b.size_bytes()).sum::<u64>(),
        "flops": kernelpro_gpu::flops(spec),
        "arch": compile_settings.arch,
        "nvcc_flags": compile_settings.extra_flags,
    }))
}

/// Drops the `init` of every `out` buffer: outputs are filled with NaN before
/// each run, never with an init, so showing one would mislead.
fn without_output_inits(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("dir").and_then(Value::as_str) == Some("out") {
                map.remove("init");
            }
            map.values_mut().for_each(without_output_inits);
        }
        Value::Array(items) => items.iter_mut().for_each(without_output_inits),
        _ => {}
    }
}

/// Every spec error of the file (of `kernel`, when given), one compiler line each.
fn spec_errors(path: &Path, analysis: &FileAnalysis, kernel: Option<&str>) -> Option<String> {
    let lines: Vec<String> = analysis
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error && (kernel.is_none() || f.kernel.as_deref() == kernel))
        .map(|f| compiler_line(path, f))
        .collect();
    (!lines.is_empty()).then(|| format!("the launch spec has errors:\n{}", lines.join("\n")))
}

/// The C type to cast each argument to: the declared one where it names the
/// spec's type (`long long` stays `long long`), else the usual spelling (a
/// template's `T`).
fn params(spec: &LaunchSpec, declared: &[Param]) -> Vec<Value> {
    spec.args
        .iter()
        .zip(declared)
        .map(|(arg, p)| {
            let base = base_c_type(&p.ty);
            match arg {
                Arg::Buffer(b) => {
                    let c = if kernelpro_spec::ElemType::from_c(&base) == Some(b.elem) {
                        base
                    } else {
                        b.elem.c_name().to_string()
                    };
                    json!({ "name": b.name, "kind": "buffer", "c_type": c, "declared": p.ty })
                }
                Arg::Scalar(s) => {
                    let c = if kernelpro_spec::ScalarType::from_c(&base) == Some(s.ty) {
                        base
                    } else {
                        s.ty.c_name().to_string()
                    };
                    json!({ "name": s.name, "kind": "scalar", "c_type": c, "declared": p.ty })
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn compile_args() -> CompileArgs {
        match crate::Cli::try_parse_from(["kernelpro", "spec", "k.cu"]) {
            Ok(crate::Cli { command: Some(crate::Command::Spec(a)), .. }) => a.compile,
            _ => panic!("spec parses"),
        }
    }

    #[test]
    fn a_spec_resolves_with_c_types_and_tolerances() {
        let text = "// kernelpro: let N = 1 << 10\n// kernelpro: grid = ceil_div(N, 256)\n// kernelpro: block = 256\n// kernelpro: y = out float[N]\n// kernelpro: x = in float[N] uniform(-1, 1)\n// kernelpro: i = out int64[N]\n// kernelpro: n = N\n// kernelpro: check rtol=1e-4 atol=1e-4\n__global__ void k(float* __restrict__ y, const float* x, long long* i, size_t n) {}\n";
        let v = resolved(Path::new("k.cu"), text, None, &compile_args()).unwrap();
        assert_eq!(v["launch"]["grid"], json!([4, 1, 1]));
        assert_eq!(v["launch_name"], "k");
        let types: Vec<&str> = v["params"].as_array().unwrap().iter().map(|p| p["c_type"].as_str().unwrap()).collect();
        assert_eq!(types, ["float", "float", "long long", "size_t"]);
        assert_eq!(v["tolerances"]["y"], json!({ "rtol": 1e-4, "atol": 1e-4 }));
        assert_eq!(v["bytes"], json!(1024 * (4 + 4 + 8)));
        assert_eq!(v["nvcc_flags"], json!([]));
        // Outputs get no init (they are poisoned before each run); inputs keep theirs.
        let buffers: Vec<&Value> =
            v["launch"]["args"].as_array().unwrap().iter().filter(|a| a.to_string().contains("\"dir\"")).collect();
        let text = serde_json::to_string(&buffers).unwrap();
        assert!(text.contains("\"init\""), "{text}");
        for b in &buffers {
            let s = b.to_string();
            assert!(!(s.contains("\"dir\":\"out\"") && s.contains("\"init\"")), "{s}");
        }
    }

    #[test]
    fn a_template_gets_the_spec_type_and_its_instantiation() {
        let text = "// kernelpro: grid = 1\n// kernelpro: block = 32\n// kernelpro: y = out half[32]\n// kernelpro: instantiate = k<__half, 4>\ntemplate <typename T, int V>\n__global__ void k(T* y) {}\n";
        let v = resolved(Path::new("k.cu"), text, Some("k"), &compile_args()).unwrap();
        assert_eq!(v["launch_name"], "k<__half, 4>");
        assert_eq!(v["params"][0]["c_type"], "__half");
    }

    #[test]
    fn spec_errors_are_reported_on_their_lines() {
        let text = "// kernelpro: grid = 1\n// kernelpro: block = 32\n__global__ void k(float* y) {}\n";
        let e = resolved(Path::new("k.cu"), text, None, &compile_args()).unwrap_err();
        assert!(e.contains("k.cu:2:") && e.contains("error"), "{e}");
    }
}
