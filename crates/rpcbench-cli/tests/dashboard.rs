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
    let screen = tmux.wait_for("a p50 from the run", |screen| {
        screen.contains("eth_blockNumber") && p50_ms(screen).is_some()
    });
    for panel in
        ["elapsed", "remaining", "open loop, 100/s", "requests/s", "whole run", "outcomes", "ok", "generator"]
    {
        assert!(screen.contains(panel), "{panel:?} missing:\n{screen}");
    }
    // A node answering after 5 ms: the median is a few ms, whatever the machine's speed
    // within reason (not below the node's latency, not ten times it).
    let p50 = p50_ms(&screen).unwrap();
    assert!((5.0..50.0).contains(&p50), "p50 {p50} ms:\n{screen}");
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
