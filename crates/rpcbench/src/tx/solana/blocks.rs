//! Landings seen from a block stream: one `blockSubscribe` (`"all"`, `transactionDetails:
//! "signatures"`, at the run's commitment), confirmed before the run sends anything, then one
//! `blockNotification` per block listing every signature in it. Each notification is one scan
//! of its signatures against the run's sent and not yet landed ones (taken from the send ledger
//! as each block arrives: a transaction in a block was sent before it), instead of a
//! subscription, its answer and its notification per transaction. A landing's time is the
//! notification's arrival (the kernel's receive stamp where the feed has one). Signatures only:
//! whether a landed transaction failed is not in them, so it counts as landed. What it looks
//! for follows the unfinished sends: the landing book's final ones are forgotten. Should the
//! stream's connection end mid-run, it is opened again and subscribed again (the policy of
//! `crate::tx::feed_watch`); the blocks of the gap are not read again (`getBlock` is not
//! among what this watch asks): instead every signature still looked for, those sent in the
//! gap among them, is checked once with `getSignatureStatuses` (`super::catch_up`), and what
//! that misses the landing book's status lookup settles. Only once the watch gives up are the
//! sends after the end counted unwatched ([`BlockStreamEnd`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::base58::signature_from_text;
use super::catch_up::FoundInCatchUp;
use super::status_poll::SentNews;
use super::watch::{Commitment, Landing, SentSince, SignatureWatch, SignatureWatchError};
use crate::client::Endpoint;
use crate::transport::feed::{Feed, FeedEvent, JsonRpcSubscribe, SubscribeCall};
use crate::tx::feed_watch::{ended_text, FeedRound, FeedWatch, WatchEnds, WatchOnFeed};
use crate::util::fast_hash::MultiplyHasherBuilder;

impl SignatureWatch {
    /// Opens `ws_url`, subscribes to its blocks at `commitment` (`blockSubscribe`, signatures
    /// only) and returns once the node confirmed; then each block's signatures are matched
    /// against those `sent` gives. Nothing is subscribed per transaction: the signer hands its
    /// transactions straight to the ready queue. Also returns how the stream ended, should it
    /// end before the run stops it.
    pub fn start_blocks(
        ws_url: &str,
        commitment: Commitment,
        connect_timeout: Duration,
        sent: SentSince,
        node: Endpoint,
    ) -> Result<(SignatureWatch, Arc<BlockStreamEnd>), SignatureWatchError> {
        let end = Arc::new(BlockStreamEnd::default());
        let headers = node.headers().to_vec();
        let watch = BlockLandingWatch {
            commitment,
            answer_timeout: connect_timeout,
            sent,
            end: end.clone(),
            node: Some(node),
            open: LookedFor::default(),
            sent_in_gap: 0,
            found_in_catch_up: FoundInCatchUp::default(),
        };
        let landings = FeedWatch::start("rpcbench-blocks", ws_url, &headers, connect_timeout, watch)?;
        Ok((SignatureWatch::of_landings(landings), end))
    }
}

/// The sends a block stream could not watch: those after its last end once it gave up
/// reconnecting (the status lookup settles them). Why it ended is in its health.
#[derive(Debug, Default)]
pub struct BlockStreamEnd {
    unwatched: AtomicU64,
}

impl BlockStreamEnd {
    /// Transactions sent after the stream ended for good.
    pub fn unwatched(&self) -> u64 {
        self.unwatched.load(Ordering::Relaxed)
    }
}

/// How often an idle block watch looks at the stop flag.
const IDLE_CHECK: Duration = Duration::from_millis(20);

/// A `blockNotification`'s result, as far as it is read.
#[derive(serde::Deserialize)]
struct BlockResult<'a> {
    #[serde(borrow)]
    value: BlockValue<'a>,
}

#[derive(serde::Deserialize)]
struct BlockValue<'a> {
    slot: u64,
    #[serde(borrow, default)]
    block: Option<BlockBody<'a>>,
}

#[derive(serde::Deserialize)]
struct BlockBody<'a> {
    #[serde(borrow, default)]
    signatures: Vec<Cow<'a, str>>,
}

