//! `rpcbench capacity` and `--monitor-pid` / `--monitor-cmd` through the built binary: usage
//! errors exit 2 naming the flag (and for `--slo` the position), a search prints its table or
//! JSON, and a run against a node served by a child process reports that process's CPU,
//! memory and connections.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rpcbench::mock::{Chain, Faults, MockOptions, MockServer};

/// Load runs one at a time: two searches sharing two cores would each see a slow generator.
static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn machine() -> std::sync::MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

/// Runs a rate search (`rpcbench capacity ...`) until the generator kept up with every step,
/// at most three times, and returns the last run. On a loaded 2-core machine the one-thread
/// generator is sometimes descheduled for tens of milliseconds; a mean send lag of about 11 ms
/// in a 400 ms step is the 5% shortfall that makes the step `GENERATOR LIMITED` (measured:
/// 27 ms at 100/s beside a `yes`, load 5). rpcbench says so rightly, and a search with such a
/// step cannot tell where the node's limit is, which is what these tests check: the figures
/// of a search that kept up are asserted in full, and a generator that never keeps up still
/// fails them.
fn rate_search(args: &[&str]) -> Output {
    let mut output = rpcbench(args);
    for _ in 1..3 {
        let shown = format!("{}{}", stdout(&output), stderr(&output));
        if !(shown.contains("generator_limited") || shown.contains("GENERATOR LIMITED")) {
            break;
        }
        output = rpcbench(args);
    }
    output
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
    let cases: [(&[&str], &[&str]); 11] = [
        (
            &["capacity", url, "--method", "getSlot", "--slo", "p99<1s", "--start-connections", "4"],
            &["--start-connections", "--connections"],
        ),
        (
            &[
                "capacity",
                url,
                "--method",
                "getSlot",
                "--slo",
                "p99<1s",
                "--connections",
                "--start-rate",
                "5",
            ],
            &["--start-rate", "--connections"],
        ),
        (
            &[
                "capacity",
                url,
                "--method",
                "getSlot",
                "--slo",
                "p99<1s",
                "--connections",
                "--start-connections",
                "64",
                "--max-connections",
                "32",
            ],
            &["--max-connections", "--start-connections"],
        ),
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
    let _machine = machine();
    let mut options = MockOptions::new(Chain::Static);
    options.faults = Faults { rate_limit: Some(300.0), ..Faults::default() };
    let node = MockServer::start(options).expect("the static node starts");
    let url = node.url();
    let short = ["--step", "400ms", "--warmup", "100ms", "--cooldown", "100ms", "--threads", "1"];
    let mut args = vec!["capacity", &url, "--method", "getSlot", "--slo", "errors<5%", "--start-rate", "100"];
    args.extend(["--precision", "30%", "-f", "json"]);
    args.extend(short);
    let output = rate_search(&args);
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
    let output = rate_search(&args);
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
    let _machine = machine();
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

    // 600 requests at 400/s, a count, not a duration: over 1500 ms, "more than 500 ok" was a
    // bound on what a loaded machine gets done in that time (a quarter of a second of stall of
    // the node's process, a debug build, with 16 connections, could miss it). The run
    // lasts at least its 1.5 s of schedule, so the monitor takes its samples every 250 ms over
    // at least that long.
    let load = ["--method", "getSlot", "--rate", "400", "-n", "600", "--max-connections", "16"];
    let mut args = vec!["run", &url, "--monitor-pid", &pid, "-f", "json"];
    args.extend(load);
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["requests"]["ok"].as_u64(), Some(600), "{report:#}");
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

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-capsave-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `capacity --save` keeps every step; `report FILE` prints exactly the live table, and the
/// JSON, Markdown, CSV and HTML renderings of the same search. The node rate-limits at 300
/// req/s and runs in this process, which the search monitors.
#[test]
fn a_saved_capacity_search_renders_again() {
    let _machine = machine();
    let mut options = MockOptions::new(Chain::Static);
    options.faults = Faults { rate_limit: Some(300.0), ..Faults::default() };
    let node = MockServer::start(options).expect("the static node starts");
    let url = node.url();
    let dir = temp_dir("roundtrip");
    let saved = dir.join("search.json").display().to_string();
    let me = std::process::id().to_string();
    let mut args =
        vec!["capacity", &url, "--method", "getSlot", "--slo", "p99<1s,errors<5%", "--start-rate", "100"];
    args.extend(["--precision", "30%", "--step", "400ms", "--warmup", "100ms", "--cooldown", "100ms"]);
    args.extend(["--threads", "1", "--monitor-pid", &me, "--save", &saved]);
    let live = rate_search(&args);
    node.stop();
    assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
    assert!(stderr(&live).contains("capacity file saved to"), "{}", stderr(&live));
    let text = stdout(&live);
    assert!(text.contains("Capacity: "), "{text}");
    assert!(text.contains("CPU") && text.contains("RSS"), "monitored steps: {text}");
    assert!(text.contains("Generator: 1 worker thread(s)"), "{text}");

    let again = rpcbench(&["report", &saved]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(stdout(&again), text, "report prints exactly what capacity printed");

    let json = rpcbench(&["report", &saved, "-f", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let capacity = report["capacity"].as_f64().expect("a capacity");
    assert!((150.0..=450.0).contains(&capacity), "{report:#}");
    assert!(report["steps"][0]["target_resources"]["rss_bytes_peak"].as_u64().unwrap() > 1 << 20);
    assert!(report["steps"][0]["generator"]["threads"].as_u64() == Some(1), "{report:#}");

    let html = rpcbench(&["report", &saved, "-f", "html"]);
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let html = stdout(&html);
    assert_eq!(html.matches("<svg").count(), 4, "latency, errors, achieved and CPU against the rate");
    let marked = format!("capacity {}/s", rpcbench::report::tables::trim_float(capacity));
    assert!(html.contains(&marked), "the answer is marked: {marked}");
    assert!(html.contains("SLO p99&lt;1s") && html.contains("SLO errors&lt;5%"), "the SLO bounds are drawn");

    let markdown = rpcbench(&["report", &saved, "-f", "markdown"]);
    let markdown = stdout(&markdown);
    assert!(markdown.contains("| step | offered/s |") && markdown.contains("**Capacity: "), "{markdown}");
    assert!(markdown.contains("target CPU avg"), "{markdown}");
    let csv = stdout(&rpcbench(&["report", &saved, "-f", "csv"]));
    assert_eq!(csv.lines().count(), report["steps"].as_array().unwrap().len() + 1, "{csv}");

    // The live HTML page is the same page.
    let page = dir.join("page.html");
    let written = rpcbench(&["report", &saved, "-f", "html", "-o", &page.display().to_string()]);
    assert_eq!(written.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), html);

    // A capacity file renders alone; a damaged one is refused with exit 2.
    let other = dir.join("other.json").display().to_string();
    for (args, expected) in [
        (vec!["report", &saved, &saved], "renders on its own"),
        (vec!["report", &saved, "--compare"], "needs at least two capacity files"),
    ] {
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
    }
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    value["report"]["steps"][0]["requests"] = serde_json::json!(1);
    std::fs::write(&other, value.to_string()).unwrap();
    let output = rpcbench(&["report", &other]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("step 1: requests is 1 in the report"), "{}", stderr(&output));
    value["version"] = serde_json::json!(7);
    std::fs::write(&other, value.to_string()).unwrap();
    let output = rpcbench(&["report", &other]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("version 7"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

/// `capacity --connections` finds the most connections a node serving one request at a time
/// (1 thread blocked 10 ms per request: latency about 10 ms per connection) keeps within
/// p99<100ms; two such searches (the second against a node twice as fast) compare side by side
/// with `report --compare`, which refuses to mix them with a rate search or a run.
#[test]
fn connections_searches_are_saved_rendered_and_compared() {
    let _machine = machine();
    let dir = temp_dir("connections");
    let mut saved = Vec::new();
    for (name, blocking) in [("slow", 10), ("fast", 5)] {
        let mut options = MockOptions::new(Chain::Static);
        options.faults =
            Faults { blocking_latency: Some(Duration::from_millis(blocking)), ..Faults::default() };
        let node = MockServer::start(options).expect("the static node starts");
        let url = node.url();
        let path = dir.join(format!("{name}.json")).display().to_string();
        let mut args = vec!["capacity", &url, "--method", "getSlot", "--slo", "p99<100ms", "--connections"];
        args.extend(["--start-connections", "1", "--max-connections", "32", "--step", "400ms"]);
        args.extend(["--warmup", "100ms", "--cooldown", "50ms", "--threads", "1", "--save", &path]);
        let live = rpcbench(&args);
        node.stop();
        assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
        let progress = stderr(&live);
        assert!(progress.contains("closed-loop steps of 400.00ms"), "{progress}");
        assert!(progress.contains("step  1:      1 conns ->"), "{progress}");
        let text = stdout(&live);
        assert!(text.contains("Step      Conns Achieved/s"), "{text}");
        assert!(text.contains("the first that broke it"), "{text}");
        assert_eq!(stdout(&rpcbench(&["report", &path])), text, "report prints what capacity printed");
        saved.push(path);
    }
    let slow: serde_json::Value =
        serde_json::from_slice(&rpcbench(&["report", &saved[0], "-f", "json"]).stdout).unwrap();
    assert_eq!(slow["settings"]["mode"], "connections");
    // From 10 connections (about 100 ms) every step breaks p99<100ms, whatever the machine does.
    let capacity = slow["capacity"].as_f64().expect("one connection keeps the SLO");
    assert!((1.0..=9.0).contains(&capacity), "{slow:#}");
    assert_eq!(slow["first_failing_rate"].as_f64(), Some(capacity + 1.0), "{slow:#}");

    let compared = rpcbench(&["report", "--compare", &saved[0], &saved[1]]);
    assert_eq!(compared.status.code(), Some(0), "{}", stderr(&compared));
    let text = stdout(&compared);
    assert!(text.starts_with("Capacity searches compared (connections): slow vs fast"), "{text}");
    assert!(text.contains(&format!("capacity           {}", capacity_text(capacity))), "{text}");
    assert!(text.contains("capacity vs first  1.00x"), "{text}");
    assert!(text.contains("slow: SLO p99<100ms; closed-loop steps") && text.contains("fast: SLO"), "{text}");
    let html = stdout(&rpcbench(&["report", "--compare", &saved[0], &saved[1], "-f", "html"]));
    assert_eq!(html.matches("<svg").count(), 1, "one chart with both curves");
    assert!(html.contains("p99 against connections") && html.contains("connections (closed loop)"));
    let mark = if capacity == 1.0 { "slow: 1 conn ".to_string() } else { format!("slow: {capacity} conns") };
    assert!(html.contains(&mark), "slow's capacity is marked: {mark}");
    let csv = stdout(&rpcbench(&["report", "--compare", &saved[0], &saved[1], "-f", "csv"]));
    assert!(csv.starts_with("search,step,connections,"), "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.starts_with("slow,") || l.starts_with("fast,")), "{csv}");
    let markdown = stdout(&rpcbench(&["report", "--compare", &saved[0], &saved[1], "-f", "markdown"]));
    assert!(markdown.contains("| capacity | ") && markdown.contains("### fast"), "{markdown}");
    let json = rpcbench(&["report", "--compare", &saved[0], &saved[1], "-f", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["capacity_comparison"][1]["label"], "fast");

    // A rate search does not compare with a connections search, nor a capacity file with a
    // run's results file.
    let mut rate: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved[1]).unwrap()).unwrap();
    rate["report"]["settings"].as_object_mut().unwrap().remove("mode");
    for step in rate["report"]["steps"].as_array_mut().unwrap() {
        // As a rate search: the levels become the rates.
        let connections = step.as_object_mut().unwrap().remove("connections").unwrap();
        step["target_rate"] = connections;
    }
    let rate_path = dir.join("rate.json").display().to_string();
    std::fs::write(&rate_path, rate.to_string()).unwrap();
    let run_path = dir.join("run.json").display().to_string();
    std::fs::write(&run_path, "{\"format\": \"rpcbench-results\"}").unwrap();
    for (args, expected) in [
        (
            vec!["report", "--compare", &saved[0], &rate_path],
            "slow is a connections search and rate a rate search",
        ),
        (vec!["report", "--compare", &saved[0], &run_path], "run.json: not a capacity file"),
    ] {
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
    }
    std::fs::remove_dir_all(&dir).ok();
}

fn capacity_text(connections: f64) -> String {
    if connections == 1.0 {
        "1 connection".into()
    } else {
        format!("{connections} connections")
    }
}

/// `run --save` keeps what the monitor saw, and `report` shows it again in every format.
#[test]
fn a_saved_run_keeps_its_target_resources() {
    let _machine = machine();
    let node = MockServer::start(MockOptions::new(Chain::Static)).expect("the static node starts");
    let url = node.url();
    let dir = temp_dir("runsave");
    let saved = dir.join("run.json").display().to_string();
    let me = std::process::id().to_string();
    let live = rpcbench(&[
        "run",
        &url,
        "-m",
        "getSlot",
        "--rate",
        "200",
        "-d",
        "800ms",
        "--monitor-pid",
        &me,
        "--save",
        &saved,
        "-q",
    ]);
    node.stop();
    assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
    assert!(stdout(&live).contains("Target process: pid"), "{}", stdout(&live));
    let again = rpcbench(&["report", &saved]);
    assert_eq!(stdout(&again), stdout(&live), "report prints exactly what run printed");
    for (format, shown) in [
        ("markdown", "| target CPU avg |"),
        ("html", "target RSS peak"),
        ("csv", "target_cpu_avg_pct"),
        ("json", "\"target_resources\""),
    ] {
        let output = rpcbench(&["report", &saved, "-f", format]);
        assert_eq!(output.status.code(), Some(0), "{format}: {}", stderr(&output));
        assert!(stdout(&output).contains(shown), "{format} shows {shown}");
        assert!(stdout(&output).to_lowercase().contains("generator"), "{format} shows the generator");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_monitors_name_a_target() {
    let me = std::process::id().to_string();
    let a_pid = format!("a={me}");
    let targets = ["compare", "a=http://127.0.0.1:1/", "b=http://127.0.0.1:2/", "-m", "getSlot", "-n", "1"];
    for (extra, expected) in [
        (vec!["--monitor-pid", "c=1"], "no target named 'c'"),
        (vec!["--monitor-pid", &me], "expected NAME=PID"),
        (vec!["--monitor-pid", "a=4294967295"], "no process 4294967295"),
        (vec!["--monitor-cmd", "b=no-such-proc-x"], "no process named 'no-such-proc-x'"),
        (vec!["--monitor-pid", &a_pid, "--monitor-cmd", "geth"], "--monitor-cmd 'geth'"),
        (vec!["--equal", "--monitor-pid", &a_pid], "runs no load to monitor"),
    ] {
        let mut args = targets.to_vec();
        args.extend(extra.iter().copied());
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
    }
}

/// Seed 003's table in one command: both targets monitored, their resources compared.
#[test]
fn compare_shows_each_targets_resources() {
    let _machine = machine();
    let fast = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let slow = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let me = std::process::id().to_string();
    let (a, b) = (format!("fast={}", fast.url()), format!("slow={}", slow.url()));
    let (pa, pb) = (format!("fast={me}"), format!("slow={me}"));
    let output = rpcbench(&[
        "compare",
        &a,
        &b,
        "-m",
        "getSlot",
        "-c",
        "2",
        "-d",
        "600ms",
        "--cooldown",
        "0",
        "-q",
        "--monitor-pid",
        &pa,
        "--monitor-pid",
        &pb,
    ]);
    fast.stop();
    slow.stop();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let table = stdout(&output);
    for metric in [
        "target CPU avg",
        "target CPU peak",
        "target RSS avg",
        "target RSS peak",
        "target disk read",
        "target disk write",
        "target conns avg",
        "generator CPU",
        "generator RSS peak",
    ] {
        let row =
            table.lines().find(|l| l.starts_with(metric)).unwrap_or_else(|| panic!("{metric}:\n{table}"));
        if metric.starts_with("target RSS") {
            assert!(!row.contains("n/a") && row.contains("MiB"), "{row}");
        }
    }
}

#[test]
fn capacity_searches_with_a_suite_or_a_scenarios_mix() {
    let _machine = machine();
    let mut options = MockOptions::new(Chain::Solana);
    options.faults = Faults { rate_limit: Some(300.0), ..Faults::default() };
    let node = MockServer::start(options).expect("the node starts");
    let url = node.url();
    let short = ["--step", "400ms", "--warmup", "100ms", "--cooldown", "100ms", "--threads", "1"];
    let search = ["--slo", "errors<5%", "--start-rate", "100", "--precision", "30%", "-f", "json"];

    // A suite: its calls are sampled from the node first, then every step sends the mix.
    let mut args = vec!["capacity", &url, "--suite", "solana-rpc"];
    args.extend(search);
    args.extend(short);
    let output = rate_search(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("pools sampled"), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let capacity = report["capacity"].as_f64().expect("a capacity");
    assert!((200.0..=450.0).contains(&capacity), "{report:#}");

    // A scenario with stages and two targets: --url picks the one to search, and the steps
    // replace the stages.
    let dir = temp_dir("capacity-scenario");
    let path = dir.join("mix.toml");
    std::fs::write(
        &path,
        "[[targets]]\nurl = \"http://127.0.0.1:1/\"\n[[targets]]\nurl = \"http://127.0.0.1:2/\"\n\
         [[stage]]\nconnections = 5\nduration = \"1h\"\n\
         [[call]]\nmethod = \"getSlot\"\nweight = 3\n[[call]]\nmethod = \"getBlockHeight\"\n",
    )
    .unwrap();
    let scenario = path.to_str().unwrap();
    let mut args = vec!["capacity", scenario];
    args.extend(search);
    args.extend(short);
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--url"), "{}", stderr(&output));
    args.extend(["--url", url.as_str()]);
    let output = rate_search(&args);
    node.stop();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let capacity = report["capacity"].as_f64().expect("a capacity");
    assert!((200.0..=450.0).contains(&capacity), "{report:#}");
    let first = &report["steps"][0];
    // About 100/s for 400 ms: a constant-rate step, not the scenario's hour-long stage.
    assert!(first["requests"].as_u64().unwrap() <= 60, "{first}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A `rpcbench serve --chain static` child on 127.0.0.1:0 and the URL it prints.
fn serve_child() -> (ChildGuard, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["serve", "--chain", "static", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the node starts");
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let guard = ChildGuard(child);
    let line = lines.next().expect("the node says where it listens").unwrap();
    let url = line.split_whitespace().find(|word| word.starts_with("http://")).expect("a URL").to_string();
    // Whatever else it says goes nowhere, and it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (guard, url)
}

/// The resource table of a user study in one command: a scenario naming two targets, each
/// served by a child process of its own and monitored during its own run (NAME=PID), by
/// `compare --scenario` and by `run` alike.
#[cfg(target_os = "linux")]
#[test]
fn each_target_of_a_scenario_is_monitored_during_its_own_run() {
    let _machine = machine();
    let (go, go_url) = serve_child();
    let (node, node_url) = serve_child();
    let dir = temp_dir("per-target");
    let scenario = dir.join("relays.toml");
    std::fs::write(
        &scenario,
        format!(
            "[load]\nconnections = 2\nduration = \"700ms\"\ncooldown = \"0s\"\n\n\
             [[targets]]\nname = \"go\"\nurl = \"{go_url}\"\n\n[[targets]]\nname = \"node\"\nurl = \"{node_url}\"\n\n\
             [[call]]\nmethod = \"eth_chainId\"\n"
        ),
    )
    .unwrap();
    let scenario = scenario.display().to_string();
    let (go_pid, node_pid) = (go.0.id(), node.0.id());
    let (pid_go, pid_node) = (format!("go={go_pid}"), format!("node={node_pid}"));
    let monitors = ["--monitor-pid", pid_go.as_str(), "--monitor-pid", pid_node.as_str()];
    let mut args = vec!["compare", "--scenario", &scenario, "-q", "-f", "json"];
    args.extend(monitors);
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(json["baseline"], "go");
    for (index, pid) in [(0, go_pid), (1, node_pid)] {
        let resources = &json["runs"][index]["report"]["target_resources"];
        assert_eq!(
            resources["pids"],
            serde_json::json!([pid]),
            "each run monitors its own target: {resources:#}"
        );
        assert!(resources["rss_bytes_peak"].as_u64().unwrap() > 1 << 20, "{resources:#}");
    }
    let rss = json["metrics"].as_array().unwrap().iter().find(|m| m["metric"] == "target RSS peak").unwrap();
    assert!(rss["ratios"][1].as_f64().is_some(), "a ratio against go: {rss}");

    // `run` of the same file takes the same flags.
    let mut args = vec!["run", &scenario, "-q"];
    args.extend(monitors);
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    let row = text.lines().find(|l| l.starts_with("target RSS peak")).unwrap_or_else(|| panic!("{text}"));
    assert!(!row.contains("n/a"), "both targets monitored: {row}");
    // A name that is not a target of the file.
    let output = rpcbench(&["run", &scenario, "-q", "--monitor-pid", &format!("rust={go_pid}")]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("no target named 'rust' (targets: go, node)"), "{}", stderr(&output));
    drop((go, node));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn run_monitor_pid_with_a_name_says_names_are_for_compare() {
    let me = std::process::id().to_string();
    for (flag, value) in [("--monitor-pid", format!("go={me}")), ("--monitor-cmd", "go=geth".to_string())] {
        let output = rpcbench(&["run", "http://127.0.0.1:1/", "-m", "getSlot", "-n", "1", flag, &value]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let err = stderr(&output);
        assert!(err.contains(flag) && err.contains("is for compare"), "{err}");
        assert!(!err.contains("invalid digit"), "{err}");
    }
    let output = rpcbench(&["run", "http://127.0.0.1:1/", "-m", "getSlot", "-n", "1", "--monitor-pid", "x1"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--monitor-pid x1: 'x1' is not a process id"), "{}", stderr(&output));
}

/// `--connections` is a count everywhere; capacity's search over connections is spelled
/// `--search connections`, and the old switch still works, saying the new spelling once.
#[test]
fn a_search_over_connections_is_spelled_search_connections_and_the_old_switch_still_works_with_a_note() {
    let url = "http://127.0.0.1:1/";
    let base = ["capacity", url, "--method", "getSlot", "--slo", "p99<1s"];
    let refused: [(&[&str], &str); 3] = [
        (&["--search", "connections", "--start-rate", "5"], "--start-rate"),
        (&["--search", "rate", "--start-connections", "4"], "--start-connections"),
        (&["--search", "connections", "--connections"], "--connections"),
    ];
    for (extra, flag) in refused {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let output = rpcbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(flag), "{args:?} should name {flag}: {message}");
    }
    let _machine = machine();
    let node = MockServer::start(MockOptions::new(Chain::Static)).expect("the static node starts");
    let node_url = node.url();
    let search = ["--start-connections", "1", "--max-connections", "2", "--step", "200ms"];
    let rest = ["--warmup", "0s", "--cooldown", "0s", "--threads", "1", "-q", "-f", "json"];
    let mut reports = Vec::new();
    for spelling in [&["--search", "connections"][..], &["--connections"][..]] {
        let mut args = vec!["capacity", node_url.as_str(), "--method", "getSlot", "--slo", "errors<50%"];
        args.extend(spelling);
        args.extend(search);
        args.extend(rest);
        let output = rpcbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {message}");
        let noted = message.matches("now spelled --search connections").count();
        assert_eq!(noted, usize::from(spelling == ["--connections"]), "{args:?}: {message}");
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
        reports.push(report["settings"]["mode"].clone());
    }
    node.stop();
    assert_eq!(reports, [serde_json::json!("connections"), serde_json::json!("connections")]);
}
