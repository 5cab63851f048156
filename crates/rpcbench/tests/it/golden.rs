//! Golden files: the results file format, and the text, JSON, Markdown and CSV reports
//! rendered from committed, deterministic results files (`tests/golden/`). A change to any
//! of them fails here; `UPDATE_GOLDEN=1 cargo test` rewrites them after a deliberate change.
//!
//! The results files are built from a synthetic run recorded through the real recorder (a
//! fixed pseudo-random sequence of outcomes and latencies), so the format test pins exactly
//! what `run --save` writes, and the report tests read the committed files back from disk.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use rpcbench::capacity::{judge_step, summarize, CapacitySettings, Slo};
use rpcbench::capacity_file::CapacityFile;
use rpcbench::compare::{comparison_json, render_comparison_text};
use rpcbench::engine::config::{Arrivals, Length, Load, RunConfig, Target};
use rpcbench::monitor::ResourceReport;
use rpcbench::outcome::{InvalidKind, Outcome};
use rpcbench::record::{Recorder, RunRecord, Series, Timing};
use rpcbench::report::{
    render_capacity_csv, render_capacity_html, render_capacity_markdown, render_csv, render_html,
    render_markdown, render_text,
};
use rpcbench::results::{GeneratorData, Machine, ResultsFile, SavedRun};
use rpcbench::RequestTemplate;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `actual` with the golden file `name`, or rewrites it under `UPDATE_GOLDEN=1`.
fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(golden_dir()).unwrap();
        // Atomically: another test may be reading the committed files meanwhile.
        rpcbench::results::write_atomically(&path, actual.as_bytes()).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("{}: {err} (UPDATE_GOLDEN=1 cargo test writes it)", path.display()));
    if expected != actual {
        let line = expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{} differs from what is rendered now, first at line {}:\n  golden: {:?}\n  now:    {:?}\n\
             (UPDATE_GOLDEN=1 cargo test rewrites the golden files after a deliberate change)",
            path.display(),
            line + 1,
            expected.lines().nth(line).unwrap_or(""),
            actual.lines().nth(line).unwrap_or("")
        );
    }
}

/// A fixed pseudo-random sequence (a 64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// A synthetic 10-second run of getBalance: mostly successes, some JSON-RPC errors, 503s,
/// 429s, invalid responses, timeouts and closed connections, with a latency tail.
fn synthetic(open_loop: bool) -> ResultsFile {
    let (url, load) = if open_loop {
        (
            "http://127.0.0.1:8899/",
            Load::Open { rate: 2000.0, arrivals: Arrivals::Poisson, max_connections: 256 },
        )
    } else {
        (
            "https://rpc.example.com/v3/0123456789abcdef0123456789abcdef?api-key=hunter2",
            Load::Closed { connections: 64 },
        )
    };
    let request = RequestTemplate::from_method(
        "getBalance",
        Some(&serde_json::json!(["4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ"])),
    )
    .unwrap();
    let mut config = RunConfig::new(Target::parse(url).unwrap(), request);
    config.load = load;
    config.length = Length { duration: Some(Duration::from_secs(10)), requests: None };
    config.warmup = Duration::from_secs(1);
    config.headers =
        vec![("Authorization".into(), "Bearer secret-token".into()), ("X-Trace".into(), "demo".into())];
    config.threads = 2;

    let series = Arc::new(Mutex::new(Series::default()));
    let mut recorder = Recorder::new(1, series);
    let mut random = Lcg(if open_loop { 7 } else { 11 });
    let count = 20_000u64;
    for i in 0..count {
        let outcome = match random.next(1000) {
            0..=24 => Outcome::RpcError(-32005),
            25..=29 => Outcome::RpcError(-32603),
            30..=39 => Outcome::HttpStatus(503),
            40..=42 => Outcome::HttpStatus(429),
            43 => Outcome::Invalid(InvalidKind::NotJson),
            44 => Outcome::Timeout,
            45 => Outcome::Closed,
            _ => Outcome::Ok,
        };
        let base = if open_loop { 900 } else { 2_500 };
        let mut actual = base + random.next(base) + random.next(base / 2);
        if random.next(100) == 0 {
            actual += random.next(40_000);
        }
        if outcome == Outcome::Timeout {
            actual = 5_000_000;
        }
        let lag = open_loop
            .then(|| Duration::from_micros(random.next(400) + if random.next(50) == 0 { 3_000 } else { 0 }));
        let actual = Duration::from_micros(actual);
        let timing =
            Timing { done_tick: i * 100 / count, corrected: actual + lag.unwrap_or_default(), actual, lag };
        recorder.record(0, outcome, timing, || match outcome {
            Outcome::RpcError(-32005) => Some("Node is behind by 42 slots | retry later".into()),
            Outcome::RpcError(_) => Some("Internal error".into()),
            _ => None,
        });
        match outcome {
            Outcome::HttpStatus(status) => recorder.record_status(0, status),
            Outcome::Timeout | Outcome::Closed | Outcome::Connect => {}
            _ => recorder.record_status(0, 200),
        }
    }
    recorder.calls[0].bytes_sent = count * 171;
    recorder.calls[0].bytes_received = count * 238;
    if open_loop {
        recorder.unsent = 12;
    }
    recorder.flush_interval();
    let names = [(config.workload.label(), config.workload.calls()[0].method().to_string())];
    let record = RunRecord::new(recorder, &names, Duration::from_micros(10_002_345), false);
    let mut file = ResultsFile::from_run(&config, &record, UNIX_EPOCH + Duration::from_secs(1_700_000_000));
    // What depends on the machine the test runs on, fixed.
    file.tool = "rpcbench 0.1.0".into();
    file.machine = Machine { cores: 8, os: "linux".into(), arch: "x86_64".into() };
    file.generator = Some(GeneratorData {
        threads: 2,
        cpu_us: Some(3_100_000),
        wall_ns: 20_004_690_000,
        peak_rss_bytes: Some(9_437_184),
    });
    file.workload.threads = 2;
    file
}

