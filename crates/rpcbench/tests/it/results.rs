//! Results files of real runs: written and read back they give the very report the live run
//! printed; a stopped run still saves what it completed; shards merge losslessly, and files
//! of different workloads are refused.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rpcbench::engine::config::{Length, Load};
use rpcbench::engine::Run;
use rpcbench::record::Totals;
use rpcbench::report::{render_text, RunReport};
use rpcbench::results::{merge, merge_shards, ResultsError, ResultsFile};
use rpcbench::thresholds::Threshold;

use crate::util::{closed_loop, json_200, requests, status, TestServer};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-it-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every fourth request is a JSON-RPC error, every seventh an HTTP 503.
fn mixed_server() -> TestServer {
    TestServer::start(|request| {
        if request.index % 7 == 0 {
            status(503, "busy")
        } else if request.index % 4 == 0 {
            json_200(&format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32005,"message":"limit exceeded"}}}}"#,
                request.id
            ))
        } else {
            json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, request.id))
        }
    })
}

#[test]
fn a_saved_staged_run_with_thresholds_reports_exactly_what_the_live_run_printed() {
    use rpcbench::engine::config::Arrivals;
    use rpcbench::engine::stages::Stage;
    use rpcbench::workload::{Call, Workload};
    let server = mixed_server();
    let mut config = closed_loop(&server.url(), 1, requests(1));
    config.load = Load::Open { rate: 50.0, arrivals: Arrivals::Uniform, max_connections: 8 };
    config.length = rpcbench::engine::config::Length { duration: None, requests: None };
    config.stages = [20.0, 30.0, 40.0, 50.0]
        .map(|level| Stage { level, duration: Duration::from_millis(400), ramp: Duration::ZERO })
        .to_vec();
    // Calls whose names are not in alphabetical order: the report keeps the workload's.
    config.workload = Workload::new(vec![
        Call::new("zeta", "getSlot", None, 2).unwrap(),
        Call::new("alpha", "getSlot", None, 1).unwrap(),
    ])
    .unwrap();
    let started = SystemTime::now();
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let mut live = RunReport::new(&config, &record);
    let thresholds = ["p99 < 5s", "errors < 0.1%", "zeta: p99 < 5s"];
    live.thresholds = thresholds.iter().map(|text| Threshold::parse(text).unwrap().evaluate(&live)).collect();
    let live_text = render_text(&live);
    assert!(live_text.contains("Per stage:") && live_text.contains("4 stages, 20..50"), "{live_text}");
    assert!(live_text.contains("Thresholds:"), "{live_text}");
    let path = temp_dir("staged").join("run.json");
    let mut file = ResultsFile::from_run(&config, &record, started);
    file.thresholds.clone_from(&live.thresholds);
    file.save(&path).unwrap();
    let again = ResultsFile::load(&path).unwrap().to_report().unwrap();
    assert_eq!(render_text(&again), live_text);
    assert_eq!(again.to_json(), live.to_json());
    assert_eq!(again.methods.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), vec!["zeta", "alpha"]);
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
}

#[test]
fn a_saved_run_reports_exactly_what_the_live_run_printed() {
    let server = mixed_server();
    let url = format!("{}v3/0123456789abcdef0123456789abcdef", server.url());
    let config = closed_loop(&url, 3, requests(700));
    let started = SystemTime::now();
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let live = RunReport::new(&config, &record);
    let path = temp_dir("roundtrip").join("run.json");
    ResultsFile::from_run(&config, &record, started).save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("0123456789abcdef0123456789abcdef"), "the key is redacted");
    assert_eq!(text.lines().count(), 1, "compact: one line");

    let file = ResultsFile::load(&path).unwrap();
    let again = file.to_report().unwrap();
    assert_eq!(again, live);
    assert_eq!(again.to_json(), live.to_json());
    assert_eq!(render_text(&again), render_text(&live));
    // The histograms themselves came back exactly.
    let back = file.to_record().unwrap();
    assert_eq!(back.totals.latency, record.totals.latency);
    assert_eq!(back.totals.latency_uncorrected, record.totals.latency_uncorrected);
    assert_eq!(back.totals.latency_ok, record.totals.latency_ok);
    assert_eq!(back.totals.counts, record.totals.counts);
    assert_eq!(back.series, record.series);
    assert_eq!(
        file.methods["getSlot"].outcomes.rpc_errors[&-32005].first_message.as_deref(),
        Some("limit exceeded")
    );
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
}

