//! Rate-limit answers in the one outcome taxonomy: a mock node over its limit, answering with
//! HTTP 429 or with a JSON-RPC error inside HTTP 200, gets its refusals counted as
//! `rate_limited` (apart from other errors), in reports and thresholds alike.

use std::time::Duration;

use rpcbench::engine::config::{Arrivals, Length, Load};
use rpcbench::engine::Run;
use rpcbench::mock::{Chain, MockOptions, MockServer, RateLimitStyle};
use rpcbench::outcome::{OutcomeClass, RateLimitSign};
use rpcbench::report::{render_text, RunReport};
use rpcbench::thresholds::Threshold;
use rpcbench::RequestTemplate;

use crate::util::{closed_loop, json_200, requests, TestServer};

/// A mock Solana node allowing 50 requests per second (bursts of 5), answering the excess in
/// `style`, loaded at 400 requests per second for half a second.
fn over_the_limit(style: RateLimitStyle) -> RunReport {
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.rate_limit = Some(50.0);
    options.faults.rate_limit_burst = Some(5.0);
    options.faults.rate_limit_style = style;
    let node = MockServer::start(options).unwrap();
    let mut config = closed_loop(&node.url(), 1, requests(200));
    config.workload = RequestTemplate::from_method("getSlot", None).unwrap().into();
    config.load = Load::Open { rate: 400.0, arrivals: Arrivals::Uniform, max_connections: 8 };
    config.length = Length { duration: Some(Duration::from_millis(500)), requests: Some(200) };
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    RunReport::new(&config, &record)
}

#[test]
fn a_429_over_the_limit_is_counted_rate_limited_not_an_http_error() {
    let report = over_the_limit(RateLimitStyle::Http429);
    let counts = &report.outcomes;
    let limited = counts.rate_limited.get(&RateLimitSign::Http(429)).copied().unwrap_or(0);
    // 200 requests in 0.5 s against 50/s with a burst of 5: at most ~30 get through, whatever
    // the machine's speed.
    assert!(limited >= 150, "{counts:?}");
    assert!(counts.http_errors.is_empty(), "{counts:?}");
    assert_eq!(counts.ok + limited, counts.total(), "{counts:?}");
    assert_eq!(report.methods[0].rate_limited, limited);
    let text = render_text(&report);
    assert!(text.contains("rate limited: HTTP 429"), "{text}");
    let threshold = Threshold::parse("rate_limited < 1%").unwrap().evaluate(&report);
    assert!(!threshold.passed, "{threshold:?}");
    assert!(Threshold::parse("getSlot: rate_limited > 50%").unwrap().evaluate(&report).passed);
}

#[test]
fn a_jsonrpc_error_that_speaks_of_a_rate_is_counted_rate_limited() {
    let report = over_the_limit(RateLimitStyle::JsonRpc);
    let counts = &report.outcomes;
    let limited = counts.rate_limited.get(&RateLimitSign::Rpc(-32005)).copied().unwrap_or(0);
    assert!(limited >= 150, "{counts:?}");
    assert!(counts.rpc_errors.is_empty(), "-32005 'rate limit exceeded' is not another error: {counts:?}");
    assert_eq!(counts.class_total(OutcomeClass::RateLimited), limited);
    assert!(render_text(&report).contains("rate limited: JSON-RPC -32005"));
}

#[test]
fn codes_named_by_the_run_count_as_rate_limited_whatever_their_message() {
    let server = TestServer::start(|request| {
        json_200(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32000,"message":"busy"}}}}"#,
            request.id
        ))
    });
    let mut config = closed_loop(&server.url(), 2, requests(20));
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.rpc_errors[&-32000].count, 20, "'busy' alone is not a rate limit");
    config.rate_limits = rpcbench::RateLimitRules::with_codes(&[-32000]);
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.rate_limited.get(&RateLimitSign::Rpc(-32000)), Some(&20));
    assert!(record.totals.counts.rpc_errors.is_empty());
}

