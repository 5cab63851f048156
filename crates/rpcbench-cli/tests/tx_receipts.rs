//! `rpcbench tx --receipts`: which included transactions' receipts are read, against the mock
//! Ethereum node (in-process on 127.0.0.1:0) with call data that always reverts, so every
//! receipt read says reverted and every one not read leaves its transaction included.

use std::time::Duration;

use common::{count, ethereum_node, ethereum_outcomes_add_up, rpcbench};
use rpcbench::mock::TxPoolOptions;
use serde_json::Value;

mod common;

/// Sends `count` reverting calls at 200/s and returns the report in `format`.
fn reverting_run(url: &str, count: &str, receipts: &str, format: &str) -> String {
    let to = "0x3535353535353535353535353535353535353535";
    let args = [
        "tx",
        url,
        "--dev",
        "--senders",
        "2",
        "--rate",
        "200",
        "-n",
        count,
        "--to",
        to,
        "--data",
        "fe00",
        "--gas-limit",
        "30000",
        "--inclusion-timeout",
        "20s",
        "--receipts",
        receipts,
        "-f",
        format,
    ];
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn a_run_that_samples_receipts_says_so_counts_the_unread_included_and_still_adds_up_to_sent() {
    let node = ethereum_node(Duration::from_millis(100), TxPoolOptions::default());
    let sampled: Value = serde_json::from_str(&reverting_run(&node.url(), "100", "10%", "json")).unwrap();
    ethereum_outcomes_add_up(&sampled);
    assert_eq!(sampled["receipts_checked"], "a 10% sample", "{sampled}");
    let reverted = count(&sampled, "reverted");
    // Every receipt read says reverted; the rest were not read and count as included.
    assert_eq!(count(&sampled, "receipts_read"), reverted, "{sampled}");
    assert!(reverted > 0 && reverted < 40, "about a tenth of 100 read: {sampled}");
    assert_eq!(reverted + count(&sampled, "included"), 100, "{sampled}");

    let none: Value = serde_json::from_str(&reverting_run(&node.url(), "20", "none", "json")).unwrap();
    ethereum_outcomes_add_up(&none);
    assert_eq!(none["receipts_checked"], "none", "{none}");
    assert_eq!(
        (count(&none, "receipts_read"), count(&none, "reverted"), count(&none, "included")),
        (0, 0, 20)
    );

    let text = reverting_run(&node.url(), "20", "10%", "text");
    assert!(text.contains("receipts checked: a 10% sample"), "the header says it sampled: {text}");
    assert!(text.contains("from a 10% sample of receipts only"), "so does the reverted line: {text}");
}
