//! `rpcbench tx` whose landing watch's connection the node closes mid-run (the mock's
//! `ws_close_after`: a close frame 1001 "going away" a stated time after each connection
//! opened, as a provider's idle limit or deploy does), against mock nodes started in-process on
//! 127.0.0.1:0: every watch (Ethereum's newHeads, Solana's per-signature subscriptions and its
//! block stream) reconnects, says so, and every transaction still gets its one outcome; a node
//! that refuses every reconnect (`ws_max_upgrades`) leaves the reason in the report. Counts,
//! not times: each run lasts two seconds of sends, each connection half a second. The runs keep
//! their helper threads in the ordinary class (`--helper-threads ordinary`): in the idle class,
//! on a machine whose cores other work keeps busy (other tests, the in-process mock), the
//! watch got too little CPU to subscribe within a connection's half second (seen under two
//! busy loops: 288 of 400 sends unwatched, every landing found only by the lookup).

use std::process::Output;
use std::time::Duration;

use common::{count, ends_add_up, ethereum_outcomes_add_up, rpcbench, SLOT_MS};
use rpcbench::mock::{Chain, MockOptions, MockServer, SolanaTxOptions, TxPoolOptions};
use serde_json::Value;

mod common;

/// How long the mock keeps each WebSocket connection open.
const CLOSE_AFTER: Duration = Duration::from_millis(500);

/// A mock of `chain` closing every WebSocket connection after [`CLOSE_AFTER`], accepting at
/// most `upgrades` of them over its life.
fn closing_node(chain: Chain, upgrades: Option<u64>) -> MockServer {
    let mut options = MockOptions::new(chain);
    options.slot_time = Duration::from_millis(SLOT_MS);
    match chain {
        Chain::Solana => options.solana_tx = Some(SolanaTxOptions::default()),
        _ => {
            options.chain_id = 31337;
            options.tx_pool = Some(TxPoolOptions::default());
        }
    }
    options.ws_close_after = Some(CLOSE_AFTER);
    options.ws_max_upgrades = upgrades;
    MockServer::start(options).expect("the mock node starts")
}

/// The run's JSON report, which matches schema/tx.schema.json, and stderr; it must exit 0.
fn report_of(output: Output) -> (Value, String) {
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/tx.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    if let Err(errors) = schema.validate(&report) {
        let messages: Vec<String> = errors.map(|e| format!("{}: {e}", e.instance_path)).collect();
        panic!("the report does not match tx.schema.json:\n{}\n{report}", messages.join("\n"));
    };
    (report, stderr)
}

/// 200 transfers at 100/s from 4 dev senders, with `inclusion_timeout`.
fn ethereum_run(url: &str, inclusion_timeout: &str) -> (Value, String) {
    report_of(rpcbench(&[
        "tx",
        url,
        "--dev",
        "--senders",
        "4",
        "--rate",
        "100",
        "-n",
        "200",
        "--inclusion-timeout",
        inclusion_timeout,
        "--helper-threads",
        "ordinary",
        "-f",
        "json",
    ]))
}

/// 400 transfers at 200/s, landings seen by `landing` at `commitment`, each looked up
/// `inclusion_timeout` after its send unless seen landed before.
fn solana_run(url: &str, landing: &str, commitment: &str, inclusion_timeout: &str) -> (Value, String) {
    solana_run_for(url, "-n", "400", landing, commitment, inclusion_timeout)
}

/// Transfers at 200/s for `bound` `count` (`-n 400`, `-d 2s`), as [`solana_run`] does.
fn solana_run_for(
    url: &str,
    bound: &str,
    count: &str,
    landing: &str,
    commitment: &str,
    inclusion_timeout: &str,
) -> (Value, String) {
    report_of(rpcbench(&[
        "tx",
        url,
        "--senders",
        "2",
        "--rate",
        "200",
        bound,
        count,
        "--commitment",
        commitment,
        "--skip-preflight",
        "--landing",
        landing,
        "--inclusion-timeout",
        inclusion_timeout,
        "--helper-threads",
        "ordinary",
        "-f",
        "json",
    ]))
}

