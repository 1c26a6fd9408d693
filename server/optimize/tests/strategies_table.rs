//! `bench/strategies_table.py` (docs/benchmarks.md's MCTS vs greedy vs random table from a
//! `bench/strategies_gpu.sh` raw folder): its doctests, a hand-made folder among them.

#[test]
fn the_strategies_table_script_passes_its_doctests() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new("python3")
        .args(["-m", "doctest", "bench/strategies_table.py"])
        .current_dir(root)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
