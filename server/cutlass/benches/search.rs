//! Index build time and per-query latency on the installed CUTLASS tree.
//! `cargo bench -p kernelpro-cutlass` (goal: under 50 ms per query).

use kernelpro_cutlass::{Index, find_root};
use std::path::PathBuf;
use std::time::Instant;

const QUERIES: [(&str, Option<&str>); 10] = [
    ("make_tiled_mma", None),
    ("SM90_64x128x16_F32BF16BF16_SS", None),
    ("local_tile", None),
    ("Tensor", None),
    ("cute::gemm", None),
    ("TMA_LOAD", Some("include/cute/**")),
    ("warp specialized", None),
    ("make_tma_copy partition", None),
    (r"/SM90_64x\d+x16_F32BF16BF16_SS/", None),
    ("cp_async_fence", Some("examples/**")),
];
const REPEATS: usize = 20;

fn main() {
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let root = find_root(None, &[repo]).expect(kernelpro_cutlass::CUTLASS_INSTALL_HINT);
    let index = Index::build(&root).expect("index");
    let stats = index.stats();
    println!(
        "index: {} files, {:.1} MB, {} identifiers, {} postings, built in {:.0} ms",
        stats.files,
        stats.bytes as f64 / 1e6,
        stats.identifiers,
        stats.postings,
        stats.build_time.as_secs_f64() * 1e3
    );
    let mut worst = 0.0f64;
    for (query, glob) in QUERIES {
        let mut times = Vec::with_capacity(REPEATS);
        let mut hits = 0;
        for _ in 0..REPEATS {
            let t = Instant::now();
            hits = index.search(query, glob, 10).expect("query").len();
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        let (median, max) = (times[REPEATS / 2], times[REPEATS - 1]);
        worst = worst.max(max);
        println!("{median:>8.2} ms median {max:>8.2} ms max  {hits:>2} hits  {query:?} {glob:?}");
    }
    println!("worst query: {worst:.2} ms (goal < 50 ms)");
}