/// The node closed the watch (1001 "going away") at least once and it reconnected each time
/// but possibly the last (the run may end before it): said in the report and on stderr, one
/// line per end, every close of the node's seen but possibly one at the run's end (compared
/// with the node's closes alone, the lines would be one short when a close's timer fired as
/// the run stopped the watch).
fn reconnected(report: &Value, stderr: &str, node: &MockServer, what: &str) {
    let closed = node.ws_stats().closed_on_schedule;
    assert!(closed >= 1, "{:?}", node.ws_stats());
    let why = report["watch_ended"].as_str().unwrap_or_else(|| panic!("no watch_ended: {report}"));
    assert!(why.contains("1001") && why.contains("going away"), "{why}");
    let reconnects = count(report, "watch_reconnects");
    assert!(reconnects >= 1, "{reconnects} reconnects, {closed} closes: {report}");
    assert_eq!(report["watch_gave_up"], false, "{report}");
    // The client saw every close of the node's but possibly the last: the mock counts a close
    // when its timer fires, and one that fired as the run stopped the watch (or that the
    // mock's connection task, running late, took before the client's own close it had read)
    // is one the client never saw as an end.
    let ends = ends_add_up(stderr, what, reconnects);
    assert!(ends <= closed && closed <= ends + 1, "{ends} ends said, {closed} closes: {stderr}");
    let reconnected = format!("the {what} reconnected {}", rpcbench::report::tx::times(reconnects));
    assert!(stderr.contains(&reconnected), "{stderr}");
}

#[test]
fn a_head_watch_that_is_closed_mid_run_reconnects_and_every_transaction_is_included() {
    let node = closing_node(Chain::Ethereum, None);
    let (report, stderr) = ethereum_run(&node.url(), "20s");
    reconnected(&report, &stderr, &node, "newHeads watch");
    assert_eq!(count(&report, "sent"), 200, "{report}");
    assert_eq!(count(&report, "accepted"), 200, "{report}");
    // The blocks of each gap are read by number: nothing waits out the inclusion timeout.
    assert_eq!(count(&report, "included"), 200, "every one included at a head: {report}");
    assert_eq!(count(&report, "dropped"), 0, "{report}");
    assert!(count(&report, "included_by_catch_up") <= 200, "{report}");
    ethereum_outcomes_add_up(&report);
    let text = rpcbench::report::tx::render_tx_text(&report);
    assert!(
        text.contains("head watch ended") && text.contains("going away") && text.contains("times; "),
        "{text}"
    );
}

#[test]
fn a_signature_watch_that_is_closed_mid_run_reconnects_and_every_transaction_lands() {
    let node = closing_node(Chain::Solana, None);
    // Each landing is seen by its notification or the reconnect's check, never by the lookup
    // at the timeout: a generous one (the run ends once every one is seen), so that a watch
    // starved of CPU for a second or two on a busy machine (a reconnect's gap, a notification
    // read late) is not taken for one that lost a landing, which still waits it out.
    let (report, stderr) = solana_run(&node.url(), "signatures", "processed", "20s");
    reconnected(&report, &stderr, &node, "signature watch");
    assert_eq!(count(&report, "sent"), 400, "{report}");
    // Those sent while no connection was open were subscribed after their send, on the
    // reconnect, and checked once with getSignatureStatuses (landed_by_catch_up).
    let subscribed = count(&report, "subscriptions");
    assert!(subscribed > 0 && subscribed <= 400, "{report}");
    assert!(count(&report, "landed_by_catch_up") <= 400, "{report}");
    assert_eq!(count(&report, "landed"), 400, "{report}");
    assert_eq!(
        count(&report, "landed_unseen"),
        0,
        "each landing seen, none only found by the lookup: {report}"
    );
    assert_eq!(report["identity_holds"], true, "{report}");
    // The run ends on a connection it reconnected or, past its last close, in a gap whose
    // sends it kept to subscribe: those alone may go unwatched. Each send is counted once:
    // subscribed (its first subscription the node answered, on the reconnect for those sent
    // in a gap or awaiting the answer when the connection ended), refused, or unwatched.
    let unwatched = count(&report, "sent_unwatched");
    assert!(unwatched < 400, "{report}");
    assert_eq!(subscribed + count(&report, "subscriptions_refused") + unwatched, 400, "{report}");
}

