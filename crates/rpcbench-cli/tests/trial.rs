//! A new user's trial of the commands but `tx` (session 20): a file that cannot be written is
//! refused with exit 2 before the load is spent, as `run` and `capacity` already do; `limits`
//! stopped by Ctrl-C still writes its report; `-o -` is standard output. The "servers" are
//! listeners on 127.0.0.1:0 that never answer: a connection queued on one shows the command
//! sent its load before it looked at its output path.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::rpcbench;

/// A listener on 127.0.0.1:0 that never accepts: what connects waits in its queue.
fn silent_listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.set_nonblocking(true).expect("non-blocking");
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// Nothing connected to the listener.
fn nothing_connected(listener: &TcpListener) {
    match listener.accept() {
        Err(err) if err.kind() == ErrorKind::WouldBlock => {}
        Ok(_) => panic!("the command connected before it checked its output path"),
        Err(err) => panic!("accept: {err}"),
    }
}

/// A path whose folder is a plain file: nothing can be written there.
fn unwritable(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-trial-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    file.join("out")
}

/// Removes the folder [`unwritable`] made for `path`.
fn clean_up(path: &Path) {
    if let Some(dir) = path.parent().and_then(Path::parent) {
        std::fs::remove_dir_all(dir).ok();
    }
}

fn refused_before_the_load(output: &Output, flag: &str, listener: &TcpListener) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with(&format!("error: {flag} ")), "names {flag}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(output.stdout.is_empty(), "no report: {}", String::from_utf8_lossy(&output.stdout));
    nothing_connected(listener);
}

#[test]
fn heads_refuses_an_output_it_cannot_write_before_it_polls() {
    let (listener, url) = silent_listener();
    let out = unwritable("heads");
    let (a, b) = (format!("a={url}"), format!("b={url}"));
    let output = rpcbench(&["heads", &a, &b, "-d", "1s", "--timeout", "200ms", "-o", out.to_str().unwrap()]);
    clean_up(&out);
    refused_before_the_load(&output, "--output", &listener);
}

#[test]
fn limits_refuses_an_output_it_cannot_write_before_it_spends_the_budget() {
    let (listener, url) = silent_listener();
    let out = unwritable("limits");
    let output = rpcbench(&[
        "limits",
        &url,
        "--max-requests",
        "20",
        "--timeout",
        "200ms",
        "-o",
        out.to_str().unwrap(),
    ]);
    clean_up(&out);
    refused_before_the_load(&output, "--output", &listener);
}

#[test]
fn compare_refuses_a_save_dir_it_cannot_create_with_the_usage_status() {
    let (listener, url) = silent_listener();
    let dir = unwritable("compare");
    let (a, b) = (format!("a={url}"), format!("b={url}"));
    let output = rpcbench(&[
        "compare",
        &a,
        &b,
        "--method",
        "getSlot",
        "-n",
        "5",
        "--timeout",
        "200ms",
        "--save-dir",
        dir.to_str().unwrap(),
    ]);
    clean_up(&dir);
    refused_before_the_load(&output, "--save-dir", &listener);
}

#[test]
fn demo_refuses_an_out_dir_it_cannot_create_before_it_runs() {
    let dir = unwritable("demo");
    let output = rpcbench(&["demo", "--step-duration", "50ms", "-q", "--out-dir", dir.to_str().unwrap()]);
    clean_up(&dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: --out-dir "), "names --out-dir: {stderr}");
    assert!(output.stdout.is_empty(), "the demo did not run: {}", String::from_utf8_lossy(&output.stdout));
}

#[test]
fn limits_with_no_budget_left_for_the_websocket_probe_still_writes_the_report() {
    use rpcbench::mock::{Chain, MockOptions, MockServer};
    let node = MockServer::start(MockOptions::new(Chain::Ethereum)).expect("the mock node starts");
    let output =
        rpcbench(&["limits", &node.url(), "--ws", &node.ws_url(), "--max-requests", "1", "-f", "json"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert_eq!(report["budget"]["requests"], 1, "{report}");
    assert!(report["batch"].is_object(), "the batch probe's finding is kept: {report}");
    for row in ["subscriptions", "ws_connections"] {
        assert_eq!(report[row]["accepted"], 0, "{row}: {report}");
        assert_eq!(report[row]["exact"], false, "{row} claims no limit: {report}");
    }
}

#[test]
fn limits_interrupted_mid_probe_still_writes_the_report_of_what_it_found() {
    use std::time::{Duration, Instant};
    // A server that takes the connection and never answers: the probe is under way (its
    // interrupt handler set) once it connects. Its request would wait out `--timeout` (an
    // hour here): the interrupt abandons it at once.
    let (listener, url) = silent_listener();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["limits", &url, "--rate", "--timeout", "1h", "-f", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    let _connection = loop {
        match listener.accept() {
            Ok((stream, _)) => break stream,
            Err(err) if err.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(err) => {
                child.kill().ok();
                panic!("the probe never connected: {err}");
            }
        }
    };
    let kill = std::process::Command::new("kill").args(["-s", "INT", &child.id().to_string()]).status();
    assert!(kill.expect("kill runs").success());
    // Not a timing assertion: a request left to its hour's timeout never ends in this one.
    let given_up = Instant::now() + Duration::from_secs(300);
    while child.try_wait().expect("the child can be waited for").is_none() {
        if Instant::now() > given_up {
            child.kill().ok();
            panic!("limits still waited for its request 5 minutes after the interrupt");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("the child can be waited for");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "the report is written: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert_eq!(report["budget"]["interrupted"], true, "{report}");
    // Nothing after the interrupt: the request under way when it came, then no probe more.
    let spent = report["budget"]["requests"].as_u64().unwrap_or(u64::MAX);
    assert!(spent <= 2, "{report}");
    assert_eq!(report["rate"]["sustained"][0]["stopped"], "an interrupt", "{report}");
}

#[test]
fn an_output_of_dash_is_standard_output_not_a_file_named_dash() {
    use rpcbench::mock::{Chain, MockOptions, MockServer};
    let node = MockServer::start(MockOptions::new(Chain::Ethereum)).expect("the mock node starts");
    let dir = std::env::temp_dir().join(format!("rpcbench-trial-dash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["run", &node.url(), "-m", "eth_blockNumber", "-n", "5", "-f", "json", "-o", "-"])
        .current_dir(&dir)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("the report on stdout");
    assert_eq!(report["requests"]["total"], 5, "{report}");
    assert!(!dir.join("-").exists(), "no file named '-'");
    std::fs::remove_dir_all(&dir).ok();
}

/// `-d 1000000000000000000s` ran with a header of `18446744073709.55s` (the engine's nanosecond
/// clock saturated), not what was asked: a duration over a year is refused before the load.
#[test]
fn an_absurd_duration_is_refused_naming_the_flag_not_run_saturated() {
    let (listener, url) = silent_listener();
    for duration in ["1000000000000000000s", "99999999999999d"] {
        let output = rpcbench(&["run", &url, "-m", "getSlot", "-d", duration]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("-d") && stderr.contains("at most a year"), "{stderr}");
        assert!(output.stdout.is_empty(), "no report: {}", String::from_utf8_lossy(&output.stdout));
        nothing_connected(&listener);
    }
}
