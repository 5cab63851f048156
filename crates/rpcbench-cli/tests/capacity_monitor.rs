//! `rpcbench capacity` and `--monitor-pid` / `--monitor-cmd` through the built binary: usage
//! errors exit 2 naming the flag (and for `--slo` the position), a search prints its table or
//! JSON, and a run against a node served by a child process reports that process's CPU,
//! memory and connections.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rpcbench::mock::{Chain, Faults, MockOptions, MockServer};

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn capacity_usage_errors_exit_2_naming_the_flag() {
    let url = "http://127.0.0.1:1/";
    let cases: [(&[&str], &[&str]); 8] = [
        (
            &["capacity", url, "--method", "getSlot", "--slo", "p99<5x"],
            &["--slo", "at character 5", "'p99<5x'"],
        ),
        (
            &["capacity", url, "--method", "getSlot", "--slo", "p99<1s,latency<2s"],
            &["--slo", "at character 8", "'latency'"],
        ),
        (
            &["capacity", url, "--method", "getSlot", "--slo", "errors<1"],
            &["--slo", "at character 8", "percentage"],
        ),
        (&["capacity", url, "--method", "getSlot"], &["--slo"]),
        (&["capacity", url, "--slo", "p99<1s"], &["--method"]),
        (&["capacity", url, "--method", "getSlot", "--slo", "p99<1s", "--precision", "0%"], &["--precision"]),
        (
            &[
                "capacity",
                url,
                "--method",
                "getSlot",
                "--slo",
                "p99<1s",
                "--start-rate",
                "500",
                "--max-rate",
                "100",
            ],
            &["--max-rate", "--start-rate"],
        ),
        (
            &["capacity", url, "--method", "getSlot", "--slo", "p99<1s", "--monitor-cmd", "no-such-proc-x"],
            &["--monitor-cmd", "no-such-proc-x"],
        ),
    ];
    for (args, expected) in cases {
        let output = rpcbench(args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        for part in expected {
            assert!(message.contains(part), "{args:?} should say {part}: {message}");
        }
        assert!(!message.contains("panicked"), "{message}");
    }
}

#[test]
fn run_rejects_processes_that_do_not_exist() {
    let url = "http://127.0.0.1:1/";
    for (args, flag) in [
        (&["run", url, "--method", "getSlot", "--monitor-pid", "4294967295"][..], "--monitor-pid"),
        (&["run", url, "--method", "getSlot", "--monitor-cmd", "no-such-proc-x"][..], "--monitor-cmd"),
    ] {
        let output = rpcbench(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(flag), "{args:?}: {}", stderr(&output));
    }
}

#[test]
fn capacity_prints_a_search_as_json_and_text() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults = Faults { rate_limit: Some(300.0), ..Faults::default() };
    let node = MockServer::start(options).expect("the static node starts");
    let url = node.url();
    let short = ["--step", "400ms", "--warmup", "100ms", "--cooldown", "100ms", "--threads", "1"];
    let mut args = vec!["capacity", &url, "--method", "getSlot", "--slo", "errors<5%", "--start-rate", "100"];
    args.extend(["--precision", "30%", "-o", "json"]);
    args.extend(short);
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("step  1:"), "progress lines: {}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let steps = report["steps"].as_array().unwrap();
    assert!(steps.len() >= 3, "{report:#}");
    assert_eq!(steps[0]["target_rate"], 100.0);
    assert_eq!(steps[0]["verdict"], "pass");
    assert!(steps.iter().any(|step| step["verdict"] == "slo_breach"), "{report:#}");
    let capacity = report["capacity"].as_f64().expect("a capacity");
    assert!((200.0..=450.0).contains(&capacity), "{report:#}");
    assert_eq!(report["limited_by"], "slo");
    assert_eq!(report["settings"]["slo"], "errors<5%");

    // One step at the maximum rate: the text table, quietly.
    let mut args = vec!["capacity", &url, "--method", "getSlot", "--slo", "p99<1s", "--start-rate", "50"];
    args.extend(["--max-rate", "50", "-q"]);
    args.extend(short);
    let output = rpcbench(&args);
    node.stop();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).is_empty(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("Step   Target/s Achieved/s"), "{text}");
    assert!(text.contains("pass"), "{text}");
    assert!(text.contains("Capacity: at least 50 req/s"), "{text}");
    assert!(text.contains("stopped at --max-rate"), "{text}");
}

/// A child process, killed when dropped (also when a test fails).
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_until_accepting(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "the node never listened on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_run_reports_the_resources_of_a_node_in_another_process() {
    // The node runs from a link with a name of its own, so --monitor-cmd finds it and nothing
    // else (the kernel keeps 15 bytes of a name).
    let name = format!("rpcbmon{}", std::process::id() % 100_000_000);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join(&name);
    std::fs::remove_file(&link).ok();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_rpcbench"), &link).unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let child = Command::new(&link)
        .args(["serve", "--chain", "solana", "--listen", &addr.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the node starts");
    let node = ChildGuard(child);
    let pid = node.0.id().to_string();
    wait_until_accepting(addr);
    let url = format!("http://{addr}/");

    let load = ["--method", "getSlot", "--rate", "400", "-d", "1500ms", "--max-connections", "16"];
    let mut args = vec!["run", &url, "--monitor-pid", &pid, "-o", "json"];
    args.extend(load);
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert!(report["requests"]["ok"].as_u64().unwrap() > 500, "{report:#}");
    let resources = &report["target_resources"];
    assert_eq!(resources["pids"][0].as_u64(), pid.parse().ok(), "{resources:#}");
    assert_eq!(resources["names"][0], name.as_str(), "{resources:#}");
    assert!(resources["samples"].as_u64().unwrap() >= 5, "{resources:#}");
    assert!(resources["cpu_percent_avg"].as_f64().unwrap() > 0.0, "{resources:#}");
    assert!(resources["cpu_percent_peak"].as_f64().unwrap() > 0.0, "{resources:#}");
    assert!(resources["rss_bytes_avg"].as_u64().unwrap() > 1 << 20, "{resources:#}");
    assert!(resources["rss_bytes_peak"].as_u64().unwrap() > 1 << 20, "{resources:#}");
    assert!(resources["tcp_connections_peak"].as_u64().unwrap() >= 1, "{resources:#}");

    let mut args = vec!["run", &url, "--monitor-cmd", &name];
    args.extend(load);
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains(&format!("Target process: pid {pid} ({name})")), "{text}");
    let cpu_row = text.lines().find(|line| line.trim_start().starts_with("CPU ")).expect("a CPU row");
    let cpu_avg: f64 = cpu_row.split_whitespace().nth(1).unwrap().trim_end_matches('%').parse().unwrap();
    assert!(cpu_avg > 0.0, "{text}");
    assert!(text.contains("RSS"), "{text}");
    assert!(text.contains("TCP established"), "{text}");
    assert!(text.contains("Disk read"), "{text}");
    drop(node);
    std::fs::remove_dir_all(&dir).ok();
}
