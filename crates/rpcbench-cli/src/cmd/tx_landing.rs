//! What happens to `rpcbench tx`'s Ethereum transactions after their send: the sends (once
//! answered) and each head's block fed to the `InclusionBook` in time order, from the start of
//! sending (on a thread of its own while the engine sends, then on the command's thread while
//! it waits for inclusions); the receipts of what each block included read in batches
//! (reverted: status 0); what times out settled as dropped and looked up at the end (replaced,
//! gone, still pooled); and the timeline drawn from what becomes final. Each step costs what
//! it is handed (new sends, new heads, the timed out), never the number sent so far.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rpcbench::client::batches::LookupBatches;
use rpcbench::client::Endpoint;
use rpcbench::metrics::{LiveMetrics, TransactionFigures};
use rpcbench::report::tx::TxTimeline;
use rpcbench::tx::inclusion::{DropCause, InclusionBook, InclusionTally, Settled, TxFinal};
use rpcbench::tx::landing_loop::{LandingLoop, LandingStep};
use rpcbench::tx::poll::HeadSource;
use rpcbench::tx::quantity::hex_quantity;
use rpcbench::tx::receipts::{hash_hex, read_statuses};
use rpcbench::tx::watch::SeenHead;
use rpcbench::{AckTally, SentTx, TxAck, TxSends};
use serde_json::{json, Value};

use crate::args::tx::ReceiptSample;

/// Blocks fetched at most to fill one gap between two heads seen (or to fetch again below a
/// reorg).
const MAX_GAP_BLOCKS: u64 = 64;
/// Requests per JSON-RPC batch of receipt and transaction lookups at first: geth's limit is
/// 1,000, many providers' and the mock's 100. A node that refuses a batch as too large
/// halves it for the rest of the run (`rpcbench::client::batches::LookupBatches`).
const LOOKUP_BATCH: usize = 100;
/// Dropped transactions looked up at most per run (the rest are counted not looked up): a
/// node that lost everything is not asked about each of a million transactions.
const MAX_DROP_LOOKUPS: usize = 10_000;
/// Heads remembered to find the head at each send.
const RECENT_HEADS: usize = 256;
/// How much longer than the request timeout a send may wait for its answer before it is fed
/// unanswered (a send the wire failed is never answered).
const ANSWER_MARGIN: Duration = Duration::from_secs(1);

/// What `eth_getBlockByNumber` says of a block: its hash, its parent's, its transactions.
struct FetchedBlock {
    hash: Option<[u8; 32]>,
    parent: Option<[u8; 32]>,
    transactions: Vec<[u8; 32]>,
}

/// A block, `None` when the node does not give it.
fn fetch_block(node: &Endpoint, number: u64) -> Option<FetchedBlock> {
    let block = node.call("eth_getBlockByNumber", Some(&json!([format!("0x{number:x}"), false]))).ok()?;
    let transactions = block["transactions"]
        .as_array()?
        .iter()
        .map(|hash| hash_bytes(hash.as_str()?))
        .collect::<Option<_>>()?;
    Some(FetchedBlock {
        hash: block["hash"].as_str().and_then(hash_bytes),
        parent: block["parentHash"].as_str().and_then(hash_bytes),
        transactions,
    })
}

/// The book and everything fed to it.
pub(super) struct Landing {
    node: Endpoint,
    /// The batch size of its lookups, halved when the node refuses one as too large.
    batches: LookupBatches,
    pub(super) book: InclusionBook,
    timeout: Duration,
    acks: AckTally,
    pub(super) timeline: TxTimeline,
    pub(super) first_send: Option<Instant>,
    pub(super) last_send: Option<Instant>,
    pub(super) last_included: Option<Instant>,
    /// Sends fed so far (each one's tag in the book is its number in this count).
    fed: u64,
    /// Sends fed that the node accepted.
    pub(super) accepted: u64,
    /// The longest a send waits for its answer before it is fed unanswered.
    answer_wait: Duration,
    /// Sender and nonce of each send fed and not final yet, by tag (for the lookup of the
    /// dropped): as many as the book holds unfinished.
    unfinished: HashMap<u64, (usize, u64)>,
    /// Heads received, not yet fed: each waits until every send before its arrival is fed.
    deferred: VecDeque<SeenHead>,
    /// The last heads received (number, arrival), to find the head at a send.
    recent: VecDeque<(u64, Instant)>,
    /// The head before the oldest in `recent`.
    head_before_recent: u64,
    highest_fetched: u64,
    pub(super) heads_seen: u64,
    first_head: Option<(u64, Instant)>,
    last_head: Option<(u64, Instant)>,
    pub(super) fetch_failures: u64,
    pub(super) receipt_failures: u64,
    /// Inclusions not seen at a notified head's own block: in blocks read to fill a gap below
    /// a head (heads missed while the watch reconnected, or skipped by the node), or below a
    /// polled head (while the watch had no connection): their time is that head's arrival,
    /// when they were seen.
    pub(super) included_by_catch_up: u64,
    /// Whose receipts are read.
    receipts: ReceiptSample,
    /// Dropped transactions to look up at the end: hash, sender and nonce (the first
    /// [`MAX_DROP_LOOKUPS`]; the others only counted, in `not_looked_up`).
    lookups: Vec<DroppedTx>,
    not_looked_up: u64,
}

