//! The static tools against the registry of finding codes (`kernelpro_model::CODES`).

mod common;

use common::{Fixture, findings};
use kernelpro_lints::{Thresholds, registry};
use kernelpro_model::{Code, Origin};

/// Every static code of the registry has one tool, and every finding on the
/// planted fixture (one problem per tool) carries its tool's registry code.
#[test]
fn static_tools_emit_registry_codes() {
    let tools: Vec<Code> = registry(&Thresholds::default()).iter().map(|t| t.code()).collect();
    let mut sorted = tools.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), tools.len(), "two tools share a code");
    let mut registry_static: Vec<Code> = Code::all().filter(|c| c.origin() == Origin::Static).collect();
    registry_static.sort();
    assert_eq!(sorted, registry_static, "static tools against the registry's static codes");
    for f in findings(&Fixture::planted(), true, &Thresholds::default()) {
        let code = f.code.as_deref().and_then(Code::parse);
        assert!(
            code.is_some_and(|c| tools.contains(&c)),
            "{:?} on line {} is no static tool's registry code",
            f.code,
            f.span.start.line + 1
        );
        assert_eq!(f.doc_url, code.map(Code::doc_url));
    }
}