#[test]
fn rate_limit_headers_on_answers_are_summarised_in_every_report_format() {
    // Remaining counts down from 9 on each answer; every fifth is a 429 with Retry-After: 2.
    let server = TestServer::start(|request| {
        let remaining = 9u64.saturating_sub(request.index);
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#, request.id);
        let (status, retry) = if request.index % 5 == 4 {
            ("429 Too Many Requests", "Retry-After: 2\r\n")
        } else {
            ("200 OK", "")
        };
        crate::util::Reply::Raw(
            format!(
                "HTTP/1.1 {status}\r\nX-RateLimit-Limit: 10\r\nX-RateLimit-Remaining: {remaining}\r\nX-RateLimit-Reset: {}\r\n{retry}Content-Length: {}\r\n\r\n{body}",
                1 + request.index % 3,
                body.len()
            )
            .into_bytes(),
        )
    });
    let config = closed_loop(&server.url(), 1, requests(20));
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(&config, &record);
    let headers = report.rate_limit_headers.clone().expect("the headers are summarised");
    assert_eq!(headers.answers, 20);
    assert_eq!(headers.limit(), Some(10));
    assert_eq!(headers.remaining_min, Some(0));
    assert_eq!((headers.resets, headers.reset_min, headers.reset_max), (20, Some(1), Some(3)));
    assert_eq!(
        (headers.retry_after, headers.retry_after_max_s, headers.retry_after_total_s),
        (4, Some(2), 8)
    );
    let text = render_text(&report);
    assert!(text.contains("rate-limit headers: limit 10, remaining at lowest 0, 20 resets (1-3), Retry-After on 4 answers (max 2 s)"), "{text}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["rate_limit_headers"]["remaining_min"], 0);
    let back: RunReport = serde_json::from_value(json).unwrap();
    assert_eq!(back.rate_limit_headers, Some(headers));
    // Answers without such headers leave no trace in the report.
    let plain = TestServer::start(|request| {
        json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#, request.id))
    });
    let config = closed_loop(&plain.url(), 1, requests(5));
    let report = RunReport::new(&config, &Run::new(config.clone()).unwrap().execute().unwrap());
    assert_eq!(report.rate_limit_headers, None);
    assert!(serde_json::to_value(&report).unwrap().get("rate_limit_headers").is_none());
}

#[test]
fn retry_after_of_an_http2_429_is_summarised() {
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.rate_limit = Some(50.0);
    options.faults.rate_limit_burst = Some(5.0);
    options.faults.rate_limit_style = RateLimitStyle::Http429;
    let node = MockServer::start(options).unwrap();
    let mut config = closed_loop(&node.url(), 1, requests(100));
    config.http = rpcbench::engine::config::HttpVersion::H2c;
    config.workload = RequestTemplate::from_method("getSlot", None).unwrap().into();
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let limited = record.totals.counts.rate_limited.get(&RateLimitSign::Http(429)).copied().unwrap_or(0);
    assert!(limited > 0, "{:?}", record.totals.counts);
    assert_eq!(record.rate_headers.retry_after, limited, "every 429 of the mock says Retry-After");
    assert!(record.rate_headers.retry_after_max_s.is_some_and(|max| max >= 1));
}

#[test]
fn respect_retry_after_waits_as_the_server_asks_and_the_report_says_so() {
    // One request per second (burst 1); every refusal is a 429 with `Retry-After: 1`.
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.rate_limit = Some(1.0);
    options.faults.rate_limit_burst = Some(1.0);
    options.faults.rate_limit_style = RateLimitStyle::Http429;
    let node = MockServer::start(options).unwrap();
    let connections = 2;
    let mut config = closed_loop(&node.url(), connections, requests(10_000));
    config.workload = RequestTemplate::from_method("getSlot", None).unwrap().into();
    config.length = Length { duration: Some(Duration::from_millis(2500)), requests: Some(10_000) };
    config.on_rate_limit = rpcbench::OnRateLimit::RespectRetryAfter;
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    let limited = counts.rate_limited.get(&RateLimitSign::Http(429)).copied().unwrap_or(0);
    // Each refusal holds its connection 1 s: in 2.5 s at most 3 refusals per connection, and
    // the limit lets at most ~4 through; without the pauses it would be thousands.
    assert!(limited >= 1, "{counts:?}");
    assert!(limited <= 3 * connections as u64, "{counts:?}");
    assert!(counts.total() <= 3 * connections as u64 + 4, "{counts:?}");
    // One pause per refusal, each as long as asked (only a connection's last one may be cut
    // short by the run's end); the server asked for 1 s each time.
    assert_eq!(record.rate_pauses, limited);
    assert_eq!(record.rate_headers.retry_after_total_s, limited);
    let full_pauses = limited.saturating_sub(connections as u64);
    assert!(record.rate_paused >= Duration::from_secs(full_pauses), "{:?}", record.rate_paused);
    let report = RunReport::new(&config, &record);
    let pauses = report.rate_limit_pauses.clone().expect("the pauses are reported");
    assert_eq!((pauses.mode.as_str(), pauses.pauses), ("respect-retry-after", limited));
    let text = render_text(&report);
    assert!(text.contains(&format!("on rate limit: respect-retry-after: {limited} pauses")), "{text}");
}

#[test]
fn a_mock_announcing_its_limit_tells_the_burst_the_remaining_and_the_reset_in_headers() {
    // 5 requests per second, a bucket of 20: the run of 60 requests drains it, so the lowest
    // remaining seen is 0 and a reset is announced (the seconds until the bucket is full).
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.rate_limit = Some(5.0);
    options.faults.rate_limit_burst = Some(20.0);
    options.faults.announce_headers = true;
    for http2 in [false, true] {
        options.http2 = http2;
        let node = MockServer::start(options.clone()).unwrap();
        let mut config = closed_loop(&node.url(), 1, requests(60));
        if http2 {
            config.http = rpcbench::engine::config::HttpVersion::H2c;
        }
        let record = Run::new(config).unwrap().execute().unwrap();
        let seen = &record.rate_headers;
        assert_eq!(seen.answers, 60, "every answer announces (http2 {http2}): {seen:?}");
        assert_eq!(seen.limit(), Some(20), "the limit announced is the burst: {seen:?}");
        assert_eq!(seen.remaining_min, Some(0), "{seen:?}");
        assert!(
            seen.reset_max.is_some_and(|reset| (1..=4).contains(&reset)),
            "20 / 5 = 4 s at most: {seen:?}"
        );
        node.stop();
    }
}

#[test]
fn an_open_loop_pauses_its_whole_load_when_the_server_asks_and_reports_how_long() {
    // One request per second (burst 1), every refusal a 429 with `Retry-After: 1`, offered 200
    // requests per second over up to 8 connections for 2.5 s. The load must pause as asked: no
    // other connection may send the tickets due during a pause (they did, and the run sent
    // ~500 requests, nearly all refused).
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.rate_limit = Some(1.0);
    options.faults.rate_limit_burst = Some(1.0);
    options.faults.rate_limit_style = RateLimitStyle::Http429;
    let node = MockServer::start(options).unwrap();
    let mut config = closed_loop(&node.url(), 1, requests(10_000));
    config.load = Load::Open { rate: 200.0, arrivals: Arrivals::Uniform, max_connections: 8 };
    config.length = Length { duration: Some(Duration::from_millis(2500)), requests: None };
    config.on_rate_limit = rpcbench::OnRateLimit::RespectRetryAfter;
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    // Each pause is 1 s and pauses start at most ~3 times in 2.5 s; around each, a handful of
    // requests. Without the run-wide pause it is hundreds.
    assert!(counts.total() <= 40, "{counts:?}");
    assert!(counts.class_total(OutcomeClass::RateLimited) >= 1, "{counts:?}");
    assert!(record.rate_pauses >= 1);
    assert!(
        record.rate_paused >= Duration::from_secs(1),
        "the load paused as asked: {:?}",
        record.rate_paused
    );
    assert!(
        record.rate_paused <= Duration::from_secs(4),
        "overlapping pauses count once: {:?}",
        record.rate_paused
    );
    let report = RunReport::new(&config, &record);
    let pauses = report.rate_limit_pauses.clone().expect("the pauses are reported");
    assert_eq!(pauses.mode, "respect-retry-after");
    assert!(pauses.paused_ms >= 1000, "{pauses:?}");
    node.stop();
}
