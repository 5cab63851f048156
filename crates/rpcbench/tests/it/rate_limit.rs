//! Rate-limit answers in the one outcome taxonomy: a mock node over its limit, answering with
//! HTTP 429 or with a JSON-RPC error inside HTTP 200, gets its refusals counted as
//! `rate_limited` (apart from other errors), in reports and thresholds alike.

use std::time::Duration;

use rpcbench::engine::config::{Arrivals, Length, Load};
use rpcbench::engine::Run;
use rpcbench::jsonrpc::RequestTemplate;
use rpcbench::mock::{Chain, MockOptions, MockServer, RateLimitStyle};
use rpcbench::outcome::{OutcomeClass, RateLimitSign};
use rpcbench::report::{render_text, RunReport};
use rpcbench::thresholds::Threshold;

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
    config.rate_limits = rpcbench::rate_limit::RateLimitRules::with_codes(&[-32000]);
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.rate_limited.get(&RateLimitSign::Rpc(-32000)), Some(&20));
    assert!(record.totals.counts.rpc_errors.is_empty());
}
