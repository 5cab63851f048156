//! A `grpc://` Geyser endpoint as the target of `run` and `compare`: what only JSON-RPC or TLS
//! has is refused before any call, naming its flag, and the endpoint's head is followed by its
//! own unary `GetSlot` call, with its `x-token`.

use super::*;

use rpcbench::mock::{GeyserMock, GeyserMockOptions};

#[test]
fn a_grpc_target_refuses_what_only_json_rpc_or_tls_has_naming_the_flag() {
    // Nothing listens on these ports: every refusal comes before any call.
    let url = "grpc://127.0.0.1:1";
    // gRPC is HTTP/2 always; a flag naming the other HTTP/2 (TLS for grpc://, cleartext for
    // grpcs://) contradicts the URL. It was taken as an https:// flag ("for http:// use
    // --h2c") before, and --h2c on grpcs:// passed silently.
    assert_usage_error(&["run", url, "-m", "GetSlot", "--http2", "-n", "1"], "--http2: ");
    assert_usage_error(&["run", "grpcs://127.0.0.1:1", "-m", "GetSlot", "--h2c", "-n", "1"], "--h2c: ");
    // Params were dropped without a word: a unary call is sent with its default fields.
    assert_usage_error(&["run", url, "-m", "GetSlot", "-p", "[1]", "-n", "1"], "--params: ");
    // A suite's pools were sampled over JSON-RPC from the Geyser endpoint, which failed as the
    // target's fault (exit 1, "GrpcStatus(12)").
    assert_usage_error(&["run", url, "--suite", "solana-rpc", "-n", "1"], "--suite: ");
    assert_usage_error(
        &["compare", "a=grpc://127.0.0.1:1", "b=grpc://127.0.0.1:2", "--suite", "solana-rpc"],
        "--suite: ",
    );
    // A token a header cannot carry was named as -H ("--header: a header gRPC cannot carry"),
    // and the token is never quoted.
    let output = rpcbench(&["run", url, "-m", "GetSlot", "-n", "1", "--x-token", "sec\u{1}ret-55ab"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--x-token: must be printable ASCII"), "{}", stderr(&output));
    assert!(!stderr(&output).contains("ret-55ab"), "{}", stderr(&output));
}

#[test]
fn a_flag_that_says_what_a_grpc_url_already_says_is_no_error() {
    let feed = GeyserMock::start(GeyserMockOptions::default()).expect("the gRPC feed starts");
    let output = rpcbench(&["run", &feed.url(), "-m", "GetSlot", "--h2c", "-n", "20", "-f", "json", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["outcomes"]["ok"], 20, "{json}");
}

#[test]
fn a_geyser_endpoints_head_is_followed_by_its_get_slot_call_with_its_token() {
    let options = GeyserMockOptions {
        slot_time: std::time::Duration::from_millis(50),
        x_token: Some("heads-secret-2b7d".into()),
        ..Default::default()
    };
    let feed = GeyserMock::start(options).expect("the gRPC feed starts");
    let url = feed.url();
    let (a, b) = (format!("a={url}"), format!("b={url}"));
    // GetSlot is a chain's call: the heads are followed by default in a comparison. They were
    // polled with JSON-RPC's eth_blockNumber/getSlot, which a Geyser endpoint does not answer:
    // every sample failed, and the report said 0 samples without a word. A poll may take at
    // most the heads interval (200 ms by default) and counts as failed past it: on a loaded
    // 2-core machine a debug build's GetSlot can take that long, and one late poll made `failed`
    // 1. With 1 s a poll that fails is one that could not be answered at all.
    let output = rpcbench(&[
        "compare",
        &a,
        &b,
        "--heads-interval",
        "1s",
        "-m",
        "GetSlot",
        "-n",
        "300",
        "--rate",
        "300",
        "--x-token",
        "heads-secret-2b7d",
        "-f",
        "json",
        "-q",
    ]);
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(!printed.contains("heads-secret-2b7d"), "{printed}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    for run in json["runs"].as_array().expect("runs") {
        let heads = &run["report"]["heads"]["targets"][0];
        assert!(heads["samples"].as_u64().unwrap_or(0) > 0, "{heads}");
        assert_eq!(heads["failed"], 0, "{heads}");
    }
}
