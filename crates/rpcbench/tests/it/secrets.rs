//! Secrets and terminal safety against servers that answer with what they were sent: a
//! JSON-RPC error message quoting the request's head (key in the path, query values, the
//! Authorization header) never reaches a report, a results file, a sampling error or the
//! equality check; a URL's user name and password are sent as Basic credentials and never
//! shown; control characters in server text are escaped in every text output.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcbench::client::Endpoint;
use rpcbench::compare::{check_equal, render_equal_markdown, render_equal_text, EqualOptions};
use rpcbench::engine::config::RunConfig;
use rpcbench::engine::{Run, StopHandle};
use rpcbench::plan::sample::{sample, SampleChain, SampleOptions};
use rpcbench::report::{render_csv, render_html, render_markdown, render_text, RunReport};
use rpcbench::results::{ResultsFile, SavedRun};
use serde_json::json;

use crate::util::{closed_loop, json_200, requests, TestServer};

/// A server that answers every request with a JSON-RPC error whose message is `message` of the
/// request's head (its request line and headers, as received).
fn echoing_server(message: impl Fn(&str) -> String + Send + Sync + 'static) -> TestServer {
    TestServer::start(move |request| {
        let body = json!({
            "jsonrpc": "2.0",
            "id": request.id,
            "error": { "code": -32001, "message": message(&request.head) },
        });
        json_200(&body.to_string())
    })
}

/// Runs the configuration and returns every output a user can see of it: the text and JSON
/// reports, the results file, and the results file rendered again in every `report` format.
fn every_output(config: &RunConfig) -> Vec<(&'static str, String)> {
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(config, &record);
    assert!(!report.outcomes.rpc_errors.is_empty(), "the server answered errors: {report:?}");
    let file = ResultsFile::from_run(config, &record, std::time::SystemTime::now());
    let saved =
        SavedRun::new(ResultsFile::from_json(&file.to_json(), std::path::Path::new("r.json")).unwrap(), "r")
            .unwrap();
    let runs = std::slice::from_ref(&saved);
    vec![
        ("text", render_text(&report)),
        ("json", report.to_json()),
        ("results file", file.to_json()),
        ("report text", render_text(&saved.report)),
        ("report json", saved.report.to_json()),
        ("report markdown", render_markdown(runs)),
        ("report html", render_html(runs)),
        ("report csv", render_csv(runs)),
    ]
}

fn assert_hidden(outputs: &[(&str, String)], secrets: &[&str]) {
    for (format, output) in outputs {
        for secret in secrets {
            assert!(!output.contains(secret), "{format} shows {secret}:\n{output}");
        }
    }
}

const PATH_KEY: &str = "9aa3d95b3bc440fa88ea12eaa4456161";
const QUERY_VALUE: &str = "hunter2secret";
const BEARER: &str = "bearer-token-77";
const HEADER_KEY: &str = "hk-value-42";

#[test]
fn secrets_echoed_by_a_server_are_scrubbed_from_reports_and_results_files() {
    let server = echoing_server(|head| format!("denied {head}"));
    let url = format!("{}v3/{PATH_KEY}?apikey={QUERY_VALUE}&chain=1", server.url());
    let mut config = closed_loop(&url, 1, requests(5));
    config.headers.push(("Authorization".into(), format!("Bearer {BEARER}")));
    config.headers.push(("X-Api-Key".into(), HEADER_KEY.into()));
    let outputs = every_output(&config);
    assert_hidden(&outputs, &[PATH_KEY, QUERY_VALUE, BEARER, HEADER_KEY]);
    // The message is still there, with the secrets masked.
    let (_, json) = &outputs[1];
    assert!(json.contains("denied POST /v3/***?apikey=***&chain=1 HTTP/1.1"), "{json}");
    assert!(json.contains("Authorization: ***"), "{json}");
}

