//! What happens to `rpcbench tx`'s Solana transactions after their send: the sends (once
//! answered) and the landings the watch or the poll saw fed to the bounded `LandingBook` from
//! the start of sending (on a thread of its own while the engine sends, then on the command's
//! thread while it waits for landings); what is due (not seen within the inclusion timeout,
//! or its blockhash expired) looked up with `getSignatureStatuses` as it comes due; the
//! timeline drawn as landings come. Each step costs what it is handed (new sends, new
//! landings, the due), never the number sent so far.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::Endpoint;
use crate::metrics::{LiveMetrics, TransactionFigures};
use crate::tx::landing_loop::{LandingLoop, LandingStep};
use crate::tx::sends_noted::SendsNoted;
use crate::tx::solana::blockhash::BlockhashFeed;
use crate::tx::solana::landing::{LandingBook, SendAnswer, SolanaTally};
use crate::tx::solana::lookup::look_up_statuses;
use crate::tx::solana::watch::{Commitment, Landing, SignaturePoll, SignatureWatch};
use crate::{SolanaSends, SolanaSent, TxAck};

/// How the run sees its transactions land: the subscription watch or the status poll.
pub struct LandingSources {
    /// The `signatureSubscribe` watch (or the block stream), if the run has one.
    pub watch: Option<SignatureWatch>,
    /// The `getSignatureStatuses` poll, if the run has one.
    pub poll: Option<SignaturePoll>,
}

impl std::fmt::Debug for LandingSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LandingSources")
            .field("watch", &self.watch.is_some())
            .field("poll", &self.poll.is_some())
            .finish()
    }
}

impl LandingSources {
    fn drain(&self) -> Vec<Landing> {
        let mut landings = self.watch.as_ref().map(SignatureWatch::drain).unwrap_or_default();
        if let Some(poll) = &self.poll {
            landings.extend(poll.drain());
        }
        landings
    }
}

/// The book and everything fed to it.
pub struct SolanaLanding {
    node: Endpoint,
    commitment: Commitment,
    /// Every send fed and not final yet, and the tally of those that are.
    pub book: LandingBook,
    blockhash: Arc<BlockhashFeed>,
    /// The sends taken, and those counted only (after the watch stopped).
    pub noted: SendsNoted,
    /// When the latest landing seen happened.
    pub last_landed: Option<Instant>,
    /// `getSignatureStatuses` calls that failed.
    pub lookup_failures: u64,
    /// The longest a send waits for its answer before it is fed unanswered (a send the wire
    /// failed is never answered).
    answer_wait: Duration,
}

impl std::fmt::Debug for SolanaLanding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SolanaLanding")
            .field("unfinished", &self.book.unfinished())
            .field("accepted", &self.noted.accepted)
            .field("lookup_failures", &self.lookup_failures)
            .finish_non_exhaustive()
    }
}

impl SolanaLanding {
    /// A landing watch: what is not seen landed `timeout` after its send is looked up at
    /// `commitment`; `request_timeout` bounds how long a send can wait for its answer.
    pub fn new(
        node: Endpoint,
        commitment: Commitment,
        blockhash: Arc<BlockhashFeed>,
        timeout: Duration,
        request_timeout: Duration,
    ) -> Self {
        // A landing may come before its send's answer (then its send is noted): held longer
        // than a send can wait for its answer, plus the watch's own period.
        let early_hold = request_timeout + Duration::from_secs(5);
        SolanaLanding {
            node,
            commitment,
            book: LandingBook::new(timeout, early_hold).log_finished(),
            blockhash,
            noted: SendsNoted::default(),
            last_landed: None,
            lookup_failures: 0,
            answer_wait: request_timeout + Duration::from_secs(1),
        }
    }

    /// Takes the ledger's sends not yet taken: while sending (at `now`), only up to the first
    /// one not yet answered (its answer says whether it is waited for) unless it waited longer
    /// than a request can; once sending is over (`all`), every one. Only the new part of the
    /// ledger is copied, under its lock, and the ledger forgets it.
    fn take(&self, sends: &SolanaSends, all: bool, now: Instant) -> Vec<SolanaSent> {
        let answer_by = now.checked_sub(self.answer_wait).unwrap_or(now);
        sends.ledger().take_answered(all, answer_by)
    }