/// A block's slot and its signatures in base58 (`None`: not a block notification's result;
/// an empty list: a block without transactions, or one the node could not give).
fn notified_block(payload: &[u8]) -> Option<(u64, Vec<Cow<'_, str>>)> {
    let result: BlockResult<'_> = serde_json::from_slice(payload).ok()?;
    let signatures = result.value.block.map(|block| block.signatures).unwrap_or_default();
    Some((result.value.slot, signatures))
}

/// The block watch on its feed.
pub(super) struct BlockLandingWatch {
    pub(super) commitment: Commitment,
    /// How long the node may take to answer the subscription.
    pub(super) answer_timeout: Duration,
    pub(super) sent: SentSince,
    pub(super) end: Arc<BlockStreamEnd>,
    /// Where what is looked for is checked after a reconnect (`None`: not checked).
    pub(super) node: Option<Endpoint>,
    /// Sent, not seen in a block, not final.
    open: LookedFor,
    /// Sends taken while no connection was open, since the last end.
    sent_in_gap: u64,
    /// What the reconnects' checks found landed, to look for no more.
    found_in_catch_up: FoundInCatchUp,
}

/// The signatures a block watch looks for: sent, not seen in a block, not final.
#[derive(Debug, Default)]
struct LookedFor {
    by_signature: HashMap<[u8; 64], u64, MultiplyHasherBuilder>,
    by_index: HashMap<u64, [u8; 64], MultiplyHasherBuilder>,
}

impl LookedFor {
    fn take(&mut self, news: SentNews) {
        for (index, signature) in news.sent {
            self.by_signature.insert(signature, index);
            self.by_index.insert(index, signature);
        }
        for index in news.finished {
            if let Some(signature) = self.by_index.remove(&index) {
                self.by_signature.remove(&signature);
            }
        }
    }

    /// The index of `signature` if it was looked for (no longer, then).
    fn found(&mut self, signature: &[u8; 64]) -> Option<u64> {
        let index = self.by_signature.remove(signature)?;
        self.by_index.remove(&index);
        Some(index)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_signature.len()
    }

    fn all(&self) -> Vec<(u64, [u8; 64])> {
        self.by_index.iter().map(|(index, signature)| (*index, *signature)).collect()
    }
}

impl BlockLandingWatch {
    /// The subscription: every block, its signatures only.
    fn call(&self) -> SubscribeCall {
        SubscribeCall::JsonRpc(JsonRpcSubscribe {
            method: "blockSubscribe",
            params: json!(["all", {
                "commitment": self.commitment.name(),
                "encoding": "base64",
                "transactionDetails": "signatures",
                "showRewards": false,
                "maxSupportedTransactionVersion": 0,
            }]),
            unsubscribe: "blockUnsubscribe",
        })
    }

    /// Subscribes and waits for the node's answer.
    async fn subscribed<F: Feed>(&self, feed: &mut F) -> Result<(), SignatureWatchError> {
        let ended = |what: &str| SignatureWatchError::Connect(format!("the connection ended {what}"));
        feed.subscribe(0, &self.call()).await.map_err(|_| ended("before blockSubscribe was sent"))?;
        let answer = async {
            loop {
                match feed.next().await {
                    FeedEvent::Confirmed { .. } => return Ok(()),
                    FeedEvent::Refused { message, .. } => {
                        return Err(SignatureWatchError::Refused(format!("blockSubscribe: {message}")))
                    }
                    FeedEvent::Ended(_) => return Err(ended("before blockSubscribe was answered")),
                    _ => {}
                }
            }
        };
        tokio::time::timeout(self.answer_timeout, answer).await.unwrap_or_else(|_| {
            Err(SignatureWatchError::Refused(format!(
                "blockSubscribe: no answer within {} ms",
                self.answer_timeout.as_millis()
            )))
        })
    }
}

impl Drop for BlockLandingWatch {
    /// The sends of a gap the run's end cut short went out unwatched.
    fn drop(&mut self) {
        self.end.unwatched.fetch_add(self.sent_in_gap, Ordering::Relaxed);
    }
}

impl WatchOnFeed for BlockLandingWatch {
    type Seen = Landing;
    type Error = SignatureWatchError;

