//! A hostile CUTLASS tree: symlink loops must not make the index walk for
//! ever, and links out of the tree must not hand their targets to the model
//! (through `read_cutlass_file` or `search_cutlass`).

use kernelpro_cutlass::{Index, ReadError};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// A minimal tree under `dir/cutlass`, a secret beside it, and the links.
fn plant(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("cutlass");
    for sub in ["include/cute", "include/cutlass", "examples"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("include/cute/tensor.hpp"), "struct make_tensor_inside {};\n").unwrap();
    std::fs::write(root.join("include/cutlass/gemm.h"), "struct gemm_inside {};\n").unwrap();
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::fs::write(dir.join("outside/secret.h"), "int TOPSECRET_IDENT = 42;\n").unwrap();
    // The loop: three links to `.` under include/cute, and one to the root.
    for name in ["l1", "l2", "l3"] {
        symlink(".", root.join("include/cute").join(name)).unwrap();
    }
    symlink("../..", root.join("include/cutlass/up")).unwrap();
    // Escapes: a file and a folder outside the tree, by absolute and relative links.
    symlink(dir.join("outside/secret.h"), root.join("include/cute/leak.hpp")).unwrap();
    symlink("../../../outside", root.join("include/cute/outdir")).unwrap();
    // A link that stays inside is fine.
    symlink("tensor.hpp", root.join("include/cute/alias.hpp")).unwrap();
    root
}

#[test]
fn symlink_loops_end_and_links_out_of_the_tree_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = plant(dir.path());
    let (tx, rx) = mpsc::channel();
    let r = root.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Index::build(&r).map_err(|e| e.to_string()));
    });
    let index = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the index walk did not end within 20 s (a symlink loop?)")
        .unwrap();
    let paths: Vec<&str> = index.paths().collect();
    assert!(paths.contains(&"include/cute/tensor.hpp") && paths.contains(&"include/cute/alias.hpp"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains("leak") || p.contains("outdir") || p.contains("secret")), "{paths:?}");
    // Each real file once, whatever the loops: no l1/l2/l3/up copies.
    assert!(paths.len() <= 4, "{paths:?}");
    assert!(index.search("TOPSECRET_IDENT", None, 10).unwrap_or_default().is_empty());
    for path in ["include/cute/leak.hpp", "include/cute/outdir/secret.h", "cute/leak.hpp"] {
        assert_eq!(index.read_file(path, 1, 1), Err(ReadError::NotFound(path.to_string())), "{path}");
    }
    let escape = dir.path().join("outside/secret.h").display().to_string();
    assert!(matches!(index.read_file(&escape, 1, 1), Err(ReadError::OutsideTree(_))));
}

/// A FIFO (no writer: opening it for reading would wait for ever) and a link
/// to a device named like headers: the walk skips both by their type, the
/// index is built and the process can exit.
#[test]
fn a_fifo_or_a_device_in_the_tree_is_skipped_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = plant(dir.path());
    let fifo = root.join("include/cute/pipe.hpp");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    // Inside the tree by its canonical path, so only the type keeps it out.
    std::fs::create_dir_all(root.join("include/cutlass/dev")).unwrap();
    symlink(&fifo, root.join("include/cutlass/dev/linked_pipe.h")).unwrap();
    let (tx, rx) = mpsc::channel();
    let r = root.clone();
    std::thread::spawn(move || {
        let _ = tx.send(Index::build(&r).map_err(|e| e.to_string()));
    });
    let index = rx.recv_timeout(Duration::from_secs(20)).expect("the index hung on a FIFO").unwrap();
    let paths: Vec<&str> = index.paths().collect();
    assert!(paths.contains(&"include/cute/tensor.hpp"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.contains("pipe")), "{paths:?}");
}
