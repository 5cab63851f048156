//! The live dashboard on a terminal while a load runs (`run`, `replay`, `compare`, `capacity`,
//! `subscribe`; the transaction command hooks in the same way: [`wanted`], a [`LiveMetrics`]
//! store given to the run, [`LiveDashboard::start`] before it and [`LiveDashboard::finish`]
//! after it, before the report prints).
//!
//! Shown only when standard output is a terminal, `-q` and `--no-tui` were not given and `CI`
//! is not set; otherwise the commands print their progress lines as before. Its figures are
//! the live metrics store's (the same the Prometheus endpoint serves), sampled once a second;
//! the library's `live_view` turns them into panels. While it is shown, the terminal is in raw
//! mode on the alternate screen, and what the command writes on standard error is captured
//! (shown in the messages panel, then written out in full once the screen is left), so that
//! nothing garbles the panels and nothing is lost. `q` or Ctrl-C asks the run to stop: the run
//! then ends as after an interrupt, and the report prints as without the dashboard.

use std::collections::VecDeque;
#[cfg(unix)]
use std::io::{BufRead, BufReader};
use std::io::{IsTerminal, Write};
#[cfg(unix)]
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;
use rpcbench::engine::config::{Load, RunConfig};

use crate::fields::ConfigError;
use rpcbench::engine::{LiveSink, StopHandle};
use rpcbench::live_view::{draw_dashboard, DashboardText, LiveSample, LiveWindow};
use rpcbench::metrics::{LiveMetrics, MetricsServer};
use rpcbench::record::Totals;

/// How often the live figures are sampled (the workers publish once a second).
const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// The first sample is this far into the second, between two publications of the workers
/// (which publish at whole seconds from the run's start), so that each second between two
/// samples holds one publication.
const SAMPLE_PHASE: Duration = Duration::from_millis(500);
/// How long to wait for a key before redrawing.
const REDRAW_EVERY: Duration = Duration::from_millis(250);
/// At most this many lines of standard error are kept while the dashboard is shown.
const MAX_CAPTURED_LINES: usize = 2_000;

/// Whether the dashboard is to be shown: standard output is a terminal, neither `-q` nor
/// `--no-tui` was given, and `CI` is not set.
pub fn wanted(quiet: bool, no_tui: bool) -> bool {
    !quiet && !no_tui && std::env::var_os("CI").is_none() && std::io::stdout().is_terminal()
}

/// Starts the metrics endpoint when `--metrics-listen` was given, and points the run at a
/// live metrics store when either it or the dashboard wants one. Returns the server (serving
/// until dropped) and, when the dashboard is wanted, the store it reads.
pub fn attach(
    metrics: &crate::args::metrics::MetricsArgs,
    config: &mut RunConfig,
    dashboard: bool,
) -> Result<(Option<MetricsServer>, Option<LiveMetrics>), ConfigError> {
    let (server, live) = attach_store(metrics, config, dashboard)?;
    Ok((server, live.filter(|_| dashboard)))
}

/// As [`attach`], but returns the store whenever there is one (the endpoint's or the
/// dashboard's), so that what publishes beside the load (the head monitor) reaches both.
pub fn attach_store(
    metrics: &crate::args::metrics::MetricsArgs,
    config: &mut RunConfig,
    dashboard: bool,
) -> Result<(Option<MetricsServer>, Option<LiveMetrics>), ConfigError> {
    let (server, live) = match metrics.start()? {
        Some((server, live)) => (Some(server), Some(live)),
        None => (None, dashboard.then(LiveMetrics::new)),
    };
    if let Some(live) = &live {
        config.publish_to(live.clone());
    }
    Ok((server, live))
}