    async fn watch<F: Feed>(
        &mut self,
        mut feed: F,
        ends: &WatchEnds<Landing, SignatureWatchError>,
    ) -> FeedRound {
        if let Err(err) = self.subscribed(&mut feed).await {
            feed.close().await;
            return ends.not_subscribed(err);
        }
        if ends.reconnecting() {
            // What landed in the gap is in blocks the stream will not send again; what an
            // earlier check found landed is looked for no more.
            let found = self.found_in_catch_up.take();
            self.open.take(SentNews { sent: Vec::new(), finished: found });
            self.open.take((self.sent)());
            self.sent_in_gap = 0;
            ends.subscribed();
            if let Some(node) = &self.node {
                super::catch_up::check_once(
                    node,
                    self.commitment,
                    self.open.all(),
                    &ends.seen,
                    &ends.health,
                    &self.found_in_catch_up,
                );
            }
        } else {
            ends.subscribed();
        }
        while !ends.stopped() {
            tokio::select! {
                event = feed.next() => match event {
                    FeedEvent::Item(delivery) => {
                        let Some((slot, signatures)) = notified_block(delivery.payload()) else { continue };
                        self.open.take((self.sent)());
                        for text in &signatures {
                            let Some(index) = signature_from_text(text).and_then(|s| self.open.found(&s)) else {
                                continue;
                            };
                            let landing = Landing { index, slot, arrived: delivery.arrived, failed: false };
                            let _ = ends.seen.send(landing);
                        }
                    }
                    FeedEvent::Ended(end) => return FeedRound::Ended(ended_text(end, feed.end_detail())),
                    _ => {}
                },
                () = tokio::time::sleep(IDLE_CHECK) => {
                    // Between blocks too, so the ledger need not keep the sends for it.
                    self.open.take((self.sent)());
                }
            }
        }
        feed.close().await;
        FeedRound::Over
    }

    async fn between(&mut self, ends: &WatchEnds<Landing, SignatureWatchError>, until: tokio::time::Instant) {
        // The ledger is followed on: the sends of the gap are looked for once reconnected.
        while !ends.stopped() && tokio::time::Instant::now() < until {
            let news = (self.sent)();
            self.sent_in_gap += news.sent.len() as u64;
            self.open.take(news);
            ends.wait_until(until.min(tokio::time::Instant::now() + IDLE_CHECK)).await;
        }
    }