#[test]
fn the_results_file_format_is_pinned() {
    let closed = synthetic(false);
    let open = synthetic(true);
    assert!(!closed.to_json().contains("0123456789abcdef0123456789abcdef"), "the key is redacted");
    assert!(!closed.to_json().contains("hunter2"), "the key is redacted");
    assert!(!closed.to_json().contains("secret-token"), "secret header values are redacted");
    check_golden("closed.results.json", &closed.to_json());
    check_golden("open.results.json", &open.to_json());
    // What is written reads back as the same file.
    let back = ResultsFile::from_json(&open.to_json(), Path::new("open.results.json")).unwrap();
    assert_eq!(back, open);
}

/// Files written before the series had 100 ms points (version 1: `interval_s`, points from
/// their whole second) still load, and give the very report the same run gives today.
#[test]
fn a_version_1_results_file_of_whole_seconds_still_loads() {
    let path = golden_dir().join("closed.v1.results.json");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(r#""version":1,"#) && text.contains(r#""series":{"interval_s":1,"#),
        "a version 1 file"
    );
    let old = SavedRun::load(&path).expect("a version 1 file loads");
    let now = golden_run("closed");
    assert_eq!(old.record.series_interval_ms, 1000);
    let starts: Vec<u64> = old.record.series.iter().map(|p| p.start_ms).collect();
    assert_eq!(starts, (0..10).map(|second| second * 1000).collect::<Vec<_>>());
    assert_eq!(old.record.series, now.record.series);
    assert_eq!(old.report.to_json(), now.report.to_json());
    assert_eq!(render_text(&old.report), render_text(&now.report));
    // Read, it is today's layout: saved again, it is the file this version writes, but for
    // how each point's histogram states its range (its counts are the same).
    let layout = |file: &ResultsFile| {
        let mut value: serde_json::Value = serde_json::from_str(&file.to_json()).unwrap();
        let latency = value["series"].as_object_mut().unwrap().remove("latency").unwrap();
        (value, latency)
    };
    let ((old_layout, old_latency), (now_layout, now_latency)) = (layout(&old.file), layout(&now.file));
    assert!(old_layout == now_layout, "the same file once read");
    let counts = |text: &serde_json::Value| -> Vec<(u64, u64)> {
        let histogram = rpcbench::results::decode_histogram(text.as_str().unwrap()).unwrap();
        histogram.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    };
    let points =
        |latency: &serde_json::Value| latency.as_array().unwrap().iter().map(counts).collect::<Vec<_>>();
    assert!(points(&old_latency) == points(&now_latency), "each point's latencies are the same");
    // A version 1 series that does not convert is refused, not wrapped.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["series"]["points"][3][0] = serde_json::json!(u64::MAX);
    let err = ResultsFile::from_json(&value.to_string(), &path).unwrap_err().to_string();
    assert!(err.contains("second is not a whole number"), "{err}");
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["series"]["interval_s"] = serde_json::json!(0);
    let err = ResultsFile::from_json(&value.to_string(), &path).unwrap_err().to_string();
    assert!(err.contains("series interval_ms is 0"), "{err}");
}

