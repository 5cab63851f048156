//! The rate a report states is what happened: responses over the time actually measured (the
//! window, stretched by how far sends slipped behind schedule), compared with the rate that was
//! due (stage-weighted), the same definition `capacity` uses; thresholds judge that figure.

use std::time::Duration;

use rpcbench::engine::config::{Arrivals, Load};
use rpcbench::engine::stages::Stage;
use rpcbench::engine::Run;
use rpcbench::report::{render_text, RunReport};
use rpcbench::thresholds::Threshold;

use crate::util::{closed_loop, json_200, seconds, Reply, TestServer};

fn ok_server(delay: Duration) -> TestServer {
    TestServer::start(move |request| {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#, request.id);
        Reply::After(delay, Box::new(json_200(&body)))
    })
}

fn open_loop(url: &str, rate: f64, secs: f64, max_connections: usize) -> rpcbench::engine::config::RunConfig {
    let mut config = closed_loop(url, 1, seconds(secs));
    config.load = Load::Open { rate, arrivals: Arrivals::Uniform, max_connections };
    config
}

#[test]
fn achieved_rate_under_overload_is_responses_over_the_time_measured() {
    // 100/s asked for 1 s, but one connection to a 50 ms server carries 20/s: the 100 requests
    // go out late over ~5 s. The rate is ~20/s, not 100/s, and agrees with the per-second mean.
    let server = ok_server(Duration::from_millis(50));
    let config = open_loop(&server.url(), 100.0, 1.0, 1);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(&config, &record);
    let requests = &report.requests;
    assert_eq!(requests.total, 100);
    assert!((14.0..=24.0).contains(&requests.rate), "rate {}", requests.rate);
    assert!((requests.rate - requests.per_second_mean).abs() < 5.0, "{requests:?}");
    assert_eq!(requests.offered_rate.map(f64::round), Some(100.0));
    let text = render_text(&report);
    assert!(text.contains("target 100 req/s, achieved"), "{text}");
    assert!(text.contains("(-7") || text.contains("(-8"), "a shortfall of about 80%: {text}");
    // A threshold judges the true figure.
    let verdict = Threshold::parse("rate > 50").unwrap().evaluate(&report);
    assert!(!verdict.passed, "{verdict:?}");
}

#[test]
fn low_rates_are_measured_over_the_whole_window() {
    let server = ok_server(Duration::ZERO);
    // 1/s for 3 s: 3 requests over 3 s, not over the 2 s to the last one.
    let config = open_loop(&server.url(), 1.0, 3.0, 4);
    let report = RunReport::new(&config, &Run::new(config.clone()).unwrap().execute().unwrap());
    assert_eq!(report.requests.total, 3);
    assert!((report.requests.rate - 1.0).abs() < 0.01, "{:?}", report.requests);
    let text = render_text(&report);
    assert!(text.contains("Requests: 3 in 3.00s, 1.00 req/s"), "{text}");
    assert!(text.contains("target 1 req/s, achieved 1.00 req/s (3 sent, 3 due)"), "{text}");
    // 5/h for 2 s: one request was due and sent; no absurd percentage.
    let config = open_loop(&server.url(), 5.0 / 3600.0, 2.0, 4);
    let report = RunReport::new(&config, &Run::new(config.clone()).unwrap().execute().unwrap());
    assert_eq!(report.requests.total, 1);
    let text = render_text(&report);
    // The first request of a uniform schedule is due at once: one sent, a fraction due.
    assert!(text.contains("achieved 0.50 req/s (1 sent, 0 due)"), "{text}");
    assert!(!text.contains('%') || !text.contains("(+"), "{text}");
}

#[test]
fn a_staged_load_is_described_as_stages_and_compared_to_its_weighted_rate() {
    let server = ok_server(Duration::ZERO);
    let mut config = closed_loop(&server.url(), 1, seconds(1.0));
    config.load = Load::Open { rate: 50.0, arrivals: Arrivals::Uniform, max_connections: 8 };
    config.length.duration = None;
    config.stages = [20.0, 30.0, 40.0, 50.0]
        .map(|level| Stage { level, duration: Duration::from_millis(500), ramp: Duration::ZERO })
        .to_vec();
    let report = RunReport::new(&config, &Run::new(config.clone()).unwrap().execute().unwrap());
    let text = render_text(&report);
    assert!(text.contains("open loop, 4 stages, 20..50 req/s"), "{text}");
    // 10 + 15 + 20 + 25 = 70 requests in 2 s: 35/s asked for and achieved.
    assert_eq!(report.requests.total, 70);
    assert_eq!(report.requests.offered_rate, Some(35.0));
    assert!(text.contains("target 35 req/s, achieved 3"), "{text}");
    assert!((report.requests.rate - 35.0).abs() < 0.2, "{:?}", report.requests);
    // Closed loop: connections as stages.
    let mut config = closed_loop(&server.url(), 4, seconds(1.0));
    config.length.duration = None;
    config.stages = [1.0, 4.0]
        .map(|level| Stage { level, duration: Duration::from_millis(300), ramp: Duration::ZERO })
        .to_vec();
    let report = RunReport::new(&config, &Run::new(config.clone()).unwrap().execute().unwrap());
    assert!(
        render_text(&report).contains("closed loop, 2 stages, 1..4 connection(s)"),
        "{}",
        render_text(&report)
    );
}

#[test]
fn replies_read_at_the_pacing_slots_are_timed_from_when_they_arrived() {
    // 2,500/s is past the rate from which replies are read quietly at the pacing slots. Every
    // request gets its one outcome, and the latency is about the server's 20 ms: not shortened
    // (a stamp on the wrong clock would be). That a reply read a slot late keeps its arrival
    // time is tested to the millisecond in transport::http1.
    let server = ok_server(Duration::from_millis(20));
    let config = open_loop(&server.url(), 2500.0, 0.6, 256);
    let report = RunReport::new(&config, &Run::new(config.clone()).unwrap().execute().unwrap());
    let requests = &report.requests;
    assert_eq!(requests.total, requests.ok, "{requests:?}");
    assert!(requests.total >= 1400, "{requests:?}");
    let p50 = report.latency.percentile("p50");
    assert!((20_000..40_000).contains(&p50), "p50 {p50} us");
    assert!(report.latency.percentile("p99") < 200_000, "{:?}", report.latency);
}
