//! `rpcbench tx --landing blocks` against the mock Solana node (in-process, 127.0.0.1:0): one
//! `blockSubscribe` instead of a subscription per transaction, every transaction still with
//! one final outcome; a node that refuses the block stream is named, with a fallback to
//! polling or exit 2 under `--require-ws`; `processed` is refused before anything is sent.

use std::process::Output;

use common::{count, rpcbench, solana_node};
use rpcbench::mock::{MockServer, SolanaTxOptions};
use serde_json::Value;

mod common;

/// A Solana mock node, taking transactions when `transactions`.
fn mock_node(transactions: bool) -> MockServer {
    solana_node(transactions.then(SolanaTxOptions::default))
}

/// Sends 200 transfers at 200/s to `url`, landing seen by blocks at `commitment`, plus `extra`.
fn send(url: &str, commitment: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "tx",
        url,
        "--senders",
        "2",
        "--rate",
        "200",
        "-n",
        "200",
        "--commitment",
        commitment,
        "--skip-preflight",
        "--landing",
        "blocks",
        "-f",
        "json",
    ];
    args.extend_from_slice(extra);
    rpcbench(&args)
}

#[test]
fn with_landing_blocks_every_transfer_lands_through_one_block_subscription_and_none_per_transaction() {
    let node = mock_node(true);
    let output = send(&node.url(), "confirmed", &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert_eq!(report["landing_seen_by"], "blockSubscribe (signatures)", "{report}");
    assert_eq!(count(&report, "sent"), 200, "{report}");
    assert_eq!(count(&report, "landed"), 200, "every transaction is found in a block: {report}");
    assert_eq!(count(&report, "subscriptions"), 0, "no subscription per transaction: {report}");
    assert_eq!(report["identity_holds"], true, "{report}");
    // Confirmed: the block's notification comes a slot after the block, so never before the
    // transaction's own slot.
    assert!(report["slots_after_send"]["p50"].as_u64().unwrap() >= 1, "{report}");
}

#[test]
fn a_node_refusing_block_subscribe_is_named_and_exits_2_under_require_ws_or_falls_back_to_polling() {
    // The WebSocket of a node without transactions answers blockSubscribe "Method not found".
    let node = mock_node(true);
    let refusing = mock_node(false);
    let ws = refusing.url().replacen("http://", "ws://", 1);
    let output = send(&node.url(), "confirmed", &["--ws", &ws, "--require-ws"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--require-ws") && stderr.contains("blockSubscribe"), "{stderr}");
    let output = send(&node.url(), "confirmed", &["--ws", &ws]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("no blockSubscribe") && stderr.contains("polling"), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert_eq!(count(&report, "landed"), 200, "{report}");
    assert!(report["landing_seen_by"].as_str().unwrap().starts_with("getSignatureStatuses"), "{report}");
}

#[test]
fn landing_blocks_at_processed_is_refused_with_exit_2_before_anything_is_sent() {
    let node = mock_node(true);
    let output = send(&node.url(), "processed", &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--landing blocks") && stderr.contains("confirmed"), "{stderr}");
}