#[test]
fn a_block_stream_that_is_closed_mid_run_reconnects() {
    let node = closing_node(Chain::Solana, None);
    let (report, stderr) = solana_run(&node.url(), "blocks", "confirmed", "2s");
    reconnected(&report, &stderr, &node, "block stream");
    assert_eq!(count(&report, "sent"), 400, "{report}");
    assert_eq!(count(&report, "landed"), 400, "{report}");
    assert_eq!(report["identity_holds"], true, "{report}");
}

#[test]
fn a_head_watch_whose_node_refuses_every_reconnect_ends_with_the_reason_and_polls_the_head_meanwhile() {
    let node = closing_node(Chain::Ethereum, Some(1));
    let (report, stderr) = ethereum_run(&node.url(), "20s");
    assert!(node.ws_stats().upgrades_refused >= 1, "{:?}", node.ws_stats());
    assert_eq!(count(&report, "watch_reconnects"), 0, "{report}");
    let why = report["watch_ended"].as_str().unwrap_or_else(|| panic!("no watch_ended: {report}"));
    assert!(
        why.contains("going away") && why.contains("reconnecting failed") && why.contains("503"),
        "{why}"
    );
    assert!(
        stderr
            .contains("the newHeads watch ended: the node closed the connection with code 1001: going away"),
        "{stderr}"
    );
    assert_eq!(count(&report, "sent"), 200, "{report}");
    // Without a connection the head is polled: what the blocks after the end carry is
    // included, seen at a polled head (counted as catch-up); none waits out the timeout.
    assert_eq!(count(&report, "included"), 200, "{report}");
    assert!(count(&report, "included_by_catch_up") > 0, "{report}");
    ethereum_outcomes_add_up(&report);
}

#[test]
fn a_signature_watch_whose_node_refuses_every_reconnect_ends_with_the_reason_and_every_transaction_lands() {
    let node = closing_node(Chain::Solana, Some(1));
    // What went out after the end waits out the timeout before its lookup: a short one.
    let (report, stderr) = solana_run(&node.url(), "signatures", "processed", "2s");
    assert_eq!(report["late_sends"]["helper_threads"], "ordinary", "{report}");
    assert!(node.ws_stats().upgrades_refused >= 1, "{:?}", node.ws_stats());
    assert_eq!(count(&report, "watch_reconnects"), 0, "{report}");
    let why = report["watch_ended"].as_str().unwrap_or_else(|| panic!("no watch_ended: {report}"));
    assert!(
        why.contains("going away") && why.contains("reconnecting failed") && why.contains("503"),
        "{why}"
    );
    assert!(
        stderr
            .contains("the signature watch ended: the node closed the connection with code 1001: going away"),
        "{stderr}"
    );
    // What was sent after the end was never subscribed: unwatched, and looked up.
    let unwatched = count(&report, "sent_unwatched");
    assert!(unwatched > 0, "{report}");
    // Those awaiting the node's answer to their subscription when the connection ended were
    // sent unanswered: unwatched too (the test's CI failure: 352 + 32 of 400).
    assert_eq!(count(&report, "subscriptions") + unwatched, 400, "{report}");
    assert_eq!(count(&report, "landed"), 400, "{report}");
    assert_eq!(report["identity_holds"], true, "{report}");
}

#[test]
fn a_duration_bound_solana_run_that_ends_without_its_watch_counts_only_what_it_sent_unwatched() {
    let node = closing_node(Chain::Solana, Some(1));
    // Bound by time: the run ends with transactions signed and handed to the pacer (after the
    // watch's end, without a subscription) still in the ready queue, never sent.
    let (report, _stderr) = solana_run_for(&node.url(), "-d", "2s", "signatures", "processed", "2s");
    assert!(node.ws_stats().upgrades_refused >= 1, "{:?}", node.ws_stats());
    let sent = count(&report, "sent");
    assert!(sent > 0, "{report}");
    let unwatched = count(&report, "sent_unwatched");
    assert!(unwatched > 0, "{report}");
    // Every send counted once: its subscription answered (confirmed or refused) or unwatched;
    // what was left in the queue (never sent) is none of them.
    assert_eq!(
        count(&report, "subscriptions") + count(&report, "subscriptions_refused") + unwatched,
        sent,
        "{report}"
    );
    assert_eq!(report["identity_holds"], true, "{report}");
}
