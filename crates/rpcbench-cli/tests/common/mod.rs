//! What the `tx` test files share: the built binary, the mock nodes they start (in-process on
//! 127.0.0.1:0) and the counts of a JSON report. Each test file takes what it needs.

#![allow(dead_code)]

use std::process::{Command, Output};
use std::time::Duration;

use rpcbench::mock::{Chain, MockOptions, MockServer, SolanaTxOptions, TxPoolOptions};
use serde_json::Value;

/// The Solana mock's slot time, in milliseconds.
pub const SLOT_MS: u64 = 100;

/// The built `rpcbench` binary run with `args`.
pub fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

/// The mock Ethereum node on chain 31337 with its mempool (`pool`), a block every `block_time`.
pub fn ethereum_node(block_time: Duration, pool: TxPoolOptions) -> MockServer {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = block_time;
    options.chain_id = 31337;
    options.tx_pool = Some(pool);
    MockServer::start(options).expect("the mock node starts")
}

/// The mock Solana node, a slot every [`SLOT_MS`], taking transactions (`transactions`) or not.
pub fn solana_node(transactions: Option<SolanaTxOptions>) -> MockServer {
    let mut options = MockOptions::new(Chain::Solana);
    options.slot_time = Duration::from_millis(SLOT_MS);
    options.solana_tx = transactions;
    MockServer::start(options).expect("the mock node starts")
}

/// `rpcbench tx URL ARGS...`.
pub fn tx(url: &str, args: &[&str]) -> Output {
    rpcbench(&[&["tx", url][..], args].concat())
}

/// The JSON report of `rpcbench tx URL ARGS... -f json`, which must exit 0.
pub fn tx_report(url: &str, args: &[&str]) -> Value {
    report_of(&tx(url, &[args, &["-f", "json"][..]].concat()))
}

/// The JSON report a run wrote on stdout; it must have exited 0.
pub fn report_of(output: &Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("a JSON report")
}

/// Nothing was sent from the dev mnemonic's first account (its pending nonce is still 0).
pub fn nothing_was_sent(url: &str) {
    let first =
        rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 0, 1).unwrap()[0].address();
    let params = serde_json::json!([first.to_string(), "pending"]);
    let nonce = rpcbench::client::call(url, "eth_getTransactionCount", Some(&params), Duration::from_secs(5))
        .unwrap();
    assert_eq!(nonce, "0x0", "nothing was sent");
}

/// The count `key` of `report`, which must hold it.
pub fn count(report: &Value, key: &str) -> u64 {
    report[key].as_u64().unwrap_or_else(|| panic!("{key} in {report}"))
}

/// An Ethereum report's final outcomes add up to what was sent, and it says so.
pub fn ethereum_outcomes_add_up(report: &Value) {
    let sum: u64 =
        ["included", "reverted", "dropped", "rejected", "pending"].iter().map(|k| count(report, k)).sum();
    assert_eq!(sum, count(report, "sent"), "{report}");
    assert_eq!(report["identity_holds"], true, "{report}");
}

/// A Solana report's final outcomes add up to what was sent, and it says so.
pub fn solana_outcomes_add_up(report: &Value) {
    let sum: u64 = ["landed", "failed", "expired", "dropped", "rejected", "pending"]
        .iter()
        .map(|k| count(report, k))
        .sum();
    assert_eq!(sum, count(report, "sent"), "{report}");
    assert_eq!(report["identity_holds"], true, "{report}");
}

/// What a run's stderr says of its `what` watch's ends (`warning: the {what} ended: ...`, one
/// line for each of the first [`rpcbench::tx::watch::ENDS_KEPT`], then `ended N more`): the
/// lines said word for word, and the ends in all.
pub fn watch_ends_said(stderr: &str, what: &str) -> (u64, u64) {
    let lines = stderr.matches(&format!("warning: the {what} ended: ")).count() as u64;
    let more_prefix = format!("warning: the {what} ended ");
    let more: u64 = stderr
        .lines()
        .filter_map(|line| line.strip_prefix(&more_prefix))
        .filter_map(|rest| rest.strip_suffix(" more"))
        .map(|times| {
            times.trim_end_matches(" times").trim_end_matches(" time").parse::<u64>().expect("a count")
        })
        .sum();
    (lines, lines + more)
}

/// The ends the client's `what` watch said on stderr, which must add up: each said once (the
/// first [`rpcbench::tx::watch::ENDS_KEPT`] word for word, then a count), and each but
/// possibly the last (the run stopped before it reconnected) followed by a reconnect.
pub fn ends_add_up(stderr: &str, what: &str, reconnects: u64) -> u64 {
    let (lines, ends) = watch_ends_said(stderr, what);
    let kept = rpcbench::tx::watch::ENDS_KEPT as u64;
    assert_eq!(lines, ends.min(kept), "one line per end, the first {kept} word for word: {stderr}");
    assert!(reconnects <= ends && ends <= reconnects + 1, "{reconnects} reconnects, {ends} ends: {stderr}");
    ends
}