#[test]
fn a_stopped_run_still_saves_what_it_completed() {
    let server = mixed_server();
    let config =
        closed_loop(&server.url(), 2, Length { duration: Some(Duration::from_secs(30)), requests: None });
    let run = Run::new(config.clone()).unwrap();
    let stop = run.stop_handle();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        stop.stop();
    });
    let started = SystemTime::now();
    let record = run.execute().unwrap();
    let path = temp_dir("stopped").join("stopped.json");
    ResultsFile::from_run(&config, &record, started).save(&path).unwrap();
    let file = ResultsFile::load(&path).unwrap();
    assert!(file.interrupted);
    assert!(file.elapsed() < Duration::from_secs(5));
    let report = file.to_report().unwrap();
    assert!(report.interrupted);
    assert!(report.requests.total > 0);
    assert_eq!(report.requests.total, record.totals.counts.total());
    assert!(render_text(&report).contains("INTERRUPTED"));
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["stopped.json".to_string()]);
    std::fs::remove_dir_all(path.parent().unwrap()).ok();
}

fn save(config: &rpcbench::engine::config::RunConfig, dir: &Path, name: &str) -> (PathBuf, Totals) {
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let path = dir.join(name);
    ResultsFile::from_run(config, &record, SystemTime::now()).save(&path).unwrap();
    (path, record.totals)
}

