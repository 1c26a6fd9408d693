//! The one filter for nvcc flags from any source: the `extraFlags` and
//! `includePaths` settings, `compile_commands.json`, and the CLI's `--flag`
//! and `-I`. Only flags that change what the device code means pass
//! (include paths, defines, the language standard, code-generation switches,
//! and libraries for the link of a profiled program: `-l`, `-L`);
//! a flag that could run another program (`-ccbin`, `-Xcompiler -fplugin=`,
//! `-B`, `--run`), write a file (`-o`, `-keep`), read flags or source from a
//! file (`@file`, `--options-file`, `-include`), or set what KernelPro sets
//! itself (`-arch`, `-lib`, `-link`, `-lto`) is rejected with the reason, and so is anything unknown.
//!
//! nvcc runs its host steps through `/bin/sh` with the arguments in double
//! quotes, so no argument that reaches its command line may hold a character
//! a shell gives meaning to ([`shell_char`]): such include paths, libraries and
//! values are rejected here. Defines are the exception: their text never
//! reaches the command line, the compile passes them in a generated header
//! ([`defines_header`]), so only their shape is checked.
//!
//! Flags that take a value as the next argument (`-I dir`, `-isystem dir`,
//! `-Xcompiler x`, `-o f`, `-x cu`, `-MT t`, ...) are read as two tokens, so
//! a value is never taken for a flag of its own; `-isystem` is passed on as
//! two tokens, the only spelling nvcc accepts.

use std::path::{Path, PathBuf};

/// Where a flag came from, named in the message about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FlagSource {
    /// The `extraFlags`/`includePaths` settings (the CLI's `--flag`/`-I`).
    #[default]
    Settings,
    /// A `compile_commands.json` entry.
    CompileDb(PathBuf),
}

/// A flag that was not passed to nvcc, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub flag: String,
    pub reason: &'static str,
    pub source: FlagSource,
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
const OUTPUT_KIND: &str = "it makes nvcc produce a library, a link or LTO IR instead of the cubin KernelPro analyses";
const CONTROL: &str = "it holds a line break or another control character";
const VALUE: &str = "its value holds characters this flag never needs";
const DEFINE: &str = "it is not one #define: a macro name (or NAME(params)), and a value that neither ends in a backslash nor opens a comment";
/// The reason for an argument holding a shell metacharacter.
pub const SHELL: &str = "it holds a character a shell gives meaning to ($ ` \" ' \\ ; | & < > ( ) { } * ? [ ] !), and nvcc hands its arguments to /bin/sh";
const NO_SUCH: &str = "nvcc has no such flag (it takes its value as the next argument, which is dropped too)";
const UNKNOWN: &str = "not a flag KernelPro passes to nvcc (it takes include paths -I/-isystem, defines -D/-U, -std=, and code-generation switches such as -O3, -lineinfo, -maxrregcount=, -Xptxas -v)";
/// The reason for a compile_commands.json too big to read.
pub const TOO_BIG: &str = "the compile database is larger than KernelPro reads";

/// Characters a shell (`/bin/sh`, to which nvcc hands its host steps with
/// each argument in double quotes) gives meaning to, in or out of quotes.
const SHELL_CHARS: &[char] =
    &['$', '`', '"', '\'', '\\', ';', '|', '&', '<', '>', '(', ')', '{', '}', '*', '?', '[', ']', '!'];

/// The first character of `arg` that a shell would act on (or a control
/// character), if any: such an argument must never reach nvcc's command line.
pub fn shell_char(arg: &str) -> Option<char> {
    arg.chars().find(|c| SHELL_CHARS.contains(c) || c.is_control())
}

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
    ("--x", OURS),
    ("-MT", WRITES),
    ("--dependency-target-name", WRITES),
    ("-MQ", WRITES),
    ("-ldir", READS),
    ("--libdevice-directory", READS),
    ("-target-dir", OURS),
    ("--target-directory", OURS),
    ("-idp", NO_SUCH),
    ("--input-drive-prefix", NO_SUCH),
    // gcc's, not nvcc's: the directory after them must not be read as a file to compile.
    ("-iquote", NO_SUCH),
    ("-idirafter", NO_SUCH),
    ("-iprefix", NO_SUCH),
    ("-iwithprefix", NO_SUCH),
    ("-iwithprefixbefore", NO_SUCH),
    ("-isysroot", NO_SUCH),
    ("--sysroot", NO_SUCH),
    ("-imultilib", NO_SUCH),
];