fn golden_run(name: &str) -> SavedRun {
    SavedRun::load(&golden_dir().join(format!("{name}.results.json"))).expect("the committed results file")
}

#[test]
fn reports_render_from_the_committed_results_files() {
    let closed = golden_run("closed");
    let open = golden_run("open");
    assert_eq!(open.report.requests.total, 20_000);
    check_golden("closed.txt", &render_text(&closed.report));
    check_golden("open.txt", &render_text(&open.report));
    check_golden("open.json", &(open.report.to_json() + "\n"));
    check_golden("closed.md", &render_markdown(std::slice::from_ref(&closed)));
    check_golden("open.md", &render_markdown(std::slice::from_ref(&open)));
    let both = [closed, open];
    check_golden("runs.csv", &render_csv(&both));
    check_golden("compare.txt", &render_comparison_text(&both));
    check_golden("compare.md", &render_markdown(&both));
    check_golden("compare.json", &(comparison_json(&both) + "\n"));
}

#[test]
fn the_html_report_is_self_contained() {
    let runs = [golden_run("closed"), golden_run("open")];
    for runs in [&runs[..1], &runs[1..], &runs[..]] {
        let html = render_html(runs);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        assert_eq!(html.matches("<svg").count(), 4, "four charts");
        assert!(!html.contains("could not be drawn"), "every chart is drawn");
        for offline in ["<script", " src=", "href=", "@import", "url("] {
            assert!(!html.contains(offline), "the page loads nothing: {offline}");
        }
        for section in [
            "Throughput over time",
            "Latency by percentile",
            "Latency histogram",
            "Per method",
            "Outcomes and errors by class",
        ] {
            assert!(html.contains(section), "{section}");
        }
        assert!(html.contains("Node is behind by 42 slots"), "JSON-RPC errors by class, with the message");
        assert!(!html.contains("0123456789abcdef0123456789abcdef"));
    }
    let html = render_html(&runs);
    assert!(html.contains("rpcbench comparison"));
    assert!(html.contains("Ratios are against closed."));
}

/// The closed run was made against a URL with a key in its path and its query and with an
/// `Authorization` header: no output format shows any of them.
#[test]
fn no_report_format_shows_a_secret() {
    let runs = [golden_run("closed"), golden_run("open")];
    let outputs = [
        ("text", render_text(&runs[0].report)),
        ("json", runs[0].report.to_json()),
        ("markdown", render_markdown(&runs[..1])),
        ("csv", render_csv(&runs)),
        ("html", render_html(&runs)),
        ("comparison text", render_comparison_text(&runs)),
        ("comparison markdown", render_markdown(&runs)),
        ("comparison json", comparison_json(&runs)),
        ("results file", runs[0].file.to_json()),
    ];
    for (format, output) in outputs {
        for secret in ["0123456789abcdef0123456789abcdef", "hunter2", "secret-token"] {
            assert!(!output.contains(secret), "{format} shows {secret}");
        }
        if format != "results file" {
            assert!(output.contains("/v3/***"), "{format} names the target, redacted");
        }
    }
}

/// Fixed figures of a monitored target process.
fn target_resources(pid: u32, name: &str, cpu: f64, rss_mib: u64) -> ResourceReport {
    ResourceReport {
        pids: vec![pid],
        names: vec![name.into()],
        samples: 42,
        interval_ms: 250,
        monitored_us: 10_250_000,
        cpu_percent_avg: cpu,
        cpu_percent_peak: cpu * 1.6,
        rss_bytes_avg: rss_mib << 20,
        rss_bytes_peak: (rss_mib << 20) + (rss_mib << 18),
        disk_read_bytes: Some(rss_mib * 4096),
        disk_write_bytes: Some(0),
        tcp_connections_avg: Some(63.5),
        tcp_connections_peak: Some(64),
        exited: false,
    }
}

