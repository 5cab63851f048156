//! `rpcbench subscribe` through the library against the mock nodes' WebSocket server on
//! 127.0.0.1: consecutive blocks and slots without gaps, lag behind production, dropped and
//! duplicated notifications counted, subscribe errors, thresholds.

use std::time::Duration;

use rpcbench::engine::config::{Field, Target};
use rpcbench::engine::StopHandle;
use rpcbench::mock::{Chain, MockOptions, MockServer};
use rpcbench::report::subscribe::{SubscribeReport, SubscribeThreshold};
use rpcbench::subscribe::{run, SubscribeConfig, SubscriptionKind};

fn node(chain: Chain, options: impl FnOnce(&mut MockOptions)) -> MockServer {
    let mut settings = MockOptions::new(chain);
    settings.slot_time = Duration::from_millis(20);
    options(&mut settings);
    MockServer::start(settings).expect("the mock starts")
}

fn subscribe(server: &MockServer, kinds: &[&str], subscribers: usize, millis: u64) -> SubscribeReport {
    let target = Target::parse(&format!("ws://{}/", server.local_addr())).unwrap();
    let kinds = kinds.iter().map(|kind| SubscriptionKind::parse(kind).unwrap()).collect();
    let mut config = SubscribeConfig::new(target, kinds, Duration::from_millis(millis));
    config.subscribers = subscribers;
    config.subs_per_socket = 4;
    run(&config, &StopHandle::new()).expect("the subscriptions run")
}

fn schema_check(report: &SubscribeReport) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/subscribe.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    let value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let messages: Vec<String> = match schema.validate(&value) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.map(|e| format!("{} at {}", e, e.instance_path)).collect(),
    };
    assert!(messages.is_empty(), "the report does not match the schema:\n{}", messages.join("\n"));
}

#[test]
fn new_heads_arrive_at_every_subscriber_without_gaps_and_with_exact_production_lag() {
    let server = node(Chain::Ethereum, |_| {});
    let report = subscribe(&server, &["newHeads"], 10, 600);
    assert_eq!(report.subscribed, 10, "{}", report.render_text());
    assert_eq!(report.active_at_end, 10);
    // Nothing counted that the node did not send, and blocks flowed to the subscribers: 30
    // were due in the 600 ms, and a busy machine can take half of it to subscribe all 10.
    assert!(report.notifications <= server.ws_stats().notifications_sent, "{}", report.render_text());
    assert!(report.notifications >= 10 * 10, "{}", report.render_text());
    assert_eq!((report.gaps, report.duplicates, report.reorders), (0, 0, 0), "{}", report.render_text());
    assert_eq!(report.produced_lag_precision.as_deref(), Some("exact"));
    assert_eq!(report.lag.count, report.notifications - report.notifications_after_end);
    assert_eq!(report.unknown_subscription + report.not_json, 0);
    schema_check(&report);
    let text = report.render_text();
    assert!(text.contains("Lag behind production (exact)"), "{text}");
    let html = rpcbench::report::render_subscribe_html(&report);
    assert!(html.contains("<h2>Lag by percentile</h2>") && html.matches("<svg").count() == 4, "{html}");
    assert!(!html.contains("could not be drawn"), "{html}");
    let markdown = rpcbench::report::render_subscribe_markdown(&report);
    assert!(
        markdown.contains("| correctness | gaps 0 (0 at the edges) · duplicates 0 · reorders 0"),
        "{markdown}"
    );
    // The saved JSON keeps the histograms losslessly.
    let saved: SubscribeReport = serde_json::from_str(&report.to_json()).unwrap();
    let lag = rpcbench::results::decode_histogram(saved.histograms.lag.as_deref().unwrap()).unwrap();
    assert_eq!(lag.len(), report.notifications - report.notifications_after_end);
}

#[test]
fn solana_slots_and_accounts_are_counted_per_kind() {
    let server = node(Chain::Solana, |_| {});
    let report = subscribe(&server, &["slot", "account:11111111111111111111111111111111"], 3, 400);
    assert_eq!(report.subscriptions, 6);
    assert_eq!(report.subscribed, 6, "{}", report.render_text());
    assert_eq!(report.per_kind.len(), 2);
    assert!(report.per_kind.iter().all(|kind| kind.notifications > 0), "{:?}", report.per_kind);
    assert_eq!(report.gaps, 0, "{}", report.render_text());
    schema_check(&report);
}

