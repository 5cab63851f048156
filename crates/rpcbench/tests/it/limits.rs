//! `rpcbench limits` against mock nodes with known limits: each probe finds exactly what the
//! mock was configured with, within the budget it was given.

use std::time::Duration;

use rpcbench::client::Endpoint;
use rpcbench::engine::config::RunConfig;
use rpcbench::engine::config::Target;
use rpcbench::limits::rate::{
    probe_rate_limits, probe_sustained, run_rate_step, BatchCounting, RateProbe, RateSearch, RateStep,
};
use rpcbench::limits::response::{probe_response, DEFAULT_RESPONSE_CEILING};
use rpcbench::limits::{
    probe_batch, probe_body, probe_websocket, LimitsReport, ProbeBudget, WsProbe, DEFAULT_BATCH_CEILING,
    DEFAULT_BODY_CEILING,
};
use rpcbench::mock::{BatchLimitStyle, Chain, LimiterLog, MockOptions, MockServer, RateLimitStyle};
use rpcbench::RequestTemplate;

fn endpoint(server: &MockServer) -> Endpoint {
    Endpoint::parse(&server.url(), Duration::from_secs(10)).unwrap()
}

fn batch_limited(limit: usize, style: BatchLimitStyle) -> MockServer {
    let mut options = MockOptions::new(Chain::Static);
    options.max_batch_len = limit;
    options.batch_limit_style = style;
    MockServer::start(options).unwrap()
}

#[test]
fn the_batch_probe_finds_geths_and_erigons_limits_exactly_with_their_errors() {
    for (limit, style, code, message) in [
        (100, BatchLimitStyle::Geth, -32600, "batch too large"),
        (100, BatchLimitStyle::Erigon, -32000, "batch limit 100 exceeded"),
        (37, BatchLimitStyle::Erigon, -32000, "batch limit 37 exceeded"),
    ] {
        let server = batch_limited(limit, style);
        let mut budget = ProbeBudget::new(50);
        let found = probe_batch(&endpoint(&server), "eth_blockNumber", DEFAULT_BATCH_CEILING, &mut budget);
        assert_eq!(found.largest_accepted, limit as u64, "{style:?}: {found:?}");
        assert_eq!(found.smallest_refused, Some(limit as u64 + 1));
        assert!(found.exact);
        let refusal = found.refusal.as_ref().expect("the refusal is kept");
        assert_eq!((refusal.status, refusal.code, refusal.message.as_str()), (200, Some(code), message));
        assert_eq!(budget.requests, found.steps.len() as u64);
        assert!(budget.requests <= 20, "{budget:?}");
        assert_eq!(budget.calls, found.steps.iter().map(|step| step.calls).sum::<u64>());
        server.stop();
    }
}

#[test]
fn the_batch_probe_stops_at_its_budget_and_says_what_it_knows() {
    let server = batch_limited(100, BatchLimitStyle::Geth);
    let mut budget = ProbeBudget::new(10);
    let found = probe_batch(&endpoint(&server), "eth_blockNumber", DEFAULT_BATCH_CEILING, &mut budget);
    assert_eq!(budget.requests, 10, "exactly the budget is spent");
    assert!(!found.exact);
    let refused = found.smallest_refused.expect("128 was refused");
    assert!(found.largest_accepted <= 100 && refused > 100, "{found:?}");
    let report = LimitsReport {
        url: server.url(),
        method: "eth_blockNumber".into(),
        budget,
        rate: None,
        batch: Some(found),
        body: None,
        response: None,
        subscriptions: None,
        ws_connections: None,
    };
    assert!(report.summary().contains("10 of 10 requests spent"), "{}", report.summary());
    server.stop();
}

#[test]
fn per_call_rate_limit_errors_inside_a_batch_do_not_read_as_a_batch_limit() {
    let mut options = MockOptions::new(Chain::Static);
    options.max_batch_len = 20;
    options.faults.rate_limit = Some(1.0);
    options.faults.rate_limit_burst = Some(5.0);
    options.faults.rate_limit_style = RateLimitStyle::BatchItems;
    let server = MockServer::start(options).unwrap();
    let mut budget = ProbeBudget::new(50);
    let found = probe_batch(&endpoint(&server), "eth_blockNumber", DEFAULT_BATCH_CEILING, &mut budget);
    assert_eq!(found.largest_accepted, 20, "{found:?}");
    server.stop();
}