    /// Feeds the ledger's sends not yet fed ([`Self::take`]) to the book, each noted first.
    fn feed(&mut self, sends: &SolanaSends, all: bool, now: Instant) {
        for tx in self.take(sends, all, now) {
            self.noted.note(tx.sent, tx.ack);
            // A send without an answer (a timeout, a lost connection) may have reached the node:
            // waited for, rejected unless it lands.
            let answer = send_answer(tx.ack);
            let slot = self.blockhash.slot_at(tx.sent);
            self.book.sent(tx.index, &tx.signature, tx.sent, slot, answer, tx.last_valid_block_height);
        }
    }

    /// Counts the ledger's sends not yet taken ([`Self::take`]) after the watch stopped,
    /// without the book: pending (accepted) or rejected at the end, as the book ends what it
    /// no longer watches; the watch that looks for them (the poll, the block stream) is told
    /// they are final, so nothing of them is held.
    fn count_unwatched(&mut self, sends: &SolanaSends, all: bool, now: Instant) {
        let fresh = self.take(sends, all, now);
        for tx in &fresh {
            self.noted.note_unwatched(tx.sent, tx.ack);
        }
        if !fresh.is_empty() {
            sends.ledger().finished(fresh.iter().map(|tx| tx.index));
        }
    }

    /// Tells the watch that looks for the sent signatures (the poll, the block stream), through
    /// the ledger, which ones it no longer needs to.
    fn tell_finished(&mut self, sends: &SolanaSends) {
        let finished = self.book.take_finished();
        if !finished.is_empty() {
            sends.ledger().finished(finished);
        }
    }

    /// Notes what the watch or the poll saw land.
    fn note(&mut self, landings: Vec<Landing>) {
        for landing in landings {
            self.book.landed(landing.index, landing.slot, landing.arrived, landing.failed);
        }
        self.note_landed_at();
    }

    fn note_landed_at(&mut self) {
        let Some(first) = self.noted.first_send else {
            // Nothing fed yet: the arrivals wait in the book for the first send.
            return;
        };
        for at in self.book.take_landed_at() {
            self.noted.timeline.included(at.saturating_duration_since(first));
            self.last_landed = Some(self.last_landed.map_or(at, |last| last.max(at)));
        }
    }

    /// Looks up what is due at `now`, in batches, and settles it.
    fn look_up_due(&mut self, now: Instant) {
        let height = self.blockhash.head().block_height;
        let due = self.book.take_due(now, height);
        if due.is_empty() {
            return;
        }
        let signatures: Vec<[u8; 64]> = due.iter().map(|lookup| lookup.signature).collect();
        let (found, failed_calls) = look_up_statuses(&self.node, &signatures, self.commitment);
        self.lookup_failures += failed_calls;
        // The height after the answers: an unknown one whose blockhash expired by then is expired.
        let height = self.blockhash.head().block_height.max(height);
        for (lookup, found) in due.iter().zip(found) {
            self.book.looked_up(lookup.index, found, height, now);
        }
    }

    /// One step at `now`: new sends, new landings, the due looked up.
    pub fn step(&mut self, sends: &SolanaSends, sources: &LandingSources, all: bool, now: Instant) {
        self.feed(sends, all, now);
        self.note(sources.drain());
        self.look_up_due(now);
        self.tell_finished(sends);
    }

    /// The dashboard's and Prometheus's figures now.
    pub fn live_figures(&self) -> TransactionFigures {
        let mut figures = live_figures_of(&self.book, self.noted.accepted);
        self.noted.add_unwatched_to(&mut figures, Instant::now());
        figures
    }

    /// Ends the watch at `end` with the landings `last` the sources gave when stopped: every
    /// transaction's final outcome in the tally. A watch that stopped early (`watched` false:
    /// its thread panicked) is fed nothing more: the sends not yet taken are counted as those
    /// taken after it stopped were ([`Self::count_unwatched`]).
    pub fn finish(
        &mut self,
        sends: &SolanaSends,
        last: Vec<Landing>,
        end: Instant,
        watched: bool,
    ) -> SolanaTally {
        if watched {
            self.feed(sends, true, end);
            self.note(last);
        } else {
            self.count_unwatched(sends, true, end);
        }
        let book = std::mem::replace(&mut self.book, LandingBook::new(Duration::ZERO, Duration::ZERO));
        let mut tally = book.finish(end);
        self.noted.add_unwatched_to(&mut tally, end);
        tally
    }
}