#[test]
fn dropped_notifications_show_as_gaps_and_duplicates_as_duplicates() {
    let server = node(Chain::Ethereum, |options| options.ws_drop = 0.3);
    let report = subscribe(&server, &["newHeads"], 8, 800);
    let dropped = server.ws_stats().notifications_dropped;
    // A drop before a subscription's first notification or after its last cannot be seen as a
    // gap; every other one is one gap exactly.
    assert!(report.gaps > 0 && report.gaps <= dropped, "gaps {} dropped {dropped}", report.gaps);
    assert_eq!(report.duplicates, 0);
    drop(server);

    let server = node(Chain::Ethereum, |options| options.ws_duplicate = 1.0);
    let report = subscribe(&server, &["newHeads"], 4, 500);
    assert!(report.notifications > 0);
    assert_eq!(
        report.duplicates * 2,
        report.notifications - report.notifications % 2,
        "{}",
        report.render_text()
    );
    assert_eq!(report.gaps, 0);
}

#[test]
fn a_subscription_the_node_refuses_is_counted_by_error_code() {
    // The Solana node has no eth_subscribe.
    let server = node(Chain::Solana, |_| {});
    let report = subscribe(&server, &["newHeads"], 2, 200);
    assert_eq!(report.subscribed, 0);
    assert_eq!(report.subscribe_errors.values().sum::<u64>(), 2, "{:?}", report.subscribe_errors);
    assert_eq!(report.notifications, 0);
}

#[test]
fn thresholds_judge_the_lag_and_the_gaps() {
    let server = node(Chain::Ethereum, |_| {});
    let mut report = subscribe(&server, &["newHeads"], 2, 300);
    let passing =
        [SubscribeThreshold::parse("gaps < 1").unwrap(), SubscribeThreshold::parse("lag p99 < 10s").unwrap()];
    assert!(report.judge(&passing), "{}", report.render_text());
    let failing = [SubscribeThreshold::parse("lag p50 < 0ms").unwrap()];
    assert!(!report.judge(&failing));
    assert!(report.render_text().contains("FAILED  lag p50 < 0ms"), "{}", report.render_text());
    schema_check(&report);
}

#[test]
fn a_socket_that_cannot_be_opened_is_a_connect_error_not_a_close_by_the_server() {
    let server = node(Chain::Ethereum, |options| options.ws_max_connections = Some(1));
    let target = Target::parse(&format!("ws://{}/", server.local_addr())).unwrap();
    let mut config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("newHeads").unwrap()],
        Duration::from_millis(300),
    );
    config.subscribers = 3;
    let report = run(&config, &StopHandle::new()).expect("the subscriptions run");
    assert_eq!(report.sockets_opened, 1, "{}", report.render_text());
    assert_eq!(report.connect_errors, 2, "{}", report.render_text());
    assert!(report.closed_by_server.is_empty(), "{:?}", report.closed_by_server);
    assert_eq!(report.subscribed, 1);
    assert_eq!(
        report.first_connect_error.as_deref(),
        Some("the server refused the WebSocket upgrade with HTTP 503"),
        "the refusal's status is shown"
    );
    assert!(report.render_text().contains("refused the WebSocket upgrade with HTTP 503"));
}

#[test]
fn sockets_the_server_closes_are_counted_by_code_and_reopened_with_reconnect() {
    // Answers the subscribe request, sends one notification, then closes with 1011.
    let url = crate::websocket::raw_ws_server(|id, out| {
        crate::websocket::text_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":7}}"#), out);
        crate::websocket::text_frame(
            r#"{"jsonrpc":"2.0","method":"slotNotification","params":{"subscription":7,"result":{"slot":5}}}"#,
            out,
        );
        out.extend_from_slice(&[0x88, 2, 0x03, 0xf3]);
    });
    let target = Target::parse(&url).unwrap();
    let mut config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("slot").unwrap()],
        Duration::from_millis(400),
    );
    let once = run(&config, &StopHandle::new()).unwrap();
    assert_eq!(once.closed_by_server.get("1011"), Some(&1), "{}", once.render_text());
    assert_eq!((once.subscribed, once.notifications, once.reconnects), (1, 1, 0));
    config.reconnect = true;
    let again = run(&config, &StopHandle::new()).unwrap();
    let closes = again.closed_by_server["1011"];
    assert!(again.reconnects >= 2, "{}", again.render_text());
    assert_eq!(again.sockets_opened, again.reconnects + 1, "{}", again.render_text());
    assert!(closes == again.sockets_opened || closes + 1 == again.sockets_opened, "{}", again.render_text());
    assert_eq!(again.subscribed, 1, "one subscription, re-subscribed after each close");
    assert_eq!(again.subscribe_latency.count, again.sockets_opened);
    // A subscription keeps its sequence across reconnects: slot 5 again is a duplicate.
    assert_eq!(again.duplicates, again.notifications - 1, "{}", again.render_text());
}

