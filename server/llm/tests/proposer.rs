//! The LLM proposer against a loopback server speaking the OpenAI and
//! Anthropic wire formats with scripted replies.

mod fake_server;

use fake_server::*;
use kernelpro_cutlass::Index;
use kernelpro_llm::{ApiKey, LlmConfig, LlmError, LlmProposer, Provider};
use kernelpro_search::{FindingNote, NodeId, Proposal, ProposeContext, Proposer, SearchMemory};
use serde_json::json;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

const KEY: &str = "sk-fake-KEY-0123456789";

const SOURCE: &str = "#include <cstdio>
// kernelpro: let N = 1 << 20
// kernelpro: tune B in [128, 256]
// kernelpro: grid = ceil_div(N, B)
// kernelpro: block = B
// kernelpro: y = inout float[N]
// kernelpro: x = in float[N]
// kernelpro: n = N
__global__ void saxpy(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0 * x[i] + y[i];
}

int main() { return 0; }
";

const GOOD: &str = "The literal 2.0 promotes to double; use 2.0f.
```cuda
__global__ void saxpy(float* __restrict__ y, const float* __restrict__ x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i] + y[i];
}
```";

fn config(provider: Provider, server: &FakeServer) -> LlmConfig {
    let mut config = LlmConfig::new(provider, &server.url, "fake-model");
    config.enabled = true;
    config.api_key = Some(ApiKey::new(KEY));
    config.request_timeout = Duration::from_secs(10);
    config.backoff = Duration::from_millis(5);
    config.hardware = "NVIDIA H200 (sm_90)".to_owned();
    config
}

/// One proposal for SOURCE from a proposer with `config`.
fn propose(config: LlmConfig, cutlass: Option<Arc<Index>>) -> (LlmProposer, Vec<Proposal>) {
    let mut proposer = LlmProposer::new(config, "saxpy", cutlass).unwrap();
    let memory = SearchMemory::default();
    let findings = [FindingNote::new("Fp64Promotion", "Use float literals (2.0f) in float code.")];
    let ctx = ProposeContext {
        parent: NodeId(0),
        source: SOURCE,
        depth: 0,
        speedup: Some(1.0),
        best_speedup: 1.0,
        findings: &findings,
        failure: None,
        memory: &memory,
        wanted: 1,
    };
    let proposals = proposer.propose(&ctx);
    (proposer, proposals)
}

/// The error of the one failed proposal.
fn failure(
    provider: Provider,
    script: Vec<Scripted>,
    tune: impl FnOnce(&mut LlmConfig),
) -> (LlmError, FakeServer, LlmProposer) {
    let server = FakeServer::start(script);
    let mut config = config(provider, &server);
    tune(&mut config);
    let (proposer, proposals) = propose(config, None);
    assert!(proposals.is_empty());
    let [failure] = proposer.failures() else { panic!("{:?}", proposer.failures()) };
    (failure.error.clone(), server, proposer)
}

fn assert_good(proposals: &[Proposal]) {
    let [proposal] = proposals else { panic!("{proposals:?}") };
    assert_eq!(proposal.recipe, "llm");
    let expected = SOURCE.replace(
        "__global__ void saxpy(float* y, const float* x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0 * x[i] + y[i];",
        "__global__ void saxpy(float* __restrict__ y, const float* __restrict__ x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 2.0f * x[i] + y[i];",
    );
    assert_eq!(proposal.source, expected);
}

