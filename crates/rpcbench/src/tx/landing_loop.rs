//! The landing watch's thread while the engine sends, for either chain: every
//! [`LANDING_STEP_EVERY`] it hands the chain's part ([`LandingStep`]: take the new sends from
//! the ledger, the new heads or landings, what came due, and publish the live figures) the
//! instant, until sending is over; then it gives the chain's part back to the command, which
//! waits for the rest of the landings on its own thread. The thread is a helper that steps
//! aside for the pacer (its block, receipt and status reads come in bursts). A step that
//! panics ends the watch, not the command: the chain's part is given back with the panic's
//! message, so the run still reports every transaction it sent.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::util::thread_class::spawn_helper;

/// How often the landing thread takes a step.
pub const LANDING_STEP_EVERY: Duration = Duration::from_millis(20);

/// A chain's part of the landing thread: what one step does.
pub trait LandingStep: Send + 'static {
    /// One step at `now`: the new sends, the new heads or landings, what came due, and the
    /// live figures published. Costs what it is handed, never the number sent so far.
    fn step(&mut self, now: Instant);
}

/// The landing watch on a thread of its own (named `rpcbench-landing`) while the engine sends.
#[derive(Debug)]
pub struct LandingLoop<W> {
    over: Arc<AtomicBool>,
    thread: JoinHandle<(W, Option<String>)>,
}

impl<W: LandingStep> LandingLoop<W> {
    /// Starts stepping `work` every [`LANDING_STEP_EVERY`] until [`LandingLoop::finish`].
    pub fn start(mut work: W) -> std::io::Result<Self> {
        let over = Arc::new(AtomicBool::new(false));
        let sending_over = over.clone();
        let thread = spawn_helper("rpcbench-landing", move || {
            while !sending_over.load(Ordering::Relaxed) {
                // The work stays outside the unwinding closure: a step that panics leaves it
                // here, to be given back (its last step half done) with the panic's message.
                let now = Instant::now();
                if let Err(panic) = catch_unwind(AssertUnwindSafe(|| work.step(now))) {
                    return (work, Some(panic_message(panic.as_ref())));
                }
                std::thread::sleep(LANDING_STEP_EVERY);
            }
            (work, None)
        })?;
        Ok(LandingLoop { over, thread })
    }

    /// Whether the thread stopped before [`LandingLoop::finish`]: a step panicked.
    pub fn stopped_early(&self) -> bool {
        self.thread.is_finished()
    }

    /// Sending is over: stops the thread after the step under way and gives the chain's part
    /// back, with the message of the panic that ended the watch early if a step panicked (the
    /// thread took no step after it).
    pub fn finish(self) -> (W, Option<String>) {
        self.over.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(ended) => ended,
            // Only a step can panic on the thread, and that panic is caught there.
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// The text a panic was raised with (`panic!("...")`'s message), else that it had none.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_string(),
        (_, Some(text)) => text.clone(),
        _ => "a panic without a message".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    struct Counted {
        steps: u64,
        last: Option<Instant>,
        told: mpsc::Sender<u64>,
    }

    impl LandingStep for Counted {
        fn step(&mut self, now: Instant) {
            assert!(self.last.is_none_or(|last| last <= now), "steps go forward in time");
            self.last = Some(now);
            self.steps += 1;
            let _ = self.told.send(self.steps);
        }
    }

    #[test]
    fn the_landing_loop_steps_the_chain_s_part_until_finished_and_gives_it_back() {
        let (told, steps) = mpsc::channel();
        let running = LandingLoop::start(Counted { steps: 0, last: None, told }).unwrap();
        for expected in 1..=3 {
            assert_eq!(steps.recv_timeout(Duration::from_secs(60)), Ok(expected));
        }
        let (work, panicked) = running.finish();
        assert_eq!(panicked, None);
        assert!(work.steps >= 3, "{} steps", work.steps);
        // Every step it took was told, and none comes after the finish.
        assert_eq!(steps.try_iter().count() as u64, work.steps - 3);
    }

    /// Counts its steps and panics on the third.
    struct PanicsOnThird {
        steps: u64,
    }

    impl LandingStep for PanicsOnThird {
        fn step(&mut self, _now: Instant) {
            self.steps += 1;
            if self.steps == 3 {
                panic!("step {} broke", self.steps);
            }
        }
    }

    #[test]
    fn a_landing_step_that_panics_ends_the_watch_and_gives_the_work_back_with_the_message() {
        let running = LandingLoop::start(PanicsOnThird { steps: 0 }).unwrap();
        // The thread ends by itself at the panic: finish is not needed to stop it.
        while !running.stopped_early() {
            std::thread::sleep(LANDING_STEP_EVERY);
        }
        let (work, panicked) = running.finish();
        assert_eq!(work.steps, 3, "no step after the panic");
        assert_eq!(panicked.as_deref(), Some("step 3 broke"));
    }

    #[test]
    fn a_panic_s_message_is_its_text_whether_static_or_formatted() {
        let text: Box<dyn Any + Send> = Box::new("static");
        let formatted: Box<dyn Any + Send> = Box::new(format!("formatted {}", 1));
        let other: Box<dyn Any + Send> = Box::new(7u8);
        assert_eq!(panic_message(text.as_ref()), "static");
        assert_eq!(panic_message(formatted.as_ref()), "formatted 1");
        assert_eq!(panic_message(other.as_ref()), "a panic without a message");
    }
}
