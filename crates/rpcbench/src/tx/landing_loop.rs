//! The landing watch's thread while the engine sends, for either chain: every
//! [`LANDING_STEP_EVERY`] it hands the chain's part ([`LandingStep`]: take the new sends from
//! the ledger, the new heads or landings, what came due, and publish the live figures) the
//! instant, until sending is over; then it gives the chain's part back to the command, which
//! waits for the rest of the landings on its own thread. The thread is a helper that steps
//! aside for the pacer (its block, receipt and status reads come in bursts).

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
    thread: JoinHandle<W>,
}

impl<W: LandingStep> LandingLoop<W> {
    /// Starts stepping `work` every [`LANDING_STEP_EVERY`] until [`LandingLoop::finish`].
    pub fn start(mut work: W) -> std::io::Result<Self> {
        let over = Arc::new(AtomicBool::new(false));
        let sending_over = over.clone();
        let thread = spawn_helper("rpcbench-landing", move || {
            while !sending_over.load(Ordering::Relaxed) {
                work.step(Instant::now());
                std::thread::sleep(LANDING_STEP_EVERY);
            }
            work
        })?;
        Ok(LandingLoop { over, thread })
    }

    /// Sending is over: stops the thread after the step under way and gives the chain's part
    /// back (a panic on the thread goes on here).
    pub fn finish(self) -> W {
        self.over.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(work) => work,
            Err(panic) => std::panic::resume_unwind(panic),
        }
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
        let work = running.finish();
        assert!(work.steps >= 3, "{} steps", work.steps);
        // Every step it took was told, and none comes after the finish.
        assert_eq!(steps.try_iter().count() as u64, work.steps - 3);
    }
}
