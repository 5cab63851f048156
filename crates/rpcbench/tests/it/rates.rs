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
    let started = std::time::Instant::now();
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    // The run's whole time on the test's clock: no shorter than the time it measured over.
    let ran = started.elapsed().as_secs_f64();
    let report = RunReport::new(&config, &record);
    let requests = &report.requests;
    // All 100 due are sent late, one at a time, until the run's hard end (the 1 s, the 5 s
    // timeout and 1 s more): a busy machine that made the ~5 s of sends take longer than that
    // leaves the last few unsent, counted so.
    assert_eq!(requests.total + requests.unsent.unwrap_or(0), 100, "{requests:?}");
    assert!(requests.total >= 80, "{requests:?}");
    // At most the 20/s one connection to a 50 ms server carries (and a little for the
    // window's rounding); at least the responses over the whole time the run took, however
    // late a busy machine made it (a rate over the 1 s window would be 100/s).
    assert!(requests.rate <= 24.0, "rate {}", requests.rate);
    assert!(requests.rate >= requests.responded as f64 / ran, "rate {} after {ran:.2} s", requests.rate);
    assert!((requests.rate - requests.per_second_mean).abs() < 5.0, "{requests:?}");
    assert_eq!(requests.offered_rate.map(f64::round), Some(100.0));
    let text = render_text(&report);
    // A shortfall of at least 76% (the 24/s above), printed beside the rate.
    let achieved = format!("target 100 req/s, achieved {:.2} req/s (-", requests.rate);
    assert!(text.contains(&achieved), "a shortfall of about 80%: {text}");
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
    // The window is the whole 3 s, stretched only by twice the mean send lag (the rule for
    // sends that fell behind: on a busy machine a send can be late by tens of ms), never
    // shortened to the 2 s to the last answer (1.5/s).
    let measured = report.requests.measured_us;
    let slipped = 2 * report.send_lag.as_ref().map_or(0, |lag| lag.mean_us) + 1;
    assert!((3_000_000..=3_000_000 + slipped).contains(&measured), "{:?}", report.requests);
    assert!((report.requests.rate - 3e6 / measured as f64).abs() < 0.001, "{:?}", report.requests);
    let text = render_text(&report);
    if measured < 3_010_000 {
        // Not stretched by as much as the 10 ms the window is printed to.
        assert!(text.contains("Requests: 3 in 3.00s, 1.00 req/s"), "{text}");
    }
    let achieved = format!("target 1 req/s, achieved {:.2} req/s (3 sent, 3 due)", report.requests.rate);
    assert!(text.contains(&achieved), "{text}");
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
    // 70 over the 2 s, stretched only by twice the mean send lag (late sends on a busy machine).
    let slipped = 2 * report.send_lag.as_ref().map_or(0, |lag| lag.mean_us) + 1;
    let measured = report.requests.measured_us;
    assert!((2_000_000..=2_000_000 + slipped).contains(&measured), "{:?}", report.requests);
    assert!((report.requests.rate - 70e6 / measured as f64).abs() < 0.01, "{:?}", report.requests);
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
    // Every due request is sent or counted unsent, exactly 1,500. Most are sent: a stall of
    // the generator across the window's end (up to 200 ms on a busy machine) leaves what was
    // due in it unsent, which is the right count, so the bound leaves room for 500.
    assert_eq!(requests.total + requests.unsent.unwrap_or(0), 1500, "{requests:?}");
    assert!(requests.total >= 1000, "{requests:?}");
    // Not shortened below the server's 20 ms. The upper bounds only catch a stamp on another
    // clock (seconds off): a busy machine adds its delays to every figure, and the millisecond
    // check is transport::http1's.
    let p50 = report.latency.percentile("p50");
    assert!((20_000..1_000_000).contains(&p50), "p50 {p50} us");
    assert!(report.latency.percentile("p99") < 2_000_000, "{:?}", report.latency);
}
