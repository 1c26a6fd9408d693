//! Building a file's own program (its `main()`) for a profile.
//!
//! A save that edits device code only (kernel and `__device__` bodies) keeps
//! the host object of an earlier build: the host part is compiled once per
//! host text ([`kernelpro_source::launch::host_part`]) with `nvcc -c`, which
//! embeds the device code as a fatbinary in the object's `.nv_fatbin`
//! section; a later build compiles the device code alone (`nvcc -fatbin`, as
//! fast as the save's own compile), puts it in that section of a copy of the
//! object (`objcopy --update-section`: the host code refers to the section,
//! not to its size) and links. On a 2-core machine the five-kernel program
//! took 2.46 s to build whole and 0.53 s + 0.14 s this way (2026-12-07).

use kernelpro_runner::process::{ToolCommand, run_tool};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Host objects kept (the newest by modification time); one is a few hundred KB.
const KEPT_HOSTS: usize = 32;

/// A built program.
#[derive(Debug)]
pub struct Built {
    pub exe: PathBuf,
    /// The host object came from an earlier build: only the device code was compiled.
    pub host_kept: bool,
}

/// Builds `text` (the file at `path`) into `dir/program`, keeping host objects under `cache`.
pub async fn build(
    path: &Path,
    text: &str,
    settings: &kernelpro_config::settings::Settings,
    dir: &Path,
    cache: &Path,
    cancel: &CancellationToken,
) -> Result<Built, String> {
    let nvcc = kernelpro_core::analysis::Analyzer::find_nvcc(settings).ok_or_else(|| {
        format!("nvcc was not found. {}", kernelpro_toolchain::toolchain::nvcc_install_hint(settings.words))
    })?;
    let timeout = Duration::from_secs(settings.compile_timeout_secs.max(1));
    // As the save's compile prepares its file (`compile::CompileInput::in_folder`): the copy with
    // `#line` back to the file, its folder to include from, the defines in a header. An unsaved
    // buffer has no folder (never the server's working directory).
    let input = kernelpro_toolchain::compile::CompileInput {
        path: if kernelpro_toolchain::compile::is_unsaved(path) {
            path.to_path_buf()
        } else {
            std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
        },
        text: text.to_string(),
        nvcc: nvcc.path.clone(),
        arch: settings.arch.clone(),
        flags: kernelpro_core::analysis::Analyzer::flags_for(path, settings),
        timeout,
    };
    let call = input.in_folder(dir, &["-O3", "-lineinfo"]);
    if let Some(arg) = call.argv.iter().find(|a| kernelpro_toolchain::nvcc_flags::shell_char(a).is_some()) {
        return Err(format!("the program is not built: nvcc's argument `{arg}` holds a character a shell acts on"));
    }
    call.write().map_err(|(what, e)| format!("the program is not built: cannot {what}: {e}"))?;
    let (args, src, exe) = (&call.argv, &call.source.0, dir.join("program"));
    let nvcc_run = |extra: Vec<String>| {
        let mut all = args.clone();
        all.extend(extra);
        run_tool_ok(ToolCommand::new(&nvcc.path, timeout).args(all), cancel)
    };
    let env = kernelpro_toolchain::toolchain::Env::for_settings(settings);
    let objcopy = kernelpro_toolchain::toolchain::find_tool("objcopy", None, "KERNELPRO_OBJCOPY", &env);
    // What the host object depends on besides the host text: the arguments but not the build
    // folder's paths (the link to the file's folder by that folder, the defines by their text), and
    // the project headers the file includes, read whole (a host function of one is host code too).
    // Past the headers' read limit nothing is kept.
    let in_dir = dir.display().to_string();
    let mut key_parts: Vec<String> = args.iter().filter(|a| !a.contains(&in_dir)).cloned().collect();
    key_parts.extend(call.home_link.iter().map(|(_, home)| home.display().to_string()));
    key_parts.extend(call.defines.iter().map(|(_, header)| header.clone()));
    key_parts.extend([nvcc.path.display().to_string(), input.line_name()]);
    let headers = kernelpro_toolchain::headers::project_headers(path, text, &input.flags, None);
    let key = kernelpro_source::launch::host_part(text)
        .filter(|_| headers.len() < kernelpro_toolchain::headers::MAX_HEADERS)
        .map(|host| {
            let mut h = Sha256::new();
            let parts = std::iter::once(host.as_str())
                .chain(key_parts.iter().map(String::as_str))
                .chain(headers.iter().map(|hd| &*hd.text));
            for part in parts {
                h.update(part.as_bytes());
                h.update([0]);
            }
            h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect::<String>()
        });
    let hosts = cache.join("program-hosts");
    let kept = key.as_ref().map(|k| hosts.join(format!("{k}.o"))).filter(|o| o.exists());
    let object = dir.join("program.o");
    // The link takes the compile's flags (`-rdc=true` links device code), not its forced include.
    let defines_path = call.defines.as_ref().map(|(p, _)| p.display().to_string());
    let link_args: Vec<String> =
        args.iter().filter(|a| *a != "-include" && Some(a.as_str()) != defines_path.as_deref()).cloned().collect();
    let link = |object: &Path| {
        let mut all = link_args.clone();
        all.extend(["-o".into(), exe.display().to_string(), object.display().to_string()]);
        run_tool_ok(ToolCommand::new(&nvcc.path, timeout).args(all), cancel)
    };
    if let (Some(host), Some(objcopy)) = (&kept, &objcopy) {
        let fatbin = dir.join("device.fatbin");
        let fresh = async {
            nvcc_run(vec!["-fatbin".into(), "-o".into(), fatbin.display().to_string(), src.display().to_string()])
                .await?;
            let section = format!(".nv_fatbin={}", fatbin.display());
            run_tool_ok(
                ToolCommand::new(&objcopy.path, timeout).args([
                    "--update-section".into(),
                    section,
                    host.display().to_string(),
                    object.display().to_string(),
                ]),
                cancel,
            )
            .await?;
            link(&object).await
        };
        match fresh.await {
            Ok(()) => {
                // Touched: the newest are the ones kept.
                let _ = std::fs::File::options()
                    .append(true)
                    .open(host)
                    .and_then(|f| f.set_modified(std::time::SystemTime::now()));
                return Ok(Built { exe, host_kept: true });
            }
            // A device-only build that does not compile says why below, as the whole build does.
            Err(e) if cancel.is_cancelled() => return Err(e),
            Err(e) => tracing::debug!("device-only build failed, building the whole program: {e}"),
        }
    }
    match (&key, &objcopy) {
        // The object, kept for the next build whose host part is the same.
        (Some(key), Some(_)) => {
            nvcc_run(vec!["-c".into(), "-o".into(), object.display().to_string(), src.display().to_string()])
                .await
                .map_err(not_built)?;
            link(&object).await.map_err(not_built)?;
            keep(&hosts, key, &object);
        }
        _ => nvcc_run(vec!["-o".into(), exe.display().to_string(), src.display().to_string()])
            .await
            .map_err(not_built)?,
    }
    // The program is kept alive by the caller's temp dir for the profile's duration.
    Ok(Built { exe, host_kept: false })
}