#[test]
fn the_limits_report_in_json_matches_its_schema() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.max_batch_len = 9;
    options.batch_limit_style = BatchLimitStyle::Erigon;
    options.ws_max_subscriptions = Some(2);
    let server = MockServer::start(options).unwrap();
    let mut budget = ProbeBudget::new(30);
    let batch = probe_batch(&endpoint(&server), "eth_blockNumber", 64, &mut budget);
    let (subscriptions, connections) = probe_websocket(&ws_probe(&server, 10, 3), &mut budget).unwrap();
    let body = probe_body(&endpoint(&server), "eth_blockNumber", 4096, &mut budget);
    let report = LimitsReport {
        url: server.url(),
        method: "eth_blockNumber".into(),
        budget,
        rate: None,
        batch: Some(batch),
        body: Some(body),
        response: None,
        subscriptions: Some(subscriptions),
        ws_connections: Some(connections),
    };
    let json: serde_json::Value = serde_json::from_str(&report.render_json()).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/limits.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    let messages: Vec<String> = match schema.validate(&json) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.map(|e| format!("{}: {e}", e.instance_path)).collect(),
    };
    assert!(messages.is_empty(), "does not match limits.schema.json:\n{}", messages.join("\n"));
    let summary = json["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(
            "batches up to 9 calls, request bodies of at least 4096 bytes, 2 subscriptions per socket, at least 3 WebSocket connections"
        ),
        "{json}"
    );
    let text = report.render_text();
    assert!(text.contains("9 calls") && text.contains("-32000 \"batch limit 9 exceeded\""), "{text}");
    assert!(report.render_markdown().contains("| largest batch | 9 calls |"), "{}", report.render_markdown());
    server.stop();
}

fn ws_probe(server: &MockServer, max_subscriptions: u64, max_connections: u64) -> WsProbe {
    WsProbe {
        url: server.ws_url(),
        method: "eth_subscribe".into(),
        params: serde_json::json!(["newHeads"]),
        max_subscriptions,
        max_connections,
        timeout: Duration::from_secs(10),
    }
}

#[test]
fn the_websocket_probe_finds_the_subscription_and_connection_caps_exactly() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.ws_max_subscriptions = Some(7);
    options.ws_max_connections = Some(4);
    let server = MockServer::start(options).unwrap();
    let mut budget = ProbeBudget::new(100);
    let (subscriptions, connections) = probe_websocket(&ws_probe(&server, 1000, 100), &mut budget).unwrap();
    assert_eq!((subscriptions.accepted, subscriptions.exact), (7, true), "{subscriptions:?}");
    let refusal = subscriptions.refusal.as_ref().unwrap();
    assert_eq!(refusal.code, Some(-32000));
    assert!(refusal.message.contains("limit 7"), "{refusal:?}");
    assert_eq!((connections.accepted, connections.exact), (4, true), "{connections:?}");
    let refused = connections.refusal.as_ref().unwrap();
    assert_eq!((refused.status, refused.message.as_str()), (503, "too many WebSocket connections"));
    // One upgrade, 8 subscribe calls, 4 more upgrades (the last refused).
    assert_eq!(budget.requests, 1 + 8 + 4);
    let report = LimitsReport {
        url: server.url(),
        method: "eth_blockNumber".into(),
        budget,
        rate: None,
        batch: None,
        body: None,
        response: None,
        subscriptions: Some(subscriptions),
        ws_connections: Some(connections),
    };
    assert!(
        report.summary().starts_with("7 subscriptions per socket, 4 WebSocket connections"),
        "{}",
        report.summary()
    );
    server.stop();
}