/// What the book needs of the node's answer to a send.
fn send_answer(ack: TxAck) -> SendAnswer {
    match ack {
        TxAck::Accepted(_) => SendAnswer::Accepted,
        TxAck::Refused(_) => SendAnswer::Refused,
        TxAck::Unanswered | TxAck::Failed(_) => SendAnswer::Unanswered,
    }
}

/// The live figures of `book` (`accepted` of its sends accepted): the rows of the final report,
/// landed apart from failed and expired apart from dropped.
fn live_figures_of(book: &LandingBook, accepted: u64) -> TransactionFigures {
    let counts = book.counts();
    let tally = book.tally_so_far();
    TransactionFigures {
        sent: counts.sent,
        accepted,
        rejected: counts.rejected,
        included: tally.landed,
        reverted: tally.failed,
        expired: tally.expired,
        dropped: tally.dropped,
        pending: counts.pending,
        reorged_out: 0,
    }
}

/// Solana's part of the landing thread: the landing watch, the ledger it takes the sends
/// from, the sources of landings and where it publishes the live figures.
struct SolanaLandingStep {
    landing: SolanaLanding,
    sends: Arc<SolanaSends>,
    sources: LandingSources,
    live: Option<LiveMetrics>,
}

impl LandingStep for SolanaLandingStep {
    fn step(&mut self, now: Instant) {
        self.landing.step(&self.sends, &self.sources, false, now);
        if let Some(live) = &self.live {
            live.publish_transactions(self.landing.live_figures());
        }
    }

    fn step_unwatched(&mut self, now: Instant) {
        self.landing.count_unwatched(&self.sends, false, now);
        // The landings are no longer noted: thrown away as they come.
        drop(self.sources.drain());
        if let Some(live) = &self.live {
            live.publish_transactions(self.landing.live_figures());
        }
    }
}

/// The landing watch on a thread of its own while the engine sends.
pub struct SolanaLandingThread(LandingLoop<SolanaLandingStep>);

impl std::fmt::Debug for SolanaLandingThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SolanaLandingThread").finish_non_exhaustive()
    }
}

impl SolanaLandingThread {
    /// Starts feeding `landing` from `sends`' ledger and `sources` every 20 ms, on a thread
    /// that steps aside for the pacer (as Ethereum's landing thread does).
    pub fn start(
        landing: SolanaLanding,
        sends: Arc<SolanaSends>,
        sources: LandingSources,
        live: Option<LiveMetrics>,
    ) -> std::io::Result<Self> {
        LandingLoop::start(SolanaLandingStep { landing, sends, sources, live }).map(SolanaLandingThread)
    }