#[test]
fn live_metrics_show_notifications_lag_active_subscriptions_and_gaps() {
    let server = node(Chain::Ethereum, |_| {});
    let target = Target::parse(&format!("ws://{}/", server.local_addr())).unwrap();
    let mut config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("newHeads").unwrap()],
        Duration::from_millis(1300),
    );
    config.subscribers = 3;
    let live = rpcbench::metrics::LiveMetrics::new();
    config.live = Some(live.clone());
    let report = run(&config, &StopHandle::new()).unwrap();
    let text = live.render();
    assert!(
        text.contains(&format!("rpcbench_subscribe_notifications_total {}", report.notifications)),
        "{text}"
    );
    assert!(text.contains("rpcbench_subscribe_gaps_total 0"), "{text}");
    assert!(
        text.contains(&format!(
            "rpcbench_subscribe_lag_seconds_count {}",
            report.notifications - report.notifications_after_end
        )),
        "{text}"
    );
    assert!(text.contains("rpcbench_subscribe_active "), "{text}");
}

#[test]
fn a_ramp_opens_the_subscriptions_over_time() {
    let server = node(Chain::Solana, |_| {});
    let target = Target::parse(&format!("ws://{}/", server.local_addr())).unwrap();
    let mut config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("slot").unwrap()],
        Duration::from_millis(2600),
    );
    config.subscribers = 10;
    config.ramp = Duration::from_secs(2);
    let report = run(&config, &StopHandle::new()).unwrap();
    assert_eq!(report.subscribed, 10, "{}", report.render_text());
    // Second 0 ends with about half the sockets open (5 of 10 open in its first second).
    let first = report.series.first().map_or(0, |point| point.active);
    assert!((3..=7).contains(&first), "{:?}", report.series);
    assert_eq!(report.active_at_end, 10);
    config.ramp = config.duration;
    assert_eq!(config.validate().unwrap_err().field, Field::Ramp);
}

#[test]
fn every_drop_between_two_sent_notifications_is_exactly_one_gap() {
    // The issue's check: 100 subscribers to 100 ms blocks, 1% of notifications dropped by the
    // node. At the end each socket unsubscribes and reads until the answers, so every
    // notification the node sent is judged: the gaps between received notifications are
    // exactly the node's drops between two it sent to the same subscription, however close to
    // the end. A subscription's dropped first or last notifications leave no trace in its own
    // sequence; they are judged from the other subscribers' arrivals (gaps at the edges).
    let mut settings = MockOptions::new(Chain::Ethereum);
    settings.slot_time = Duration::from_millis(100);
    settings.ws_drop = 0.01;
    let server = MockServer::start(settings).expect("the mock starts");
    let target = Target::parse(&format!("ws://{}/", server.local_addr())).unwrap();
    let mut config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("newHeads").unwrap()],
        Duration::from_secs(3),
    );
    config.subscribers = 100;
    config.subs_per_socket = 10;
    let report = run(&config, &StopHandle::new()).unwrap();
    let stats = server.ws_stats();
    assert!(stats.drops_between_sent > 0, "{stats:?}");
    assert_eq!(
        report.gaps - report.gaps_at_edges,
        stats.drops_between_sent,
        "{stats:?}\n{}",
        report.render_text()
    );
    assert!(report.gaps <= stats.notifications_dropped, "{stats:?}\n{}", report.render_text());
    assert_eq!(report.unsubscribed, 100, "{}", report.render_text());
    assert_eq!(report.unsubscribe_failed, 0);
    assert_eq!(report.went_silent, 0);
    assert_eq!(report.duplicates, 0);
    assert_eq!(report.reorders, 0);
}

#[test]
fn stages_add_and_remove_subscribers_without_counting_a_planned_leave_as_gaps() {
    use rpcbench::engine::stages::Stage;
    let server = node(Chain::Ethereum, |_| {});
    let target = Target::parse(&format!("ws://{}/", server.local_addr())).unwrap();
    let stage = |millis: u64, level: f64| Stage {
        level,
        duration: Duration::from_millis(millis),
        ramp: Duration::from_millis(millis),
    };
    // Up to 8 subscribers, hold, down to 2, up to 8 again: sockets leave and come back.
    let stages = vec![stage(400, 8.0), stage(400, 8.0), stage(300, 2.0), stage(300, 8.0), stage(300, 8.0)];
    let mut config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("newHeads").unwrap()],
        Duration::from_millis(1700),
    );
    config.subscribers = 8;
    config.subs_per_socket = 2;
    config.stages = stages;
    let report = run(&config, &StopHandle::new()).unwrap();
    let text = report.render_text();
    assert_eq!(report.subscribed, 8, "{text}");
    // 3 sockets left by plan and came back: 3 planned unsubscribes with 2 subscriptions each,
    // then all 8 at the end.
    assert_eq!(report.unsubscribed, 3 * 2 + 8, "{text}");
    assert_eq!(report.unsubscribe_failed, 0, "{text}");
    assert_eq!((report.gaps, report.duplicates, report.reorders, report.went_silent), (0, 0, 0, 0), "{text}");
    assert_eq!(report.active_at_end, 8, "{text}");
    assert_eq!(server.ws_stats().subscriptions_opened, 8 + 3 * 2);
    assert!(report.notifications > 0);
    schema_check(&report);
}