#[test]
fn the_websocket_probe_stops_at_its_ceilings_and_budget_without_claiming_a_limit() {
    let server = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let mut budget = ProbeBudget::new(100);
    let (subscriptions, connections) = probe_websocket(&ws_probe(&server, 5, 3), &mut budget).unwrap();
    assert_eq!(
        (subscriptions.accepted, subscriptions.exact, connections.accepted, connections.exact),
        (5, false, 3, false)
    );
    let mut budget = ProbeBudget::new(4);
    let (subscriptions, connections) = probe_websocket(&ws_probe(&server, 50, 50), &mut budget).unwrap();
    assert_eq!(
        (subscriptions.accepted, connections.accepted),
        (3, 1),
        "the budget: one upgrade and three calls"
    );
    assert_eq!(budget.requests, 4);
    server.stop();
}

#[test]
fn the_body_probe_finds_the_largest_request_body_exactly_and_the_413() {
    let mut options = MockOptions::new(Chain::Static);
    options.max_body_bytes = 10_000;
    let server = MockServer::start(options).unwrap();
    let mut budget = ProbeBudget::new(60);
    let found = probe_body(&endpoint(&server), "eth_blockNumber", DEFAULT_BODY_CEILING, &mut budget);
    assert_eq!(
        (found.largest_accepted, found.smallest_refused, found.exact),
        (10_000, Some(10_001), true),
        "{found:?}"
    );
    assert_eq!(found.refusal.as_ref().unwrap().status, 413);
    assert!(budget.requests <= 40, "{budget:?}");
    server.stop();
}

/// Every probe of `limits` against an Ethereum mock limited to 50 requests per second with a
/// burst of 100 (a 2 s window), answering the excess in `style`, with geth's batch limit of 100
/// and 12 subscriptions per socket, within a budget of 2,000 requests; with what the mock's
/// limiter decided.
fn probe_a_rate_limited_mock(style: RateLimitStyle) -> (LimitsReport, LimiterLog) {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.faults.rate_limit = Some(50.0);
    options.faults.rate_limit_burst = Some(100.0);
    options.faults.rate_limit_style = style;
    options.faults.announce_headers = true;
    options.max_batch_len = 100;
    options.ws_max_subscriptions = Some(12);
    let server = MockServer::start(options).unwrap();
    let endpoint = endpoint(&server);
    let mut budget = ProbeBudget::new(2_000);
    let limits =
        RateProbe { search: RateSearch::default(), max_burst: 1_000, max_batch: DEFAULT_BATCH_CEILING };
    let target = Target::parse(&server.url()).unwrap();
    let rate = probe_rate_limits(&endpoint, &target, &["eth_blockNumber".to_string()], &limits, &mut budget)
        .expect("the rate probe runs");
    let batch = probe_batch(&endpoint, "eth_blockNumber", DEFAULT_BATCH_CEILING, &mut budget);
    let (subscriptions, connections) = probe_websocket(&ws_probe(&server, 1_000, 3), &mut budget).unwrap();
    let url = server.url();
    let log = server.limiter_log().expect("the mock limits the rate");
    server.stop();
    let report = LimitsReport {
        url,
        method: "eth_blockNumber".into(),
        budget,
        rate: Some(rate),
        batch: Some(batch),
        body: None,
        response: None,
        subscriptions: Some(subscriptions),
        ws_connections: Some(connections),
    };
    (report, log)
}

/// How long after the mock's limiter let a request through the client may count its answer:
/// after a stall the process resumes with a backlog of due requests (160/s for 200 ms is 32),
/// sends them at once, and the mock's decisions on them and the client's reads of the answers
/// are tens of milliseconds apart on a loaded machine (11 answers admitted before the counted
/// part began were counted in it in 1 of 30 runs held to the decision instants alone).
const READ_AFTER_DECISION: Duration = Duration::from_millis(50);

