//! The one filter for nvcc flags from any source: the `extraFlags` and
//! `includePaths` settings, `compile_commands.json`, and the CLI's `--flag`
//! and `-I`. Only flags that change what the device code means pass
//! (include paths, defines, the language standard, code-generation switches,
//! and libraries for the link of a profiled program: `-l`, `-L`);
//! a flag that could run another program (`-ccbin`, `-Xcompiler -fplugin=`,
//! `-B`, `--run`), write a file (`-o`, `-keep`), read flags or source from a
//! file (`@file`, `--options-file`, `-include`), or set what KernelPro sets
//! itself (`-arch`) is rejected with the reason, and so is anything unknown.

use std::path::Path;

/// A flag that was not passed to nvcc, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub flag: String,
    pub reason: &'static str,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filtered {
    pub kept: Vec<String>,
    pub rejected: Vec<Rejected>,
}

const RUNS: &str = "it would make nvcc run another program or load a plugin";
const HOST: &str = "it passes options to the host compiler, linker or another inner tool, which can load plugins or run programs; a device-code compile does not need it";
const WRITES: &str = "it would write files outside KernelPro's private build directory";
const READS: &str = "it would read flags or source from another file";
const OURS: &str = "KernelPro sets the target and the output itself (use the arch setting)";
const CONTROL: &str = "it holds a line break or another control character";
const VALUE: &str = "its value holds characters this flag never needs";
const UNKNOWN: &str = "not a flag KernelPro passes to nvcc (it takes include paths -I/-isystem, defines -D/-U, -std=, and code-generation switches such as -O3, -lineinfo, -maxrregcount=, -Xptxas -v)";

/// Flags kept as they are.
const SWITCHES: &[&str] = &[
    "--expt-relaxed-constexpr",
    "-expt-relaxed-constexpr",
    "--expt-extended-lambda",
    "-expt-extended-lambda",
    "--extended-lambda",
    "-extended-lambda",
    "-use_fast_math",
    "--use_fast_math",
    "-lineinfo",
    "--generate-line-info",
    "-G",
    "--device-debug",
    "-O0",
    "-O1",
    "-O2",
    "-O3",
    "--extra-device-vectorization",
    "-extra-device-vectorization",
    "-restrict",
    "--restrict",
    "-w",
    "--disable-warnings",
    "-Wno-deprecated-gpu-targets",
    "-Wno-deprecated-declarations",
    "-res-usage",
    "--resource-usage",
    "-src-in-ptx",
    "--source-in-ptx",
];

/// `NAME=value` flags kept when the value is plain (a number, a word, a list).
const WITH_VALUE: &[&str] = &[
    "-std=",
    "--std=",
    "-maxrregcount=",
    "--maxrregcount=",
    "-ftz=",
    "--ftz=",
    "-prec-div=",
    "--prec-div=",
    "-prec-sqrt=",
    "--prec-sqrt=",
    "-fmad=",
    "--fmad=",
    "-rdc=",
    "--relocatable-device-code=",
    "-diag-suppress=",
    "--diag-suppress=",
    "-default-stream=",
    "--default-stream=",
];

/// Options nvcc hands to ptxas that only change code generation or the report.
const PTXAS_OPTIONS: &[&str] = &[
    "-v",
    "--verbose",
    "-O0",
    "-O1",
    "-O2",
    "-O3",
    "-warn-spills",
    "--warn-on-spills",
    "-warn-lmem-usage",
    "--warn-on-local-memory-usage",
    "-allow-expensive-optimizations",
];
const PTXAS_WITH_VALUE: &[&str] = &[
    "-dlcm=",
    "-dscm=",
    "--def-load-cache=",
    "--def-store-cache=",
    "-maxrregcount=",
    "--maxrregcount=",
    "--allow-expensive-optimizations=",
    "-allow-expensive-optimizations=",
];

