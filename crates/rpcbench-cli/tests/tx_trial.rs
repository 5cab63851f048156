//! A new user's trial of `rpcbench tx` on both chains against the mocks on 127.0.0.1:0: what
//! the trial found wrong (bad input that was taken, a fallback that sent nothing), each
//! behaviour kept by a test of counts and exit codes, never of timing.

use std::time::Duration;

use common::{count, ethereum_node, nothing_was_sent, solana_node, solana_outcomes_add_up, tx, tx_report};
use rpcbench::mock::{SolanaTxOptions, TxPoolOptions};
use serde_json::Value;

mod common;

/// A ws:// URL on 127.0.0.1 where nothing listens (a port taken from the system, then freed).
fn closed_ws_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("ws://127.0.0.1:{port}/")
}

/// With no WebSocket at `--ws`, Solana's `tx` says so and polls getSignatureStatuses instead:
/// it must still send every transaction (the watch that could not start closed the queue the
/// signer fills, and the run sent none).
#[test]
fn a_solana_run_whose_signature_watch_cannot_connect_polls_and_still_sends_every_transaction() {
    let node = solana_node(Some(SolanaTxOptions::default()));
    let ws = closed_ws_url();
    let report: Value = tx_report(&node.url(), &["--ws", &ws, "--rate", "50", "-n", "20"]);
    assert_eq!(report["landing_seen_by"], "getSignatureStatuses every 100 ms", "{report}");
    assert_eq!(count(&report, "sent"), 20, "{report}");
    assert_eq!(count(&report, "landed"), 20, "{report}");
    solana_outcomes_add_up(&report);
}

/// The exit status and the one line on standard error of a run that must be refused.
fn refused(url: &str, args: &[&str]) -> (Option<i32>, String) {
    let output = tx(url, args);
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (output.status.code(), stderr)
}

/// `--ws` that is no WebSocket URL is a mistake in the flag: exit 2 naming it, before anything
/// is sent, on either chain (it fell back to polling, exit 0, the typo unseen).
#[test]
fn a_ws_flag_that_is_not_a_websocket_url_exits_2_naming_it_before_anything_is_sent() {
    let node = ethereum_node(Duration::from_millis(100), TxPoolOptions::default());
    let url = node.url();
    for ws in ["notaurl", "http://127.0.0.1:1/?api-key=SECRET123", "ws://"] {
        let (code, stderr) = refused(&url, &["--dev", "--rate", "10", "-n", "5", "--ws", ws]);
        assert_eq!(code, Some(2), "--ws {ws}: {stderr}");
        assert!(stderr.starts_with("error: --ws: "), "--ws {ws}: {stderr}");
        assert!(!stderr.contains("SECRET123"), "{stderr}");
    }
    nothing_was_sent(&url);
    let solana = solana_node(Some(SolanaTxOptions::default()));
    let (code, stderr) = refused(&solana.url(), &["--rate", "10", "-n", "5", "--ws", "https://127.0.0.1:1/"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--ws: ") && stderr.contains("not a ws:// or wss:// URL"), "{stderr}");
}

/// A `--max-fee` below the priority fee (given or the node's) is the flag's fault: exit 2
/// naming both, before anything is sent (it exited 1, as a node failure does).
#[test]
fn a_max_fee_below_the_priority_fee_exits_2_before_anything_is_sent() {
    let node = ethereum_node(Duration::from_millis(100), TxPoolOptions::default());
    let url = node.url();
    let given = ["--dev", "--rate", "10", "-n", "5", "--max-fee", "1gwei", "--priority-fee", "2gwei"];
    let (code, stderr) = refused(&url, &given);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--max-fee 1.000 gwei is below the priority fee 2.000 gwei"), "{stderr}");
    let (code, stderr) = refused(&url, &["--dev", "--rate", "10", "-n", "5", "--max-fee", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("(eth_maxPriorityFeePerGas)"), "{stderr}");
    nothing_was_sent(&url);
}