/// `step`'s sustained rate is bounded by what the mock's limiter admitted over the part of the
/// step the client counted (the intervals after the first refusal's, lined up on the one clock
/// the client and the in-process mock share): the answers counted are at least what the mock
/// admitted inside the part shrunk by [`READ_AFTER_DECISION`] at each end and at most what it
/// admitted inside the part grown by as much. And that part began with the mock's budget spent:
/// no more than a quarter of the burst of 100 was left (a 200 ms stall just before leaves 10;
/// a part that counts a refilled budget begins with up to all 100).
///
/// Why not the configured 50/s within 5%: a machine that stops the process for 200 ms (a loaded
/// VM does) lets the bucket refill 10 tokens meanwhile, which the backlog sent after the stall
/// takes. A stall across the start of the counted part moves up to 10 admissions of tokens
/// earned before it into it, across its end up to 10 earned inside it out of it: 5 a second
/// over a 2 s part, 10% of the rate, though the client counted exactly what the mock admitted.
/// The mock's own count moves with the stall; a client that counts wrong does not.
fn assert_the_mocks_sustained_rate(log: &LimiterLog, step: &RateStep) {
    let counted =
        step.answered_after_refusal.unwrap_or_else(|| panic!("answers after the refusal: {step:?}"));
    let started = step.measured_from.unwrap_or_else(|| panic!("the step's start is known: {step:?}"));
    let from = started + Duration::from_millis(step.after_refusal_from_ms.unwrap());
    let ms = step.after_refusal_ms.unwrap();
    let until = from + Duration::from_millis(ms);
    let sustained = step.limited_rate.unwrap_or_else(|| panic!("a rate after the refusal: {step:?}"));
    let per_second = counted as f64 * 1000.0 / ms as f64;
    assert!((sustained - per_second).abs() <= 0.01, "the rate is the count per second of the part: {step:?}");
    let slack = READ_AFTER_DECISION;
    let inner = log.admitted_between(from + slack, until - slack);
    let outer = log.admitted_between(from - slack, until + slack);
    assert!(
        (inner..=outer).contains(&counted),
        "{counted} answers counted, the mock admitted {} meanwhile ({inner} to {outer} within {slack:?}): {step:?}",
        log.admitted_between(from, until)
    );
    let tokens = log.tokens_at(from).expect("the log reaches back to the step");
    assert!(tokens <= 25.0, "the counted part began with {tokens:.1} tokens left to spend: {step:?}");
    assert_eq!(log.rate(), 50.0);
}

fn assert_the_configured_limits(report: &LimitsReport, log: &LimiterLog, counting: BatchCounting) {
    let rate = report.rate.as_ref().unwrap();
    let sustained = rate.rate().unwrap_or_else(|| panic!("a sustained rate is found: {rate:#?}"));
    let sustained_finding = rate.sustained.first().unwrap();
    let measured = sustained_finding.measured.as_ref().expect("a measuring step");
    assert_eq!(Some(sustained), measured.limited_rate, "{rate:#?}");
    assert_the_mocks_sustained_rate(log, measured);
    // The configured 100 lies in the bracket the burst probe's timing allows, and the window
    // is the largest burst of it over the rate, to 2 significant digits.
    let (low, high) = (rate.burst.unwrap(), rate.burst_max.unwrap());
    assert!(low <= 100 && 100 <= high, "the burst {low}-{high} holds 100: {rate:#?}");
    let window = rate.window_ms.unwrap();
    assert_eq!(Some(window), rpcbench::limits::rate::window_ms(high, sustained), "{rate:#?}");
    assert!((1_900..=2_400).contains(&window), "{rate:#?}");
    let check = rate.window_check.as_ref().expect("the window is checked");
    assert!(
        check.accepted >= 100 && check.refusal.is_some(),
        "the budget came back after the window: {check:?}"
    );
    assert_eq!(rate.batch_counting.as_ref().map(|found| &found.counting), Some(&counting), "{rate:#?}");
    let batch = report.batch.as_ref().unwrap();
    assert_eq!((batch.largest_accepted, batch.exact), (100, true), "{batch:?}");
    let subscriptions = report.subscriptions.as_ref().unwrap();
    assert_eq!((subscriptions.accepted, subscriptions.exact), (12, true), "{subscriptions:?}");
    assert!(report.budget.requests <= report.budget.max_requests, "{:?}", report.budget);
    let summary = report.summary();
    let burst = rate.burst_text().unwrap();
    assert!(summary.contains(&format!(" sustained, bursts of {burst} per ")), "{summary}");
    assert!(
        summary.contains("batches up to 100 calls") && summary.contains("12 subscriptions per socket"),
        "{summary}"
    );
}

