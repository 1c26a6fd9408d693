//! Search and read on the real installed CUTLASS tree (the pinned
//! `nvidia-cutlass` wheel in the project venv).

use kernelpro_cutlass::{Index, ReadError, find_root};
use std::path::PathBuf;
use std::sync::OnceLock;

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let root = find_root(None, &[repo])
            .unwrap_or_else(|| panic!("no CUTLASS tree: {}", kernelpro_cutlass::CUTLASS_INSTALL_HINT));
        Index::build(&root).expect("index the CUTLASS tree")
    })
}

/// The top hits for `query` each contain it, and the first one is in `first_path`
/// at a line that reads like `first_line`.
fn check(query: &str, first_path: &str, first_line: &str) {
    let hits = index().search(query, None, 10).unwrap();
    assert!(!hits.is_empty(), "no hits for {query}");
    for hit in &hits {
        let text = index().read_file(&hit.path, hit.line, hit.line).unwrap().text;
        assert!(text.contains(query), "{}:{} does not contain {query}: {text}", hit.path, hit.line);
        assert!(hit.context.contains(query));
    }
    let top = &hits[0];
    let line = index().read_file(&top.path, top.line, top.line).unwrap().text;
    assert_eq!((top.path.as_str(), line.trim()), (first_path, first_line), "{query}: {hits:#?}");
}

#[test]
fn identifier_queries_rank_definitions_first() {
    check("make_tiled_mma", "include/cute/atom/mma_atom.hpp", "make_tiled_mma(MMA_Atom<MMA_Op> const& mma_atom,");
    check(
        "SM90_64x128x16_F32BF16BF16_SS",
        "include/cute/atom/mma_traits_sm90_gmma.hpp",
        "using SM90_64x128x16_F32BF16BF16_SS = SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<tnspA, tnspB, scaleA, scaleB>;",
    );
    check("local_tile", "include/cute/tensor_impl.hpp", "local_tile(Tensor    && tensor,");
}

#[test]
fn path_glob_restricts_hits() {
    let hits = index().search("make_tiled_mma", Some("examples/**"), 20).unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h.path.starts_with("examples/")), "{hits:#?}");
    // A glob without the leading directory matches any tail of the path.
    let hits = index().search("local_tile", Some("cute/algorithm/*.hpp"), 20).unwrap();
    assert!(hits.iter().all(|h| h.path.starts_with("include/cute/algorithm/")), "{hits:#?}");
}

#[test]
fn phrase_and_regex_queries() {
    let hits = index().search("warp specialized", None, 5).unwrap();
    assert_eq!(hits.len(), 5);
    assert!(
        hits.iter()
            .all(|h| h.context.to_lowercase().contains("warp specialized")
                || h.context.to_lowercase().contains("warp"))
    );
    // Words that never share a line: the rarest one, in files holding both.
    let hits = index().search("make_tma_copy partition", None, 5).unwrap();
    assert_eq!(hits.len(), 5);
    for hit in &hits {
        let text = std::fs::read_to_string(index().root().join(&hit.path)).unwrap();
        let in_context = hit.context.contains("make_tma_copy") || hit.context.contains("partition");
        assert!(in_context && text.contains("make_tma_copy") && text.contains("partition"), "{hit:#?}");
    }
    let hits = index().search(r"/struct MMA_64x\d+x16_F32BF16BF16_SS\b/", None, 50).unwrap();
    assert!(hits.len() >= 3, "{hits:#?}");
    assert!(hits.iter().all(|h| h.path.starts_with("include/cute/arch/mma_sm90_gmma")), "{hits:#?}");
    assert!(index().search("/(unclosed/", None, 5).is_err());
    assert!(index().search("no_such_identifier_anywhere_xyz", None, 5).unwrap().is_empty());
}

#[test]
fn hits_are_bounded() {
    let index = index();
    let hits = index.search("Tensor", None, 7).unwrap();
    assert_eq!(hits.len(), 7);
    let limits = index.search_limits;
    for hit in &hits {
        assert!(hit.context.lines().count() <= 2 * limits.context_lines + 1);
        assert!(hit.context.lines().all(|l| l.chars().count() <= limits.max_line_chars));
        assert!(hits.iter().filter(|h| h.path == hit.path).count() <= limits.hits_per_file);
    }
}

#[test]
fn read_is_bounded_and_stays_in_the_tree() {
    let index = index();
    let slice = index.read_file("include/cute/tensor_impl.hpp", 10, 12).unwrap();
    assert_eq!((slice.start, slice.end, slice.text.lines().count(), slice.truncated), (10, 12, 3, false));
    // `cute/...` is taken as `include/cute/...`; the line cap applies.
    let slice = index.read_file("cute/tensor_impl.hpp", 1, 100_000).unwrap();
    assert_eq!((slice.start, slice.end, slice.truncated), (1, index.read_limits.max_lines, true));
    assert!(slice.text.len() <= index.read_limits.max_bytes);
    // Past the end of the file is clamped, not an error.
    let total = slice.total_lines;
    let tail = index.read_file("include/cute/tensor_impl.hpp", total - 1, total + 50).unwrap();
    assert_eq!((tail.end, tail.truncated), (total, false));
    assert!(matches!(
        index.read_file("include/cute/tensor_impl.hpp", total + 1, total + 2),
        Err(ReadError::BadRange { .. })
    ));

    for escape in ["../../../../etc/passwd", "include/../../secret", "/etc/passwd"] {
        assert_eq!(index.read_file(escape, 1, 5), Err(ReadError::OutsideTree(escape.to_owned())));
    }
    let inside = index.root().join("include/cute/tensor_impl.hpp");
    assert_eq!(index.read_file(inside.to_str().unwrap(), 1, 1).unwrap().path, "include/cute/tensor_impl.hpp");
    assert!(matches!(index.read_file("include/cute/nope.hpp", 1, 5), Err(ReadError::NotFound(_))));
}

#[test]
fn byte_cap_cuts_at_a_line_boundary() {
    let mut index = Index::build(index().root()).unwrap();
    index.read_limits.max_bytes = 1000;
    let slice = index.read_file("include/cute/tensor_impl.hpp", 1, 300).unwrap();
    assert!(slice.text.len() <= 1000 && slice.truncated && slice.end < 300);
    assert_eq!(slice.text.lines().count(), slice.end);
}