/// nvcc's own flags that begin like `-l<library>`: each is that flag, never a
/// library (`-lib` is not `-l ib`). `-lineinfo` is kept (a switch above).
const L_FLAGS: &[(&str, &str)] = &[
    ("-lib", OUTPUT_KIND),
    ("--lib", OUTPUT_KIND),
    ("-link", OUTPUT_KIND),
    ("--link", OUTPUT_KIND),
    ("-lto", OUTPUT_KIND),
    ("--lto", OUTPUT_KIND),
    ("-ltoir", OUTPUT_KIND),
    ("--ltoir", OUTPUT_KIND),
    ("-dlto", OUTPUT_KIND),
    ("--dlink-time-opt", OUTPUT_KIND),
    ("-ldir", READS),
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
    ("-imacros", READS),
    ("-ldir=", READS),
    ("--libdevice-directory=", READS),
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

/// Flags whose value is a directory (`-I dir`, `-Idir`, `--include-path=dir`):
/// the name, the spelling passed on, and whether it is passed as two tokens
/// (`-isystem dir`: nvcc rejects `-isystem/dir`).
const DIR_FLAGS: &[(&str, &str, bool)] = &[
    ("-I", "-I", false),
    ("--include-path", "-I", false),
    ("-isystem", "-isystem", true),
    ("--system-include", "-isystem", true),
    // Libraries for a profiled program's link (a device-only compile ignores them).
    ("-L", "-L", false),
    ("--library-path", "-L", false),
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

fn identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A macro name as `-D` takes it: `NAME` or `NAME(a, b, ...)`.
fn macro_head_ok(head: &str) -> bool {
    match head.split_once('(') {
        None => identifier(head),
        Some((name, rest)) => {
            let Some(params) = rest.strip_suffix(')') else { return false };
            identifier(name)
                && (params.trim().is_empty() || params.split(',').map(str::trim).all(|p| identifier(p) || p == "..."))
        }
    }
}

/// A `-D` definition a generated header can hold as one `#define` line: a
/// macro name, and a value that neither continues onto the next line nor
/// opens a comment it does not close.
fn define_ok(def: &str) -> bool {
    let (head, value) = def.split_once('=').unwrap_or((def, ""));
    let open_comment = value.rfind("/*").is_some_and(|at| !value[at..].contains("*/"));
    macro_head_ok(head) && !value.ends_with('\\') && !open_comment
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
        let mut reject =
            |flag: String, reason| out.rejected.push(Rejected { flag, reason, source: FlagSource::Settings });
        i += 1;
        // A line break in a value could end a `#define` and start a directive.
        if a.chars().any(char::is_control) || (takes_arg(a) && next.is_some_and(|n| n.chars().any(char::is_control))) {
            match next.filter(|_| takes_arg(a)) {
                Some(n) => {
                    i += 1;
                    reject(format!("{a} {n}"), CONTROL);
                }
                None => reject(a.to_string(), CONTROL),
            }
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
        // nvcc's own `-l…` flags are never libraries; `-ldir` takes a value.
        if let Some((_, reason)) =
            L_FLAGS.iter().find(|(n, _)| *n == a || a.strip_prefix(n).is_some_and(|r| r.starts_with('=')))
        {
            match next.filter(|_| REJECTED_WITH_ARG.iter().any(|(n, _)| *n == a)) {
                Some(v) => {
                    reject(format!("{a} {v}"), reason);
                    i += 1;
                }
                None => reject(a.to_string(), reason),
            }
            continue;
        }
        // A directory or a macro: joined, `=`-joined, or the next argument.
        let valued = DIR_FLAGS
            .iter()
            .map(|(n, o, two)| (n, o, true, *two))
            .chain(MACRO_FLAGS.iter().map(|(n, o)| (n, o, false, false)));
        let mut handled = false;
        for (name, canonical, is_dir, two_tokens) in valued {
            let value = if a == *name {
                next.inspect(|_| i += 1)
            } else if name.starts_with("--") {
                a.strip_prefix(name).and_then(|r| r.strip_prefix('='))
            } else if two_tokens {
                // `-isystem=dir`; gcc's joined `-isystemdir` too.
                a.strip_prefix(name).map(|r| r.strip_prefix('=').unwrap_or(r))
            } else {
                a.strip_prefix(name)
            };
            if let Some(value) = value {
                let shown = if a == *name { format!("{a} {value}") } else { a.to_string() };
                if value.is_empty() {
                    reject(a.to_string(), VALUE);
                } else if is_dir {
                    let path = abs(value);
                    if shell_char(&path).is_some() {
                        reject(shown, SHELL);
                    } else if two_tokens {
                        out.kept.push(canonical.to_string());
                        out.kept.push(path);
                    } else {
                        out.kept.push(format!("{canonical}{path}"));
                    }
                } else if *canonical == "-l" {
                    if plain(value) {
                        out.kept.push(format!("-l{value}"));
                    } else {
                        reject(shown, if shell_char(value).is_some() { SHELL } else { VALUE });
                    }
                } else if (*canonical == "-U" && !identifier(value)) || (*canonical == "-D" && !define_ok(value)) {
                    reject(shown, DEFINE);
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
                reject(a.to_string(), if shell_char(a).is_some() { SHELL } else { VALUE });
            }
        } else if a == "-std" || a == "--std" {
            match next {
                Some(v) if plain(v) => {
                    out.kept.push(format!("-std={v}"));
                    i += 1;
                }
                Some(v) if shell_char(v).is_some() => {
                    reject(format!("{a} {v}"), SHELL);
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

/// The `#define`/`#undef` lines for the `-D`/`-U` flags among `flags` (as
/// [`filter`] keeps them), in their order, and the other flags. The compile
/// passes the header with `-include`, so no define's text reaches nvcc's
/// command line (nor the shell nvcc starts its host steps with). The value is
/// kept whole: nvcc would split `-DX=a,b` at the comma, the header does not.
pub fn defines_header(flags: &[String]) -> (String, Vec<String>) {
    let mut header = String::new();
    let mut rest = Vec::new();
    for f in flags {
        if let Some(def) = f.strip_prefix("-D") {
            let (head, value) = def.split_once('=').unwrap_or((def, "1"));
            // A blank line after each: nothing can continue into the next definition.
            header.push_str(&format!("#define {head} {value}\n\n"));
        } else if let Some(name) = f.strip_prefix("-U") {
            header.push_str(&format!("#undef {name}\n"));
        } else {
            rest.push(f.clone());
        }
    }
    (header, rest)
}

/// Every flag a compile of `path` gets beyond KernelPro's own: the settings'
/// include paths and extra flags (their rejections are for the user to see),
/// then the file's compile_commands.json entry (whose rejections are a
/// build's ordinary `-c`/`-o`/`-gencode`, dropped quietly, except those that
/// could have run a command: a shell character, a control character; and a
/// database too big to read).
pub fn for_file(path: &Path, settings: &kernelpro_config::settings::Settings) -> Filtered {
    let mut given: Vec<String> = settings.include_paths.iter().map(|p| format!("-I{}", p.display())).collect();
    given.extend(settings.extra_flags.iter().cloned());
    let mut out = filter(&given, None);
    let db = crate::compile_db::flags_for(path);
    out.kept.extend(db.kept);
    out.rejected.extend(db.rejected.into_iter().filter(|r| [SHELL, CONTROL, TOO_BIG].contains(&r.reason)));
    out
}

/// A warning for one rejected flag, in words a user can act on: the flag,
/// where it came from (the command line's `--flag`/`-I`, the editor's
/// settings, or the compile database), and why.
pub fn rejection_message(r: &Rejected, words: kernelpro_config::words::Words) -> String {
    match &r.source {
        FlagSource::Settings => {
            let from = words.flags_given;
            format!("nvcc flag `{}` {from} was not passed: {}", r.flag, r.reason)
        }
        FlagSource::CompileDb(db) if r.reason == TOO_BIG => {
            format!("{} was not read, so no flags came from it: {}", db.display(), r.flag)
        }
        FlagSource::CompileDb(db) => {
            format!("nvcc flag `{}` from {} was not passed: {}", r.flag, db.display(), r.reason)
        }
    }
}

/// Flags whose value may be the next argument.
fn takes_arg(flag: &str) -> bool {
    DIR_FLAGS.iter().any(|(n, _, _)| *n == flag)
        || MACRO_FLAGS.iter().any(|(n, _)| *n == flag)
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
            &["-I/proj/inc", "-I/abs/inc", "-isystem", "/proj/sys", "-I/proj/x"],
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
                ("-maxrregcount=$(id)", "shell"),
                ("-I -DX\n#include \"/etc/passwd\"", "control"),
                ("--frobnicate", "not a flag"),
                ("k.cu", "not a flag"),
            ],
        );
    }

    /// `-isystem DIR` (CMake's spelling) stays two tokens, the only one nvcc
    /// takes; gcc's joined spellings become it; other two-token flags take
    /// their value with them, so a value is never read as a flag or a file.
    #[test]
    fn two_token_flags() {
        check(
            &[
                "-isystem",
                "/usr/inc",
                "-isystem/a",
                "-isystem=b",
                "--system-include=c",
                "--system-include",
                "d",
                "--system-includee",
            ],
            &[
                "-isystem", "/usr/inc", "-isystem", "/a", "-isystem", "/proj/b", "-isystem", "/proj/c", "-isystem",
                "/proj/d",
            ],
            &[("--system-includee", "not a flag")],
        );
        check(
            &[
                "-MT",
                "k.o",
                "-MQ",
                "k.o",
                "-iquote",
                "q",
                "-idirafter",
                "d",
                "-Xcompiler",
                "-fPIC",
                "-x",
                "cu",
                "-o",
                "k.o",
                "-ldir",
                "/x",
            ],
            &[],
            &[
                ("-MT k.o", "write"),
                ("-MQ k.o", "write"),
                ("-iquote q", "no such flag"),
                ("-idirafter d", "no such flag"),
                ("-Xcompiler -fPIC", "host"),
                ("-x cu", "arch"),
                ("-o k.o", "write"),
                ("-ldir /x", "read"),
            ],
        );
    }

    /// `-l<name>` is a library unless it is one of nvcc's own `-l…` flags.
    #[test]
    fn the_l_rule_is_exact() {
        check(
            &["-lcublas", "-l", "cudnn", "-llibrary", "-lineinfo", "-lto_helper"],
            &["-lcublas", "-lcudnn", "-llibrary", "-lineinfo", "-lto_helper"],
            &[],
        );
        check(
            &["-lib", "--lib", "-link", "-lto", "--lto", "-ltoir", "-dlto", "-ldir=/x", "-l$(id)", "-l/x"],
            &[],
            &[
                ("-lib", "library"),
                ("--lib", "library"),
                ("-link", "link"),
                ("-lto", "LTO"),
                ("--lto", "LTO"),
                ("-ltoir", "LTO"),
                ("-dlto", "LTO"),
                ("-ldir=/x", "read"),
                ("-l$(id)", "shell"),
                ("-l/x", "value"),
            ],
        );
    }

    /// Nothing a shell acts on passes in a path, a library or a value;
    /// defines pass (they reach nvcc in a header) when they are one `#define`.
    #[test]
    fn shell_characters() {
        check(
            &[
                "-I/a/$(touch x)",
                "-I",
                "/a/`id`",
                "-isystem",
                "/a\"b",
                "-L/x;y",
                "--include-path=/a|b",
                "-std=c++17$(id)",
                "-std",
                "$(id)",
                "-D$(id)",
                "-UA(",
            ],
            &[],
            &[
                ("-I/a/$(touch x)", "shell"),
                ("-I /a/`id`", "shell"),
                ("-isystem /a\"b", "shell"),
                ("-L/x;y", "shell"),
                ("--include-path=/a|b", "shell"),
                ("-std=c++17$(id)", "shell"),
                ("-std $(id)", "shell"),
                ("-D$(id)", "#define"),
                ("-UA(", "#define"),
            ],
        );
        check(
            &["-DX=$(touch y)", "-DF(a, b)=((a)+(b))", "-DV(...)=f(__VA_ARGS__)", "-DQ=\"a;b\""],
            &["-DX=$(touch y)", "-DF(a, b)=((a)+(b))", "-DV(...)=f(__VA_ARGS__)", "-DQ=\"a;b\""],
            &[],
        );
        check(
            &["-DX=a\\", "-DX=/* open", "-D1X", "-DF(a=1"],
            &[],
            &[("-DX=a\\", "#define"), ("-DX=/* open", "#define"), ("-D1X", "#define"), ("-DF(a=1", "#define")],
        );
        for bad in ["$", "`", "\"", "'", "\\", ";", "|", "&", "<", ">", "(", ")", "\n"] {
            assert!(shell_char(&format!("/a{bad}b")).is_some(), "{bad:?}");
        }
        assert_eq!(shell_char("/home/u/my project/inc-1.2_x+y=z,@%:"), None);
    }

    #[test]
    fn defines_go_to_a_header_in_order() {
        let flags: Vec<String> =
            ["-DA", "-I/x", "-DB=$(id)", "-UA", "-DS=\"a b\""].iter().map(|s| s.to_string()).collect();
        let (header, rest) = defines_header(&flags);
        assert_eq!(header, "#define A 1\n\n#define B $(id)\n\n#undef A\n#define S \"a b\"\n\n");
        assert_eq!(rest, ["-I/x"]);
    }
}