#[test]
fn limits_finds_the_rate_burst_window_batch_and_subscription_limits_of_a_429_mock() {
    let (report, log) = probe_a_rate_limited_mock(RateLimitStyle::Http429);
    assert_the_configured_limits(&report, &log, BatchCounting::OneRequest);
    let json: serde_json::Value = serde_json::from_str(&report.render_json()).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/limits.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    let messages: Vec<String> = match schema.validate(&json) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.map(|e| format!("{}: {e}", e.instance_path)).collect(),
    };
    assert!(messages.is_empty(), "does not match limits.schema.json:\n{}\n{json:#}", messages.join("\n"));
    let text = report.render_text();
    assert!(text.contains("sustained rate") && text.contains("HTTP 429"), "{text}");
}

#[test]
fn limits_finds_the_rate_burst_window_batch_and_subscription_limits_of_a_jsonrpc_error_mock() {
    let (report, log) = probe_a_rate_limited_mock(RateLimitStyle::JsonRpc);
    assert_the_configured_limits(&report, &log, BatchCounting::OneRequest);
}

#[test]
fn limits_finds_that_a_batch_items_mock_counts_batch_calls_one_by_one() {
    let (report, log) = probe_a_rate_limited_mock(RateLimitStyle::BatchItems);
    assert_the_configured_limits(&report, &log, BatchCounting::CallByCall);
}

#[test]
fn the_response_probe_finds_the_largest_answer_a_node_sends_whole_exactly() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.max_response_bytes = Some(1_000);
    let server = MockServer::start(options).unwrap();
    let mut budget = ProbeBudget::new(60);
    let found =
        probe_response(&endpoint(&server), "eth_chainId", DEFAULT_RESPONSE_CEILING, None, &mut budget);
    assert_eq!(
        (found.largest_accepted, found.smallest_refused, found.exact),
        (1_000, Some(1_001), true),
        "{found:?}"
    );
    let refusal = found.refusal.as_ref().expect("the cut answer is the evidence");
    assert!(refusal.message.contains("cut short: 1000 bytes"), "{refusal:?}");
    assert_eq!(budget.requests, found.steps.len() as u64);
    assert!(budget.requests <= 25, "{budget:?}");
    let report = LimitsReport {
        url: server.url(),
        method: "eth_chainId".into(),
        budget,
        rate: None,
        batch: None,
        body: None,
        response: Some(found),
        subscriptions: None,
        ws_connections: None,
    };
    let text = report.render_text();
    assert!(text.contains("largest response body  1000 bytes"), "{text}");
    assert!(report.summary().starts_with("responses up to 1000 bytes"), "{}", report.summary());
    let json: serde_json::Value = serde_json::from_str(&report.render_json()).unwrap();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/limits.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    assert!(schema.is_valid(&json), "the response finding matches limits.schema.json: {json}");
    let html = rpcbench::report::render_limits_html(&report);
    assert!(
        html.contains("largest response body")
            && report.render_markdown().contains("| largest response body | 1000 bytes |")
    );
    server.stop();
}

#[test]
fn the_response_probe_says_when_the_request_body_limit_bounds_it() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.max_body_bytes = 5_000;
    let server = MockServer::start(options).unwrap();
    let mut budget = ProbeBudget::new(80);
    let body = probe_body(&endpoint(&server), "eth_chainId", DEFAULT_BODY_CEILING, &mut budget);
    assert_eq!(body.largest_accepted, 5_000, "{body:?}");
    let found =
        probe_response(&endpoint(&server), "eth_chainId", DEFAULT_RESPONSE_CEILING, Some(5_000), &mut budget);
    assert!(found.bounded_by_request && !found.exact && found.refusal.is_none(), "{found:?}");
    assert!((4_900..=5_100).contains(&found.largest_accepted), "{found:?}");
    let report = LimitsReport {
        url: server.url(),
        method: "eth_chainId".into(),
        budget,
        rate: None,
        batch: None,
        body: Some(body),
        response: Some(found),
        subscriptions: None,
        ws_connections: None,
    };
    let text = report.render_text();
    assert!(text.contains("largest request body   5000 bytes"), "{text}");
    assert!(text.contains("the largest request body bounds the probe"), "{text}");
    server.stop();
}

