//! A watch on the signer while `rpcbench tx` sends: once a second it reads how many sends so
//! far found nothing signed ahead and waited, and says at once (not only in the report) when
//! the signer fell behind the schedule. The signer runs aside by default (the idle class):
//! on a machine whose cores other work keeps busy it gets no CPU at all and the run quietly
//! sends a fraction of its rate; this watch runs in the ordinary class, so it still sees that.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::util::thread_class::HelperThreads;

/// How often the watch reads the waits.
pub const SIGNER_WATCH_EVERY: Duration = Duration::from_secs(1);

/// Whether `waits` sends waiting for the signer within `window`, at `rate` sends a second,
/// mean it fell behind: 1% of the window's sends, and at least 10 (a wait now and then, at the
/// start or after a stall of the machine, is not a signer that cannot keep up).
pub fn fell_behind(waits: u64, window: Duration, rate: f64) -> bool {
    let due = rate.max(0.0) * window.as_secs_f64();
    waits >= 10 && waits as f64 >= due * 0.01
}

/// What the warning says: how many sends waited, and what to do given how the helper threads
/// were scheduled.
pub fn fell_behind_text(waits: u64, window: Duration, helpers: HelperThreads) -> String {
    let said = format!(
        "the signer fell behind the schedule: {waits} sends in the last {} found nothing signed ahead and waited",
        humantime::format_duration(window)
    );
    match helpers {
        HelperThreads::StepAside => format!(
            "{said}; its threads run below every other process's (--helper-threads aside): if other \
             work keeps the cores busy, run with --helper-threads ordinary"
        ),
        HelperThreads::Ordinary => {
            format!("{said}; this machine may not sign at the rate asked: a lower --rate, or fewer other processes")
        }
    }
}

/// The watch on its thread (named `rpcbench-signer-watch`, in the ordinary class).
#[derive(Debug)]
pub struct SignerWatch {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<u64>,
}

impl SignerWatch {
    /// Starts reading `waits` (the sends so far that waited for the signer) every `every`; the
    /// first window in which the signer fell behind ([`fell_behind`] at `rate`) is told to
    /// `warn`, once. `helpers` says how the signer's threads run.
    pub fn start(
        waits: impl Fn() -> u64 + Send + 'static,
        rate: f64,
        every: Duration,
        helpers: HelperThreads,
        mut warn: impl FnMut(&str) + Send + 'static,
    ) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("rpcbench-signer-watch".into()).spawn(move || {
            let mut last = waits();
            let mut windows_behind = 0u64;
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                let now = waits();
                let in_window = now.saturating_sub(last);
                last = now;
                if fell_behind(in_window, every, rate) {
                    if windows_behind == 0 {
                        warn(&fell_behind_text(in_window, every, helpers));
                    }
                    windows_behind += 1;
                }
            }
            windows_behind
        })?;
        Ok(SignerWatch { stop, thread })
    }

    /// Stops the watch: the windows in which the signer fell behind.
    pub fn finish(self) -> u64 {
        drop(self.stop);
        self.thread.join().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    #[test]
    fn a_signer_behind_by_one_percent_of_the_sends_and_ten_has_fallen_behind() {
        let second = Duration::from_secs(1);
        assert!(!fell_behind(9, second, 100.0), "fewer than 10: a wait now and then");
        assert!(fell_behind(10, second, 100.0));
        assert!(!fell_behind(49, second, 5_000.0), "under 1% of 5,000");
        assert!(fell_behind(50, second, 5_000.0));
        assert!(fell_behind(50, Duration::from_millis(100), 5_000.0), "1% of a tenth of a second's");
        assert!(!fell_behind(0, second, 0.0));
    }

    #[test]
    fn the_warning_says_to_run_the_helpers_ordinary_only_when_they_ran_aside() {
        let second = Duration::from_secs(1);
        let aside = fell_behind_text(120, second, HelperThreads::StepAside);
        assert!(
            aside.contains("120 sends in the last 1s") && aside.contains("--helper-threads ordinary"),
            "{aside}"
        );
        let ordinary = fell_behind_text(120, second, HelperThreads::Ordinary);
        assert!(!ordinary.contains("--helper-threads ordinary") && ordinary.contains("--rate"), "{ordinary}");
    }

    /// The watch started over a counter; what it warned.
    fn watch_over(waits: &Arc<AtomicU64>) -> (SignerWatch, Arc<Mutex<Vec<String>>>) {
        let warned = Arc::new(Mutex::new(Vec::new()));
        let (counter, said) = (waits.clone(), warned.clone());
        let watch = SignerWatch::start(
            move || counter.load(Ordering::Relaxed),
            1_000.0,
            Duration::from_millis(20),
            HelperThreads::StepAside,
            move |text| said.lock().unwrap().push(text.to_string()),
        )
        .unwrap();
        (watch, warned)
    }

    #[test]
    fn a_signer_that_keeps_falling_behind_is_warned_about_once_during_the_run() {
        let waits = Arc::new(AtomicU64::new(0));
        let (watch, warned) = watch_over(&waits);
        // Every window from now on sees at least 50 more waits (10 and 1% of 20 ms at 1,000/s).
        let deadline = Instant::now() + Duration::from_secs(20);
        while warned.lock().unwrap().is_empty() && Instant::now() < deadline {
            waits.fetch_add(50, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(5));
        }
        for _ in 0..20 {
            waits.fetch_add(50, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(5));
        }
        let windows = watch.finish();
        let warned = warned.lock().unwrap();
        assert_eq!(warned.len(), 1, "once, however long it lasts: {warned:?}");
        assert!(warned[0].contains("the signer fell behind the schedule"), "{warned:?}");
        assert!(windows >= 1, "{windows}");
    }

    #[test]
    fn a_signer_that_never_made_a_send_wait_is_never_warned_about() {
        let waits = Arc::new(AtomicU64::new(7));
        let (watch, warned) = watch_over(&waits);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(watch.finish(), 0);
        assert!(warned.lock().unwrap().is_empty());
    }
}