#[test]
fn secrets_cut_in_half_by_the_message_bound_are_still_masked() {
    // The server's message is longer than the recorder keeps: the cut may fall inside the
    // bearer token, whose first half must not be shown either.
    let padding = "p".repeat(rpcbench::outcome::MAX_MESSAGE_CHARS - 12);
    let server = echoing_server(move |_| format!("{padding}Bearer {BEARER} more"));
    let mut config = closed_loop(&server.url(), 1, requests(3));
    config.headers.push(("Authorization".into(), format!("Bearer {BEARER}")));
    let outputs = every_output(&config);
    assert_hidden(&outputs, &[BEARER, &BEARER[..7]]);
    let (_, json) = &outputs[1];
    assert!(json.contains("p***…"), "{json}");
}

#[test]
fn secrets_of_uncommon_shapes_are_masked_and_scrubbed() {
    // A letters-only key after a provider prefix, `jwt` and `sig` query values, and headers
    // whose names say nothing of secrets.
    let key = "AbCdEfGhIjKlMnOpQr";
    let (jwt, sig, header_jwt, pass, session) =
        ("eyJhbGciOi.jwtbody", "sig-0042", "hdr.jwt.value", "pass-word-9", "sess-id-1234");
    let server = echoing_server(|head| format!("denied {head}"));
    let url = format!("{}v2/{key}?jwt={jwt}&sig={sig}", server.url());
    let mut config = closed_loop(&url, 1, requests(3));
    config.headers.push(("X-JWT".into(), header_jwt.into()));
    config.headers.push(("X-Pass".into(), pass.into()));
    config.headers.push(("X-Session".into(), session.into()));
    config.headers.push(("Accept".into(), "application/json".into()));
    let outputs = every_output(&config);
    assert_hidden(&outputs, &[key, jwt, sig, header_jwt, pass, session]);
    let (_, results) = &outputs[2];
    assert!(results.contains("/v2/***?jwt=***&sig=***"), "{results}");
    for shown in ["X-JWT: ***", "X-Pass: ***", "X-Session: ***", "Accept: application/json"] {
        assert!(results.contains(shown), "{shown}: {results}");
    }
}

#[test]
fn secrets_in_the_url_userinfo_are_sent_as_basic_auth_and_never_shown() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let heads = seen.clone();
    let server = echoing_server(move |head| {
        heads.lock().unwrap().push(head.to_string());
        format!("who are you? {head}")
    });
    let url = server.url().replacen("http://", "http://alice:s3cr3t-pw@", 1);
    let config = closed_loop(&url, 1, requests(3));
    let outputs = every_output(&config);
    // base64("alice:s3cr3t-pw"), as curl sends it.
    let basic = "YWxpY2U6czNjcjN0LXB3";
    let heads = seen.lock().unwrap().clone();
    assert_eq!(heads.len(), 3);
    for head in &heads {
        assert!(head.contains(&format!("Authorization: Basic {basic}\r\n")), "{head}");
    }
    assert_hidden(&outputs, &["alice", "s3cr3t-pw", basic]);
    let (_, text) = &outputs[0];
    assert!(text.contains("http://***:***@127.0.0.1:"), "{text}");
    // One-off calls (sampling, the equality check) send the credentials too.
    let endpoint = Endpoint::from_config(&config, Duration::from_secs(5)).unwrap();
    let err = endpoint.call("getSlot", None).unwrap_err().to_string();
    assert_eq!(seen.lock().unwrap().len(), 4);
    assert!(seen.lock().unwrap()[3].contains(basic));
    assert!(!err.contains(basic) && !err.contains("s3cr3t-pw") && err.contains("who are you?"), "{err}");
}

#[test]
fn secrets_echoed_to_sampling_are_scrubbed_from_its_errors() {
    let server = echoing_server(|head| format!("denied {head}"));
    let url = format!("{}v3/{PATH_KEY}?apikey={QUERY_VALUE}", server.url());
    let mut config = closed_loop(&url, 1, requests(1));
    config.headers.push(("Authorization".into(), format!("Bearer {BEARER}")));
    let endpoint = Endpoint::from_config(&config, Duration::from_secs(5)).unwrap();
    for chain in [Some(SampleChain::Solana), Some(SampleChain::Ethereum), None] {
        let options =
            SampleOptions { chain, window: 5, timeout: Duration::from_secs(5), ..SampleOptions::default() };
        let err = sample(&endpoint, &options).unwrap_err().to_string();
        assert!(err.contains("denied POST /v3/***"), "{chain:?}: {err}");
        for secret in [PATH_KEY, QUERY_VALUE, BEARER] {
            assert!(!err.contains(secret), "{chain:?}: {secret} in {err}");
        }
    }
}

