//! The live dashboard as a person sees it: the built binary runs inside `tmux` (a terminal of
//! 160x48) against a mock node started here on 127.0.0.1 port 0, and the screen is read with
//! `capture-pane`. Checks the panels show the run's live figures (a 5 ms node shows a p50 of
//! a few ms), that a resized terminal is redrawn to its new size, and that `q` ends the run
//! with the report printed after the dashboard is gone. Without tmux the tests are skipped,
//! except when `CI` is set: then they fail, saying how to install it.

use std::process::{Command, Output};
use std::time::Duration;

use rpcbench::mock::{Chain, Latency, MockOptions, MockServer};

/// Runs one at a time: each holds a tmux server and a load.
static MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Polls of the screen before giving up, a quarter of a second apart (a bound on waiting,
/// not an assertion on speed).
const POLLS: usize = 480;

/// A tmux server of the test's own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// `None` (the test is skipped) when tmux is missing outside CI; fails in CI.
    fn start(name: &str, command: &str) -> Option<Tmux> {
        let found = Command::new("tmux").arg("-V").output().is_ok_and(|output| output.status.success());
        if !found {
            assert!(
                std::env::var_os("CI").is_none(),
                "tmux is missing: the dashboard tests need it (Debian: apt-get install tmux)"
            );
            eprintln!("tmux is missing: skipping the dashboard test (apt-get install tmux)");
            return None;
        }
        let tmux = Tmux { socket: format!("rpcbench-{name}-{}", std::process::id()) };
        let output = tmux.run(&["new-session", "-d", "-s", "dash", "-x", "160", "-y", "48", command]);
        assert!(output.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&output.stderr));
        Some(tmux)
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().expect("tmux runs")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "dash"]).stdout).into_owned()
    }

    /// Polls the screen until `done` holds for it; fails showing the last screen.
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let mut screen = String::new();
        for _ in 0..POLLS {
            screen = self.screen();
            if done(&screen) {
                return screen;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("the screen never showed {what}:\n{screen}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

/// The binary run with `args` inside the pane, `CI` unset for it (the dashboard is off in
/// CI), then its exit status printed, and the pane kept open.
fn pane_command(args: &[&str]) -> String {
    format!(
        "env -u CI {} {}; echo RPCBENCH-EXIT=$?; sleep 600",
        env!("CARGO_BIN_EXE_rpcbench"),
        args.join(" ")
    )
}

/// The first value of the latency panel's `p50` row, milliseconds.
fn p50_ms(screen: &str) -> Option<f64> {
    let line = screen.lines().find(|line| line.contains("│p50 "))?;
    let after = line.split("│p50").nth(1)?;
    let value = after.split_whitespace().next()?;
    if let Some(ms) = value.strip_suffix("ms") {
        return ms.parse().ok();
    }
    if let Some(us) = value.strip_suffix("us") {
        return us.parse::<f64>().ok().map(|us| us / 1000.0);
    }
    value.strip_suffix('s').and_then(|s| s.parse::<f64>().ok()).map(|s| s * 1000.0)
}

fn five_ms_node(chain: Chain) -> MockServer {
    let mut options = MockOptions::new(chain);
    options.faults.latency = Some(Latency::fixed(Duration::from_millis(5)));
    options.slot_time = Duration::from_millis(100);
    MockServer::start(options).expect("the mock node starts")
}

#[test]
fn the_dashboard_shows_live_figures_follows_a_resize_and_q_ends_the_run_with_the_report() {
    let _machine = MACHINE.lock().unwrap_or_else(|poison| poison.into_inner());
    let node = five_ms_node(Chain::Ethereum);
    let url = node.url();
    let command = pane_command(&["run", &url, "--method", "eth_blockNumber", "--rate", "100", "-d", "120s"]);
    let Some(tmux) = Tmux::start("run", &command) else { return };
    // A node answering after 5 ms: the median is a few ms, whatever the machine's speed
    // within reason (not below the node's latency, not ten times it). Waited for, not read
    // off the first screen that shows one: on a busy machine the run's first requests can
    // queue behind a stalled thread (an open loop counts their wait), and the first p50 shown
    // is of those few; a figure in the wrong unit (µs, s) never comes into the range.
    let screen = tmux.wait_for("a p50 of a few ms from the run", |screen| {
        screen.contains("eth_blockNumber") && p50_ms(screen).is_some_and(|p50| (5.0..50.0).contains(&p50))
    });
    for panel in
        ["elapsed", "remaining", "open loop, 100/s", "requests/s", "whole run", "outcomes", "ok", "generator"]
    {
        assert!(screen.contains(panel), "{panel:?} missing:\n{screen}");
    }
    println!("{screen}");

    let resized = tmux.run(&["resize-window", "-t", "dash", "-x", "100", "-y", "30"]);
    assert!(resized.status.success(), "{}", String::from_utf8_lossy(&resized.stderr));
    let screen = tmux.wait_for("the panels redrawn at 100x30", |screen| {
        let top = screen.lines().next().unwrap_or("");
        top.starts_with("┌ rpcbench run") && top.chars().count() == 100 && screen.contains("latency")
    });
    assert!(screen.lines().count() <= 30, "{screen}");

    tmux.run(&["send-keys", "-t", "dash", "q"]);
    let screen = tmux.wait_for("the report after q", |screen| screen.contains("RPCBENCH-EXIT="));
    assert!(screen.contains("RPCBENCH-EXIT=0"), "{screen}");
    assert!(screen.contains("Requests:"), "the report is missing:\n{screen}");
    assert!(screen.contains("Latency Distribution"), "{screen}");
    // The alternate screen was left: no panel is left above the report.
    assert!(!screen.contains("outcomes (class, code)"), "{screen}");
    drop(node);
}

#[test]
fn a_subscription_dashboard_shows_notifications() {
    let _machine = MACHINE.lock().unwrap_or_else(|poison| poison.into_inner());
    let node = five_ms_node(Chain::Ethereum);
    let url = node.ws_url();
    let command = pane_command(&["subscribe", &url, "--sub", "newHeads", "--subscribers", "3", "-d", "120s"]);
    let Some(tmux) = Tmux::start("subscribe", &command) else { return };
    let screen = tmux.wait_for("notifications received", |screen| {
        screen.contains("notifications/s")
            && screen.contains("active 3, received ")
            && !screen.contains("received 0 ")
    });
    println!("{screen}");
    tmux.run(&["send-keys", "-t", "dash", "q"]);
    let screen = tmux.wait_for("the report after q", |screen| screen.contains("RPCBENCH-EXIT="));
    assert!(!screen.contains("generator"), "{screen}");
    drop(node);
}

/// A fresh folder of the test's own under the system's temporary folder.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-dashboard-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A JSON report with every figure that differs run to run masked: numbers stay only under
/// the keys that count requests (the same in every run of a fixed count against a node that
/// answers every request), the rest (keys, strings, layout, order, line ends) stays byte for
/// byte.
fn masked_report(report: &str) -> String {
    // How many intervals the time series has depends on when the requests fell: its
    // entries are left out (the lines that open and close it stay).
    let mut kept = Vec::new();
    let mut closing: Option<String> = None;
    for line in report.lines() {
        if let Some(indent) = &closing {
            if line.strip_prefix(indent.as_str()).is_some_and(|rest| rest.starts_with(']')) {
                closing = None;
                kept.push(line);
            }
            continue;
        }
        if line.trim_start().starts_with("\"points\": [") && !line.ends_with("],") && !line.ends_with(']') {
            closing = Some(line[..line.len() - line.trim_start().len()].to_string());
        }
        kept.push(line);
    }
    let report = kept.join("\n");
    const COUNTS: [&str; 7] = [
        "\"total\"",
        "\"ok\"",
        "\"errors\"",
        "\"unsent\"",
        "\"responded\"",
        "\"requests_limit\"",
        "\"report_version\"",
    ];
    report
        .lines()
        .map(|line| {
            let (head, key, value) = match line.split_once(": ") {
                Some((key, value)) => (format!("{key}: "), key.trim(), value),
                None => (line[..line.len() - line.trim_start().len()].to_string(), "", line.trim()),
            };
            let number = value.trim_end_matches(',');
            if number.parse::<f64>().is_ok() && !COUNTS.contains(&key) {
                // Only the value is masked: `"p75": 75,` is `"p75": #,`, not `"p#": 75,`.
                format!("{head}#{}", &value[number.len()..])
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn masking_a_figure_that_its_key_also_spells_masks_the_value_not_the_key() {
    // A p75 of exactly 75 µs was masked as `"p#": 75` in one report and `"p75": #` in the other,
    // and the reports compared unequal.
    let report = "{\n  \"p75\": 75,\n  \"total\": 300,\n  \"p99\": 75\n}";
    assert_eq!(masked_report(report), "{\n  \"p75\": #,\n  \"total\": 300,\n  \"p99\": #\n}");
    assert_eq!(masked_report("    12,"), "    #,");
}

#[test]
fn the_report_on_stdout_is_the_same_with_and_without_the_dashboard() {
    let _machine = MACHINE.lock().unwrap_or_else(|poison| poison.into_inner());
    let node = five_ms_node(Chain::Ethereum);
    let url = node.url();
    let args = ["run", &url, "--method", "eth_blockNumber", "--rate", "100", "-n", "300", "-f", "json"];
    let dir = scratch_dir("same");
    let (go, raw) = (dir.join("go"), dir.join("raw"));
    // The run waits for the pane's bytes to be logged, so that the log holds the dashboard.
    let command = format!(
        "while [ ! -e {go} ]; do sleep 0.05; done; {} 2>{}; echo RPCBENCH-EXIT=$?; sleep 600",
        pane_command(&args).split("; echo").next().unwrap(),
        dir.join("stderr").display(),
        go = go.display(),
    );
    let Some(tmux) = Tmux::start("same", &command) else { return };
    let piped = tmux.run(&["pipe-pane", "-t", "dash", "-o", &format!("cat >> {}", raw.display())]);
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    std::fs::write(&go, "").unwrap();
    let screen = tmux.wait_for("the report", |screen| screen.contains("RPCBENCH-EXIT="));
    assert!(screen.contains("RPCBENCH-EXIT=0"), "{screen}");
    // The dashboard was shown: the alternate screen and its panels went through the pane.
    let raw = String::from_utf8_lossy(&std::fs::read(&raw).unwrap()).into_owned();
    assert!(
        raw.contains("\u{1b}[?1049h") && raw.contains("outcomes") && raw.contains("generator"),
        "no dashboard:\n{raw}"
    );
    let history = String::from_utf8_lossy(&tmux.run(&["capture-pane", "-p", "-S", "-", "-t", "dash"]).stdout)
        .into_owned();
    let start = history.find('{').expect("a JSON report");
    let end = history.find("RPCBENCH-EXIT=").unwrap();
    let with_dashboard = &history[start..end];

    let without = Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).arg("--no-tui").output().unwrap();
    assert!(without.status.success(), "{}", String::from_utf8_lossy(&without.stderr));
    let without = String::from_utf8(without.stdout).unwrap();
    assert_eq!(masked_report(with_dashboard.trim_end()), masked_report(without.trim_end()));
    // The counts compared are there, and whole.
    assert!(without.contains("\"total\": 300,") && without.contains("\"responded\": 300"), "{without}");
    drop(node);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_of_several_targets_shows_a_row_per_target_and_their_head_lag() {
    let _machine = MACHINE.lock().unwrap_or_else(|poison| poison.into_inner());
    let tip = five_ms_node(Chain::Ethereum);
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_millis(100);
    options.head_lag = 30;
    let behind = MockServer::start(options).expect("the mock node starts");
    let dir = scratch_dir("targets");
    let scenario = dir.join("two.toml");
    std::fs::write(
        &scenario,
        format!(
            "[load]\nrate = 50\nduration = \"60s\"\n[[targets]]\nname = \"tip\"\nurl = \"{}\"\n\
             [[targets]]\nname = \"behind\"\nurl = \"{}\"\n[[call]]\nmethod = \"eth_blockNumber\"\n",
            tip.url(),
            behind.url()
        ),
    )
    .unwrap();
    let command = pane_command(&["run", scenario.to_str().unwrap(), "--heads"]);
    let Some(tmux) = Tmux::start("targets", &command) else { return };
    // The second target is 30 blocks behind the first: its row says so, while the first runs.
    let screen = tmux.wait_for("both targets' head lag", |screen| {
        screen.contains("*tip ")
            && screen.lines().any(|line| {
                let cells: Vec<&str> = line.split(['│', ' ']).filter(|cell| !cell.is_empty()).collect();
                cells
                    .windows(2)
                    .any(|pair| pair[0] == "behind" && pair[1].parse::<u64>().is_ok_and(|lag| lag >= 25))
            })
    });
    assert!(screen.contains("run tip, behind"), "{screen}");
    assert!(screen.contains("head lag"), "{screen}");
    println!("{screen}");
    tmux.run(&["send-keys", "-t", "dash", "q"]);
    let screen = tmux.wait_for("the reports after q", |screen| screen.contains("RPCBENCH-EXIT="));
    assert!(!screen.contains("outcomes (class, code)"), "{screen}");
    drop((tip, behind));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_compares_progress_lines_show_in_the_log_panel_and_are_printed_after_the_screen_closes() {
    let _machine = MACHINE.lock().unwrap_or_else(|poison| poison.into_inner());
    let (first, second) = (five_ms_node(Chain::Ethereum), five_ms_node(Chain::Ethereum));
    let (a, b) = (format!("a={}", first.url()), format!("b={}", second.url()));
    let command = pane_command(&[
        "compare",
        &a,
        &b,
        "--method",
        "eth_blockNumber",
        "--rate",
        "50",
        "-d",
        "3s",
        "--rounds",
        "2",
        "--cooldown",
        "0s",
    ]);
    let Some(tmux) = Tmux::start("compare", &command) else { return };
    // A round's line, written on standard error while the dashboard holds the screen, shows in
    // its log panel.
    let screen = tmux.wait_for("a round's line in the log panel", |screen| {
        screen.contains("log (standard error") && screen.contains("round 1: ")
    });
    assert!(screen.contains("compare a, b"), "{screen}");
    println!("{screen}");
    let screen = tmux.wait_for("the end of the comparison", |screen| screen.contains("RPCBENCH-EXIT="));
    assert!(screen.contains("RPCBENCH-EXIT=0"), "{screen}");
    // Written out again once the screen closed: nothing of standard error is lost.
    let history = String::from_utf8_lossy(&tmux.run(&["capture-pane", "-p", "-S", "-", "-t", "dash"]).stdout)
        .into_owned();
    for line in ["a  round 1: ", "b  round 2: "] {
        assert!(history.contains(line), "{line:?} missing after the screen closed:\n{history}");
    }
    assert!(!history.contains("log (standard error"), "{history}");
    drop((first, second));
}