    /// Sending is over: stops the thread and gives the watch back, with the message of the
    /// panic that stopped it early if a step panicked (then nothing more is to be fed to it).
    pub fn finish(self) -> (SolanaLanding, LandingSources, Option<String>) {
        let (SolanaLandingStep { landing, sources, .. }, panicked) = self.0.finish();
        (landing, sources, panicked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::solana::landing::{SendAnswer, StatusFound};

    #[test]
    fn the_live_solana_figures_show_landed_failed_expired_and_dropped_apart() {
        let mut book = LandingBook::new(Duration::from_secs(10), Duration::from_secs(10));
        let start = Instant::now();
        let signature = |index: u8| [index; 64];
        // 0 lands, 1 lands with an error, 2 is refused, 3 expires (its blockhash valid to height
        // 100), 4 is gone, 5 is pending.
        for index in 0..6u8 {
            let answer = if index == 2 { SendAnswer::Refused } else { SendAnswer::Accepted };
            let last_valid = if index == 3 { 100 } else { 1_000 };
            book.sent(u64::from(index), &signature(index), start, 1, answer, last_valid);
        }
        book.landed(0, 3, start + Duration::from_millis(500), false);
        book.landed(1, 3, start + Duration::from_millis(500), true);
        let later = start + Duration::from_secs(11);
        let due: Vec<u64> = book.take_due(later, 101).iter().map(|lookup| lookup.index).collect();
        assert_eq!(due.len(), 3, "3, 4 and 5 are due: {due:?}");
        book.looked_up(3, StatusFound::Unknown, 101, later);
        book.looked_up(4, StatusFound::Unknown, 101, later);
        let live = live_figures_of(&book, 5);
        assert_eq!(
            (live.sent, live.accepted, live.included, live.reverted, live.rejected),
            (6, 5, 1, 1, 1),
            "{live:?}"
        );
        assert_eq!((live.expired, live.dropped, live.pending), (1, 1, 1), "{live:?}");
    }

    /// Solana's real landing step, made to panic at its third step.
    struct PanicsAtThird {
        inner: SolanaLandingStep,
        steps: u32,
    }

    impl LandingStep for PanicsAtThird {
        fn step(&mut self, now: Instant) {
            self.steps += 1;
            assert!(self.steps != 3, "the landing step broke");
            self.inner.step(now);
        }

        fn step_unwatched(&mut self, now: Instant) {
            self.inner.step_unwatched(now);
        }
    }

    /// Sends through the engine after the landing thread panicked: the thread takes every
    /// send out of the ledger (which ends holding none), tells the watch that follows the
    /// sends (the poll, the block stream) to forget them, feeds the book none, and the final
    /// counts add up to what was sent.
    #[test]
    fn solana_sends_after_a_landing_thread_panicked_are_taken_out_and_not_held_to_the_end() {
        use crate::engine::config::{Arrivals, Length, Load, RunConfig, Target};
        use crate::engine::Run;
        use crate::mock::{Chain, MockOptions, MockServer};
        use crate::tx::solana::ahead::{PreparedSolanaTx, ReadyQueue};
        use crate::RequestTemplate;

        let mut options = MockOptions::new(Chain::Solana);
        options.slot_time = Duration::from_millis(100);
        let node = MockServer::start(options).unwrap();
        let endpoint = Endpoint::parse(&node.url(), Duration::from_secs(5)).unwrap();
        let sent = 600u64;
        // Not signed: the node refuses each, so each is rejected.
        let ready = ReadyQueue::new(sent as usize);
        for index in 0..sent {
            let signature = [(index % 251) as u8; 64];
            ready.push(PreparedSolanaTx {
                index,
                payer: 0,
                signature,
                base64: "AQ".into(),
                last_valid_block_height: 1,
            });
        }
        let sends = SolanaSends::new(ready, true, "processed");
        // A watch follows the sends (the status poll, the block stream).
        sends.ledger().follow();
        let blockhash =
            Arc::new(BlockhashFeed::start(endpoint.clone(), "confirmed", Duration::from_secs(1)).unwrap());
        let timeout = Duration::from_secs(30);
        let landing =
            SolanaLanding::new(endpoint, Commitment::Confirmed, blockhash, timeout, Duration::from_secs(5));
        let sources = LandingSources { watch: None, poll: None };
        let inner = SolanaLandingStep { landing, sends: sends.clone(), sources, live: None };
        let running = LandingLoop::start(PanicsAtThird { inner, steps: 0 }).unwrap();
        while !running.watch_stopped() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let template = RequestTemplate::from_method("getSlot", None).unwrap();
        let mut config = RunConfig::new(Target::parse(&node.url()).unwrap(), template);
        config.load = Load::Open { rate: 500.0, arrivals: Arrivals::Uniform, max_connections: 16 };
        config.length = Length { duration: None, requests: Some(sent) };
        config.solana_sends = Some(sends.clone());
        let record = Run::new(config).unwrap().execute().unwrap();
        assert_eq!(record.totals.counts.total() + record.totals.unsent, sent);
        // The watch that follows takes the sends and, told they are final, forgets them.
        let mut followed = 0;
        let mut forgotten = 0;
        for _ in 0..3_000 {
            let (news, finished) = sends.ledger().take_followed(|tx| tx.index);
            followed += news.len();
            forgotten += finished.len();
            if forgotten as u64 == sent {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!((followed as u64, forgotten as u64), (sent, sent), "the follower told every send final");
        assert_eq!(sends.ledger().held(), 0, "the ledger still holds sends after the panic");
        let (PanicsAtThird { inner, steps }, panicked) = running.finish();
        assert_eq!((steps, panicked.as_deref()), (3, Some("the landing step broke")));
        let mut landing = inner.landing;
        assert_eq!(
            (landing.book.counts().sent, landing.noted.unwatched().sent),
            (0, sent),
            "the book took none"
        );
        let tally = landing.finish(&sends, Vec::new(), Instant::now(), false);
        assert_eq!(tally.sent, sent, "every send counted");
        assert!(tally.adds_up(), "{:?}", tally.finals());
        assert_eq!(tally.rejected + tally.pending, sent, "not watched: pending or rejected");
        assert_eq!(tally.pending, landing.noted.accepted, "the accepted are pending");
    }
}