#[test]
fn openai_good_reply() {
    let server = FakeServer::start(vec![openai_text(GOOD, "stop")]);
    let (proposer, proposals) = propose(config(Provider::OpenAi, &server), None);
    assert_good(&proposals);
    let [request] = &server.requests()[..] else { panic!() };
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(request.body["model"], "fake-model");
    assert_eq!(request.body["messages"][0]["role"], "system");
    let user = request.body["messages"][1]["content"].as_str().unwrap();
    for part in [
        "if (i < n) y[i] = 2.0 * x[i] + y[i];",
        "- `tune B in [128, 256]`",
        "- Fp64Promotion: Use float literals",
        "NVIDIA H200 (sm_90)",
        // The kernel model's facts: the pattern, each access's form and lane stride, the expert form.
        "## What each thread touches (KernelPro's kernel model)",
        "pattern map",
        "global read x[",
        "lane*1",
        "Expert form of this pattern: a grid-stride loop with 128-bit (float4) loads",
    ] {
        assert!(user.contains(part), "prompt lacks {part}:\n{user}");
    }
    assert!(request.body.get("tools").is_none(), "no CUTLASS index, no tools");
    assert_eq!(
        (proposer.spend().requests, proposer.spend().input_tokens, proposer.spend().output_tokens),
        (1, 100, 50)
    );
}

#[test]
fn anthropic_good_reply() {
    let server = FakeServer::start(vec![anthropic_text(GOOD, "end_turn")]);
    let (_, proposals) = propose(config(Provider::Anthropic, &server), None);
    assert_good(&proposals);
    let [request] = &server.requests()[..] else { panic!() };
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert!(request.body["system"].as_str().unwrap().contains("CUDA performance engineer"));
    assert_eq!(request.body["messages"][0]["role"], "user");
    assert_eq!(request.body["max_tokens"], 8192);
}

#[test]
fn garbled_replies() {
    let (error, ..) = failure(Provider::OpenAi, vec![Scripted::raw("{\"choices\": [")], |_| {});
    assert!(matches!(error, LlmError::Garbled(ref m) if m.starts_with("the reply is not JSON")), "{error}");
    let (error, ..) = failure(Provider::OpenAi, vec![Scripted::json(json!({"object": "chat.completion"}))], |_| {});
    assert_eq!(error, LlmError::Garbled("no `choices` in the reply".to_owned()));
    let (error, ..) =
        failure(Provider::Anthropic, vec![Scripted::json(json!({"type": "message", "content": "hi"}))], |_| {});
    assert_eq!(error, LlmError::Garbled("no `content` array in the reply".to_owned()));
}

#[test]
fn truncated_replies() {
    let cut = &GOOD[..GOOD.len() / 2];
    let (error, ..) = failure(Provider::OpenAi, vec![openai_text(cut, "length")], |_| {});
    assert_eq!(error, LlmError::Truncated);
    let (error, ..) = failure(Provider::Anthropic, vec![anthropic_text(cut, "max_tokens")], |_| {});
    assert_eq!(error, LlmError::Truncated);
    // Cut off without saying so: the unclosed code block gives it away.
    let (error, ..) = failure(Provider::OpenAi, vec![openai_text(cut, "stop")], |_| {});
    assert_eq!(error.to_string(), "the code block is not closed: the reply was cut off");
}

#[test]
fn replies_without_one_good_kernel() {
    let check = |text: &str, expected: &str| {
        let (error, ..) = failure(Provider::OpenAi, vec![openai_text(text, "stop")], |_| {});
        assert_eq!(error.to_string(), expected);
    };
    check("I cannot help with that.", "the reply holds no code block with a `__global__` kernel");
    check(&GOOD.replace("void saxpy", "void saxpy_v2"), "the kernel was renamed to `saxpy_v2`; it must stay `saxpy`");
    check(&format!("{GOOD}\nOr:\n{GOOD}"), "the reply holds 2 code blocks with kernels; exactly one is allowed");
    let (error, ..) = failure(Provider::OpenAi, vec![openai_text(GOOD, "stop")], |c| c.max_reply_bytes = 100);
    assert_eq!(error, LlmError::TooLong(GOOD.len()));
}

#[test]
fn timeout_is_retried_then_fails() {
    let slow = openai_text(GOOD, "stop").delayed(Duration::from_secs(5));
    let (error, server, proposer) = failure(Provider::OpenAi, vec![slow.clone(), slow], |c| {
        c.request_timeout = Duration::from_millis(200);
        c.max_retries = 1;
    });
    assert_eq!(error, LlmError::Timeout);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(proposer.retry_waits(), [Duration::from_millis(5)]);
}

