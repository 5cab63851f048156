//! The live metrics endpoint scraped during a run against the mock Solana node, and the
//! Grafana dashboard checked against the names the endpoint really exports.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rpcbench::engine::config::{Arrivals, Length, Load, RunConfig, Target};
use rpcbench::engine::Run;
use rpcbench::metrics::{LiveMetrics, MetricsServer};
use rpcbench::mock::{Chain, Faults, MockOptions, MockServer};
use rpcbench::report::RunReport;
use rpcbench::workload::{Call, Workload};

/// One sample: name, labels, value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A scrape, parsed: the samples and the names declared by `# TYPE` lines.
#[derive(Debug)]
struct Scrape {
    samples: Vec<Sample>,
    types: BTreeMap<String, String>,
}

impl Scrape {
    /// The sum of every sample named `name` whose labels include `with`.
    fn sum(&self, name: &str, with: &[(&str, &str)]) -> f64 {
        self.matching(name, with).iter().map(|sample| sample.value).sum()
    }

    fn matching(&self, name: &str, with: &[(&str, &str)]) -> Vec<&Sample> {
        let labelled = |sample: &Sample| {
            with.iter().all(|(key, value)| sample.labels.get(*key).map(String::as_str) == Some(*value))
        };
        self.samples.iter().filter(|sample| sample.name == name && labelled(sample)).collect()
    }

    /// Every sample name a query can use: counters get `_total`, histograms `_bucket`, `_sum`
    /// and `_count`, infos `_info`, whether or not a sample is present yet.
    fn series_names(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for (family, kind) in &self.types {
            match kind.as_str() {
                "counter" => {
                    names.insert(format!("{family}_total"));
                }
                "histogram" => {
                    for suffix in ["_bucket", "_sum", "_count"] {
                        names.insert(format!("{family}{suffix}"));
                    }
                }
                "info" => {
                    names.insert(format!("{family}_info"));
                }
                _ => {
                    names.insert(family.clone());
                }
            }
        }
        names.extend(self.samples.iter().map(|sample| sample.name.clone()));
        names
    }
}

/// Parses the text format (enough of it for these tests: no escaped quotes in label values).
fn parse(text: &str) -> Scrape {
    let mut samples = Vec::new();
    let mut types = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("a TYPE line has a name and a type");
            types.insert(name.to_string(), kind.to_string());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value in '{line}'"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in '{line}'"));
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => {
                let labels =
                    labels.strip_suffix('}').unwrap_or_else(|| panic!("unclosed labels in '{line}'"));
                let labels = labels
                    .split("\",")
                    .filter(|pair| !pair.is_empty())
                    .map(|pair| {
                        let (key, value) =
                            pair.split_once("=\"").unwrap_or_else(|| panic!("bad label in '{line}'"));
                        (key.to_string(), value.trim_end_matches('"').to_string())
                    })
                    .collect();
                (name.to_string(), labels)
            }
            None => (series.to_string(), BTreeMap::new()),
        };
        samples.push(Sample { name, labels, value });
    }
    Scrape { samples, types }
}

/// `GET /metrics` with a plain TCP client; returns the status line's code and the body.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    try_get(addr, path).expect("a head and a body")
}

/// [`get`], or `None` when the endpoint closed the connection without an answer (as it does
/// to one past its connection cap).
fn try_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(addr).expect("the metrics endpoint accepts");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A write to a connection the endpoint already closed may fail: no answer either.
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    match stream.read_to_string(&mut response) {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => return None,
        Err(err) => panic!("a complete response: {err}"),
    }
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).expect("a status code");
    assert!(head.to_ascii_lowercase().contains("content-length"), "{head}");
    Some((status, body.to_string()))
}