/// A dropped transaction to look up: its hash, its sender's index and its nonce.
#[derive(Debug, Clone, Copy)]
struct DroppedTx {
    hash: [u8; 32],
    sender: usize,
    nonce: u64,
}

impl Landing {
    /// A landing watch for a run that starts with the node's head at `head_at_start`, whose
    /// requests wait `request_timeout` at most for their answer.
    pub(super) fn new(
        node: Endpoint,
        timeout: Duration,
        confirm_depth: u64,
        head_at_start: u64,
        receipts: ReceiptSample,
        request_timeout: Duration,
    ) -> Self {
        Landing {
            node,
            batches: LookupBatches::new(LOOKUP_BATCH),
            book: InclusionBook::with_confirm_depth(confirm_depth).log_settled(),
            timeout,
            acks: AckTally::default(),
            timeline: TxTimeline::new(),
            first_send: None,
            last_send: None,
            last_included: None,
            fed: 0,
            accepted: 0,
            answer_wait: request_timeout + ANSWER_MARGIN,
            unfinished: HashMap::new(),
            deferred: VecDeque::new(),
            recent: VecDeque::new(),
            head_before_recent: head_at_start,
            highest_fetched: head_at_start,
            heads_seen: 0,
            first_head: None,
            last_head: None,
            fetch_failures: 0,
            receipt_failures: 0,
            included_by_catch_up: 0,
            receipts,
            lookups: Vec::new(),
            not_looked_up: 0,
        }
    }

    /// The head number at `at`, as the heads received show it.
    fn head_at(&self, at: Instant) -> u64 {
        self.recent
            .iter()
            .rev()
            .find(|(_, arrived)| *arrived <= at)
            .map_or(self.head_before_recent, |(number, _)| *number)
    }

    /// Takes the sends of the ledger not yet taken, as [`Self::feed`] wants them: while
    /// sending (at `now`), up to the first one not yet answered (its answer says whether it is
    /// waited for) unless it waited longer than a request can; once sending is over (`all`),
    /// every one. The ledger forgets them: it holds only what is not handed on.
    pub(super) fn take_from(
        &self,
        sends: &TxSends,
        all: bool,
        now: Instant,
    ) -> (Vec<SentTx>, Option<Instant>) {
        let mut ledger = sends.ledger();
        let answer_by = now.checked_sub(self.answer_wait).unwrap_or(now);
        let fresh = ledger.take_answered(all, answer_by);
        (fresh, ledger.next_untaken().map(|tx| tx.sent))
    }

    /// Feeds `fresh`, sends taken from the ledger in send order.
    pub(super) fn feed(&mut self, fresh: &[SentTx]) {
        for tx in fresh {
            let first = *self.first_send.get_or_insert(tx.sent);
            self.last_send = Some(self.last_send.map_or(tx.sent, |last| last.max(tx.sent)));
            self.timeline.sent(tx.sent.saturating_duration_since(first));
            let took = self.acks.add(tx.sent, tx.ack);
            self.accepted += u64::from(took);
            let head = self.head_at(tx.sent);
            let tag = self.fed;
            if tx.ack == TxAck::Unanswered {
                // It may have landed all the same: waited for, rejected if no block carries it.
                self.book.sent_unanswered(tx.hash, tag, tx.sent, head);
            } else {
                self.book.sent(tx.hash, tag, tx.sent, head, took);
            }
            self.unfinished.insert(tag, (tx.sender, tx.nonce));
            self.fed += 1;
        }
        // What the book settled at once (refused) leaves the table of the unfinished.
        let settled = self.book.take_settled();
        self.note_settled(settled);
    }

    /// Takes heads as they arrived; they are fed by [`Landing::process`].
    pub(super) fn receive(&mut self, heads: Vec<SeenHead>) {
        for head in heads {
            if self.recent.len() == RECENT_HEADS {
                if let Some((number, _)) = self.recent.pop_front() {
                    self.head_before_recent = number;
                }
            }
            self.recent.push_back((head.number, head.arrived));
            self.deferred.push_back(head);
        }
    }