/// Seed 003's resource table: a monitored run keeps its target's figures in the results file,
/// and the text, Markdown, CSV, HTML and comparison reports show them.
#[test]
fn monitor_data_is_saved_and_shown_in_every_format() {
    let mut file = synthetic(false);
    file.label = Some("agave".into());
    file.target_resources = Some(target_resources(4242, "agave-validator", 135.55, 1360));
    check_golden("monitored.results.json", &file.to_json());
    let monitored = SavedRun::load(&golden_dir().join("monitored.results.json")).unwrap();
    let (kept, given) = (monitored.report.target_resources.as_ref().unwrap(), file.target_resources.unwrap());
    assert_eq!(
        (&kept.pids, kept.rss_bytes_peak, kept.disk_read_bytes),
        (&given.pids, given.rss_bytes_peak, given.disk_read_bytes)
    );
    assert!((kept.cpu_percent_peak - given.cpu_percent_peak).abs() < 1e-9, "the results file keeps them");
    check_golden("monitored.txt", &render_text(&monitored.report));
    check_golden("monitored.md", &render_markdown(std::slice::from_ref(&monitored)));
    // A second target, monitored too: the comparison has a row per resource.
    let mut other = golden_run("open").file;
    other.label = Some("firedancer".into());
    other.target_resources = Some(target_resources(777, "fdctl", 95.0, 40));
    let other = SavedRun::new(other, "other").unwrap();
    let both = [monitored, other];
    check_golden("compare-monitored.txt", &render_comparison_text(&both));
    check_golden("compare-monitored.md", &render_markdown(&both));
    check_golden("compare-monitored.json", &(comparison_json(&both) + "\n"));
    check_golden("monitored.csv", &render_csv(&both));
    let text = render_comparison_text(&both);
    let rss = text.lines().find(|l| l.starts_with("target RSS peak")).expect("an RSS peak row");
    assert!(rss.contains("1.66GiB") && rss.contains("50.0MiB (0.03x)"), "{rss}");
    let html = render_html(&both);
    for shown in ["<h2>Resources</h2>", "target CPU peak", "216.9%", "1.66GiB", "generator RSS peak"] {
        assert!(html.contains(shown), "the HTML page shows {shown}");
    }
    // The unmonitored golden runs have no target rows, but the generator's.
    let plain = render_markdown(&[golden_run("closed")]);
    assert!(!plain.contains("target CPU") && plain.contains("| generator CPU | 15.5% |"), "{plain}");
}

/// The record of a synthetic capacity step at `rate` for 2 s: latency grows with the rate
/// past 300 req/s, and 429s start past 350.
fn synthetic_step(rate: f64, seed: u64) -> RunRecord {
    let series = Arc::new(Mutex::new(Series::default()));
    let mut recorder = Recorder::new(1, series);
    let mut random = Lcg(seed);
    let count = (rate * 2.0) as u64;
    let base = if rate <= 300.0 { 2_000 } else { 2_000 + ((rate - 300.0) * 2_000.0) as u64 };
    for i in 0..count {
        let outcome =
            if rate > 350.0 && random.next(100) < 8 { Outcome::HttpStatus(429) } else { Outcome::Ok };
        let actual = Duration::from_micros(base + random.next(base / 2) + random.next(base / 4));
        let lag = Duration::from_micros(random.next(300));
        let timing = Timing { done_tick: i * 20 / count, corrected: actual + lag, actual, lag: Some(lag) };
        recorder.record(0, outcome, timing, || None);
        recorder.record_status(0, if outcome == Outcome::Ok { 200 } else { 429 });
    }
    recorder.calls[0].bytes_sent = count * 60;
    recorder.calls[0].bytes_received = count * 80;
    recorder.flush_interval();
    let names = [("getSlot".to_string(), "getSlot".to_string())];
    let mut record = RunRecord::new(recorder, &names, Duration::from_millis(2_000), false);
    // What depends on the machine the test runs on, fixed.
    record.generator = rpcbench::record::GeneratorUsage {
        workers: rpcbench::engine::ThreadUsage {
            threads: 1,
            cpu: Some(Duration::from_micros((rate * 900.0) as u64)),
            wall: Duration::from_secs(2),
        },
        peak_rss_bytes: Some(12_582_912),
    };
    record
}

