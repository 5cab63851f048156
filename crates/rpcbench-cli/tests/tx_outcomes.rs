//! What happens to `rpcbench tx`'s transactions after their send, against the mock Ethereum
//! node's fault knobs (started in-process on 127.0.0.1:0): reorgs noticed and counted,
//! reverted receipts, dropped transactions looked up; every transaction one final outcome.

use std::time::Duration;

use common::{count, ethereum_node as node, ethereum_outcomes_add_up, tx_report};
use rpcbench::mock::TxPoolOptions;
use serde_json::Value;

mod common;

/// The report of a run from two dev senders with `extra` flags.
fn two_senders_report(url: &str, extra: &[&str]) -> Value {
    tx_report(url, &[&["--dev", "--senders", "2"][..], extra].concat())
}

#[test]
fn transactions_a_reorg_moves_to_a_later_block_are_counted_reorged_out_and_still_have_one_outcome() {
    // A reorg every 2 blocks moves the last block's transactions into the new one. rpcbench
    // notices a move only if it read the block before the reorg replaced it, within a block
    // time: 300 ms blocks were too short beside a `yes` (load 9: 100 included, none noticed
    // reorged out in 4 blocks), so blocks come every second; and the landing thread stays in
    // the ordinary class (`--helper-threads ordinary`): in the idle class, on a machine other
    // work keeps busy, it got no CPU for seconds and read no block before its reorg (1 of 10
    // runs beside a `yes`, load 6).
    let pool = TxPoolOptions { reorg_every: 2, reorg_depth: 1, ..TxPoolOptions::default() };
    let node = node(Duration::from_secs(1), pool);
    let args = ["--rate", "50", "-n", "100", "--inclusion-timeout", "20s", "--helper-threads", "ordinary"];
    let report = two_senders_report(&node.url(), &args);
    ethereum_outcomes_add_up(&report);
    assert_eq!(count(&report, "included"), 100, "every one lands (again): {report}");
    assert!(count(&report, "reorged_out") > 0, "moved transactions are noticed: {report}");
    assert!(count(&report, "reorgs") > 0, "{report}");
}

#[test]
fn transactions_whose_call_data_reverts_are_counted_reverted_from_their_receipts() {
    let node = node(Duration::from_millis(100), TxPoolOptions::default());
    let to = "0x3535353535353535353535353535353535353535";
    let report = two_senders_report(
        &node.url(),
        &[
            "--rate",
            "100",
            "-n",
            "30",
            "--to",
            to,
            "--data",
            "fe00",
            "--gas-limit",
            "30000",
            "--inclusion-timeout",
            "20s",
        ],
    );
    ethereum_outcomes_add_up(&report);
    assert_eq!((count(&report, "reverted"), count(&report, "included")), (30, 0), "{report}");
    assert_eq!(count(&report, "receipts_read"), 30, "{report}");
    let fine = two_senders_report(&node.url(), &["--rate", "100", "-n", "10", "--inclusion-timeout", "20s"]);
    assert_eq!((count(&fine, "reverted"), count(&fine, "included")), (0, 10), "{fine}");
}

#[test]
fn a_transaction_dropped_from_the_pool_is_looked_up_after_the_timeout_and_counted_gone() {
    let pool = TxPoolOptions { drop_share: 0.3, ..TxPoolOptions::default() };
    let node = node(Duration::from_millis(100), pool);
    let report = two_senders_report(&node.url(), &["--rate", "100", "-n", "40", "--inclusion-timeout", "2s"]);
    ethereum_outcomes_add_up(&report);
    let dropped = count(&report, "dropped");
    assert!(dropped > 0, "30% of the pool is dropped: {report}");
    let causes = report["dropped_by_cause"].as_object().expect("the causes");
    let sum: u64 = causes.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(sum, dropped, "each dropped one has one cause: {report}");
    // The dropped ones are unknown to the node with their nonce free ("gone"); those behind
    // them wait on the nonce gap for good ("still pooled").
    assert!(causes["gone"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(causes["not_looked_up"], 0, "{report}");
}