/// Rejected flags that take the next argument as their value (it is dropped too).
const REJECTED_WITH_ARG: &[(&str, &str)] = &[
    ("-ccbin", RUNS),
    ("--compiler-bindir", RUNS),
    ("-Xcompiler", HOST),
    ("--compiler-options", HOST),
    ("-Xlinker", HOST),
    ("--linker-options", HOST),
    ("-Xnvlink", HOST),
    ("--nvlink-options", HOST),
    ("-Xarchive", HOST),
    ("--archive-options", HOST),
    ("-Xcudafe", HOST),
    ("-Xfatbin", HOST),
    ("--fatbin-options", HOST),
    ("-Xnvvm", HOST),
    ("-run-args", RUNS),
    ("--run-args", RUNS),
    ("-o", WRITES),
    ("--output-file", WRITES),
    ("-odir", WRITES),
    ("--output-directory", WRITES),
    ("-keep-dir", WRITES),
    ("--keep-dir", WRITES),
    ("-MF", WRITES),
    ("--dependency-output", WRITES),
    ("-optf", READS),
    ("--options-file", READS),
    ("-include", READS),
    ("--pre-include", READS),
    ("-imacros", READS),
    ("-arch", OURS),
    ("--gpu-architecture", OURS),
    ("-code", OURS),
    ("--gpu-code", OURS),
    ("-gencode", OURS),
    ("--generate-code", OURS),
    ("-x", OURS),
];

/// Rejected flags written as one word (`-ccbin=gcc`, `-Bdir`, `--run`).
const REJECTED_PREFIXES: &[(&str, &str)] = &[
    ("--options-file", READS),
    ("-optf", READS),
    ("-ccbin", RUNS),
    ("--compiler-bindir", RUNS),
    ("-B", RUNS),
    ("-wrapper", RUNS),
    ("--run", RUNS),
    ("-run", RUNS),
    ("-Xcompiler", HOST),
    ("--compiler-options", HOST),
    ("-Xlinker", HOST),
    ("--linker-options", HOST),
    ("-Wl,", HOST),
    ("-Wp,", HOST),
    ("-Wa,", HOST),
    ("-fplugin", RUNS),
    ("-o", WRITES),
    ("--output-file", WRITES),
    ("-keep", WRITES),
    ("--keep", WRITES),
    ("-save-temps", WRITES),
    ("--save-temps", WRITES),
    ("-M", WRITES),
    ("--generate-dependencies", WRITES),
    ("-include", READS),
    ("--pre-include", READS),
    ("-arch", OURS),
    ("--gpu-architecture", OURS),
    ("-code", OURS),
    ("--gpu-code", OURS),
    ("-gencode", OURS),
    ("--generate-code", OURS),
    ("-cubin", OURS),
    ("-ptx", OURS),
    ("-c", OURS),
    ("-x", OURS),
];

/// Flags whose value is a directory (`-I dir`, `-Idir`, `--include-path=dir`).
const DIR_FLAGS: &[(&str, &str)] = &[
    ("-I", "-I"),
    ("--include-path", "-I"),
    ("-isystem", "-isystem"),
    ("--system-include", "-isystem"),
    // Libraries for a profiled program's link (a device-only compile ignores them).
    ("-L", "-L"),
    ("--library-path", "-L"),
];
/// Flags whose value is a macro or a library (`-D X=1`, `-DX=1`, `--define-macro=X`, `-lcublas`).
const MACRO_FLAGS: &[(&str, &str)] = &[
    ("-D", "-D"),
    ("--define-macro", "-D"),
    ("-U", "-U"),
    ("--undefine-macro", "-U"),
    ("-l", "-l"),
    ("--library", "-l"),
];

fn plain(value: &str) -> bool {
    !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || "_.,+-=".contains(c))
}

fn ptxas_option_ok(option: &str) -> bool {
    PTXAS_OPTIONS.contains(&option) || PTXAS_WITH_VALUE.iter().any(|p| option.strip_prefix(p).is_some_and(plain))
}

