//! An LLM that fails (here: an endpoint that redirects, which is never
//! followed) is told to the user in the optimize result's notes, not only
//! kept in the proposer.

use kernelpro_config::settings::Settings;
use kernelpro_optimize::{OptimizeRequest, optimize};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;

/// Answers every request with a redirect to another host.
fn redirecting_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 302 Found\r\nLocation: http://elsewhere.invalid/v1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    url
}

#[test]
fn llm_failures_reach_the_results_notes() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/launch_site/rmsnorm.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut settings = Settings { trusted: true, ..Default::default() };
    settings.llm.enabled = true;
    settings.llm.endpoint = Some(redirecting_server());
    settings.llm.model = Some("fake-model".into());
    settings.optimize.evaluator = "stub:1.5".into();
    settings.optimize.budget = 3;
    settings.optimize.time_secs = 120;
    let req = OptimizeRequest {
        path,
        text,
        kernel: "rmsnorm_fwd".into(),
        settings,
        strategy: kernelpro_search::Strategy::Greedy,
        seed: 1,
        exe: "kernelpro".into(),
        llm_key: Some(kernelpro_llm::ApiKey::new("sk-test-key")),
        profile_import: None,
        recipes: None,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = optimize(&req, rt.handle().clone(), Default::default(), |_| {}).unwrap();
    let note = out
        .notes
        .iter()
        .find(|n| n.starts_with("the LLM proposer failed"))
        .unwrap_or_else(|| panic!("{:?}", out.notes));
    assert!(note.contains("redirect to http://elsewhere.invalid/v1"), "{note}");
    assert!(!note.contains("sk-test-key"), "{note}");
    // Why it stopped, in words.
    assert!(["evaluation budget (3) spent", "no rewrite left to try"].contains(&out.stop.as_str()), "{}", out.stop);
}
