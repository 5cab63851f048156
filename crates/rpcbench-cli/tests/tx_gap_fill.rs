//! `rpcbench tx` on Ethereum whose heads come more than 64 blocks apart (a poll that fell far
//! behind a fast chain, as after a long watch outage): every block of each gap is read, so
//! every transaction is counted included, none dropped. Against a mock node started in-process
//! on 127.0.0.1:0; counts, not times.

use std::time::Duration;

use common::{count, ethereum_node, ethereum_outcomes_add_up, tx_report};
use rpcbench::mock::TxPoolOptions;

mod common;

/// The mock's block time: a head polled every 3 s is about 300 blocks past the last one. The
/// poll hands on the last 64 of them as heads, so the gap below those is over 200 blocks (over
/// 64 even if the mock made blocks at a third of its pace).
const BLOCK_TIME: Duration = Duration::from_millis(10);

#[test]
fn heads_more_than_64_blocks_apart_leave_no_inclusion_unseen() {
    let node = ethereum_node(BLOCK_TIME, TxPoolOptions::default());
    // 200 transfers at 100/s; the head polled every 3 s only, so most transactions are in
    // blocks of a gap between two heads handed on.
    let args = ["--dev", "--senders", "4", "--rate", "100", "-n", "200"];
    let report =
        tx_report(&node.url(), &[&args[..], &["--poll", "3s", "--inclusion-timeout", "30s"]].concat());
    assert_eq!(count(&report, "sent"), 200, "{report}");
    assert_eq!(
        (count(&report, "included"), count(&report, "dropped"), count(&report, "pending")),
        (200, 0, 0),
        "{report}"
    );
    ethereum_outcomes_add_up(&report);
    // Read below the polled heads: their inclusion time is the arrival of the head that
    // revealed their block.
    assert_eq!(count(&report, "included_by_catch_up"), 200, "{report}");
    assert_eq!(count(&report, "block_fetch_failures"), 0, "{report}");
    assert!(count(&report, "heads_seen") >= 2, "{report}");
}
