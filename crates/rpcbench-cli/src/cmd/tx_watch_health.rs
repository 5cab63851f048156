//! What `rpcbench tx` says of its landing watch's connection once the run is over: one stderr
//! line per end (the first few word for word, then how many more), whether it gave up
//! reconnecting, and the report's `watch_reconnects` and `watch_ended` (the last end's reason,
//! and why reconnecting failed since, if it did); and a landing thread that panicked, said the
//! same way. And, while it sends, the signer's watch: a stderr line as soon as the signer falls
//! behind the schedule.

use rpcbench::engine::config::{Load, RunConfig};
use rpcbench::report::tx::times;
use rpcbench::tx::signer_watch::{SignerWatch, SIGNER_WATCH_EVERY};
use rpcbench::tx::watch::{WatchHealth, ENDS_KEPT, RECONNECT};

/// The report's figures of a watch's connection: reconnects, and why it last ended (`None`:
/// it never did).
pub(super) struct WatchEnds {
    pub(super) reconnects: u64,
    pub(super) last_end: Option<String>,
    pub(super) gave_up: bool,
}

impl WatchEnds {
    /// A run without a watch (polled), or whose watch never ended.
    pub(super) fn none() -> Self {
        WatchEnds { reconnects: 0, last_end: None, gave_up: false }
    }

    /// The landing watch stopped early, its thread having panicked with `message`: said on
    /// stderr (`after`: what became of the sends it no longer watched) and first in the
    /// report's `watch_ended` (the connection's own last end, if any, after it).
    pub(super) fn landing_panicked(&mut self, message: &str, after: &str) {
        eprintln!("warning: the landing watch stopped: its thread panicked ({message}); {after}");
        let panicked = format!("the landing thread panicked: {message}");
        self.last_end = Some(match self.last_end.take() {
            Some(connection) => format!("{panicked}; before that: {connection}"),
            None => panicked,
        });
    }
}

/// Says on stderr how the `what` watch's connection ended (each of the first ends, then a
/// count; `after_give_up`: what became of the sends once it gave up) and returns the report's
/// figures.
pub(super) fn say_ends(what: &str, health: &WatchHealth, after_give_up: &str) -> WatchEnds {
    let ends = health.ends();
    for reason in health.first_ends() {
        eprintln!("warning: the {what} ended: {reason}; reconnecting");
    }
    if ends > ENDS_KEPT as u64 {
        eprintln!("warning: the {what} ended {} more", times(ends - ENDS_KEPT as u64));
    }
    let gave_up = health.gave_up();
    if gave_up {
        eprintln!(
            "warning: the {what} gave up reconnecting after {} failed attempts in a row ({}); {after_give_up}",
            RECONNECT.attempts,
            health.last_end().unwrap_or_default()
        );
    } else if ends > 0 {
        eprintln!("note: the {what} reconnected {}", times(health.reconnects()));
        if let Some(last) = health.last_end().filter(|last| last.contains("reconnecting failed")) {
            eprintln!("note: the run ended before the {what} reconnected after its last end ({last})");
        }
    }
    WatchEnds { reconnects: health.reconnects(), last_end: health.last_end(), gave_up }
}

/// The rate this shard sends at, for [`watch_signer`] (`None`: a closed loop).
pub(super) fn shard_rate(config: &RunConfig) -> Option<f64> {
    match config.load {
        Load::Open { rate, .. } => Some(rate / config.shard.count.max(1) as f64),
        Load::Closed { .. } => None,
    }
}

/// Starts the watch on the signer of a run sending at `rate` (`waits`: the sends so far that
/// waited for it): a stderr line the first second it falls behind, unless the dashboard holds
/// the terminal (then the report's `signer waits` line says it). `None` for a closed loop, or
/// if the thread cannot start (the report still says it).
pub(super) fn watch_signer(
    waits: impl Fn() -> u64 + Send + 'static,
    rate: Option<f64>,
    dashboard: bool,
) -> Option<SignerWatch> {
    let warn = move |text: &str| {
        if !dashboard {
            eprintln!("warning: {text}");
        }
    };
    SignerWatch::start(waits, rate?, SIGNER_WATCH_EVERY, rpcbench::helper_threads(), warn).ok()
}