    async fn gave_up(&mut self, ends: &WatchEnds<Landing, SignatureWatchError>) {
        // No stream any more: the sends since the end, and all later ones, go unwatched.
        self.end.unwatched.fetch_add(std::mem::take(&mut self.sent_in_gap), Ordering::Relaxed);
        self.open = LookedFor::default();
        while !ends.stopped() {
            let news = (self.sent)();
            self.end.unwatched.fetch_add(news.sent.len() as u64, Ordering::Relaxed);
            ends.wait_until(tokio::time::Instant::now() + IDLE_CHECK).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::feed::FeedEnd;

    #[test]
    fn a_block_notification_gives_its_slot_and_signatures_and_garbage_gives_nothing() {
        let payload = br#"{"context":{"slot":9},"value":{"slot":8,"block":{"blockhash":"x","parentSlot":7,"signatures":["5Vf","3yZ"],"blockHeight":8},"err":null}}"#;
        let (slot, signatures) = notified_block(payload).unwrap();
        assert_eq!((slot, signatures), (8, vec![Cow::Borrowed("5Vf"), Cow::Borrowed("3yZ")]));
        // A block the node could not give: no signatures, not an error.
        let failed = br#"{"context":{"slot":9},"value":{"slot":9,"block":null,"err":"BlockStoreError"}}"#;
        assert_eq!(notified_block(failed).map(|(slot, s)| (slot, s.len())), Some((9, 0)));
        assert!(notified_block(b"garbage").is_none());
        assert!(notified_block(br#"{"value":{"block":{"signatures":[1]}}}"#).is_none());
    }

    #[test]
    fn the_block_watch_forgets_the_signatures_the_landing_book_made_final() {
        let mut open = LookedFor::default();
        for round in 0..100u64 {
            let sent = (round * 10..round * 10 + 10).map(|index| (index, signature(index))).collect();
            // The book made final (looked up, expired, dropped, rejected) what was sent three
            // rounds before: the watch looks for the last 30 at most, not for all 1,000 sent.
            let finished = if round >= 3 { (round * 10 - 30..round * 10 - 20).collect() } else { Vec::new() };
            open.take(SentNews { sent, finished });
            assert!(open.len() <= 30, "{} looked for after {} sent", open.len(), round * 10 + 10);
        }
        assert_eq!(open.found(&signature(999)), Some(999));
        assert_eq!(open.found(&signature(5)), None, "final long ago: forgotten");
        assert_eq!((open.by_signature.len(), open.by_index.len()), (29, 29));
    }

    fn signature(index: u64) -> [u8; 64] {
        let mut signature = [0u8; 64];
        signature[..8].copy_from_slice(&index.to_le_bytes());
        signature
    }

    /// A feed that plays its events, then waits forever.
    struct ScriptedFeed {
        events: std::collections::VecDeque<FeedEvent>,
    }

    impl Feed for ScriptedFeed {
        async fn subscribe(&mut self, _position: usize, _call: &SubscribeCall) -> Result<(), FeedEnd> {
            Ok(())
        }

        async fn unsubscribe(&mut self, _position: usize) -> Result<bool, FeedEnd> {
            Ok(false)
        }

        async fn next(&mut self) -> FeedEvent {
            match self.events.pop_front() {
                Some(event) => event,
                None => std::future::pending().await,
            }
        }

        async fn close(&mut self) {}
    }

    #[test]
    fn a_block_stream_that_ends_says_why_and_once_it_gave_up_counts_the_later_sends_unwatched() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Mutex;
        let block = format!(
            r#"{{"context":{{"slot":5}},"value":{{"slot":5,"block":{{"signatures":["{}"]}},"err":null}}}}"#,
            super::super::base58::signature_text(&signature(0))
        );
        let message = tokio_tungstenite::tungstenite::Bytes::from(block.into_bytes());
        let delivery = crate::transport::feed::Delivery {
            position: 0,
            payload: 0..message.len(),
            message,
            arrived: std::time::Instant::now(),
            produced: None,
        };
        let feed = ScriptedFeed {
            events: [
                FeedEvent::Confirmed { position: 0, arrived: std::time::Instant::now() },
                FeedEvent::Item(delivery),
                FeedEvent::Ended(FeedEnd::Closed(1006)),
            ]
            .into(),
        };
        // The sends: 0 and 1 before the block, then one more at each look once the watch gave
        // up reconnecting; the run stops on the fourth look.
        let stop = Arc::new(AtomicBool::new(false));
        let looks = Arc::new(Mutex::new(0u64));
        let (stopping, looked) = (stop.clone(), looks.clone());
        let sent: SentSince = Box::new(move || {
            let mut looks = looked.lock().unwrap();
            *looks += 1;
            if *looks == 4 {
                stopping.store(true, Ordering::Relaxed);
            }
            let sent = match *looks {
                1 => vec![(0, signature(0)), (1, signature(1))],
                n => vec![(n, signature(n))],
            };
            SentNews { sent, finished: Vec::new() }
        });
        let end = Arc::new(BlockStreamEnd::default());
        let mut watch = BlockLandingWatch {
            commitment: Commitment::Confirmed,
            answer_timeout: Duration::from_secs(5),
            sent,
            end: end.clone(),
            node: None,
            open: LookedFor::default(),
            sent_in_gap: 0,
            found_in_catch_up: FoundInCatchUp::default(),
        };
        let (seen, landings) = std::sync::mpsc::channel();
        let (started, said) = std::sync::mpsc::channel();
        let ends = WatchEnds::new(seen, started, stop);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let round = runtime.block_on(watch.watch(feed, &ends));
        assert_eq!(round, FeedRound::Ended("the connection broke without a close frame (1006)".into()));
        runtime.block_on(watch.gave_up(&ends));
        assert!(said.recv().unwrap().is_ok());
        let landed: Vec<(u64, u64)> =
            landings.try_iter().map(|landing| (landing.index, landing.slot)).collect();
        assert_eq!(landed, [(0, 5)], "the block before the end is seen");
        assert_eq!(*looks.lock().unwrap(), 4);
        assert_eq!(end.unwatched(), 3, "the three sends after it gave up are counted unwatched");
    }
}