/// A store of its own for one run of several shown side by side (a multi-target run, the two
/// runs of `--via-proxy`): the run publishes into it and, when there is one, into the
/// endpoint's shared store too (where the runs add up, as without the dashboard).
pub fn own_store(config: &mut RunConfig, endpoint: Option<&LiveMetrics>) -> LiveMetrics {
    let own = LiveMetrics::new();
    match endpoint {
        Some(endpoint) => config.publish_to(BothStores(own.clone(), endpoint.clone())),
        None => config.publish_to(own.clone()),
    }
    own
}

/// Publishes each worker's figures into two stores: the same publications, twice.
#[derive(Debug)]
struct BothStores(LiveMetrics, LiveMetrics);

impl LiveSink for BothStores {
    fn begin_run(&self, config: &RunConfig, workers: usize, start: Instant, measure_start: Instant) {
        self.0.begin_run(config, workers, start, measure_start);
        self.1.begin_run(config, workers, start, measure_start);
    }

    fn publish(&self, worker: usize, calls: &[Totals], in_flight: u64) {
        self.0.publish(worker, calls, in_flight);
        self.1.publish(worker, calls, in_flight);
    }

    fn end_run(&self) {
        self.0.end_run();
        self.1.end_run();
    }
}

/// What the header says about a run: its title and its load.
#[derive(Debug, Clone, Default)]
pub struct DashboardHeader {
    /// The command and target, e.g. `run http://127.0.0.1:8545/`.
    pub title: String,
    /// The load as configured.
    pub load: String,
    /// The planned length, warm-up included, when it is a time.
    pub planned: Option<Duration>,
}

impl DashboardHeader {
    /// The header of a load run of `command`.
    pub fn of_run(command: &str, config: &RunConfig) -> Self {
        let load = match &config.load {
            Load::Closed { connections } => format!("closed loop, {connections} connection(s)"),
            Load::Open { rate, .. } => format!("open loop, {rate}/s"),
        };
        let requests = config.length.requests.map(|n| format!(", {n} requests")).unwrap_or_default();
        DashboardHeader {
            title: format!("{command} {}", config.target.redacted()),
            load: format!("{load}{requests}, {}", config.workload.label()),
            planned: config.length.duration.map(|duration| duration + config.warmup),
        }
    }
}

/// The dashboard, drawn on its own thread until [`LiveDashboard::finish`] (or drop).
#[derive(Debug)]
pub struct LiveDashboard {
    finished: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    capture: Option<StderrCapture>,
}

impl LiveDashboard {
    /// Takes the terminal and draws the figures of `sources` (one store per target; the
    /// running one is shown) until finished; `q` or Ctrl-C calls `stop`. `None` when the
    /// terminal cannot be set up (the command then goes on without it).
    pub fn start(
        header: DashboardHeader,
        sources: Vec<(String, LiveMetrics)>,
        stop: StopHandle,
    ) -> Option<Self> {
        let mut terminal = enter().ok()?;
        let capture = StderrCapture::start();
        let messages = capture.as_ref().map(|capture| capture.lines.clone()).unwrap_or_default();
        let finished = Arc::new(AtomicBool::new(false));
        let done = finished.clone();
        let thread = std::thread::Builder::new()
            .name("rpcbench-dashboard".into())
            .spawn(move || {
                show(&mut terminal, &header, &sources, &stop, &messages, &done);
                leave(&mut terminal);
            })
            .ok();
        if thread.is_none() {
            if let Ok(mut terminal) = Terminal::new(CrosstermBackend::new(std::io::stdout())) {
                leave(&mut terminal);
            }
        }
        Some(LiveDashboard { finished, thread, capture })
    }

    /// Leaves the alternate screen and gives standard error back (writing out what was
    /// printed on it meanwhile), before the report prints.
    pub fn finish(mut self) {
        self.close();
    }

    fn close(&mut self) {
        self.finished.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().ok();
        }
        if let Some(capture) = self.capture.take() {
            capture.finish();
        }
    }
}

impl Drop for LiveDashboard {
    fn drop(&mut self) {
        self.close();
    }
}

