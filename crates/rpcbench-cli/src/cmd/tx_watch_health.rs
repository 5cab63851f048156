//! What `rpcbench tx` says of its landing watch's connection once the run is over: one stderr
//! line per end (the first few word for word, then how many more), whether it gave up
//! reconnecting, and the report's `watch_reconnects` and `watch_ended` (the last end's reason,
//! and why reconnecting failed since, if it did); and a landing thread that panicked, said the
//! same way.

use rpcbench::report::tx::times;
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
