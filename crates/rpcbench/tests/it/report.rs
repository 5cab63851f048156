//! Reports of real runs: the JSON report validates against the committed schema, and the
//! text report says what the JSON says.

use std::time::Duration;

use rpcbench::engine::config::{Arrivals, Load};
use rpcbench::engine::Run;
use rpcbench::report::{render_text, RunReport};

use crate::util::{closed_loop, json_200, requests, seconds, status, TestServer};

fn schema() -> jsonschema::JSONSchema {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/report.schema.json");
    let text = std::fs::read_to_string(path).expect("the committed schema");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::JSONSchema::compile(&schema).expect("the schema compiles")
}

pub(crate) fn assert_valid(report: &RunReport) {
    let value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let schema = schema();
    let messages: Vec<String> = match schema.validate(&value) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.map(|e| format!("{} at {}", e, e.instance_path)).collect(),
    };
    assert!(messages.is_empty(), "the report does not match the schema:\n{}", messages.join("\n"));
}

/// Every other request is a JSON-RPC error, every fifth an HTTP 503, so every map is filled.
fn mixed_server() -> TestServer {
    TestServer::start(|request| match request.index % 5 {
        0 => status(503, "busy"),
        1 | 3 => json_200(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32005,"message":"limit exceeded"}}}}"#,
            request.id
        )),
        _ => json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, request.id)),
    })
}

#[test]
fn closed_loop_json_reports_match_the_schema() {
    let server = mixed_server();
    let config = closed_loop(&server.url(), 3, requests(500));
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(&config, &record);
    assert_valid(&report);
    assert_eq!(report.outcomes.rpc_errors[&-32005].count, 200);
    assert_eq!(report.outcomes.rpc_errors[&-32005].first_message.as_deref(), Some("limit exceeded"));
    assert_eq!(report.outcomes.http_errors[&503], 100);
    assert_eq!(report.http_status["200"], 400);
    assert_eq!(report.requests.ok, 200);

    let text = render_text(&report);
    assert!(text.contains("2xx - 400"), "{text}");
    assert!(text.contains("5xx - 100"), "{text}");
    assert!(text.contains("-32005 - 200"), "{text}");
    assert!(text.contains("limit exceeded"), "{text}");
    assert!(text.contains("http 503 - 100"), "{text}");
}

#[test]
fn open_loop_json_reports_match_the_schema() {
    let server = mixed_server();
    let mut config = closed_loop(&server.url(), 1, seconds(1.0));
    config.load = Load::Open { rate: 300.0, arrivals: Arrivals::Poisson, max_connections: 8 };
    config.warmup = Duration::from_millis(100);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(&config, &record);
    assert_valid(&report);
    assert!(report.send_lag.is_some());
    assert!(report.requests.late.is_some());
    let text = render_text(&report);
    assert!(text.contains("corrected  uncorrected"), "{text}");
    assert!(text.contains("Rate: target 300 req/s"), "{text}");
}

#[test]
fn the_schema_rejects_a_report_missing_a_field() {
    let server = mixed_server();
    let config = closed_loop(&server.url(), 1, requests(10));
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let mut value: serde_json::Value =
        serde_json::from_str(&RunReport::new(&config, &record).to_json()).unwrap();
    value.as_object_mut().unwrap().remove("latency");
    assert!(!schema().is_valid(&value));
}

#[test]
fn reports_never_show_the_api_key() {
    let server = TestServer::start(|request| {
        json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#, request.id))
    });
    let key = "9aa3d95b3bc440fa88ea12eaa4456161";
    let url = format!("{}v3/{key}?apikey=hunter2secret", server.url());
    let config = closed_loop(&url, 1, requests(5));
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(&config, &record);
    assert_eq!(report.requests.ok, 5);
    for output in [report.to_json(), render_text(&report)] {
        assert!(!output.contains(key), "{output}");
        assert!(!output.contains("hunter2secret"), "{output}");
        assert!(output.contains("/v3/***?apikey=***"), "{output}");
    }
}

#[test]
fn reports_say_what_the_generator_used() {
    let server = mixed_server();
    let mut config = closed_loop(&server.url(), 2, seconds(0.6));
    config.threads = 2;
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(&config, &record);
    assert_valid(&report);
    let generator = &report.generator;
    assert_eq!(generator.threads, 2);
    if cfg!(target_os = "linux") {
        let cpu = generator.cpu_percent.expect("worker CPU is measured on Linux");
        assert!(cpu > 0.0 && cpu <= 100.0, "{cpu}");
        assert!(generator.cpu_us.unwrap() > 0);
        assert!(generator.cpu_us_per_request.unwrap() > 0.0);
        assert!(generator.peak_rss_bytes.unwrap() > 1_000_000);
    }
    let text = render_text(&report);
    assert!(text.contains("Generator: 2 worker thread(s)"), "{text}");
}

