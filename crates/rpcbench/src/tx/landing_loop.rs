//! The landing watch's thread while the engine sends, for either chain: every
//! [`LANDING_STEP_EVERY`] it hands the chain's part ([`LandingStep`]: take the new sends from
//! the ledger, the new heads or landings, what came due, and publish the live figures) the
//! instant, until sending is over; then it gives the chain's part back to the command, which
//! waits for the rest of the landings on its own thread. The thread is a helper that steps
//! aside for the pacer (its block, receipt and status reads come in bursts). A step that
//! panics ends the watch, not the command nor the sending: from then on the thread only takes
//! the later sends out of the ledger and counts them as what an unwatched send ends as
//! ([`UnwatchedSends`]: pending with its age, or rejected), so what the engine keeps sending is
//! not held until the run's end; the chain's part is given back with the panic's message, so
//! the run still reports every transaction it sent.

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

    /// A step at `now` once a step panicked (the watch stopped; what the panic interrupted may
    /// be half done and is not touched): takes the new sends out of the ledger and counts them
    /// in an [`UnwatchedSends`], and throws away what the heads or landings hand in, so that
    /// nothing the engine keeps sending is held until the run's end. Costs what it is handed.
    fn step_unwatched(&mut self, now: Instant);
}

/// The sends taken after the landing watch stopped (its thread panicked), each counted as what
/// an unwatched send ends as: pending at the end with its age (accepted), or rejected (refused,
/// or never answered: as the books end those they no longer watch). A few counters, however
/// many sends: the engine keeps sending, so that a bug in the watch does not shorten the
/// measurement, and nothing of those sends is held.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UnwatchedSends {
    /// Sends counted.
    pub sent: u64,
    /// Of them, refused or never answered.
    pub rejected: u64,
    /// Of them, accepted: pending at the end.
    pub pending: u64,
    /// The send instant of the oldest pending one.
    oldest_pending: Option<Instant>,
}

impl UnwatchedSends {
    /// Counts a send at `sent`, `accepted` by the node or not.
    pub fn add(&mut self, sent: Instant, accepted: bool) {
        self.sent += 1;
        if accepted {
            self.pending += 1;
            self.oldest_pending = Some(self.oldest_pending.map_or(sent, |oldest| oldest.min(sent)));
        } else {
            self.rejected += 1;
        }
    }

    /// The age at `end` of the oldest pending one (zero without one).
    pub fn oldest_pending_age(&self, end: Instant) -> Duration {
        self.oldest_pending.map_or(Duration::ZERO, |oldest| end.saturating_duration_since(oldest))
    }
}

/// The landing watch on a thread of its own (named `rpcbench-landing`) while the engine sends.
#[derive(Debug)]
pub struct LandingLoop<W> {
    over: Arc<AtomicBool>,
    panicked: Arc<AtomicBool>,
    thread: JoinHandle<(W, Option<String>)>,
}

impl<W: LandingStep> LandingLoop<W> {
    /// Starts stepping `work` every [`LANDING_STEP_EVERY`] until [`LandingLoop::finish`]; once
    /// a step panicked, [`LandingStep::step_unwatched`] instead.
    pub fn start(mut work: W) -> std::io::Result<Self> {
        let over = Arc::new(AtomicBool::new(false));
        let panicked = Arc::new(AtomicBool::new(false));
        let (sending_over, told_panicked) = (over.clone(), panicked.clone());
        let thread = spawn_helper("rpcbench-landing", move || {
            let mut first_panic: Option<String> = None;
            while !sending_over.load(Ordering::Relaxed) {
                // The work stays outside the unwinding closure: a step that panics leaves it
                // here, to be given back (its last step half done) with the panic's message.
                let now = Instant::now();
                let stepped = match first_panic {
                    None => catch_unwind(AssertUnwindSafe(|| work.step(now))),
                    Some(_) => catch_unwind(AssertUnwindSafe(|| work.step_unwatched(now))),
                };
                if let Err(panic) = stepped {
                    let message = panic_message(panic.as_ref());
                    match first_panic {
                        None => {
                            first_panic = Some(message);
                            told_panicked.store(true, Ordering::Relaxed);
                        }
                        // The later sends can no longer be taken out: they stay in the ledger
                        // (held to the end, then counted as the command ends an unwatched send).
                        Some(first) => {
                            let both =
                                format!("{first}; then taking the later sends panicked too: {message}");
                            return (work, Some(both));
                        }
                    }
                }
                std::thread::sleep(LANDING_STEP_EVERY);
            }
            (work, first_panic)
        })?;
        Ok(LandingLoop { over, panicked, thread })
    }