    /// Feeds each received head whose arrival no unfed send precedes (`next_unfed`: the send
    /// instant of the first one not fed, `None` when all are).
    pub(super) fn process(&mut self, next_unfed: Option<Instant>) {
        while let Some(head) = self.deferred.front().copied() {
            if next_unfed.is_some_and(|next| next < head.arrived) {
                break;
            }
            self.deferred.pop_front();
            self.head(&head);
        }
    }

    /// Fetches the blocks up to `head` (a gap of at most [`MAX_GAP_BLOCKS`] filled), feeds
    /// them and reads the receipts of what they included; then times out against its arrival.
    fn head(&mut self, head: &SeenHead) {
        self.heads_seen += 1;
        self.first_head.get_or_insert((head.number, head.arrived));
        self.last_head = Some((head.number, head.arrived));
        let first =
            if head.number > self.highest_fetched && head.number - self.highest_fetched <= MAX_GAP_BLOCKS {
                self.highest_fetched + 1
            } else {
                head.number
            };
        let mut numbers: Vec<u64> = (first..=head.number).rev().collect();
        while let Some(number) = numbers.pop() {
            let Some(block) = fetch_block(&self.node, number) else {
                self.fetch_failures += 1;
                continue;
            };
            let news = self.book.block_with_hash(
                number,
                block.hash,
                block.parent,
                head.arrived,
                &block.transactions,
            );
            if number != head.number || head.polled {
                self.included_by_catch_up += news.included.len() as u64;
            }
            if let Some(from) = news.replaced_from {
                // A reorg replaced blocks below: fetch them again (at most the gap limit).
                numbers.extend((from.max(number.saturating_sub(MAX_GAP_BLOCKS))..number).rev());
            }
            self.read_receipts(&news.included);
        }
        self.highest_fetched = self.highest_fetched.max(head.number);
        self.expire(head.arrived);
    }

    /// Reads the receipts of `included` (those the sample takes) in batches: status 0 is
    /// reverted; a receipt not read leaves its transaction included.
    fn read_receipts(&mut self, included: &[[u8; 32]]) {
        let sampled: Vec<[u8; 32]>;
        let included = if self.receipts.is_all() {
            included
        } else {
            sampled = included.iter().filter(|hash| self.receipts.reads(hash)).copied().collect();
            &sampled
        };
        let statuses = read_statuses(&self.batches, &self.node, included);
        for (hash, status) in included.iter().zip(statuses) {
            match status {
                Some(succeeded) => self.book.receipt(hash, succeeded),
                None => self.receipt_failures += 1,
            }
        }
        let settled = self.book.take_settled();
        self.note_settled(settled);
    }

    /// Settles what timed out by `now` (no later than the first head not yet fed), to be
    /// looked up at the end.
    pub(super) fn expire(&mut self, now: Instant) {
        let now = self.deferred.front().map_or(now, |head| head.arrived.min(now));
        // The expired come back in the settled log too (dropped), with their tags.
        let _expired = self.book.expire(now, self.timeout);
        let settled = self.book.take_settled();
        self.note_settled(settled);
    }

    fn note_settled(&mut self, settled: Vec<Settled>) {
        for settled in &settled {
            let Some((sender, nonce)) = self.unfinished.remove(&settled.tag) else { continue };
            if settled.outcome == TxFinal::Dropped {
                if self.lookups.len() < MAX_DROP_LOOKUPS {
                    self.lookups.push(DroppedTx { hash: settled.hash, sender, nonce });
                } else {
                    self.not_looked_up += 1;
                }
            }
        }
        let Some(first) = self.first_send else { return };
        for settled in settled {
            if let TxFinal::Included { latency, .. } | TxFinal::Reverted { latency, .. } = settled.outcome {
                let at = settled.sent + latency;
                self.timeline.included(at.saturating_duration_since(first));
                self.last_included = Some(self.last_included.map_or(at, |last| last.max(at)));
            }
        }
    }

    /// The dashboard's and Prometheus's figures now.
    pub(super) fn live_figures(&self) -> TransactionFigures {
        let counts = self.book.counts();
        TransactionFigures {
            sent: counts.sent,
            accepted: self.accepted,
            rejected: counts.rejected,
            // The book counts the final reverted among the included (kept inclusions' receipts
            // are read when they are final).
            included: counts.included.saturating_sub(counts.reverted),
            reverted: counts.reverted,
            expired: 0,
            dropped: counts.dropped,
            pending: counts.pending,
            reorged_out: counts.reorged_out,
        }
    }

    /// The block time as the heads seen show it (first to last), if two differ.
    pub(super) fn block_time(&self) -> Option<Duration> {
        let ((first_number, first_at), (last_number, last_at)) = (self.first_head?, self.last_head?);
        let blocks = u32::try_from(last_number.checked_sub(first_number)?).ok().filter(|n| *n > 0)?;
        Some(last_at.saturating_duration_since(first_at) / blocks)
    }