type Screen = Terminal<CrosstermBackend<std::io::Stdout>>;

fn enter() -> std::io::Result<Screen> {
    terminal::enable_raw_mode()?;
    let mut stdout = std::io::stdout();
    if let Err(err) = execute!(stdout, EnterAlternateScreen, cursor::Hide) {
        terminal::disable_raw_mode().ok();
        return Err(err);
    }
    let terminal = Terminal::new(CrosstermBackend::new(stdout));
    if terminal.is_err() {
        execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show).ok();
        terminal::disable_raw_mode().ok();
    }
    terminal
}

fn leave(terminal: &mut Screen) {
    execute!(terminal.backend_mut(), LeaveAlternateScreen, cursor::Show).ok();
    terminal::disable_raw_mode().ok();
    terminal.backend_mut().flush().ok();
}

/// Samples, draws and reads keys until `done`.
fn show(
    terminal: &mut Screen,
    header: &DashboardHeader,
    sources: &[(String, LiveMetrics)],
    stop: &StopHandle,
    messages: &Mutex<VecDeque<String>>,
    done: &AtomicBool,
) {
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    let mut windows: Vec<LiveWindow> = sources.iter().map(|_| LiveWindow::new(cores)).collect();
    let start = Instant::now();
    let mut next_sample = start;
    let mut shown = 0;
    let mut stopping = false;
    let (mut drawn, mut resized) = (None::<ShownState>, false);
    while !done.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= next_sample {
            let cpu = rpcbench::engine::process_cpu_time();
            for (index, ((_, live), window)) in sources.iter().zip(&mut windows).enumerate() {
                let snapshot = live.snapshot();
                if snapshot.running {
                    shown = index;
                }
                window.push(LiveSample { at: now - start, snapshot, cpu });
            }
            next_sample = match next_sample == start {
                true => start + SAMPLE_PHASE,
                false => next_sample + SAMPLE_EVERY,
            };
        }
        let (lines, message_count): (Vec<String>, usize) = {
            let messages = messages.lock().unwrap_or_else(|poison| poison.into_inner());
            (messages.iter().rev().take(4).rev().cloned().collect(), messages.len())
        };
        let sources_line = match sources.len() {
            0 | 1 => String::new(),
            _ => sources
                .iter()
                .zip(&windows)
                .enumerate()
                .map(|(index, ((name, _), window))| {
                    let requests: u64 = window
                        .latest()
                        .map_or(0, |sample| sample.snapshot.methods.values().map(|call| call.requests).sum());
                    let mark = if index == shown { "*" } else { "" };
                    format!("{mark}{name} {requests} req")
                })
                .collect::<Vec<_>>()
                .join(", "),
        };
        let stage = match sources.get(shown) {
            Some((name, _)) if sources.len() > 1 => format!("showing {name}"),
            _ => String::new(),
        };
        let text = DashboardText {
            title: &header.title,
            load: &header.load,
            planned: header.planned,
            stage: &stage,
            sources: &sources_line,
            messages: &lines,
            stopping,
        };
        // Drawn only when something shown changed: a new sample, a message, a key or a resize
        // (between samples, the frame would be the same).
        let shown_now = ShownState {
            sample_at: windows.get(shown).and_then(|window| window.latest().map(|sample| sample.at)),
            shown,
            window: windows.get(shown).map(LiveWindow::window),
            messages: message_count,
            last_message: lines.last().cloned(),
            stopping,
        };
        if let (Some(window), true) = (windows.get(shown), resized || drawn.as_ref() != Some(&shown_now)) {
            // A failed draw (the terminal went away) leaves the run going; the next one retries.
            if terminal.draw(|frame| draw_dashboard(window, &text, frame.area(), frame.buffer_mut())).is_ok()
            {
                drawn = Some(shown_now);
                resized = false;
            }
        }
        if !event::poll(REDRAW_EVERY).unwrap_or(false) {
            continue;
        }
        let key = match event::read() {
            Ok(Event::Key(key)) => key,
            Ok(Event::Resize(..)) => {
                resized = true;
                continue;
            }
            _ => continue,
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Char('Q') => stopping = true,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => stopping = true,
            KeyCode::Char('+') | KeyCode::Char('=') | KeyCode::Right => {
                windows.iter_mut().for_each(LiveWindow::widen)
            }
            KeyCode::Char('-') | KeyCode::Left => windows.iter_mut().for_each(LiveWindow::narrow),
            _ => {}
        }
        if stopping {
            stop.stop();
        }
    }
}

