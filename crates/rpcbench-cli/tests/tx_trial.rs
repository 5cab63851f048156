//! A new user's trial of `rpcbench tx` on both chains against the mocks on 127.0.0.1:0: what
//! the trial found wrong (bad input that was taken, a fallback that sent nothing), each
//! behaviour kept by a test of counts and exit codes, never of timing.

use common::{count, solana_node, solana_outcomes_add_up, tx_report};
use rpcbench::mock::SolanaTxOptions;
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