    /// Whether a step panicked: the watch stopped, and the thread only takes the later sends
    /// out ([`LandingStep::step_unwatched`]) until [`LandingLoop::finish`].
    pub fn watch_stopped(&self) -> bool {
        self.panicked.load(Ordering::Relaxed)
    }

    /// Sending is over: stops the thread after the step under way and gives the chain's part
    /// back, with the message of the panic that ended the watch early if a step panicked (the
    /// thread took no watching step after it).
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

        fn step_unwatched(&mut self, _now: Instant) {
            unreachable!("no step panics");
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

    /// Counts its steps and panics on the third; then takes what the inbox (standing in for
    /// the ledger) holds out, counting it; `broken_drain`: that panics too.
    struct PanicsOnThird {
        steps: u64,
        inbox: Arc<std::sync::Mutex<Vec<Instant>>>,
        unwatched: UnwatchedSends,
        broken_drain: bool,
    }

    impl PanicsOnThird {
        fn new(broken_drain: bool) -> Self {
            PanicsOnThird {
                steps: 0,
                inbox: Arc::default(),
                unwatched: UnwatchedSends::default(),
                broken_drain,
            }
        }
    }

    impl LandingStep for PanicsOnThird {
        fn step(&mut self, _now: Instant) {
            self.steps += 1;
            if self.steps == 3 {
                panic!("step {} broke", self.steps);
            }
        }

        fn step_unwatched(&mut self, _now: Instant) {
            assert!(!self.broken_drain, "the drain broke");
            let taken = std::mem::take(&mut *self.inbox.lock().unwrap());
            for (n, sent) in taken.into_iter().enumerate() {
                self.unwatched.add(sent, n % 10 != 0);
            }
        }
    }

    #[test]
    fn after_a_landing_step_panics_the_thread_keeps_taking_the_later_sends_out() {
        let work = PanicsOnThird::new(false);
        let inbox = work.inbox.clone();
        let running = LandingLoop::start(work).unwrap();
        // The thread goes on at the panic: it is told, and no watching step follows.
        while !running.watch_stopped() {
            std::thread::sleep(LANDING_STEP_EVERY);
        }
        // 50 rounds of 100 sends: each round is taken out before the next comes, so the inbox
        // never holds more than one round, however many rounds come.
        let start = Instant::now();
        let mut most_held = 0;
        for _ in 0..50 {
            inbox.lock().unwrap().extend(std::iter::repeat_n(start, 100));
            loop {
                let held = inbox.lock().unwrap().len();
                most_held = most_held.max(held);
                if held == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let (work, panicked) = running.finish();
        assert_eq!(work.steps, 3, "no watching step after the panic");
        assert_eq!(panicked.as_deref(), Some("step 3 broke"));
        assert!(most_held <= 100, "{most_held} held");
        assert_eq!(
            (work.unwatched.sent, work.unwatched.pending, work.unwatched.rejected),
            (5_000, 4_500, 500),
            "each later send counted once"
        );
        let end = Instant::now();
        assert_eq!(work.unwatched.oldest_pending_age(end), end - start, "aged from the oldest");
    }

    #[test]
    fn a_landing_thread_whose_drain_panics_too_ends_and_says_both() {
        let running = LandingLoop::start(PanicsOnThird::new(true)).unwrap();
        while !running.thread.is_finished() {
            std::thread::sleep(LANDING_STEP_EVERY);
        }
        let (work, panicked) = running.finish();
        assert_eq!(work.steps, 3);
        let said = panicked.unwrap();
        assert!(said.starts_with("step 3 broke; then taking the later sends panicked too: "), "{said}");
        assert!(said.contains("the drain broke"), "{said}");
    }

    #[test]
    fn unwatched_sends_count_the_accepted_pending_from_the_oldest_and_the_others_rejected() {
        let start = Instant::now();
        let mut unwatched = UnwatchedSends::default();
        assert_eq!(unwatched.oldest_pending_age(start), Duration::ZERO);
        unwatched.add(start, false);
        unwatched.add(start + Duration::from_secs(2), true);
        unwatched.add(start + Duration::from_secs(1), true);
        assert_eq!((unwatched.sent, unwatched.pending, unwatched.rejected), (3, 2, 1));
        assert_eq!(unwatched.oldest_pending_age(start + Duration::from_secs(5)), Duration::from_secs(4));
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
