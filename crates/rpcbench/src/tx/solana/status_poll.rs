//! The `getSignatureStatuses` poll (without WebSocket, or with `--poll`): every interval, the
//! run's sent signatures that are not final yet are asked about, [`STATUS_BATCH`] a call; the
//! landing time is the answer's arrival, so it is known to that resolution. What the poll
//! looks for comes from the send ledger ([`SentSince`]): the sends since it last looked, and
//! the ones the landing book made final since (looked up, expired, dropped, rejected), which
//! it stops asking about. So a round costs the unfinished signatures, never the number sent.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::watch::{Commitment, Landing, SignatureWatchError, STATUS_BATCH};
use crate::client::Endpoint;

/// What a watch looking for the run's signatures learns from the send ledger since it last
/// looked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentNews {
    /// The sends: (index, signature).
    pub sent: Vec<(u64, [u8; 64])>,
    /// The indexes the landing book made final (no longer to look for).
    pub finished: Vec<u64>,
}

/// The news since the last call.
pub type SentSince = Box<dyn FnMut() -> SentNews + Send>;

/// The signatures a poll asks about: sent, not seen landed, not final.
#[derive(Debug, Default)]
pub(crate) struct PolledSignatures {
    open: BTreeMap<u64, [u8; 64]>,
}

impl PolledSignatures {
    /// Takes the news: new sends are asked about, finished ones no longer.
    pub(crate) fn take(&mut self, news: SentNews) {
        self.open.extend(news.sent);
        for index in news.finished {
            self.open.remove(&index);
        }
    }

    /// Seen landed: no longer asked about.
    pub(crate) fn landed(&mut self, index: u64) {
        self.open.remove(&index);
    }

    /// The signatures to ask about, in send order, a call's worth at a time.
    pub(crate) fn calls(&self) -> Vec<Vec<(u64, [u8; 64])>> {
        let all: Vec<(u64, [u8; 64])> =
            self.open.iter().map(|(index, signature)| (*index, *signature)).collect();
        all.chunks(STATUS_BATCH).map(<[_]>::to_vec).collect()
    }

    /// Signatures held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.open.len()
    }
}

/// A running `getSignatureStatuses` poll.
#[derive(Debug)]
pub struct SignaturePoll {
    landings: Receiver<Landing>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    failures: Arc<AtomicU64>,
}

impl SignaturePoll {
    /// Every `every`, asks `node` about each signature `sent` gave that has not landed at
    /// `commitment` yet and is not final, [`STATUS_BATCH`] at a time.
    pub fn start(
        node: Endpoint,
        commitment: Commitment,
        every: Duration,
        mut sent: SentSince,
    ) -> Result<SignaturePoll, SignatureWatchError> {
        let (landings_in, landings) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(AtomicU64::new(0));
        let (stopping, failing) = (stop.clone(), failures.clone());
        let thread = std::thread::Builder::new()
            .name("rpcbench-status-poll".into())
            .spawn(move || {
                let mut open = PolledSignatures::default();
                while !stopping.load(Ordering::Relaxed) {
                    let round = Instant::now();
                    open.take(sent());
                    for chunk in open.calls() {
                        let names: Vec<String> = chunk
                            .iter()
                            .map(|(_, signature)| super::base58::signature_text(signature))
                            .collect();
                        let answer = node.call("getSignatureStatuses", Some(&json!([names])));
                        let arrived = Instant::now();
                        let Ok(answer) = answer else {
                            failing.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        let Some(statuses) = answer["value"].as_array() else {
                            failing.fetch_add(1, Ordering::Relaxed);
                            continue;
                        };
                        for ((index, _), status) in chunk.iter().zip(statuses) {
                            let reached = status["confirmationStatus"].as_str().and_then(Commitment::parse);
                            let Some(slot) = status["slot"].as_u64() else { continue };
                            if reached.is_some_and(|reached| reached >= commitment) {
                                let failed = !status.get("err").is_none_or(Value::is_null);
                                open.landed(*index);
                                let _ = landings_in.send(Landing { index: *index, slot, arrived, failed });
                            }
                        }
                    }
                    let next = round + every;
                    while Instant::now() < next && !stopping.load(Ordering::Relaxed) {
                        std::thread::sleep((next - Instant::now()).min(Duration::from_millis(10)));
                    }
                }
            })
            .map_err(SignatureWatchError::Thread)?;
        Ok(SignaturePoll { landings, stop, thread: Some(thread), failures })
    }

    /// The landings seen since the last call.
    pub fn drain(&self) -> Vec<Landing> {
        self.landings.try_iter().collect()
    }

    /// Calls that failed.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Stops polling and returns the landings not yet drained.
    pub fn stop(mut self) -> Vec<Landing> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.drain()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_poll_asks_only_about_signatures_that_are_not_final() {
        let mut open = PolledSignatures::default();
        let sent: Vec<(u64, [u8; 64])> =
            (0..600u64).map(|index| (index, [(index % 251) as u8; 64])).collect();
        open.take(SentNews { sent, finished: Vec::new() });
        assert_eq!(open.calls().len(), 3, "600 signatures, 256 a call");
        assert!(open.calls().iter().all(|call| call.len() <= STATUS_BATCH));
        // The landing book made 0..500 final (looked up, expired, dropped, rejected), and one
        // landed: the next round asks about the 99 others only.
        open.take(SentNews { sent: Vec::new(), finished: (0..500).collect() });
        open.landed(550);
        let asked: Vec<u64> = open.calls().concat().into_iter().map(|(index, _)| index).collect();
        assert_eq!(asked, (500..600).filter(|index| *index != 550).collect::<Vec<_>>());
        assert_eq!(open.len(), 99);
        // A finished index the poll never saw (or saw land) changes nothing.
        open.take(SentNews { sent: vec![(600, [1; 64])], finished: vec![550, 9_999] });
        assert_eq!(open.len(), 100);
    }
}