    /// Ends the watch at `end`: every transaction's final outcome in the tally, the dropped
    /// ones looked up (`addresses` name their senders), and the answers' tally.
    pub(super) fn finish(&mut self, end: Instant, addresses: &[String]) -> (InclusionTally, AckTally) {
        let book = std::mem::replace(&mut self.book, InclusionBook::new());
        let (mut tally, _expired, settled) = book.finish(end, self.timeout);
        self.note_settled(settled);
        for cause in self.look_up_dropped(addresses) {
            *tally.dropped_by.entry(cause).or_default() += 1;
        }
        (tally, std::mem::take(&mut self.acks))
    }

    /// Why each dropped transaction was not included: `eth_getTransactionByHash` (in a block,
    /// still pooled, or unknown), and for the unknown its sender's mined nonce (past its own:
    /// another transaction took the nonce, replaced; else gone).
    fn look_up_dropped(&self, addresses: &[String]) -> Vec<DropCause> {
        let mut causes = Vec::with_capacity(self.lookups.len());
        causes.extend((0..self.not_looked_up).map(|_| DropCause::NotLookedUp));
        for chunk in self.lookups.chunks(LOOKUP_BATCH) {
            let params: Vec<Value> = chunk.iter().map(|dropped| json!([hash_hex(&dropped.hash)])).collect();
            let found = self.batches.call(&self.node, "eth_getTransactionByHash", &params);
            let mut unknown = Vec::new();
            for (dropped, found) in chunk.iter().zip(found) {
                match found {
                    Some(Value::Null) => unknown.push(*dropped),
                    Some(tx) if tx["blockNumber"].is_null() => causes.push(DropCause::StillPooled),
                    Some(_) => causes.push(DropCause::IncludedUnseen),
                    None => causes.push(DropCause::NotLookedUp),
                }
            }
            let mut senders: Vec<usize> = unknown.iter().map(|tx| tx.sender).collect();
            senders.sort_unstable();
            senders.dedup();
            let params: Vec<Value> =
                senders.iter().map(|sender| json!([addresses.get(*sender), "latest"])).collect();
            let nonces = self.batches.call(&self.node, "eth_getTransactionCount", &params);
            for tx in unknown {
                let mined = senders.binary_search(&tx.sender).ok().and_then(|index| {
                    let mined = hex_quantity(nonces.get(index)?.as_ref()?).ok()?;
                    Some((mined, tx.nonce))
                });
                causes.push(match mined {
                    Some((mined, nonce)) if mined > u128::from(nonce) => DropCause::Replaced,
                    Some(_) => DropCause::Gone,
                    None => DropCause::NotLookedUp,
                });
            }
        }
        causes
    }
}

/// Ethereum's part of the landing thread: the landing book, the ledger it takes the sends
/// from, the heads it takes the blocks from and where it publishes the live figures.
struct EthereumLandingStep {
    landing: Landing,
    sends: Arc<TxSends>,
    heads: HeadSource,
    live: Option<LiveMetrics>,
}

impl LandingStep for EthereumLandingStep {
    fn step(&mut self, now: Instant) {
        // Only the new part of the ledger is copied, under its lock, and taken out.
        let (fresh, next_untaken) = self.landing.take_from(&self.sends, false, now);
        self.landing.feed(&fresh);
        self.landing.receive(self.heads.drain());
        // A head waits for the sends before it that have no answer yet; a send not yet in the
        // ledger is later than now, so later than every head received.
        self.landing.process(next_untaken);
        self.landing.expire(now);
        if let Some(live) = &self.live {
            live.publish_transactions(self.landing.live_figures());
        }
    }
}

/// The landing watch on a thread of its own while the engine sends.
pub(super) struct LandingThread(LandingLoop<EthereumLandingStep>);

impl LandingThread {
    /// Starts feeding `landing` from `sends`' ledger and `heads` every 20 ms, on a thread that
    /// steps aside for the pacer (its block and receipt reads come in bursts a head at a time).
    pub(super) fn start(
        landing: Landing,
        sends: Arc<TxSends>,
        heads: HeadSource,
        live: Option<LiveMetrics>,
    ) -> std::io::Result<Self> {
        LandingLoop::start(EthereumLandingStep { landing, sends, heads, live }).map(LandingThread)
    }

    /// Sending is over: stops the thread and gives the watch back.
    pub(super) fn finish(self) -> (Landing, HeadSource) {
        let EthereumLandingStep { landing, heads, .. } = self.0.finish();
        (landing, heads)
    }
}

/// A 32-byte hash written as `0x` and 64 hex digits.
fn hash_bytes(text: &str) -> Option<[u8; 32]> {
    let digits = text.strip_prefix("0x")?;
    if digits.len() != 64 {
        return None;
    }
    let mut bytes = [0u8; 32];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(digits.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(bytes)
}
