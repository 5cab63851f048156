//! Live progress on standard error for the slow steps outside a load run (sampling a node
//! before it, reading many results files in `merge`, the demo's closing capacity search): shown, as `run`'s bar is, only when
//! standard error is a terminal and `-q` was not given; redrawn in place about once a second
//! and cleared when the step ends, so that nothing of it is left in a log and standard output
//! keeps only the report.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the line is redrawn.
const EVERY: Duration = Duration::from_secs(1);

/// A progress line redrawn from `message` until dropped.
#[derive(Debug)]
pub struct Ticker {
    finished: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    line: Option<indicatif::ProgressBar>,
}

impl Ticker {
    /// Starts the line when standard error is a terminal and not `quiet`; `message` is asked
    /// for the text at once (drawn before this returns) and then about once a second, with the
    /// time since the start.
    pub fn start(quiet: bool, mut message: impl FnMut(Duration) -> String + Send + 'static) -> Ticker {
        let finished = Arc::new(AtomicBool::new(false));
        let shown = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let line = indicatif::ProgressBar::new_spinner();
            let style = indicatif::ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
            line.set_style(style);
            let start = Instant::now();
            line.set_message(message(Duration::ZERO));
            let finished = finished.clone();
            let drawn = line.clone();
            (line, std::thread::spawn(move || redraw(&drawn, message, start, &finished)))
        });
        let (line, thread) = shown.unzip();
        Ticker { finished, thread, line }
    }

    /// Prints `text` as a line of its own above the progress line, which stays; nothing when
    /// the line is not shown.
    pub fn println(&self, text: &str) {
        if let Some(line) = &self.line {
            line.println(text);
        }
    }
}

fn redraw(
    line: &indicatif::ProgressBar,
    mut message: impl FnMut(Duration) -> String,
    start: Instant,
    finished: &AtomicBool,
) {
    let mut next = start + EVERY;
    while !finished.load(Ordering::SeqCst) {
        if Instant::now() >= next {
            line.set_message(message(start.elapsed()));
            next += EVERY;
        }
        line.tick();
        std::thread::sleep(Duration::from_millis(100));
    }
    line.finish_and_clear();
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.finished.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().ok();
        }
    }
}

/// One line per finished step: its level, what it achieved, its latency and its verdict.
pub fn capacity_step_line(step: &rpcbench::capacity::StepResult) -> String {
    // Stopped in its warmup: no figure to show (zeros would read as a measurement).
    if step.requests == 0 && step.verdict == rpcbench::capacity::Verdict::Interrupted {
        let level = match step.connections {
            Some(connections) => format!("{connections:>6} conns"),
            None => format!("{:>9}/s", step.target_rate),
        };
        return format!("  step {:>2}: {level} -> interrupted before any request was measured", step.step);
    }
    if let Some(connections) = step.connections {
        return format!(
            "  step {:>2}: {:>6} conns -> {:>9.1} req/s, p50 {}, p99 {}, errors {:.2}%: {}",
            step.step,
            connections,
            step.achieved_rate,
            rpcbench::format_micros(step.p50_us as f64),
            rpcbench::format_micros(step.p99_us as f64),
            step.error_percent,
            step.verdict_text()
        );
    }
    format!(
        "  step {:>2}: {:>9}/s -> achieved {:>9.1}/s, p50 {}, p99 {}, errors {:.2}%: {}",
        step.step,
        step.target_rate,
        step.achieved_rate,
        rpcbench::format_micros(step.p50_us as f64),
        rpcbench::format_micros(step.p99_us as f64),
        step.error_percent,
        step.verdict_text()
    )
}

#[cfg(test)]
mod tests {
    use super::capacity_step_line;
    use rpcbench::capacity::StepResult;

    #[test]
    fn a_capacity_step_interrupted_before_any_request_shows_no_figures() {
        let step: StepResult = serde_json::from_value(serde_json::json!({
            "step": 2, "target_rate": 200.0, "achieved_rate": 0.0, "requests": 0, "errors": 0,
            "error_percent": 0.0, "unsent": 0, "p50_us": 0, "p99_us": 0, "p99_uncorrected_us": 0,
            "send_lag_mean_us": 0, "verdict": "interrupted", "breaches": [], "generator_shortfall": false
        }))
        .expect("a step");
        let line = capacity_step_line(&step);
        assert!(!line.contains("p50") && !line.contains("0us"), "{line}");
        assert!(
            line.contains("200/s") && line.ends_with("interrupted before any request was measured"),
            "{line}"
        );
    }
}