/// A synthetic capacity search (100, 200, 400, 300, 350 req/s against `p99<20ms,errors<1%`),
/// the target monitored, as `capacity --save` writes it.
fn synthetic_capacity() -> CapacityFile {
    let target = Target::parse("http://127.0.0.1:8899/v3/0123456789abcdef0123456789abcdef").unwrap();
    let request = RequestTemplate::from_method("getSlot", None).unwrap();
    let base = RunConfig::new(target, request);
    let mut settings = CapacitySettings::new(Slo::parse("p99<20ms,errors<1%").unwrap());
    settings.step = Duration::from_secs(2);
    settings.warmup = Duration::from_millis(500);
    settings.cooldown = Duration::from_millis(500);
    let mut steps = Vec::new();
    let mut data = Vec::new();
    for (index, rate) in [100.0, 200.0, 400.0, 300.0, 350.0].into_iter().enumerate() {
        let record = synthetic_step(rate, index as u64 + 3);
        let resources = target_resources(4242, "agave-validator", rate / 4.0, 900 + rate as u64);
        let (step, step_data) = judge_step(&base, &settings, rate, index + 1, &record, Some(resources));
        steps.push(step);
        data.push(step_data);
    }
    let mut report = summarize(&base, &settings, steps, false, Duration::from_secs(14));
    report.tool = "rpcbench 0.1.0".into();
    let mut file = CapacityFile::new(
        report,
        data,
        base.workload.sample_request(0),
        UNIX_EPOCH + Duration::from_secs(1_700_000_000),
    );
    file.machine = Machine { cores: 8, os: "linux".into(), arch: "x86_64".into() };
    file
}

#[test]
fn capacity_files_and_their_reports_are_pinned() {
    let file = synthetic_capacity();
    check_golden("capacity.results.json", &file.to_json());
    let path = golden_dir().join("capacity.results.json");
    let saved = CapacityFile::load(&path).expect("the committed capacity file");
    assert_eq!(
        saved.report.render_text(),
        file.report.render_text(),
        "the text renders again, byte for byte"
    );
    let report = &saved.report;
    assert_eq!(
        (report.capacity, report.first_failing_rate, report.knee),
        (Some(300.0), Some(350.0), Some(300.0))
    );
    check_golden("capacity.txt", &report.render_text());
    check_golden("capacity.json", &(report.to_json() + "\n"));
    check_golden("capacity.md", &render_capacity_markdown(&saved));
    check_golden("capacity.csv", &render_capacity_csv(&saved));
    let text = report.render_text();
    assert!(text.contains("CPU") && text.contains("Generator: 1 worker thread(s)"), "{text}");
    for (format, output) in [
        ("file", file.to_json()),
        ("text", saved.report.render_text()),
        ("json", saved.report.to_json()),
        ("markdown", render_capacity_markdown(&saved)),
        ("csv", render_capacity_csv(&saved)),
        ("html", render_capacity_html(&saved)),
    ] {
        assert!(!output.contains("0123456789abcdef"), "{format}: the key is redacted");
    }
}

#[test]
fn the_capacity_page_plots_against_the_offered_rate() {
    let file = CapacityFile::load(&golden_dir().join("capacity.results.json")).unwrap();
    let html = render_capacity_html(&file);
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert_eq!(html.matches("<svg").count(), 4, "latency, errors, achieved rate and target CPU");
    assert!(!html.contains("could not be drawn"), "every chart is drawn");
    for offline in ["<script", " src=", "href=", "@import", "url("] {
        assert!(!html.contains(offline), "the page loads nothing: {offline}");
    }
    for shown in [
        "Latency against offered rate",
        "Errors against offered rate",
        "Achieved against offered rate",
        "Target CPU against offered rate",
        "capacity 300/s",
        "knee 300/s",
        ">p50<",
        ">p90<",
        ">p99<",
        "SLO p99&lt;20ms",
        "SLO errors&lt;1%",
        "Capacity: 300 req/s within the SLO",
        "<th>target CPU avg</th>",
    ] {
        assert!(html.contains(shown), "the page shows {shown}");
    }
    // The answer is marked on every chart.
    assert_eq!(html.matches("capacity 300/s").count(), 4, "the capacity marked on each chart");
    assert!(!html.contains("0123456789abcdef"));
}