#[test]
fn rate_limit_honours_retry_after() {
    let server = FakeServer::start(vec![
        Scripted::status(429, r#"{"error": {"type": "rate_limit_error"}}"#).header("Retry-After", "1"),
        openai_text(GOOD, "stop"),
    ]);
    let (proposer, proposals) = propose(config(Provider::OpenAi, &server), None);
    assert_good(&proposals);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(proposer.retry_waits(), [Duration::from_secs(1)], "Retry-After wins over the 5 ms backoff");
}

#[test]
fn server_errors_back_off_exponentially_then_fail() {
    let error500 = Scripted::status(500, r#"{"error": "overloaded"}"#);
    let (error, server, proposer) =
        failure(Provider::Anthropic, vec![error500.clone(), error500.clone(), error500], |c| c.max_retries = 2);
    assert_eq!(error, LlmError::Http { status: 500, body: r#"{"error": "overloaded"}"#.to_owned() });
    assert_eq!(server.requests().len(), 3);
    assert_eq!(proposer.retry_waits(), [Duration::from_millis(5), Duration::from_millis(10)]);
    // A client error is not retried.
    let (error, server, _) = failure(Provider::OpenAi, vec![Scripted::status(400, "bad model")], |_| {});
    assert_eq!(error, LlmError::Http { status: 400, body: "bad model".to_owned() });
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn nothing_is_sent_unless_enabled() {
    let (error, server, _) = failure(Provider::OpenAi, vec![openai_text(GOOD, "stop")], |c| c.enabled = false);
    assert_eq!(error, LlmError::Disabled);
    assert!(server.requests().is_empty());
}

#[test]
fn token_budget_stops_the_search() {
    let server = FakeServer::start(vec![openai_text(GOOD, "stop"), openai_text(GOOD, "stop")]);
    let mut config = config(Provider::OpenAi, &server);
    config.max_total_tokens = 120; // the first reply uses 150
    let (mut proposer, proposals) = propose(config, None);
    assert_eq!(proposals.len(), 1);
    let memory = SearchMemory::default();
    let ctx = ProposeContext {
        parent: NodeId(1),
        source: SOURCE,
        depth: 1,
        speedup: Some(1.0),
        best_speedup: 1.0,
        findings: &[],
        failure: None,
        memory: &memory,
        wanted: 2,
    };
    assert!(proposer.propose(&ctx).is_empty());
    assert_eq!(proposer.failures()[0].error, LlmError::Budget("150 tokens used, the cap is 120".to_owned()));
    assert_eq!(proposer.failures().len(), 1, "a budget failure ends the batch");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn key_never_shown() {
    // The server echoes the request headers (with the key) in its error body.
    let echo = Scripted::status(401, "unauthorized").echoing();
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        let (error, server, proposer) = failure(provider, vec![echo.clone()], |_| {});
        assert!(server.requests()[0].headers.iter().any(|(_, v)| v.contains(KEY)), "the key was sent");
        let LlmError::Http { status: 401, ref body } = error else { panic!("{error:?}") };
        assert!(body.contains("[redacted]"), "{body}");
        let shown =
            [error.to_string(), format!("{error:?}"), format!("{proposer:?}"), format!("{:?}", proposer.failures())];
        for text in shown {
            assert!(!text.contains(KEY), "key leaked: {text}");
        }
    }
    // Unreachable endpoint: the transport error holds the URL, not the key.
    let mut config = LlmConfig::new(Provider::OpenAi, "http://127.0.0.1:9", "m");
    config.enabled = true;
    config.api_key = Some(ApiKey::new(KEY));
    config.max_retries = 0;
    let (proposer, _) = propose(config.clone(), None);
    let text = format!("{} {:?} {config:?}", proposer.failures()[0].error, proposer.failures());
    assert!(text.contains("could not reach") && !text.contains(KEY), "{text}");
}

fn cutlass() -> Arc<Index> {
    static INDEX: OnceLock<Arc<Index>> = OnceLock::new();
    INDEX
        .get_or_init(|| {
            let repo = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
            let root = kernelpro_cutlass::find_root(None, &[repo]).expect(kernelpro_cutlass::CUTLASS_INSTALL_HINT);
            Arc::new(Index::build(&root).unwrap())
        })
        .clone()
}

const MMA_ATOM: &str = "include/cute/atom/mma_atom.hpp";

#[test]
fn openai_tool_calling_conversation() {
    let server = FakeServer::start(vec![
        openai_tool_call(
            "call_1",
            "search_cutlass",
            json!({"query": "make_tiled_mma", "path_glob": "include/cute/**"}),
        ),
        openai_tool_call("call_2", "read_cutlass_file", json!({"path": MMA_ATOM, "start_line": 1, "end_line": 30})),
        openai_text(GOOD, "stop"),
    ]);
    let (_, proposals) = propose(config(Provider::OpenAi, &server), Some(cutlass()));
    assert_good(&proposals);
    assert_eq!(
        proposals[0].note.as_deref(),
        Some(format!("CUTLASS files read: {MMA_ATOM}; CUTLASS searches: make_tiled_mma").as_str())
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["search_cutlass", "read_cutlass_file"]);
    assert_eq!(requests[0].body["tool_choice"], "auto");
    assert!(requests[0].body["messages"][1]["content"].as_str().unwrap().contains("search_cutlass"));
    // The call is echoed back, then its result as a `tool` message.
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!((messages[3]["role"].as_str(), messages[3]["tool_call_id"].as_str()), (Some("tool"), Some("call_1")));
    let search = messages[3]["content"].as_str().unwrap();
    assert!(search.starts_with(&format!("{MMA_ATOM}:")) && search.contains("make_tiled_mma"), "{search}");
    let read = requests[2].body["messages"][5]["content"].as_str().unwrap();
    assert!(read.starts_with(&format!("{MMA_ATOM} lines 1-30 of ")) && read.contains("     1| "), "{read}");
}

#[test]
fn anthropic_tool_calling_conversation() {
    let server = FakeServer::start(vec![
        anthropic_tool_use("toolu_1", "search_cutlass", json!({"query": "SM90_64x128x16_F32BF16BF16_SS"})),
        anthropic_tool_use("toolu_2", "read_cutlass_file", json!({"path": MMA_ATOM, "start_line": 10, "end_line": 12})),
        anthropic_text(GOOD, "end_turn"),
    ]);
    let (_, proposals) = propose(config(Provider::Anthropic, &server), Some(cutlass()));
    assert_good(&proposals);
    assert!(proposals[0].note.as_deref().unwrap().contains(MMA_ATOM));

    let requests = server.requests();
    let tools: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["search_cutlass", "read_cutlass_file"]);
    assert!(requests[0].body["tools"][0]["input_schema"]["properties"]["query"].is_object());
    assert_eq!(requests[0].body["tool_choice"], json!({"type": "auto"}));
    let messages = requests[2].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    let result = &messages[2]["content"][0];
    assert_eq!((result["type"].as_str(), result["tool_use_id"].as_str()), (Some("tool_result"), Some("toolu_1")));
    assert!(result["content"].as_str().unwrap().contains("include/cute/atom/mma_traits_sm90_gmma.hpp:"));
    let read = messages[4]["content"][0]["content"].as_str().unwrap();
    assert_eq!(read.lines().count(), 4, "{read}");
}

#[test]
fn tool_calls_and_result_bytes_are_capped() {
    let server = FakeServer::start(vec![
        openai_tool_call("call_1", "search_cutlass", json!({"query": "Tensor"})),
        openai_tool_call(
            "call_2",
            "read_cutlass_file",
            json!({"path": "../../etc/passwd", "start_line": 1, "end_line": 3}),
        ),
        openai_text(GOOD, "stop"),
    ]);
    let mut config = config(Provider::OpenAi, &server);
    config.max_tool_calls = 1;
    config.max_tool_result_bytes = 600;
    let (_, proposals) = propose(config, Some(cutlass()));
    assert_good(&proposals);
    let requests = server.requests();
    let first = requests[1].body["messages"][3]["content"].as_str().unwrap();
    assert!(first.len() <= 600 && first.ends_with("[cut at 600 bytes]\n"), "{first}");
    assert_eq!(requests[1].body["tool_choice"], "none", "no calls left");
    let refused = requests[2].body["messages"][5]["content"].as_str().unwrap();
    assert!(refused.starts_with("error: no tool calls left"), "{refused}");
}

#[test]
fn redirects_are_not_followed_with_the_key_or_the_source() {
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        for status in [301, 302, 303, 307, 308] {
            // Where a hostile endpoint sends the client: it must hear nothing.
            let target = FakeServer::start(vec![openai_text(GOOD, "stop"); 4]);
            let redirect = Scripted::status(status, "").header("Location", &format!("{}/steal", target.url));
            let (error, endpoint, proposer) = failure(provider, vec![redirect.clone(), redirect], |_| {});
            assert_eq!(
                error,
                LlmError::Redirect { status, location: format!("{}/steal", target.url) },
                "{provider:?} {status}"
            );
            assert!(
                target.requests().is_empty(),
                "{provider:?} {status}: the redirect target got {:?}",
                target.requests()
            );
            assert_eq!(endpoint.requests().len(), 1, "a redirect is not retried");
            let text = format!("{error} {:?}", proposer.failures());
            assert!(
                text.contains("does not follow redirects")
                    && text.contains("kernelpro.llm.endpoint")
                    && !text.contains(KEY),
                "{text}"
            );
        }
    }
}

#[test]
fn candidates_that_include_other_files_are_refused_before_compiling() {
    let check = |reply: String, expected: &str| {
        let (error, ..) = failure(Provider::OpenAi, vec![openai_text(&reply, "stop")], |_| {});
        assert_eq!(error, LlmError::BadKernel(expected.to_owned()), "{reply}");
    };
    check(
        GOOD.replace("```cuda\n", "```cuda\n#include \"/etc/passwd\"\n"),
        "the candidate was not compiled: `#include \"/etc/passwd\"` is not a CUDA toolkit, CUTLASS or C++ standard header (a candidate may add only those)",
    );
    check(
        GOOD.replace("  int i =", "#if __has_include(\"/home/u/.ssh/id_rsa\")\n#endif\n  int i ="),
        "the candidate was not compiled: it uses `__has_include` (`__has_include ( \"/home/u/.ssh/id_rsa\" )`), which a kernel rewrite must not add: it reaches files or pragmas",
    );
}

/// Issue 30: each spelling that once read a file below the kernel's folder
/// (or told whether one exists) through a candidate. The candidate is refused
/// before it is compiled, and the secret reaches neither the failure, the
/// note the user sees, nor the next request to the model.
#[test]
fn candidates_never_bring_a_projects_secret_back_to_the_model() {
    const SECRET: &str = "hunter2SECRETWORD";
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let toolkit = dir.path().join("toolkit/include");
    std::fs::create_dir_all(project.join(".ssh")).unwrap();
    std::fs::create_dir_all(&toolkit).unwrap();
    std::fs::write(toolkit.join("cuda_fp16.h"), "").unwrap();
    std::fs::write(project.join("saxpy.cu"), SOURCE).unwrap();
    std::fs::write(project.join(".ssh/id_rsa"), format!("{SECRET} private key")).unwrap();
    std::fs::write(project.join(".env"), format!("{SECRET}=1")).unwrap();
    std::os::unix::fs::symlink(project.join(".env"), project.join("settings.h")).unwrap();
    std::os::unix::fs::symlink(project.join(".ssh/id_rsa"), project.join("cuda_fp16.h")).unwrap();
    let policy = kernelpro_llm::IncludePolicy {
        own_file: Some(project.join("saxpy.cu")),
        search_dirs: vec![project.clone()],
        allowed_roots: vec![toolkit.clone()],
    };
    let id_rsa = project.join(".ssh/id_rsa").display().to_string();
    let spellings = [
        format!("int pad;\r#include \"{id_rsa}\"\r"),
        format!("// a note \\  \n#include \"{id_rsa}\"\n#include \"{id_rsa}\""),
        format!("#inc\\ \nlude \"{id_rsa}\""),
        "#include \".ssh/id_rsa\"".to_owned(),
        "#include \".env\"".to_owned(),
        "#include <.env>".to_owned(),
        "#include \"settings.h\"".to_owned(),
        "#include <cuda_fp16.h>".to_owned(),
        "#include_next <.env>".to_owned(),
        "#define PATH \".env\"\n#include PATH".to_owned(),
        "#define CAT(a, b) a ## b\n#if CAT(__has_, include)(\".env\")\n#error yes\n#endif".to_owned(),
        "#if __has_include(\".ssh/id_rsa\")\n#error yes\n#endif".to_owned(),
        "_Pragma(\"GCC dependency \\\".env\\\"\")".to_owned(),
        "??=include \".env\"".to_owned(),
    ];
    for spelling in &spellings {
        let reply = GOOD.replace("  int i =", &format!("{spelling}\n  int i ="));
        // The refused reply, then a good one: the second request is the "next prompt".
        let server = FakeServer::start(vec![openai_text(&reply, "stop"), openai_text(GOOD, "stop")]);
        let proposer =
            LlmProposer::new(config(Provider::OpenAi, &server), "saxpy", None).unwrap().with_includes(policy.clone());
        let log = proposer.failure_log();
        let mut proposer = proposer;
        let memory = SearchMemory::default();
        let ctx = ProposeContext {
            parent: NodeId(0),
            source: SOURCE,
            depth: 0,
            speedup: Some(1.0),
            best_speedup: 1.0,
            findings: &[],
            failure: None,
            memory: &memory,
            wanted: 2,
        };
        let proposals = proposer.propose(&ctx);
        // Only the good reply becomes a candidate: the refused one is never compiled.
        assert_eq!(proposals.len(), 1, "{spelling:?}");
        assert!(!proposals[0].source.contains(".env") && !proposals[0].source.contains("id_rsa"), "{spelling:?}");
        let [refused] = proposer.failures() else { panic!("{spelling:?}: {:?}", proposer.failures()) };
        assert!(matches!(refused.error, LlmError::BadKernel(_)), "{spelling:?}: {:?}", refused.error);
        let note = log.summary().expect("the user is told");
        assert!(note.starts_with("the LLM proposer failed once: the candidate was not compiled: "), "{note}");
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        for text in [note, format!("{:?}", proposer.failures()), requests[1].body.to_string()] {
            assert!(!text.contains(SECRET), "{spelling:?}: {text}");
        }
    }
}

#[test]
fn a_cancelled_search_ends_the_request_in_flight() {
    let server = FakeServer::start(vec![openai_text(GOOD, "stop").delayed(Duration::from_secs(30))]);
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut proposer =
        LlmProposer::new(config(Provider::OpenAi, &server), "saxpy", None).unwrap().with_cancel(cancel.clone());
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        cancel.cancel();
    });
    let memory = SearchMemory::default();
    let ctx = ProposeContext {
        parent: NodeId(0),
        source: SOURCE,
        depth: 0,
        speedup: Some(1.0),
        best_speedup: 1.0,
        findings: &[],
        failure: None,
        memory: &memory,
        wanted: 1,
    };
    let started = std::time::Instant::now();
    assert!(proposer.propose(&ctx).is_empty());
    canceller.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the request outlived its cancellation: {:?}",
        started.elapsed()
    );
    assert_eq!(proposer.failures().last().map(|f| f.error.clone()), Some(LlmError::Cancelled));
}