#[test]
fn secrets_echoed_in_answers_are_scrubbed_from_the_equality_check() {
    // One target echoes its request into the result (and an object key), the other answers 1.
    let echo = TestServer::start(|request| {
        let body =
            json!({"jsonrpc": "2.0", "id": request.id, "result": { request.head.clone(): request.head }});
        json_200(&body.to_string())
    });
    let plain = TestServer::start(|request| {
        json_200(&json!({"jsonrpc": "2.0", "id": request.id, "result": 1}).to_string())
    });
    let endpoint = |url: String| {
        let mut config = closed_loop(&url, 1, requests(1));
        config.headers.push(("Authorization".into(), format!("Bearer {BEARER}")));
        Endpoint::from_config(&config, Duration::from_secs(5)).unwrap()
    };
    let targets = [
        ("plain".to_string(), endpoint(format!("{}v3/{PATH_KEY}", plain.url()))),
        ("echo".to_string(), endpoint(format!("{}?apikey={QUERY_VALUE}", echo.url()))),
    ];
    let options = EqualOptions { rounds: 2, ignore: Vec::new(), timeout: Duration::from_secs(5) };
    let report = check_equal(&targets, "getSlot", None, &options, &StopHandle::new());
    assert!(!report.all_equal());
    let outputs = [
        ("text", render_equal_text(&report)),
        ("markdown", render_equal_markdown(&report)),
        ("json", report.to_json()),
    ];
    assert_hidden(&outputs, &[PATH_KEY, QUERY_VALUE, BEARER]);
    assert!(outputs[2].1.contains("Authorization: ***"), "{}", outputs[2].1);
}

/// Text that clears the screen, rings the bell, returns the carriage and opens a C1 sequence.
const HOSTILE: &str = "\u{1b}[2J\u{1b}[H\u{7}gone\rover\u{9b}31m";

fn assert_no_controls(format: &str, output: &str) {
    let raw: Vec<char> = output.chars().filter(|c| c.is_control() && *c != '\n').collect();
    assert!(raw.is_empty(), "{format} has raw control characters {raw:?}:\n{output}");
}

#[test]
fn control_characters_from_a_server_are_escaped_in_every_text_output() {
    let server = echoing_server(|_| format!("boom {HOSTILE}"));
    let config = closed_loop(&server.url(), 1, requests(3));
    let outputs = every_output(&config);
    for (format, output) in &outputs {
        assert_no_controls(format, output);
    }
    let (_, text) = &outputs[0];
    assert!(text.contains("boom \\u001b[2J\\u001b[H\\u0007gone over\\u009b31m"), "{text}");
    // The equality check: a hostile object key (it names the field that differs) and value.
    let hostile = TestServer::start(|request| {
        json_200(&json!({"jsonrpc": "2.0", "id": request.id, "result": { HOSTILE: HOSTILE }}).to_string())
    });
    let plain = TestServer::start(|request| {
        json_200(&json!({"jsonrpc": "2.0", "id": request.id, "result": { "a": 1 }}).to_string())
    });
    let targets = [
        ("plain".to_string(), Endpoint::parse(&plain.url(), Duration::from_secs(5)).unwrap()),
        ("hostile".to_string(), Endpoint::parse(&hostile.url(), Duration::from_secs(5)).unwrap()),
    ];
    let options = EqualOptions { rounds: 1, ignore: Vec::new(), timeout: Duration::from_secs(5) };
    let report = check_equal(&targets, "getSlot", None, &options, &StopHandle::new());
    assert!(!report.all_equal());
    assert_no_controls("equality text", &render_equal_text(&report));
    assert_no_controls("equality markdown", &render_equal_markdown(&report));
}
