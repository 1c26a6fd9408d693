//! The rewrites against the tools, through the registry of finding codes
//! (`kernelpro_model::CODES`): a recipe is tried first for the findings it
//! declares it answers, so each must be a code some tool really emits.

use kernelpro_model::Code;
use kernelpro_recipes::Recipe;
use std::collections::BTreeSet;

/// The codes the static and the profile tools emit.
fn emitted() -> BTreeSet<Code> {
    let statics =
        kernelpro_lints::registry(&kernelpro_lints::Thresholds::default()).iter().map(|t| t.code()).collect::<Vec<_>>();
    statics.into_iter().chain(kernelpro_profile::tools::TOOLS.iter().map(|t| t.code)).collect()
}

fn recipes() -> Vec<Box<dyn Recipe>> {
    let mut all = kernelpro_recipes::all();
    all.push(Box::new(kernelpro_cute::CuteGemmRecipe));
    all
}

#[test]
fn every_registry_code_has_a_tool() {
    let registry: BTreeSet<Code> = Code::all().collect();
    assert_eq!(emitted(), registry);
}

#[test]
fn every_recipe_answers_codes_some_tool_emits() {
    let emitted = emitted();
    for r in recipes() {
        assert!(!r.answers().is_empty(), "{} answers no finding", r.name());
        for code in r.answers() {
            assert!(emitted.contains(code), "{} answers {code}, which no tool emits", r.name());
        }
    }
}

/// Every problem a tool reports has a rewrite that is tried first for it.
#[test]
fn every_code_has_a_rewrite() {
    let answered: BTreeSet<Code> = recipes().iter().flat_map(|r| r.answers().to_vec()).collect();
    let missing: Vec<&str> = Code::all().filter(|c| !answered.contains(c)).map(Code::as_str).collect();
    assert!(missing.is_empty(), "no rewrite answers {missing:?}");
}