fn not_built(e: String) -> String {
    format!("the program does not build: {e}")
}

/// Runs a build step: its first lines of error output where it fails.
async fn run_tool_ok(cmd: ToolCommand, cancel: &CancellationToken) -> Result<(), String> {
    let out = run_tool(&cmd, cancel).await.map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(out.stderr.lines().filter(|l| !l.trim().is_empty()).take(5).collect::<Vec<_>>().join(" | "));
    }
    Ok(())
}

/// Copies `object` in as `hosts/KEY.o` (through a temporary file: another build may read it) and
/// removes all but the newest [`KEPT_HOSTS`].
fn keep(hosts: &Path, key: &str, object: &Path) {
    if std::fs::create_dir_all(hosts).is_err() {
        return;
    }
    // A name of its own (two builds of one key may run at once in one server), removed if not kept.
    let Ok(tmp) = tempfile::Builder::new().prefix(key).suffix(".tmp").tempfile_in(hosts) else { return };
    if std::fs::copy(object, tmp.path()).is_err() || tmp.persist(hosts.join(format!("{key}.o"))).is_err() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(hosts) else { return };
    let mut objects: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "o"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    objects.sort_by_key(|o| std::cmp::Reverse(o.0));
    for (_, old) in objects.into_iter().skip(KEPT_HOSTS) {
        let _ = std::fs::remove_file(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> kernelpro_config::settings::Settings {
        kernelpro_config::settings::Settings { arch: "sm_90".into(), ..Default::default() }
    }

    /// The fatbinary a device-only build put in the program (`nvcc -fatbin` of the same text): the
    /// program's bytes hold it whole.
    fn holds(exe: &Path, fatbin: &Path) -> bool {
        let (exe, fatbin) = (std::fs::read(exe).unwrap(), std::fs::read(fatbin).unwrap());
        exe.windows(fatbin.len()).any(|w| w == fatbin.as_slice())
    }

    /// A host function in a project header is host code: its edit builds the whole program.
    #[tokio::test]
    async fn an_edit_of_an_included_headers_host_code_builds_whole() {
        let s = settings();
        let dir = tempfile::tempdir().unwrap();
        let (main, header) = (dir.path().join("main.cu"), dir.path().join("scale.cuh"));
        let text = "#include \"scale.cuh\"\n__global__ void k(float* y) { y[0] = 1; }\nint main() { float* y; cudaMalloc(&y, 4); k<<<1, 1>>>(y); return scale(0); }\n";
        std::fs::write(&main, text).unwrap();
        let (cache, cancel) = (tempfile::tempdir().unwrap(), CancellationToken::new());
        let mut kept = Vec::new();
        for body in ["return v;", "return v;", "return v + 1;"] {
            std::fs::write(&header, format!("inline int scale(int v) {{ {body} }}\n")).unwrap();
            let out = tempfile::tempdir().unwrap();
            kept.push(super::build(&main, text, &s, out.path(), cache.path(), &cancel).await.unwrap().host_kept);
        }
        assert_eq!(kept, [false, true, false], "the same header keeps the host object, an edited one does not");
    }

    /// Relocatable device code (`-rdc=true` in the user's flags) is linked as nvcc links it, and a
    /// kernel's edit still builds (its device code kept or the whole program built again).
    #[tokio::test]
    async fn a_program_with_relocatable_device_code_builds_after_a_kernel_edit() {
        let s = kernelpro_config::settings::Settings { extra_flags: vec!["-rdc=true".into()], ..settings() };
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/h200-probe/kernels.cu");
        let text = std::fs::read_to_string(&path).unwrap();
        let (cache, cancel) = (tempfile::tempdir().unwrap(), CancellationToken::new());
        for t in [text.clone(), text.replacen("y[i] = a * x[i] + y[i] * 2.0;", "y[i] = a * x[i] + y[i];", 1)] {
            let out = tempfile::tempdir().unwrap();
            let built = super::build(&path, &t, &s, out.path(), cache.path(), &cancel).await;
            assert!(built.as_ref().is_ok_and(|b| b.exe.exists()), "{built:?}");
        }
    }

    /// A kernel's edit keeps the host object and the program holds the new device code; a host
    /// edit builds the whole program again. Real nvcc and objcopy.
    #[tokio::test]
    async fn an_edit_of_a_kernel_body_keeps_the_host_object() {
        let s = settings();
        if kernelpro_core::analysis::Analyzer::find_nvcc(&s).is_none() {
            panic!("nvcc is needed (bash scripts/setup.sh)");
        }
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/h200-probe/kernels.cu");
        let text = std::fs::read_to_string(&path).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let build = |text: String| {
            let (s, path, cache, cancel) = (s.clone(), path.clone(), cache.path().to_path_buf(), cancel.clone());
            async move {
                let dir = tempfile::tempdir().unwrap();
                let t = std::time::Instant::now();
                let built = super::build(&path, &text, &s, dir.path(), &cache, &cancel).await.unwrap();
                // The figure docs/benchmarks.md quotes (`--nocapture`).
                eprintln!("build in {:.2} s, host part kept: {}", t.elapsed().as_secs_f64(), built.host_kept);
                (dir, built)
            }
        };
        let (_d1, first) = build(text.clone()).await;
        assert!(!first.host_kept && first.exe.exists());
        let edited = text.replacen("y[i] = a * x[i] + y[i] * 2.0;", "y[i] = a * x[i] * 3.0f + y[i];", 1);
        assert_ne!(edited, text, "the fixture's saxpy line moved");
        let (d2, second) = build(edited.clone()).await;
        assert!(second.host_kept, "a kernel body's edit keeps the host object");
        assert!(holds(&second.exe, &d2.path().join("device.fatbin")), "the program holds the edit's device code");
        let host_edit = edited.replacen("int main() {", "int main() {\n  int unused_here = 0; (void)unused_here;", 1);
        let (_d3, third) = build(host_edit).await;
        assert!(!third.host_kept, "an edit of main() builds the whole program");
        assert_eq!(std::fs::read_dir(cache.path().join("program-hosts")).unwrap().count(), 2);
    }
}