/// What a frame showed: when none of it changed, the frame is not drawn again.
#[derive(Debug, Clone, PartialEq)]
struct ShownState {
    sample_at: Option<Duration>,
    shown: usize,
    window: Option<Duration>,
    messages: usize,
    last_message: Option<String>,
    stopping: bool,
}

/// Standard error sent into a pipe while the dashboard is shown: its lines are kept (the
/// latest few shown in the messages panel) and written to the real standard error after.
#[cfg(unix)]
#[derive(Debug)]
struct StderrCapture {
    saved: OwnedFd,
    writer: Option<OwnedFd>,
    reader: Option<JoinHandle<()>>,
    lines: Arc<Mutex<VecDeque<String>>>,
    dropped: Arc<Mutex<u64>>,
}

#[cfg(unix)]
impl StderrCapture {
    fn start() -> Option<StderrCapture> {
        use std::os::fd::AsFd;
        let saved = rustix::io::dup(std::io::stderr().as_fd()).ok()?;
        let (read, write) = rustix::pipe::pipe().ok()?;
        rustix::stdio::dup2_stderr(&write).ok()?;
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let dropped = Arc::new(Mutex::new(0));
        let (kept, lost) = (lines.clone(), dropped.clone());
        let reader = std::thread::Builder::new().name("rpcbench-stderr".into()).spawn(move || {
            let mut reader = BufReader::new(std::fs::File::from(read));
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|read| read > 0) {
                let text = String::from_utf8_lossy(&line).trim_end_matches(['\n', '\r']).to_string();
                line.clear();
                let mut kept = kept.lock().unwrap_or_else(|poison| poison.into_inner());
                if kept.len() == MAX_CAPTURED_LINES {
                    kept.pop_front();
                    *lost.lock().unwrap_or_else(|poison| poison.into_inner()) += 1;
                }
                kept.push_back(text);
            }
        });
        let reader = match reader {
            Ok(reader) => reader,
            Err(_) => {
                rustix::stdio::dup2_stderr(&saved).ok();
                return None;
            }
        };
        Some(StderrCapture { saved, writer: Some(write), reader: Some(reader), lines, dropped })
    }

    /// Gives standard error back and writes out what was captured.
    fn finish(mut self) {
        rustix::stdio::dup2_stderr(&self.saved).ok();
        // The pipe's last writer is gone: the reader reads to its end.
        self.writer.take();
        if let Some(reader) = self.reader.take() {
            reader.join().ok();
        }
        let mut stderr = std::io::stderr().lock();
        let dropped = *self.dropped.lock().unwrap_or_else(|poison| poison.into_inner());
        if dropped > 0 {
            writeln!(stderr, "rpcbench: ({dropped} earlier lines of standard error were not kept)").ok();
        }
        for line in self.lines.lock().unwrap_or_else(|poison| poison.into_inner()).iter() {
            writeln!(stderr, "{line}").ok();
        }
    }
}

/// Elsewhere than on Unix, standard error is left as it is.
#[cfg(not(unix))]
#[derive(Debug)]
struct StderrCapture {
    lines: Arc<Mutex<VecDeque<String>>>,
}

#[cfg(not(unix))]
impl StderrCapture {
    fn start() -> Option<StderrCapture> {
        None
    }

    fn finish(self) {}
}
