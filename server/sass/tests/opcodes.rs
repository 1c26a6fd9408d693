//! Every opcode in every SASS fixture is documented, and docs/opcodes.md is the
//! table rendered.

use kernelpro_sass::{disasm::parse_sass, opcodes};

macro_rules! fixtures {
    ($($path:literal),* $(,)?) => {
        [$(($path, include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/", $path)))),*]
    };
}

#[test]
fn every_fixture_opcode_is_documented() {
    let listings = fixtures![
        "h200-probe/sass.txt",
        "h200-probe/nvdisasm_g.txt",
        "sass/kernels_sm90.nvdisasm.txt",
        "sass/kernels_sm80.nvdisasm.txt",
        "sass/kernels_sm80.cuobjdump.txt",
        "sass/inlined_sm90.nvdisasm.txt",
        "sass/inlined_sm80.nvdisasm.txt",
    ];
    let mut missing = std::collections::BTreeSet::new();
    let mut seen = 0;
    for (path, text) in listings {
        for function in parse_sass(text).functions {
            for ins in &function.instructions {
                seen += 1;
                if opcodes::lookup(&ins.opcode).is_none() {
                    missing.insert(format!("{} ({path})", ins.opcode));
                }
            }
        }
    }
    assert!(seen > 1000, "only {seen} instructions parsed");
    assert!(missing.is_empty(), "undocumented: {missing:?}");
}

#[test]
fn opcodes_doc_is_current() {
    expect_test::expect_file!["../../../docs/opcodes.md"].assert_eq(&opcodes::markdown());
}