/// `argv` (flags only, not the compiler's name) filtered; relative include
/// directories are made absolute against `dir` when given.
pub fn filter(argv: &[String], dir: Option<&Path>) -> Filtered {
    let abs = |p: &str| match dir {
        Some(d) if !Path::new(p).is_absolute() => d.join(p).display().to_string(),
        _ => p.to_string(),
    };
    let mut out = Filtered::default();
    let mut i = 0;
    while i < argv.len() {
        let a = argv[i].as_str();
        let next = argv.get(i + 1).map(String::as_str);
        let mut reject = |flag: String, reason| out.rejected.push(Rejected { flag, reason });
        i += 1;
        // A line break in a value could end a `#define` and start a directive.
        if a.chars().any(char::is_control) || (takes_arg(a) && next.is_some_and(|n| n.chars().any(char::is_control))) {
            reject(a.to_string(), CONTROL);
            continue;
        }
        if let Some(file) = a.strip_prefix('@') {
            reject(format!("@{file}"), READS);
            continue;
        }
        if SWITCHES.contains(&a) {
            out.kept.push(a.to_string());
            continue;
        }
        // A directory or a macro: joined, `=`-joined, or the next argument.
        let valued = DIR_FLAGS.iter().map(|(n, o)| (n, o, true)).chain(MACRO_FLAGS.iter().map(|(n, o)| (n, o, false)));
        let mut handled = false;
        for (name, canonical, is_dir) in valued {
            let value = if a == *name {
                next.inspect(|_| i += 1)
            } else if name.starts_with("--") {
                a.strip_prefix(name).and_then(|r| r.strip_prefix('='))
            } else {
                a.strip_prefix(name)
            };
            if let Some(value) = value {
                if value.is_empty() {
                    reject(a.to_string(), VALUE);
                } else if is_dir {
                    out.kept.push(format!("{canonical}{}", abs(value)));
                } else {
                    out.kept.push(format!("{canonical}{value}"));
                }
                handled = true;
                break;
            } else if a == *name {
                // The value is missing: nothing to pass.
                reject(a.to_string(), VALUE);
                handled = true;
                break;
            }
        }
        if handled {
            continue;
        }
        if let Some(p) = WITH_VALUE.iter().find(|p| a.starts_with(**p)) {
            if plain(&a[p.len()..]) {
                out.kept.push(a.to_string());
            } else {
                reject(a.to_string(), VALUE);
            }
        } else if a == "-std" || a == "--std" {
            match next {
                Some(v) if plain(v) => {
                    out.kept.push(format!("-std={v}"));
                    i += 1;
                }
                _ => reject(a.to_string(), VALUE),
            }
        } else if a == "-Xptxas"
            || a == "--ptxas-options"
            || a.starts_with("-Xptxas=")
            || a.starts_with("--ptxas-options=")
        {
            let value = match a.split_once('=') {
                Some((_, v)) => Some(v),
                None => next.inspect(|_| i += 1),
            };
            match value {
                Some(v) if v.split(',').all(ptxas_option_ok) => {
                    out.kept.push("-Xptxas".to_string());
                    out.kept.push(v.to_string());
                }
                Some(v) => reject(
                    format!("{a} {v}"),
                    "it passes ptxas an option other than -v, -O<n>, -dlcm=, -dscm=, -maxrregcount= or the spill warnings",
                ),
                None => reject(a.to_string(), VALUE),
            }
        } else if let Some((_, reason)) = REJECTED_WITH_ARG.iter().find(|(n, _)| *n == a) {
            match next {
                Some(v) => {
                    reject(format!("{a} {v}"), reason);
                    i += 1;
                }
                None => reject(a.to_string(), reason),
            }
        } else if let Some((_, reason)) = REJECTED_PREFIXES.iter().find(|(p, _)| a.starts_with(*p)) {
            reject(a.to_string(), reason);
        } else {
            reject(a.to_string(), UNKNOWN);
        }
    }
    out
}