#[test]
fn a_saturated_generator_is_warned_about() {
    let server = mixed_server();
    let config = closed_loop(&server.url(), 1, seconds(0.6));
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let mut report = RunReport::new(&config, &record);
    let saturated = |warnings: &[String]| warnings.iter().any(|w| w.contains("CPU was saturated"));

    report.generator.cpu_percent = Some(rpcbench::report::SATURATED_CPU_PERCENT);
    let warnings = rpcbench::report::generator_warnings(&report);
    assert!(saturated(&warnings), "{warnings:?}");
    let warning = warnings.iter().find(|w| w.contains("CPU was saturated")).unwrap();
    assert!(warning.contains("the results may show the tool's limit, not the target's"), "{warning}");
    assert!(render_text(&report).contains("WARNING: the generator's CPU was saturated (90%"));

    report.generator.cpu_percent = Some(50.0);
    assert!(!saturated(&rpcbench::report::generator_warnings(&report)));
    report.generator.cpu_percent = None;
    assert!(!saturated(&rpcbench::report::generator_warnings(&report)), "absent figures warn of nothing");
    report.generator.cpu_percent = Some(100.0);
    report.elapsed_us = 100_000;
    assert!(!saturated(&rpcbench::report::generator_warnings(&report)), "too short to judge");
}

/// A run of a second and a half has a curve, not two dots: its series has 100 ms points, its
/// rates stay per second, and its HTML charts join the points with a line on an axis labelled
/// to a tenth of a second.
#[test]
fn a_run_of_a_second_and_a_half_has_100ms_points_joined_by_a_line() {
    use rpcbench::mock::{Chain, Latency, MockOptions, MockServer};
    use rpcbench::results::{ResultsFile, SavedRun};
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.latency = Some(Latency::fixed(Duration::from_millis(2)));
    let node = MockServer::start(options).expect("the mock node starts");
    let mut config = closed_loop(&node.url(), 4, seconds(1.5));
    config.threads = 1;
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.series_interval_ms, 100);
    let report = RunReport::new(&config, &record);
    assert_valid(&report);
    let series = &report.series;
    assert_eq!((series.interval_ms, series.interval_s), (100, 0));
    assert!(series.points.len() >= 10, "{} points", series.points.len());
    assert_eq!(series.points[7].start_ms, 700);
    assert_eq!(series.points[12].second, 1, "the whole second a point starts in");
    // Per-second figures are requests per second, from 100 ms counts times ten.
    let requests = &report.requests;
    assert!(
        (requests.per_second_mean / requests.rate - 1.0).abs() < 0.25,
        "{} req/s on average over the points, {} req/s over the run",
        requests.per_second_mean,
        requests.rate
    );
    let tenfold = series.points.iter().take(15).map(|p| p.requests * 10).max().unwrap() as f64;
    assert_eq!(requests.per_second_max, tenfold);

    let run = SavedRun::new(ResultsFile::from_run(&config, &record, std::time::SystemTime::now()), "short")
        .unwrap();
    assert_eq!(run.record.series_interval_ms, 100, "the results file keeps the 100 ms points");
    let html = rpcbench::report::render_html(std::slice::from_ref(&run));
    let throughput = &html[html.find("<h2>Throughput over time</h2>").unwrap()..];
    let throughput = &throughput[..throughput.find("</svg>").unwrap()];
    // The run's colour, as plotters writes it.
    let line = throughput
        .split("<polyline")
        .skip(1)
        .map(|tag| &tag[..tag.find("/>").unwrap()])
        .find(|tag| tag.contains("stroke=\"#4E79A7\""))
        .expect("the run's points are joined by a line");
    let points = line.split("points=\"").nth(1).unwrap().split('"').next().unwrap();
    assert!(points.split_whitespace().count() >= 10, "a line through every point: {line}");
    let labels: Vec<&str> =
        throughput.split("</text>").filter_map(|text| text.rsplit('>').next()).map(str::trim).collect();
    assert!(labels.contains(&"1.0s") && labels.contains(&"0.4s"), "tenths on the time axis: {labels:?}");
    assert!(!html.contains("not joined by a line"), "no run here is too short for a line");
}