#[test]
fn a_capacity_file_that_does_not_add_up_is_refused() {
    let text = std::fs::read_to_string(golden_dir().join("capacity.results.json")).unwrap();
    let path = Path::new("capacity.results.json");
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["report"]["steps"][1]["p99_us"] = serde_json::json!(1);
    let err = CapacityFile::from_json(&value.to_string(), path).unwrap_err().to_string();
    assert!(err.contains("step 2: p99 is 1 in the report but"), "{err}");
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["steps"].as_array_mut().unwrap().pop();
    let err = CapacityFile::from_json(&value.to_string(), path).unwrap_err().to_string();
    assert!(err.contains("4 recorded steps for 5 reported steps"), "{err}");
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["version"] = serde_json::json!(99);
    let err = CapacityFile::from_json(&value.to_string(), path).unwrap_err().to_string();
    assert!(err.contains("version 99"), "{err}");
    // A headline that its steps do not give (edited by hand, or written wrong) is refused.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["report"]["capacity"] = serde_json::json!(999999.0);
    let err = CapacityFile::from_json(&value.to_string(), path).unwrap_err().to_string();
    assert!(err.contains("the headline says capacity 999999/s"), "{err}");
    let run = std::fs::read_to_string(golden_dir().join("open.results.json")).unwrap();
    let err = CapacityFile::from_json(&run, path).unwrap_err().to_string();
    assert!(err.contains("a run's results file"), "{err}");
    let err = ResultsFile::from_json(&text, path).unwrap_err().to_string();
    assert!(err.contains("this is a capacity file"), "{err}");
}

/// A search stopped before its first step, and one against a dead target (no answer, no
/// capacity, no knee), still render in every format.
#[test]
fn capacity_pages_of_empty_and_failed_searches_draw() {
    let mut empty = synthetic_capacity();
    empty.report.steps.clear();
    empty.steps.clear();
    (empty.report.capacity, empty.report.first_failing_rate, empty.report.knee) = (None, None, None);
    let mut dead = synthetic_capacity();
    for step in &mut dead.report.steps {
        step.errors = step.requests;
        step.error_percent = 100.0;
        step.verdict = rpcbench::capacity::Verdict::SloBreach;
    }
    (dead.report.capacity, dead.report.first_failing_rate, dead.report.knee) = (None, None, None);
    for file in [&empty, &dead] {
        let html = render_capacity_html(file);
        assert!(!html.contains("could not be drawn"), "{html}");
        assert!(!html.contains("capacity 300/s"));
        assert!(html.contains("Capacity: none"));
        assert!(render_capacity_markdown(file).contains("**Capacity: none; no step met the SLO**"));
        assert_eq!(render_capacity_csv(file).lines().count(), file.report.steps.len() + 1);
    }
}

/// Checks a capacity JSON report against the committed `schema/capacity.schema.json`.
fn assert_valid_capacity_json(json: &str) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/capacity.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    let messages: Vec<String> = match schema.validate(&value) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.map(|e| format!("{} at {}", e, e.instance_path)).collect(),
    };
    assert!(messages.is_empty(), "the capacity report does not match the schema:\n{}", messages.join("\n"));
}

#[test]
fn capacity_json_reports_match_their_schema() {
    let file = CapacityFile::load(&golden_dir().join("capacity.results.json")).unwrap();
    assert_valid_capacity_json(&file.report.to_json());
    let mut value: serde_json::Value = serde_json::from_str(&file.report.to_json()).unwrap();
    value["steps"][0].as_object_mut().unwrap().remove("p90_us");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/capacity.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(
        !jsonschema::JSONSchema::compile(&schema).unwrap().is_valid(&value),
        "a missing field is refused"
    );
}