#[test]
fn a_server_that_floods_pings_and_never_reads_is_closed_not_queued_for() {
    const CAP: usize = 64 * 1024 * 1024;
    let (url, sent) = crate::websocket::ping_flood_server(CAP);
    let target = Target::parse(&url).unwrap();
    let config =
        SubscribeConfig::new(target, vec![SubscriptionKind::parse("slot").unwrap()], Duration::from_secs(2));
    let report = run(&config, &StopHandle::new()).unwrap();
    assert_eq!(report.closed_not_reading, 1, "{}", report.render_text());
    assert!(report.closed_by_server.is_empty(), "{:?}", report.closed_by_server);
    let sent = sent.recv_timeout(Duration::from_secs(30)).expect("the flood ends when the client goes");
    assert!(sent < CAP / 2, "the client read {sent} bytes of PINGs before it closed");
    assert!(report.render_text().contains("closed by rpcbench as the server did not read 1"));
    schema_check(&report);
}

#[test]
fn a_subscription_id_over_the_kept_size_is_refused_not_kept() {
    // The server's subscription id is 100,000 bytes: refused as a fault of the server, and
    // its notifications belong to no subscription.
    let url = crate::websocket::raw_ws_server(|id, out| {
        let long = "7".repeat(100_000);
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{long}}}"#);
        out.push(0x81);
        out.push(127);
        out.extend_from_slice(&(text.len() as u64).to_be_bytes());
        out.extend_from_slice(text.as_bytes());
    });
    let target = Target::parse(&url).unwrap();
    let config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("slot").unwrap()],
        Duration::from_millis(300),
    );
    let report = run(&config, &StopHandle::new()).unwrap();
    assert_eq!(report.subscribed, 0, "{}", report.render_text());
    assert_eq!(report.subscribe_errors.get("id too long"), Some(&1), "{:?}", report.subscribe_errors);
    let reason = report.first_subscribe_error.as_deref().unwrap_or_default();
    assert!(reason.starts_with("slot: a subscription id of 100000 bytes"), "{reason}");
}

#[test]
fn a_stage_down_to_zero_leaves_nothing_active_at_the_end_and_no_gaps() {
    use rpcbench::engine::stages::Stage;
    let server = node(Chain::Ethereum, |_| {});
    let target = Target::parse(&format!("ws://{}/", server.local_addr())).unwrap();
    let stage = |millis: u64, level: f64| Stage {
        level,
        duration: Duration::from_millis(millis),
        ramp: Duration::from_millis(millis),
    };
    let mut config = SubscribeConfig::new(
        target,
        vec![SubscriptionKind::parse("newHeads").unwrap()],
        Duration::from_millis(1500),
    );
    config.subscribers = 8;
    config.subs_per_socket = 2;
    config.stages = vec![stage(500, 8.0), stage(500, 8.0), stage(500, 0.0)];
    let report = run(&config, &StopHandle::new()).unwrap();
    let text = report.render_text();
    assert_eq!(report.subscribed, 8, "{text}");
    assert_eq!(report.active_at_end, 0, "{text}");
    assert_eq!((report.gaps, report.duplicates, report.reorders), (0, 0, 0), "{text}");
}

#[test]
fn nothing_subscribed_shows_the_servers_reason_and_no_latency() {
    // The Solana node has no eth_subscribe: its error is the reason, and no figure is 0us.
    let server = node(Chain::Solana, |_| {});
    let report = subscribe(&server, &["newHeads"], 2, 200);
    assert_eq!(report.subscribed, 0);
    let reason = report.first_subscribe_error.as_deref().expect("the server's reason");
    assert!(reason.starts_with("newHeads: -32601"), "{reason}");
    let text = report.render_text();
    assert!(text.contains("subscribe latency p50 n/a p99 n/a max n/a"), "{text}");
    assert!(text.contains("First subscribe error: newHeads: -32601"), "{text}");
    assert!(text.contains("Fan-out lag (from the first subscriber's arrival): p50 n/a"), "{text}");
    schema_check(&report);
}