fn scrape(addr: SocketAddr) -> Scrape {
    let (status, body) = get(addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    parse(&body)
}

fn node(error_rate: f64) -> MockServer {
    let mut options = MockOptions::new(Chain::Solana);
    options.threads = 1;
    options.faults = Faults { error_rate, ..Faults::default() };
    MockServer::start(options).expect("the mock node starts")
}

/// An open-loop mix of two methods against `node`, with the API-key-like path a real
/// provider URL has (the mock node answers any path).
fn mix(node: &MockServer, rate: f64, length: Length) -> RunConfig {
    let url = format!("{}v2/0123456789abcdef0123456789abcdef", node.url());
    let workload = Workload::new(vec![
        Call::new("getSlot", "getSlot", None, 3).unwrap(),
        Call::new("getBlockHeight", "getBlockHeight", None, 1).unwrap(),
    ])
    .unwrap();
    let mut config = RunConfig::new(Target::parse(&url).unwrap(), workload);
    config.load = Load::Open { rate, arrivals: Arrivals::Uniform, max_connections: 16 };
    config.length = length;
    config.threads = 1;
    config.timeout = Duration::from_secs(2);
    config
}

/// How long the test waits for something the run should show long before; a bound on a
/// wait, not an assertion on timing.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn the_endpoint_is_scraped_during_a_run_and_ends_at_the_reports_totals() {
    let node = node(0.1);
    let live = LiveMetrics::new();
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), live.clone()).unwrap();
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0, "the real port is known");
    assert_eq!(server.url(), format!("http://{addr}/metrics"));

    // Long enough to outlast the scrapes on a slow machine; stopped as soon as they are done.
    let mut config =
        mix(&node, 300.0, Length { duration: Some(Duration::from_secs(30)), requests: Some(9000) });
    config.publish_to(live.clone());
    let run = Run::new(config.clone()).unwrap();
    let stop = run.stop_handle();
    let runner = std::thread::spawn(move || run.execute());

    let requests = |scrape: &Scrape| scrape.sum("rpcbench_requests_total", &[]);
    let waited = Instant::now();
    let first = loop {
        let scrape = scrape(addr);
        if requests(&scrape) > 0.0 {
            break scrape;
        }
        assert!(waited.elapsed() < PATIENCE && !runner.is_finished(), "no requests were published");
        std::thread::sleep(Duration::from_millis(100));
    };
    let second = loop {
        std::thread::sleep(Duration::from_millis(100));
        let scrape = scrape(addr);
        if requests(&scrape) > requests(&first) {
            break scrape;
        }
        assert!(waited.elapsed() < PATIENCE && !runner.is_finished(), "the counters did not grow");
    };
    stop.stop();
    let record = runner.join().unwrap().unwrap();

    for scrape in [&first, &second] {
        // Both methods have their series; the histogram has every bucket up to +Inf.
        for method in ["getSlot", "getBlockHeight"] {
            assert_eq!(scrape.matching("rpcbench_requests_total", &[("method", method)]).len(), 1);
            let buckets = scrape.matching("rpcbench_latency_seconds_bucket", &[("method", method)]);
            assert_eq!(buckets.len(), 17, "{buckets:?}");
            assert_eq!(buckets.last().unwrap().labels["le"], "+Inf");
            assert!(buckets.windows(2).all(|pair| pair[0].value <= pair[1].value), "cumulative: {buckets:?}");
        }
        assert_eq!(scrape.sum("rpcbench_running", &[]), 1.0);
        assert_eq!(scrape.sum("rpcbench_target_rate", &[]), 300.0);
        let info = scrape.matching("rpcbench_run_info", &[("mode", "open")]);
        assert_eq!(info.len(), 1);
        assert!(info[0].labels["target"].ends_with("/v2/***"), "{:?}", info[0]);
    }
    assert!(requests(&second) > requests(&first));
    assert!(
        second.sum("rpcbench_latency_seconds_count", &[]) >= first.sum("rpcbench_latency_seconds_count", &[])
    );
    assert!(second.sum("rpcbench_achieved_rate", &[]) > 0.0);
    assert!(!format!("{:?}", second.samples).contains("0123456789abcdef"), "the key leaked");

    // After the run the endpoint still answers, with the report's totals.
    let last = scrape(addr);
    let report = RunReport::new(&config, &record);
    assert_eq!(requests(&last), report.requests.total as f64);
    assert_eq!(last.sum("rpcbench_errors_total", &[]), report.requests.errors as f64);
    assert_eq!(
        last.sum("rpcbench_errors_total", &[("class", "rpc_error"), ("code", "-32603")]),
        record.totals.counts.rpc_errors.get(&-32603).map_or(0, |e| e.count) as f64
    );
    assert!(last.sum("rpcbench_errors_total", &[]) > 0.0, "the node injects errors");
    assert_eq!(last.sum("rpcbench_latency_seconds_count", &[]), record.totals.latency.len() as f64);
    for call in &record.calls {
        assert_eq!(
            last.sum("rpcbench_requests_total", &[("method", &call.name)]),
            call.totals.counts.total() as f64,
            "{}",
            call.name
        );
    }
    assert_eq!(last.sum("rpcbench_running", &[]), 0.0);
    assert_eq!(last.sum("rpcbench_in_flight_requests", &[]), 0.0);
    assert!(last.matching("rpcbench_target_rate", &[]).is_empty(), "no target after the run");

    assert_eq!(get(addr, "/").0, 404);
    server.stop();
}

#[test]
fn counters_add_up_over_runs_and_a_port_in_use_is_an_error() {
    let node = node(0.0);
    let live = LiveMetrics::new();
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), live.clone()).unwrap();
    let mut config =
        mix(&node, 500.0, Length { duration: Some(Duration::from_secs(10)), requests: Some(200) });
    config.load = Load::Closed { connections: 2 };
    config.publish_to(live);
    let mut total = 0;
    for _ in 0..2 {
        let record = Run::new(config.clone()).unwrap().execute().unwrap();
        total += record.totals.counts.total();
    }
    assert_eq!(total, 400);
    let scrape = scrape(server.local_addr());
    assert_eq!(scrape.sum("rpcbench_requests_total", &[]), 400.0);
    assert!(scrape.matching("rpcbench_target_rate", &[]).is_empty(), "closed loop has no target rate");
    assert_eq!(scrape.matching("rpcbench_run_info", &[("mode", "closed")]).len(), 1);

    let taken = MetricsServer::start(server.local_addr(), LiveMetrics::new());
    assert!(taken.is_err(), "a second server on the same port");
}