/// Every flag a compile of `path` gets beyond KernelPro's own: the settings'
/// include paths and extra flags (their rejections are for the user to see),
/// then the file's compile_commands.json entry (whose rejections are a
/// build's ordinary `-c`/`-o`/`-gencode`, dropped quietly).
pub fn for_file(path: &Path, settings: &crate::settings::Settings) -> Filtered {
    let mut given: Vec<String> = settings.include_paths.iter().map(|p| format!("-I{}", p.display())).collect();
    given.extend(settings.extra_flags.iter().cloned());
    let mut out = filter(&given, None);
    out.kept.extend(crate::compile_db::flags_for(path));
    out
}

/// A warning for one rejected setting flag, in words a user can act on,
/// naming where the user gave it (the command line's `--flag`/`-I`, or the editor's settings).
pub fn rejection_message(r: &Rejected, editor: crate::editor::Editor) -> String {
    let from = match editor {
        crate::editor::Editor::Cli => "given with --flag or -I",
        _ => "from the kernelpro.extraFlags/includePaths settings",
    };
    format!("nvcc flag `{}` {from} was not passed: {}", r.flag, r.reason)
}

/// Flags whose value may be the next argument.
fn takes_arg(flag: &str) -> bool {
    DIR_FLAGS.iter().chain(MACRO_FLAGS).any(|(n, _)| *n == flag)
        || REJECTED_WITH_ARG.iter().any(|(n, _)| *n == flag)
        || ["-std", "--std", "-Xptxas", "--ptxas-options"].contains(&flag)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row: the flags as given, what nvcc gets, and the rejected flags
    /// with a word of their reason.
    fn check(argv: &[&str], kept: &[&str], rejected: &[(&str, &str)]) {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let got = filter(&argv, Some(Path::new("/proj")));
        assert_eq!(got.kept, kept, "kept from {argv:?}");
        let got_rejected: Vec<&str> = got.rejected.iter().map(|r| r.flag.as_str()).collect();
        let want: Vec<&str> = rejected.iter().map(|(f, _)| *f).collect();
        assert_eq!(got_rejected, want, "rejected from {argv:?}");
        for (r, (_, word)) in got.rejected.iter().zip(rejected) {
            assert!(r.reason.contains(word), "{}: {} (wanted {word})", r.flag, r.reason);
        }
    }

    #[test]
    fn accepted_flags() {
        check(
            &["-lcublas", "-L", "lib", "--library=cudart", "-lineinfo"],
            &["-lcublas", "-L/proj/lib", "-lcudart", "-lineinfo"],
            &[],
        );
        check(
            &["-Iinc", "-I", "/abs/inc", "-isystem", "sys", "--include-path=x"],
            &["-I/proj/inc", "-I/abs/inc", "-isystem/proj/sys", "-I/proj/x"],
            &[],
        );
        check(
            &["-DFOO=1", "-D", "BAR", "-DMSG=\"a b\"", "-UX", "--define-macro=Y", "-DX=; rm -rf /"],
            &["-DFOO=1", "-DBAR", "-DMSG=\"a b\"", "-UX", "-DY", "-DX=; rm -rf /"],
            &[],
        );
        check(
            &["-std=c++17", "--std", "c++20", "--expt-relaxed-constexpr", "--extended-lambda", "-use_fast_math"],
            &["-std=c++17", "-std=c++20", "--expt-relaxed-constexpr", "--extended-lambda", "-use_fast_math"],
            &[],
        );
        check(
            &[
                "-O3",
                "-lineinfo",
                "-G",
                "-maxrregcount=64",
                "-ftz=true",
                "-prec-div=false",
                "-rdc=true",
                "-Wno-deprecated-gpu-targets",
            ],
            &[
                "-O3",
                "-lineinfo",
                "-G",
                "-maxrregcount=64",
                "-ftz=true",
                "-prec-div=false",
                "-rdc=true",
                "-Wno-deprecated-gpu-targets",
            ],
            &[],
        );
        check(
            &["-Xptxas", "-v,-O3", "-Xptxas=-dlcm=ca", "--ptxas-options=-warn-spills"],
            &["-Xptxas", "-v,-O3", "-Xptxas", "-dlcm=ca", "-Xptxas", "-warn-spills"],
            &[],
        );
    }

    #[test]
    fn rejected_flags() {
        check(
            &["-ccbin", "/tmp/evil", "-ccbin=/tmp/evil", "--compiler-bindir", "/x", "--compiler-bindir=/x"],
            &[],
            &[
                ("-ccbin /tmp/evil", "run"),
                ("-ccbin=/tmp/evil", "run"),
                ("--compiler-bindir /x", "run"),
                ("--compiler-bindir=/x", "run"),
            ],
        );
        check(
            &[
                "-Xcompiler",
                "-fplugin=/tmp/evil.so",
                "-Xcompiler=-fplugin=x",
                "--compiler-options",
                "-B/tmp",
                "-Xlinker",
                "x",
            ],
            &[],
            &[
                ("-Xcompiler -fplugin=/tmp/evil.so", "plugins"),
                ("-Xcompiler=-fplugin=x", "plugins"),
                ("--compiler-options -B/tmp", "plugins"),
                ("-Xlinker x", "linker"),
            ],
        );
        check(
            &["-B/tmp/evil", "-wrapper", "--run", "-run", "--run-args", "x", "-fplugin=/x.so", "-Wl,-rpath"],
            &[],
            &[
                ("-B/tmp/evil", "run"),
                ("-wrapper", "run"),
                ("--run", "run"),
                ("-run", "run"),
                ("--run-args x", "run"),
                ("-fplugin=/x.so", "plugin"),
                ("-Wl,-rpath", "host"),
            ],
        );
        check(
            &[
                "-o",
                "/home/u/.bashrc",
                "-o/x",
                "--output-file=/x",
                "-keep",
                "--keep-dir",
                "/x",
                "-MF",
                "/x",
                "-MD",
                "-save-temps",
            ],
            &[],
            &[
                ("-o /home/u/.bashrc", "write"),
                ("-o/x", "write"),
                ("--output-file=/x", "write"),
                ("-keep", "write"),
                ("--keep-dir /x", "write"),
                ("-MF /x", "write"),
                ("-MD", "write"),
                ("-save-temps", "write"),
            ],
        );
        check(
            &[
                "@/tmp/flags",
                "--options-file",
                "/x",
                "-optf=/x",
                "-include",
                "/etc/passwd",
                "--pre-include=/x",
                "-imacros",
                "/x",
            ],
            &[],
            &[
                ("@/tmp/flags", "read"),
                ("--options-file /x", "read"),
                ("-optf=/x", "read"),
                ("-include /etc/passwd", "read"),
                ("--pre-include=/x", "read"),
                ("-imacros /x", "read"),
            ],
        );
        check(
            &["-arch=sm_80", "-arch", "sm_80", "-gencode", "arch=compute_80,code=sm_80", "-c", "-x", "cu"],
            &[],
            &[
                ("-arch=sm_80", "arch"),
                ("-arch sm_80", "arch"),
                ("-gencode arch=compute_80,code=sm_80", "arch"),
                ("-c", "arch"),
                ("-x cu", "arch"),
            ],
        );
        check(
            &[
                "-Xptxas",
                "-v,--output-file=/x",
                "-maxrregcount=$(id)",
                "-I",
                "-DX\n#include \"/etc/passwd\"",
                "--frobnicate",
                "k.cu",
            ],
            &[],
            &[
                ("-Xptxas -v,--output-file=/x", "ptxas"),
                ("-maxrregcount=$(id)", "value"),
                ("-I", "control"),
                ("-DX\n#include \"/etc/passwd\"", "control"),
                ("--frobnicate", "not a flag"),
                ("k.cu", "not a flag"),
            ],
        );
    }
}