/// A name from a file or a client (a replayed call, a server's message) with a line feed or
/// markup: it cannot forge a line of the text report, turn into Markdown markup, or run as a
/// spreadsheet formula.
#[test]
fn names_from_files_cannot_forge_report_lines_markup_or_formulas() {
    let mut run = golden_run("closed");
    let forged = "getSlot\nPASS all thresholds";
    run.report.method = forged.to_string();
    if let Some(method) = run.report.methods.first_mut() {
        method.name = forged.to_string();
    }
    let text = render_text(&run.report);
    assert!(!text.lines().any(|line| line.starts_with("PASS")), "{text}");
    assert!(text.contains("getSlot\\nPASS all thresholds"), "{text}");
    run.report.method = "[click](http://x) <img src=x> | # =cmd".to_string();
    let markdown = render_markdown(std::slice::from_ref(&run));
    let title = markdown.lines().next().unwrap();
    assert!(title.contains("\\[click\\](http://x) \\<img src=x\\> \\| # =cmd"), "{title}");
    let mut formula = golden_run("closed");
    formula.report.target = "=HYPERLINK(\"http://x\")".to_string();
    let csv = render_csv(std::slice::from_ref(&formula));
    assert!(csv.contains(",\"'=HYPERLINK(\"\"http://x\"\")\","), "{csv}");
}

/// A committed `tx --save` report of each chain (real output of the command against the mock
/// nodes, the port set to the chain's usual one).
fn tx_report(chain: &str) -> serde_json::Value {
    let path = golden_dir().join(format!("tx-{chain}.report.json"));
    rpcbench::report::tx::read_tx_report(&path).unwrap_or_else(|err| panic!("{err}"))
}

#[test]
fn tx_reports_of_both_chains_render_from_the_committed_reports_and_match_their_schema() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/tx.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    for chain in ["ethereum", "solana"] {
        let report = tx_report(chain);
        if let Err(errors) = schema.validate(&report) {
            let messages: Vec<String> = errors.map(|e| format!("{}: {e}", e.instance_path)).collect();
            panic!("tx-{chain}.report.json does not match tx.schema.json:\n{}", messages.join("\n"));
        }
        check_golden(&format!("tx-{chain}.txt"), &rpcbench::report::tx::render_tx_text(&report));
        check_golden(&format!("tx-{chain}.md"), &rpcbench::report::render_tx_markdown(&report));
        let html = rpcbench::report::render_tx_html(&report);
        assert!(html.contains("Sent vs included per second") && html.contains("Latency by percentile"));
        assert_eq!(html.matches("<svg").count(), 2, "{chain}: both charts are drawn");
        assert!(!html.contains("http://") || html.contains("127.0.0.1"), "no request leaves the page");
    }
}

#[test]
fn a_run_s_thresholds_show_in_its_html_and_markdown_reports_as_in_its_text() {
    let mut run = golden_run("closed");
    run.report.thresholds = vec![
        rpcbench::report::ThresholdResult {
            threshold: "p99<5ms".into(),
            passed: true,
            actual: "3.20ms".into(),
            exceeded_by: String::new(),
        },
        rpcbench::report::ThresholdResult {
            threshold: "errors<0.1%".into(),
            passed: false,
            actual: "2.00%".into(),
            exceeded_by: "1.90%".into(),
        },
    ];
    let text = render_text(&run.report);
    assert!(text.contains("FAILED  errors<0.1% (measured 2.00%, past the limit by 1.90%)"), "{text}");
    let markdown = render_markdown(std::slice::from_ref(&run));
    assert!(markdown.contains("### Thresholds\n"), "{markdown}");
    assert!(markdown.contains("| `p99<5ms` | ok | 3.20ms |"), "{markdown}");
    assert!(
        markdown.contains("| `errors<0.1%` | **FAILED** | 2.00% (past the limit by 1.90%) |"),
        "{markdown}"
    );
    let html = render_html(std::slice::from_ref(&run));
    assert!(
        html.contains("<h2>Thresholds</h2>") && html.contains("verdict-fail"),
        "the HTML page shows them"
    );
    // In a comparison each run's thresholds are named after the run.
    let mut other = golden_run("closed");
    other.label = "other".into();
    let both = [run, other];
    let markdown = render_markdown(&both);
    assert!(markdown.contains(&format!("### Thresholds: {}", both[0].label)), "{markdown}");
    assert_eq!(markdown.matches("### Thresholds").count(), 1, "only the run that has thresholds: {markdown}");
    assert!(render_html(&both).contains(&format!("<h2>Thresholds: {}</h2>", both[0].label)));
}