/// A step that begins with a full budget (as the measuring step does after a pause in which
/// the bucket refilled: 2 s of it on a loaded machine) lets the refill through on top of the
/// rate: counted over the whole step, 50/s read as about 72/s. After the first refusal the
/// budget is empty, and what the step answered from then on is the rate.
#[test]
fn a_step_that_begins_with_a_full_budget_reads_the_sustained_rate_not_the_refill() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.faults.rate_limit = Some(50.0);
    options.faults.rate_limit_burst = Some(100.0);
    let server = MockServer::start(options).unwrap();
    let template = RequestTemplate::from_method("eth_blockNumber", None).unwrap();
    let base = RunConfig::new(Target::parse(&server.url()).unwrap(), template);
    let mut budget = ProbeBudget::new(1_000);
    let step = run_rate_step(&base, &RateSearch::default(), 160.0, &mut budget).expect("the step runs");
    let log = server.limiter_log().expect("the mock limits the rate");
    server.stop();
    assert!(step.rate_limited > 0, "{step:?}");
    assert!(step.answered_rate > 60.0, "the whole step counts the refilled budget: {step:?}");
    assert_the_mocks_sustained_rate(&log, &step);
    assert!(step.after_refusal_ms.unwrap() >= 1_000, "the budget empties early in the step: {step:?}");
    assert_eq!(budget.requests, 400, "the step's 2.5 s at 160/s");
}

/// One stray refusal in the first step, below the limit (a provider's busy node, or the
/// bunched sends of a stalled client meeting a small bucket), is not the limit: measured again
/// at that rate nothing is refused, so the climb goes on and finds the limit above it. (It
/// stopped there and found no sustained rate at all: `limits --suite` failed so on a loaded
/// machine, a burst of 10 meeting sends a stall had bunched at 40/s.)
#[test]
fn a_stray_refusal_below_the_limit_does_not_end_the_climb() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.faults.rate_limit = Some(50.0);
    options.faults.rate_limit_burst = Some(10.0);
    // Decisions 1-5 are the first step's warm-up; 10 is in its measured second.
    options.faults.rate_limit_stray = Some(10);
    let server = MockServer::start(options).unwrap();
    let template = RequestTemplate::from_method("eth_blockNumber", None).unwrap();
    let base = RunConfig::new(Target::parse(&server.url()).unwrap(), template);
    let search = RateSearch {
        start_rate: 20.0,
        step: Duration::from_secs(1),
        warmup: Duration::from_millis(250),
        ..RateSearch::default()
    };
    let mut budget = ProbeBudget::new(2_000);
    let found = probe_sustained(&base, "eth_blockNumber", &search, &mut budget).expect("the search runs");
    let log = server.limiter_log().expect("the mock limits the rate");
    server.stop();
    let first = &found.steps[0];
    assert_eq!((first.offered_rate, first.rate_limited), (20.0, 1), "the stray refusal: {found:?}");
    assert_eq!(found.steps[1].offered_rate, 20.0, "measured again: {found:?}");
    assert_eq!(found.steps[1].rate_limited, 0, "nothing refused then: {found:?}");
    assert!(found.highest_passed.is_some_and(|passed| passed >= 20.0), "{found:?}");
    let measured = found.measured.as_ref().unwrap_or_else(|| panic!("the limit found above: {found:?}"));
    assert!(measured.offered_rate > 50.0, "{found:?}");
    assert_eq!(found.sustained_rate, measured.limited_rate);
    assert_the_mocks_sustained_rate(&log, measured);
}
