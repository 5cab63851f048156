//! `rpcbench tx` on Solana watched by a `signatureSubscribe` per transaction, against the mock
//! node started in-process on 127.0.0.1:0: a slot that lands many of the run's signatures at
//! once is a burst the watch takes, not a reason for the node to close it; and a watch whose
//! connection the node does close says why, on stderr and in the report, and reconnects.

use std::time::Duration;

use common::{count, ends_add_up, rpcbench};
use rpcbench::mock::{Chain, MockOptions, MockServer, SolanaTxOptions};
use serde_json::Value;

mod common;

/// A Solana mock with its transactions on, its slots `slot_ms` apart, closing (1008) a
/// connection with more than `max_queue` notifications unsent.
fn node(slot_ms: u64, max_queue: usize, delay: Option<Duration>) -> MockServer {
    let mut mock = MockOptions::new(Chain::Solana);
    mock.slot_time = Duration::from_millis(slot_ms);
    mock.solana_tx = Some(SolanaTxOptions::default());
    mock.ws_max_queue = Some(max_queue);
    mock.ws_delay = delay;
    MockServer::start(mock).expect("the mock node starts")
}

/// 400 transfers at 200/s, each subscribed before its send and looked up `inclusion_timeout`
/// after it unless seen landed before, as JSON; and the stderr.
fn run_400(url: &str, inclusion_timeout: &str) -> (Value, String) {
    run_at_200(url, &["-n", "400"], inclusion_timeout)
}

/// Transfers at 200/s for `bound` (`-n N` or `-d DURATION`), as [`run_400`] does.
fn run_at_200(url: &str, bound: &[&str], inclusion_timeout: &str) -> (Value, String) {
    let mut args = vec!["tx", url, "--senders", "2", "--rate", "200"];
    args.extend_from_slice(bound);
    args.extend_from_slice(&[
        "--commitment",
        "processed",
        "--skip-preflight",
        "--landing",
        "signatures",
        "--inclusion-timeout",
        inclusion_timeout,
        // The helper threads (signer, watch) in the ordinary class: in the idle class, on a
        // core three busy loops kept busy, sends stalled for 7-15 s (the watch's landings seen
        // 3.4 s after their send, 207-340 of 400 found only by the lookup; 63 sends unanswered
        // in one run, 3 expired in another, sent 12 s after they were signed).
        "--helper-threads",
        "ordinary",
        "-f",
        "json",
    ]);
    let output = rpcbench(&args);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report = serde_json::from_slice(&output.stdout).expect("a JSON report");
    (report, stderr)
}

#[test]
fn a_flood_of_signature_subscriptions_at_start_keeps_the_watch_open() {
    // Slots half a second apart: each lands about 100 of the run's signatures at once, far
    // more than the 8 notifications a connection may leave unsent. A client that reads them
    // is not a slow subscriber: the node writes the burst and the watch stays open.
    let node = node(500, 8, None);
    // Each landing seen by its notification, none by the lookup at the timeout: a generous
    // one (the run ends once every one is seen), so that a watch starved of CPU for a second
    // or two on a busy machine is not taken for one that lost a notification (which still
    // waits it out and is counted unseen).
    let (report, stderr) = run_400(&node.url(), "20s");
    assert_eq!(report["watch_ended"], Value::Null, "{report}");
    assert!(!stderr.contains("signature watch ended"), "{stderr}");
    assert_eq!(node.ws_stats().subscribers_closed_slow, 0, "{:?}", node.ws_stats());
    assert_eq!(count(&report, "sent"), 400, "{report}");
    assert_eq!(count(&report, "subscriptions"), 400, "every one watched: {report}");
    assert_eq!(count(&report, "sent_unwatched"), 0, "{report}");
    assert_eq!(count(&report, "landed"), 400, "{report}");
    assert_eq!(count(&report, "landed_unseen"), 0, "each landing seen by its notification: {report}");
    assert_eq!(report["identity_holds"], true, "{report}");
}

#[test]
fn a_duration_bound_solana_run_counts_as_subscribed_only_the_transactions_it_sent() {
    // Bound by time: the run ends with transactions signed, subscribed and handed to the
    // pacer still in the ready queue. They were never sent: the report counts none of them.
    let node = node(100, 100_000, None);
    let (report, _stderr) = run_at_200(&node.url(), &["-d", "1s"], "20s");
    assert_eq!(report["watch_ended"], Value::Null, "{report}");
    let sent = count(&report, "sent");
    assert!(sent > 0, "{report}");
    assert_eq!(count(&report, "subscriptions"), sent, "each one sent subscribed, once: {report}");
    assert_eq!(count(&report, "sent_unwatched"), 0, "{report}");
    assert_eq!(count(&report, "landed"), sent, "{report}");
    assert_eq!(report["identity_holds"], true, "{report}");
}

#[test]
fn a_signature_watch_that_ends_says_why_in_the_report_and_reconnects() {
    // Notifications held back a second while the next slot comes 100 ms later, with at most
    // one unsent allowed: the node closes the watch's connection as a slow subscriber (1008),
    // each time it reconnected and the notifications pile up again.
    let node = node(100, 1, Some(Duration::from_secs(1)));
    let (report, stderr) = run_400(&node.url(), "2s");
    let closed = node.ws_stats().subscribers_closed_slow;
    assert!(closed >= 1, "{:?}", node.ws_stats());
    let why = report["watch_ended"].as_str().unwrap_or_else(|| panic!("no watch_ended: {report}"));
    assert!(why.contains("1008") && why.contains("subscription queue overflow"), "{why}");
    assert!(stderr.contains(why), "{stderr}");
    let reconnects = count(&report, "watch_reconnects");
    // One line per end the client saw, against its own count of them (against the node's
    // closes, the lines would be one short if the node closed a connection as the run stopped
    // the watch; and a close while the watch subscribed again is a failed attempt, not an end).
    let ends = ends_add_up(&stderr, "signature watch", reconnects);
    assert!(ends >= 1 && ends <= closed, "{ends} ends said, {closed} closes: {stderr}");
    // What went out while no connection was open is subscribed on the reconnect or, at the
    // run's end, unwatched; either way looked up once not seen landed: nothing is lost.
    assert!(count(&report, "subscriptions") + count(&report, "sent_unwatched") <= 400, "{report}");
    assert_eq!(count(&report, "landed"), 400, "{report}");
    assert_eq!(report["identity_holds"], true, "{report}");
    let text = rpcbench::report::tx::render_tx_text(&report);
    assert!(
        text.contains(&format!(
            "landing watch ended    {why}; reconnected {}",
            rpcbench::report::tx::times(reconnects)
        )),
        "{text}"
    );
}