#[test]
fn the_grafana_dashboard_only_queries_exported_metrics() {
    let node = node(0.05);
    let live = LiveMetrics::new();
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), live.clone()).unwrap();
    let mut config =
        mix(&node, 400.0, Length { duration: Some(Duration::from_secs(10)), requests: Some(300) });
    config.publish_to(live);
    Run::new(config).unwrap().execute().unwrap();
    let exported = scrape(server.local_addr()).series_names();

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/grafana/rpcbench.json");
    let text = std::fs::read_to_string(path).expect("the dashboard exists");
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    assert!(
        dashboard["templating"]["list"]
            .as_array()
            .is_some_and(|vars| vars.iter().any(|v| v["type"] == "datasource" && v["query"] == "prometheus")),
        "a Prometheus datasource variable"
    );
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut exprs = Vec::new();
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or("?");
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "panel '{title}' uses the variable");
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("panel '{title}' has no queries"));
        assert!(!targets.is_empty(), "panel '{title}' has no queries");
        for target in targets {
            let expr =
                target["expr"].as_str().unwrap_or_else(|| panic!("panel '{title}': a query without expr"));
            exprs.push((title.to_string(), expr.to_string()));
        }
    }
    assert!(exprs.len() >= 5, "{exprs:?}");
    let mut used = BTreeSet::new();
    for (title, expr) in &exprs {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "panel '{title}': '{expr}' uses no rpcbench metric");
        for name in names {
            assert!(
                exported.contains(&name),
                "panel '{title}': '{name}' is not exported (exported: {exported:?})"
            );
            used.insert(name);
        }
    }
    for wanted in [
        "rpcbench_requests_total",
        "rpcbench_errors_total",
        "rpcbench_latency_seconds_bucket",
        "rpcbench_achieved_rate",
        "rpcbench_target_rate",
        "rpcbench_in_flight_requests",
    ] {
        assert!(used.contains(wanted), "no panel shows {wanted}");
    }
}

/// The `rpcbench_…` identifiers in a PromQL expression.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let mut index = 0;
    while let Some(found) = expr[index..].find("rpcbench_") {
        let start = index + found;
        let boundary = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        if boundary {
            names.push(expr[start..end].to_string());
        }
        index = end;
    }
    names
}

#[test]
fn metric_names_are_found_in_promql() {
    assert_eq!(
        metric_names("histogram_quantile(0.99, sum by (le) (rate(rpcbench_latency_seconds_bucket[1m]))) / x_rpcbench_y"),
        vec!["rpcbench_latency_seconds_bucket"]
    );
}

#[test]
fn the_endpoint_caps_idle_connections_and_still_answers() {
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), LiveMetrics::new()).unwrap();
    let addr = server.local_addr();
    // Idle and trickling clients, more than the cap: they used to stay open forever and take
    // the file descriptors the run needed.
    let opened = Instant::now();
    let mut idle = Vec::new();
    for _ in 0..(rpcbench::metrics::MAX_CONNECTIONS + 40) {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        use std::io::Write;
        stream.write_all(b"GET /metr").ok();
        idle.push((stream, false));
    }
    // Connections past the cap are closed at once: reading them ends. Polled (a busy machine
    // runs the endpoint's accepts late), until well before the header timeout would close
    // the ones under the cap too.
    let before_the_timeout = opened + rpcbench::metrics::HEADER_TIMEOUT / 2;
    let mut closed = 0;
    while closed < 40 && Instant::now() < before_the_timeout {
        for (stream, seen_closed) in idle.iter_mut().filter(|(_, seen_closed)| !*seen_closed) {
            use std::io::Read;
            stream.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
            let mut byte = [0u8; 1];
            match stream.read(&mut byte) {
                Ok(0) => *seen_closed = true,
                Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => *seen_closed = true,
                _ => {}
            }
        }
        closed = idle.iter().filter(|(_, seen_closed)| *seen_closed).count();
    }
    assert!(closed >= 40, "{closed} connections past the cap were closed in {:?}", opened.elapsed());
    // The header timeout frees the trickling ones, and the endpoint answers again (polled
    // from the timeout on: a connection it takes while still full is closed unanswered).
    std::thread::sleep(
        (opened + rpcbench::metrics::HEADER_TIMEOUT).saturating_duration_since(Instant::now()),
    );
    let deadline = Instant::now() + PATIENCE;
    let status = loop {
        match try_get(addr, "/metrics") {
            Some((status, _)) => break status,
            None => assert!(Instant::now() < deadline, "the endpoint did not answer again"),
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status, 200);
    drop(idle);
    server.stop();
}