#[test]
fn shards_merge_into_exactly_the_union() {
    let server = mixed_server();
    let dir = temp_dir("merge");
    let config = closed_loop(&server.url(), 2, requests(300));
    let mut union = Totals::default();
    let mut files = Vec::new();
    for shard in 0..3 {
        let (path, totals) = save(&config, &dir, &format!("shard{shard}.json"));
        union.merge(&totals);
        files.push((path.clone(), ResultsFile::load(&path).unwrap()));
    }
    let merged = merge(&files).unwrap();
    let out = dir.join("merged.json");
    merged.save(&out).unwrap();
    let merged = ResultsFile::load(&out).unwrap();
    assert_eq!(merged.shards(), 3);
    let record = merged.to_record().unwrap();
    assert_eq!(record.totals.counts, union.counts);
    assert_eq!(record.totals.status_counts, union.status_counts);
    assert_eq!(record.totals.latency, union.latency);
    assert_eq!(record.totals.latency_uncorrected, union.latency_uncorrected);
    assert_eq!(record.totals.latency_ok, union.latency_ok);
    assert_eq!(record.totals.send_lag, union.send_lag);
    assert_eq!(record.totals.bytes_received, union.bytes_received);
    assert_eq!(record.series.iter().map(|p| p.requests).sum::<u64>(), 900);
    let report = merged.to_report().unwrap();
    assert_eq!(report.requests.total, 900);
    assert_eq!(report.load.connections, Some(6), "the load of all shards together");
    assert_eq!(report.requests_limit, Some(900));

    // A merged file merges again with more shards.
    let (fourth, totals) = save(&config, &dir, "shard3.json");
    union.merge(&totals);
    let again =
        merge(&[(out.clone(), merged), (fourth.clone(), ResultsFile::load(&fourth).unwrap())]).unwrap();
    assert_eq!(again.shards(), 4);
    assert_eq!(again.to_record().unwrap().totals.latency, union.latency);

    // Files of another workload are refused, naming the file.
    let mut other_load = config.clone();
    other_load.load = Load::Closed { connections: 3 };
    let (odd, _) = save(&other_load, &dir, "odd-load.json");
    let mut other_method = config.clone();
    other_method.workload = rpcbench::RequestTemplate::from_method("getHealth", None).unwrap().into();
    let (odd_method, _) = save(&other_method, &dir, "odd-method.json");
    let mut other_params = config.clone();
    other_params.workload = rpcbench::RequestTemplate::from_method(
        "getSlot",
        Some(&serde_json::json!([{"commitment": "processed"}])),
    )
    .unwrap()
    .into();
    let (odd_params, _) = save(&other_params, &dir, "odd-params.json");
    let mut odd_target_file = ResultsFile::load(&files[0].0).unwrap();
    odd_target_file.target = "http://127.0.0.2:8899/".into();
    for (path, file, what) in [
        (odd.clone(), ResultsFile::load(&odd).unwrap(), "load"),
        (odd_method.clone(), ResultsFile::load(&odd_method).unwrap(), "method"),
        (odd_params.clone(), ResultsFile::load(&odd_params).unwrap(), "request"),
        (dir.join("odd-target.json"), odd_target_file, "target"),
    ] {
        let err = merge(&[files[0].clone(), (path.clone(), file)]).unwrap_err();
        assert!(matches!(err, ResultsError::Mismatch { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains(what), "{what}: {message}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn files_that_are_not_results_files_are_refused_by_name() {
    let dir = temp_dir("invalid");
    for (name, text, expected) in [
        ("report.json", r#"{"report_version":1}"#, "JSON report"),
        ("other.json", r#"{"format":"something"}"#, "format is 'something'"),
        ("future.json", r#"{"format":"rpcbench-results","version":99}"#, "version 99"),
        ("garbage.json", "not json", "not JSON"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let err = ResultsFile::load(&path).unwrap_err().to_string();
        assert!(err.contains(name) && err.contains(expected), "{name}: {err}");
    }
    let err = ResultsFile::load(&dir.join("missing.json")).unwrap_err().to_string();
    assert!(err.contains("missing.json"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_results_file_that_is_not_json_is_named_with_its_line_and_column() {
    let dir = temp_dir("syntax");
    for (name, text, at) in
        [("broken.json", "{\"format\":1,\n  \"b\": x}\n", ":2:8: "), ("empty.json", "", ":1:1: ")]
    {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let err = ResultsFile::load(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}{at}", path.display())), "{name}: {err}");
        assert!(err.contains("not JSON") && !err.contains(" at line "), "said once: {err}");
        let capacity = rpcbench::capacity_file::CapacityFile::from_json(text, &path).unwrap_err().to_string();
        assert!(capacity.starts_with(&format!("{}{at}", path.display())), "{name}: {capacity}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_shard_index_out_of_range_is_blamed_on_its_own_file() {
    let server = mixed_server();
    let dir = temp_dir("shard-range");
    let config = closed_loop(&server.url(), 1, requests(20));
    let (first, _) = save(&config, &dir, "first.json");
    let (second, _) = save(&config, &dir, "second.json");
    let mut a = ResultsFile::load(&first).unwrap();
    let mut b = ResultsFile::load(&second).unwrap();
    a.workload.shard = Some(rpcbench::results::ShardSpec { index: 1, count: 2, late_start_ms: 0 });
    // Shard 4 of 2: it would have taken shard 2's place and blamed the first file for a repeat.
    b.workload.shard = Some(rpcbench::results::ShardSpec { index: 3, count: 2, late_start_ms: 0 });
    let err = merge_shards(&[(first.clone(), a), (second.clone(), b)], true).unwrap_err().to_string();
    assert!(
        err.contains("second.json") && err.contains("shard index 4 is out of range for 2 shards"),
        "{err}"
    );
    assert!(!err.contains("first.json"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn merge_refuses_the_same_run_twice_and_counts_that_would_wrap() {
    let server = mixed_server();
    let dir = temp_dir("merge-checked");
    let config = closed_loop(&server.url(), 1, requests(50));
    let (path, _) = save(&config, &dir, "one.json");
    let file = ResultsFile::load(&path).unwrap();
    // The same file three times, even under other names.
    let copy = dir.join("copy.json");
    std::fs::copy(&path, &copy).unwrap();
    let err = merge(&[(path.clone(), file.clone()), (copy.clone(), ResultsFile::load(&copy).unwrap())])
        .unwrap_err();
    assert!(err.to_string().contains("the same run given twice"), "{err}");
    // A count that would wrap when added: refused, not wrapped (nor a panic).
    let (other, _) = save(&config, &dir, "two.json");
    let mut huge = ResultsFile::load(&other).unwrap();
    for method in huge.methods.values_mut() {
        method.outcomes.ok = u64::MAX - method.outcomes.errors();
    }
    let err = merge(&[(path.clone(), file), (other.clone(), huge)]).unwrap_err();
    assert!(err.to_string().contains("do not fit"), "{err}");
    // A file whose own counts overflow cannot even be read back as a run.
    let mut broken = ResultsFile::load(&other).unwrap();
    for method in broken.methods.values_mut() {
        method.outcomes.ok = u64::MAX;
        method.outcomes.timeout = 1;
    }
    assert!(broken.to_record().is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn results_files_keep_rate_limit_headers_and_merge_adds_them_up() {
    let server = TestServer::start(|request| {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, request.id);
        crate::util::Reply::Raw(
            format!(
                "HTTP/1.1 200 OK\r\nRateLimit-Limit: 40\r\nRateLimit-Remaining: {}\r\nContent-Length: {}\r\n\r\n{body}",
                100 - request.index.min(100),
                body.len()
            )
            .into_bytes(),
        )
    });
    let dir = temp_dir("rate-headers");
    let config = closed_loop(&server.url(), 1, requests(10));
    let (first, _) = save(&config, &dir, "first.json");
    let (second, _) = save(&config, &dir, "second.json");
    let first = ResultsFile::load(&first).unwrap();
    assert_eq!(first.rate_headers.answers, 10);
    assert_eq!(first.to_report().unwrap().rate_limit_headers.map(|h| h.remaining_min), Some(Some(91)));
    let merged =
        merge(&[(dir.join("first.json"), first), (second.clone(), ResultsFile::load(&second).unwrap())])
            .unwrap();
    assert_eq!(merged.rate_headers.answers, 20);
    assert_eq!(merged.rate_headers.limit(), Some(40));
    // The second run's requests came after the first's: the lowest remaining is its last.
    assert_eq!(merged.rate_headers.remaining_min, Some(81));
    // A file without them (older, or a server that sends none) loads, and writes none back.
    let plain = TestServer::start(|request| {
        json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":1}}"#, request.id))
    });
    let (path, _) = save(&closed_loop(&plain.url(), 1, requests(3)), &dir, "plain.json");
    assert!(!std::fs::read_to_string(&path).unwrap().contains("rate_headers"));
    assert!(ResultsFile::load(&path).unwrap().rate_headers.is_empty());
}
