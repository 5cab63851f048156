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

use crate::client::batches::LookupBatches;
use crate::client::Endpoint;
use crate::metrics::{LiveMetrics, TransactionFigures};
use crate::tx::inclusion::{DropCause, InclusionBook, InclusionTally, Settled, TxFinal};
use crate::tx::landing_loop::{LandingLoop, LandingStep};
use crate::tx::poll::HeadSource;
use crate::tx::quantity::hex_quantity;
use crate::tx::receipts::{hash_hex, read_statuses, ReceiptSample};
use crate::tx::sends_noted::SendsNoted;
use crate::tx::watch::SeenHead;
use crate::{AckTally, SentTx, TxAck, TxSends};
use serde_json::{json, Value};

/// Blocks read at most in one landing step (filling a gap between two heads seen, or again
/// below a reorg): a longer gap is read over the next steps, oldest first, so a step never
/// stalls on it.
const BLOCKS_PER_STEP: u64 = 64;
/// Blocks read at most in one go of the read at the end (what the heads revealed and the
/// landing steps had not read yet when the wait for inclusions ended).
const BLOCKS_PER_END_STEP: u64 = 256;
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

/// Blocks known and not read yet: `next` to `last`, revealed by the head `head` that arrived
/// at `arrived` (their inclusion time; `polled`: a polled head).
#[derive(Debug, Clone, Copy)]
struct UnreadBlocks {
    next: u64,
    last: u64,
    head: u64,
    arrived: Instant,
    polled: bool,
}

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
pub struct EthereumLanding {
    node: Endpoint,
    /// The batch size of its lookups, halved when the node refuses one as too large.
    batches: LookupBatches,
    /// Every send fed and not final yet, and the tally of those that are.
    pub book: InclusionBook,
    timeout: Duration,
    /// The sends taken, and those counted only (after the watch stopped).
    pub noted: SendsNoted,
    /// When the latest inclusion seen happened.
    pub last_included: Option<Instant>,
    /// Sends fed so far (each one's tag in the book is its number in this count).
    fed: u64,
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
    /// The highest block read or queued to be read (at first the head at the start: no block
    /// up to it can hold a transaction of the run).
    highest_queued: u64,
    /// The blocks heads revealed and not yet read, oldest first.
    unread: VecDeque<UnreadBlocks>,
    /// The first block that can hold a transaction of the run: the one after the head at the
    /// start (nothing below it is read again after a reorg).
    first_block: u64,
    /// Heads received.
    pub heads_seen: u64,
    first_head: Option<(u64, Instant)>,
    last_head: Option<(u64, Instant)>,
    /// Block reads that failed.
    pub fetch_failures: u64,
    /// Receipt reads that failed.
    pub receipt_failures: u64,
    /// Inclusions not seen at a notified head's own block: in blocks read to fill a gap below
    /// a head (heads missed while the watch reconnected, or skipped by the node), or below a
    /// polled head (while the watch had no connection): their time is that head's arrival,
    /// when they were seen.
    pub included_by_catch_up: u64,
    /// Whose receipts are read.
    receipts: ReceiptSample,
    /// Dropped transactions to look up at the end: hash, sender and nonce (the first
    /// [`MAX_DROP_LOOKUPS`]; the others only counted, in `not_looked_up`).
    lookups: Vec<DroppedTx>,
    not_looked_up: u64,
}

impl std::fmt::Debug for EthereumLanding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthereumLanding")
            .field("fed", &self.fed)
            .field("unfinished", &self.book.unfinished())
            .field("heads_seen", &self.heads_seen)
            .field("unread", &self.blocks_unread())
            .finish_non_exhaustive()
    }
}

/// A dropped transaction to look up: its hash, its sender's index and its nonce.
#[derive(Debug, Clone, Copy)]
struct DroppedTx {
    hash: [u8; 32],
    sender: usize,
    nonce: u64,
}

impl EthereumLanding {
    /// A landing watch for a run that starts with the node's head at `head_at_start`, whose
    /// requests wait `request_timeout` at most for their answer.
    pub fn new(
        node: Endpoint,
        timeout: Duration,
        confirm_depth: u64,
        head_at_start: u64,
        receipts: ReceiptSample,
        request_timeout: Duration,
    ) -> Self {
        EthereumLanding {
            node,
            batches: LookupBatches::new(LOOKUP_BATCH),
            book: InclusionBook::with_confirm_depth(confirm_depth).log_settled(),
            timeout,
            noted: SendsNoted::default(),
            last_included: None,
            fed: 0,
            answer_wait: request_timeout + ANSWER_MARGIN,
            unfinished: HashMap::new(),
            deferred: VecDeque::new(),
            recent: VecDeque::new(),
            head_before_recent: head_at_start,
            highest_queued: head_at_start,
            unread: VecDeque::new(),
            first_block: head_at_start + 1,
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
    pub fn take_from(&self, sends: &TxSends, all: bool, now: Instant) -> (Vec<SentTx>, Option<Instant>) {
        let mut ledger = sends.ledger();
        let answer_by = now.checked_sub(self.answer_wait).unwrap_or(now);
        let fresh = ledger.take_answered(all, answer_by);
        (fresh, ledger.next_untaken().map(|tx| tx.sent))
    }

    /// Feeds `fresh`, sends taken from the ledger in send order.
    pub fn feed(&mut self, fresh: &[SentTx]) {
        for tx in fresh {
            let took = self.noted.note(tx.sent, tx.ack);
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

    /// Counts `fresh`, sends taken from the ledger after the watch stopped, without the book:
    /// pending (accepted) or rejected at the end, as the book ends what it no longer watches;
    /// nothing of them is held.
    pub fn count_unwatched(&mut self, fresh: &[SentTx]) {
        for tx in fresh {
            self.noted.note_unwatched(tx.sent, tx.ack);
        }
    }

    /// Takes heads as they arrived; they are fed by [`EthereumLanding::process`].
    pub fn receive(&mut self, heads: Vec<SeenHead>) {
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
    /// instant of the first one not fed, `None` when all are), then reads at most
    /// [`BLOCKS_PER_STEP`] of the blocks they revealed, oldest first.
    pub fn process(&mut self, next_unfed: Option<Instant>) {
        while let Some(head) = self.deferred.front().copied() {
            if next_unfed.is_some_and(|next| next < head.arrived) {
                break;
            }
            self.deferred.pop_front();
            self.head(&head);
        }
        self.read_unread(BLOCKS_PER_STEP);
    }

    /// The end of the watch: feeds the heads not yet fed, then reads the blocks they and the
    /// heads before revealed that are still unread, [`BLOCKS_PER_END_STEP`] at a time, oldest
    /// first, the first batch whatever the hour and the next ones until `by`. What is still
    /// unread then is counted ([`EthereumLanding::blocks_unread`]): what it may hold ends pending.
    pub fn read_to_the_end(&mut self, by: Instant) {
        while let Some(head) = self.deferred.pop_front() {
            self.head(&head);
        }
        loop {
            self.read_unread(BLOCKS_PER_END_STEP);
            if self.unread.is_empty() || Instant::now() >= by {
                break;
            }
        }
    }

    /// Blocks the heads revealed that are not read yet.
    pub fn blocks_unread(&self) -> u64 {
        self.unread.iter().map(|blocks| blocks.last - blocks.next + 1).sum()
    }

    /// Whether blocks the heads revealed wait to be read.
    pub fn reading_behind(&self) -> bool {
        !self.unread.is_empty()
    }

    /// Queues the blocks `head` reveals: every one above the highest queued (the whole gap,
    /// however long), else its own (a head at or below it: a reorg at the tip).
    fn head(&mut self, head: &SeenHead) {
        self.heads_seen += 1;
        self.first_head.get_or_insert((head.number, head.arrived));
        self.last_head = Some((head.number, head.arrived));
        let next = if head.number > self.highest_queued { self.highest_queued + 1 } else { head.number };
        self.unread.push_back(UnreadBlocks {
            next,
            last: head.number,
            head: head.number,
            arrived: head.arrived,
            polled: head.polled,
        });
        self.highest_queued = self.highest_queued.max(head.number);
    }

    /// Reads at most `budget` of the unread blocks, oldest first: feeds each (its inclusion
    /// time the arrival of the head that revealed it) and reads the receipts of what it
    /// included; once all a head revealed is read, times out against its arrival.
    fn read_unread(&mut self, budget: u64) {
        for _ in 0..budget {
            let Some(blocks) = self.unread.front_mut() else { break };
            let (number, unread) = (blocks.next, *blocks);
            if blocks.next == blocks.last {
                self.unread.pop_front();
            } else {
                blocks.next += 1;
            }
            match fetch_block(&self.node, number) {
                None => self.fetch_failures += 1,
                Some(block) => {
                    let news = self.book.block_with_hash(
                        number,
                        block.hash,
                        block.parent,
                        unread.arrived,
                        &block.transactions,
                    );
                    if number != unread.head || unread.polled {
                        self.included_by_catch_up += news.included.len() as u64;
                    }
                    if let Some(from) = news.replaced_from {
                        // A reorg replaced blocks below: read them again first (the book
                        // reports one block below at a time, down to what it keeps).
                        let next = from.max(self.first_block);
                        if next < number {
                            self.unread.push_front(UnreadBlocks { next, last: number - 1, ..unread });
                        }
                    }
                    self.read_receipts(&news.included);
                }
            }
            if number == unread.last {
                self.expire(unread.arrived);
            }
        }
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

    /// Settles what timed out by `now` (no later than the first head not yet fed, and before
    /// the arrival of the first head whose blocks are not all read: they may hold it), to be
    /// looked up at the end.
    pub fn expire(&mut self, now: Instant) {
        let now = self.deferred.front().map_or(now, |head| head.arrived.min(now));
        let now = match self.unread.front() {
            Some(blocks) => {
                now.min(blocks.arrived.checked_sub(Duration::from_nanos(1)).unwrap_or(blocks.arrived))
            }
            None => now,
        };
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
        let Some(first) = self.noted.first_send else { return };
        for settled in settled {
            if let TxFinal::Included { latency, .. } | TxFinal::Reverted { latency, .. } = settled.outcome {
                let at = settled.sent + latency;
                self.noted.timeline.included(at.saturating_duration_since(first));
                self.last_included = Some(self.last_included.map_or(at, |last| last.max(at)));
            }
        }
    }

    /// The dashboard's and Prometheus's figures now.
    pub fn live_figures(&self) -> TransactionFigures {
        let counts = self.book.counts();
        let mut figures = TransactionFigures {
            sent: counts.sent,
            accepted: self.noted.accepted,
            rejected: counts.rejected,
            // The book counts the final reverted among the included (kept inclusions' receipts
            // are read when they are final).
            included: counts.included.saturating_sub(counts.reverted),
            reverted: counts.reverted,
            expired: 0,
            dropped: counts.dropped,
            pending: counts.pending,
            reorged_out: counts.reorged_out,
        };
        self.noted.add_unwatched_to(&mut figures, Instant::now());
        figures
    }

    /// The block time as the heads seen show it (first to last), if two differ.
    pub fn block_time(&self) -> Option<Duration> {
        let ((first_number, first_at), (last_number, last_at)) = (self.first_head?, self.last_head?);
        let blocks = u32::try_from(last_number.checked_sub(first_number)?).ok().filter(|n| *n > 0)?;
        Some(last_at.saturating_duration_since(first_at) / blocks)
    }

    /// Ends the watch at `end`: every transaction's final outcome in the tally (with blocks
    /// left unread, see [`EthereumLanding::read_to_the_end`], what waits is pending, not dropped, once
    /// past the arrival of the head that revealed the first of them), the dropped ones looked
    /// up (`addresses` name their senders), and the answers' tally. A watch that
    /// stopped early (`watched` false: its thread panicked) times nothing out at the end: what
    /// it no longer watched is pending, with its age, as are the sends taken after it stopped
    /// ([`EthereumLanding::count_unwatched`]; the refused and unanswered among them rejected).
    pub fn finish(
        &mut self,
        end: Instant,
        addresses: &[String],
        watched: bool,
    ) -> (InclusionTally, AckTally) {
        // Blocks left unread may hold what is waiting: what timed out before the head that
        // revealed the first of them came is dropped, the rest is pending with its age.
        if watched && self.reading_behind() {
            self.expire(end);
        }
        let book = std::mem::take(&mut self.book);
        let timeout = if watched && !self.reading_behind() { self.timeout } else { Duration::MAX };
        let (mut tally, _expired, settled) = book.finish(end, timeout);
        self.note_settled(settled);
        self.noted.add_unwatched_to(&mut tally, end);
        for cause in self.look_up_dropped(addresses) {
            *tally.dropped_by.entry(cause).or_default() += 1;
        }
        (tally, std::mem::take(&mut self.noted.acks))
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
    landing: EthereumLanding,
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

    fn step_unwatched(&mut self, now: Instant) {
        let (fresh, _) = self.landing.take_from(&self.sends, false, now);
        self.landing.count_unwatched(&fresh);
        // The heads are no longer read: thrown away as they come.
        drop(self.heads.drain());
        if let Some(live) = &self.live {
            live.publish_transactions(self.landing.live_figures());
        }
    }
}

/// The landing watch on a thread of its own while the engine sends.
pub struct EthereumLandingThread(LandingLoop<EthereumLandingStep>);

impl std::fmt::Debug for EthereumLandingThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthereumLandingThread").finish_non_exhaustive()
    }
}

impl EthereumLandingThread {
    /// Starts feeding `landing` from `sends`' ledger and `heads` every 20 ms, on a thread that
    /// steps aside for the pacer (its block and receipt reads come in bursts a head at a time).
    pub fn start(
        landing: EthereumLanding,
        sends: Arc<TxSends>,
        heads: HeadSource,
        live: Option<LiveMetrics>,
    ) -> std::io::Result<Self> {
        LandingLoop::start(EthereumLandingStep { landing, sends, heads, live }).map(EthereumLandingThread)
    }

    /// Sending is over: stops the thread and gives the watch back, with the message of the
    /// panic that stopped it early if a step panicked (then nothing more is to be fed to it).
    pub fn finish(self) -> (EthereumLanding, HeadSource, Option<String>) {
        let (EthereumLandingStep { landing, heads, .. }, panicked) = self.0.finish();
        (landing, heads, panicked)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::{Arrivals, Length, Load, RunConfig, Target};
    use crate::engine::Run;
    use crate::mock::{Chain, MockOptions, MockServer, TxPoolOptions};
    use crate::outcome::TxRefusal;
    use crate::tx::ahead::SignedAhead;
    use crate::tx::keys::{keys_from_mnemonic, Address, DEV_MNEMONIC};
    use crate::tx::nonce::NonceBook;
    use crate::tx::poll::HeadPoll;
    use crate::tx::sign::{Fees, UnsignedTx};
    use crate::RequestTemplate;

    /// The mock Ethereum node (chain 31337) with its mempool, a block every `block_time`.
    fn node_with_pool(block_time: Duration) -> (MockServer, Endpoint) {
        let mut options = MockOptions::new(Chain::Ethereum);
        options.slot_time = block_time;
        options.chain_id = 31337;
        options.tx_pool = Some(TxPoolOptions::default());
        let node = MockServer::start(options).unwrap();
        let endpoint = Endpoint::parse(&node.url(), Duration::from_secs(5)).unwrap();
        (node, endpoint)
    }

    /// The sends of 1-wei transfers signed ahead from the dev mnemonic's first `senders`
    /// accounts (nonces from 0).
    fn transfers(senders: usize) -> Arc<TxSends> {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, senders).unwrap();
        let template = UnsignedTx {
            chain_id: 31337,
            nonce: 0,
            fees: Fees::Eip1559 { max_fee_per_gas: 30_000_000_000, max_priority_fee_per_gas: 1_000_000_000 },
            gas_limit: 21_000,
            to: Address::parse("0x3535353535353535353535353535353535353535"),
            value: 1,
            data: Vec::new(),
        };
        TxSends::new(SignedAhead::start(keys, NonceBook::new(vec![0; senders]), template, u64::MAX, 256))
    }

    /// Sends `count` of `sends` to `node` through the engine at `rate`.
    fn send_through_the_engine(node: &MockServer, sends: &Arc<TxSends>, count: u64, rate: f64) {
        let template = RequestTemplate::from_method("eth_chainId", None).unwrap();
        let mut config = RunConfig::new(Target::parse(&node.url()).unwrap(), template);
        config.load = Load::Open { rate, arrivals: Arrivals::Uniform, max_connections: 16 };
        config.length = Length { duration: None, requests: Some(count) };
        config.tx_sends = Some(sends.clone());
        let record = Run::new(config).unwrap().execute().unwrap();
        assert_eq!(record.totals.counts.total() + record.totals.unsent, count);
    }

    /// A number the node answers `method` with.
    fn quantity(node: &Endpoint, method: &str, params: Value) -> u64 {
        hex_quantity(&node.call(method, Some(&params)).unwrap()).unwrap() as u64
    }

    /// Ethereum's landing fed two sends a step from `sends`, one of them included in block 11
    /// at the second step; the third step panics.
    struct FeedsThenPanics {
        landing: EthereumLanding,
        sends: Vec<SentTx>,
        steps: u32,
    }

    impl LandingStep for FeedsThenPanics {
        fn step(&mut self, now: Instant) {
            self.steps += 1;
            if self.steps == 3 {
                panic!("block 12 is malformed");
            }
            let fresh: Vec<SentTx> = self.sends.drain(..2).collect();
            self.landing.feed(&fresh);
            if self.steps == 2 {
                let (hash, parent) = (Some([11; 32]), Some([10; 32]));
                self.landing.book.block_with_hash(11, hash, parent, now, &[[1; 32]]);
            }
        }

        fn step_unwatched(&mut self, _now: Instant) {}
    }

    /// The command's accounting after a landing thread panicked, as `cmd/tx.rs` does it: the
    /// sends it did not take are counted unwatched, nothing is waited for, and what was not
    /// seen is pending.
    #[test]
    fn a_landing_thread_that_panics_leaves_every_send_with_one_outcome() {
        // No request is made: the node is there only for the landing's endpoint.
        let node = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
        let endpoint = Endpoint::parse(&node.url(), Duration::from_secs(5)).unwrap();
        let timeout = Duration::from_millis(1);
        let landing =
            EthereumLanding::new(endpoint, timeout, 0, 10, ReceiptSample::ALL, Duration::from_secs(5));
        let start = Instant::now();
        // 0 accepted (included), 1 refused, 2 accepted, 3 unanswered, 4-7 accepted (taken from
        // the ledger after the panic).
        let sends: Vec<SentTx> = (0..8u8)
            .map(|n| SentTx {
                hash: [n + 1; 32],
                sender: 0,
                nonce: u64::from(n),
                generation: 0,
                sent: start,
                ack: match n {
                    1 => TxAck::Refused(TxRefusal::NonceTooLow),
                    3 => TxAck::Unanswered,
                    _ => TxAck::Accepted(start),
                },
            })
            .collect();
        let running = LandingLoop::start(FeedsThenPanics { landing, sends, steps: 0 }).unwrap();
        while !running.watch_stopped() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (FeedsThenPanics { mut landing, sends, steps }, panicked) = running.finish();
        assert_eq!((steps, panicked.as_deref()), (3, Some("block 12 is malformed")));
        let held = (landing.book.unfinished(), landing.unfinished.len());
        landing.count_unwatched(&sends);
        let after = (landing.book.unfinished(), landing.unfinished.len());
        assert_eq!(after, held, "the sends after the panic are not held");
        std::thread::sleep(timeout * 2);
        let (tally, acks) = landing.finish(Instant::now(), &[], false);
        assert_eq!(
            (tally.sent, tally.included, tally.rejected, tally.dropped, tally.pending),
            (8, 1, 2, 0, 5),
            "past the inclusion timeout, but not watched: pending, not dropped"
        );
        assert!(tally.adds_up());
        assert!(tally.oldest_pending >= timeout, "{:?}", tally.oldest_pending);
        assert_eq!(acks.rejected_by.values().sum::<u64>(), 2);
    }

    /// Ethereum's real landing step, made to panic at its `panic_at`th step.
    struct PanicsAt {
        inner: EthereumLandingStep,
        steps: u32,
        panic_at: u32,
    }

    impl LandingStep for PanicsAt {
        fn step(&mut self, now: Instant) {
            self.steps += 1;
            assert!(self.steps != self.panic_at, "the landing step broke");
            self.inner.step(now);
        }

        fn step_unwatched(&mut self, now: Instant) {
            self.inner.step_unwatched(now);
        }
    }

    /// Sends through the engine while the landing thread has panicked: the thread still takes
    /// every send out of the ledger (which ends holding none), the book holds no more than at
    /// the panic, and the final counts add up to what was sent.
    #[test]
    fn sends_after_a_landing_thread_panicked_are_taken_out_and_not_held_to_the_end() {
        let (node, endpoint) = node_with_pool(Duration::from_millis(100));
        let sends = transfers(4);
        let head = quantity(&endpoint, "eth_blockNumber", json!([]));
        let heads =
            HeadSource::Polled(HeadPoll::start(endpoint.clone(), Duration::from_millis(50), head).unwrap());
        let timeout = Duration::from_secs(30);
        let landing =
            EthereumLanding::new(endpoint, timeout, 0, head, ReceiptSample::ALL, Duration::from_secs(5));
        let inner = EthereumLandingStep { landing, sends: sends.clone(), heads, live: None };
        let running = LandingLoop::start(PanicsAt { inner, steps: 0, panic_at: 3 }).unwrap();
        // Every send comes after the panic.
        while !running.watch_stopped() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let sent = 1_500;
        send_through_the_engine(&node, &sends, sent, 500.0);
        // Every send answered is taken out by the thread, without waiting for the finish.
        let mut held = sends.ledger().held();
        for _ in 0..3_000 {
            if held == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
            held = sends.ledger().held();
        }
        assert_eq!(held, 0, "the ledger still holds sends after the panic");
        let (PanicsAt { inner, steps, .. }, panicked) = running.finish();
        assert_eq!((steps, panicked.as_deref()), (3, Some("the landing step broke")));
        let EthereumLandingStep { mut landing, heads, .. } = inner;
        drop(heads.stop());
        // The thread took them all, and the book none: a few counters hold them.
        assert_eq!((landing.fed, landing.book.unfinished(), landing.noted.unwatched().sent), (0, 0, sent));
        let (fresh, _) = landing.take_from(&sends, true, Instant::now());
        assert!(fresh.is_empty(), "nothing left for the command to take");
        let (tally, acks) = landing.finish(Instant::now(), &[], false);
        assert_eq!(tally.sent, sent, "every send counted");
        assert!(tally.adds_up(), "{:?}", tally.finals());
        assert_eq!((tally.included, tally.dropped), (0, 0), "not watched: pending or rejected");
        assert_eq!(tally.pending, landing.noted.accepted, "the accepted are pending");
        assert!(tally.pending > 0 && tally.oldest_pending > Duration::ZERO);
        assert_eq!(acks.rejected_by.values().sum::<u64>(), tally.rejected);
    }

    /// A node that made 300 blocks since the run's start, then included `count` transfers of
    /// the dev mnemonic's first account: its landing, fed every send, has heard no head yet.
    fn three_hundred_blocks_then_transfers(count: u64) -> (MockServer, EthereumLanding) {
        let (node, endpoint) = node_with_pool(Duration::from_millis(10));
        let head_at_start = quantity(&endpoint, "eth_blockNumber", json!([]));
        while quantity(&endpoint, "eth_blockNumber", json!([])) < head_at_start + 300 {
            std::thread::sleep(Duration::from_millis(20));
        }
        let sends = transfers(1);
        send_through_the_engine(&node, &sends, count, 200.0);
        let sender = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap()[0].address().to_string();
        for _ in 0..3_000 {
            if quantity(&endpoint, "eth_getTransactionCount", json!([sender, "latest"])) == count {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let timeout = Duration::from_secs(30);
        let mut landing = EthereumLanding::new(
            endpoint,
            timeout,
            0,
            head_at_start,
            ReceiptSample::ALL,
            Duration::from_secs(5),
        );
        let (fresh, _) = landing.take_from(&sends, true, Instant::now());
        assert_eq!(fresh.len() as u64, count);
        landing.feed(&fresh);
        (node, landing)
    }

    /// The head the run's last look at the node gives: over 300 blocks above the last read.
    fn last_head(landing: &EthereumLanding) -> SeenHead {
        let number = quantity(&landing.node, "eth_blockNumber", json!([]));
        SeenHead { number, arrived: Instant::now(), produced_at_us: None, polled: true }
    }

    /// The run's last heads reveal a gap of over 300 blocks, its transactions past the first
    /// 256 of them: the read at the end reads every block of it, and every transaction the
    /// node included is counted included.
    #[test]
    fn blocks_a_big_backlog_left_unread_at_the_end_are_read_and_their_transactions_counted_included() {
        let (_node, mut landing) = three_hundred_blocks_then_transfers(20);
        landing.receive(vec![last_head(&landing)]);
        landing.read_to_the_end(Instant::now() + Duration::from_secs(600));
        assert_eq!(landing.blocks_unread(), 0);
        assert_eq!(landing.fetch_failures, 0);
        let (tally, _) = landing.finish(Instant::now(), &[], true);
        assert_eq!((tally.sent, tally.included, tally.dropped, tally.pending), (20, 20, 0, 0));
        assert_eq!(landing.included_by_catch_up, 20, "read below the last head");
    }

    /// The same gap with no time left to read it: one batch is read, the rest is counted
    /// unread, and what it may hold is pending (not dropped, even past the inclusion timeout).
    #[test]
    fn blocks_left_unread_past_the_grace_are_counted_and_what_they_may_hold_is_pending() {
        let (_node, mut landing) = three_hundred_blocks_then_transfers(20);
        landing.receive(vec![last_head(&landing)]);
        landing.read_to_the_end(Instant::now());
        let unread = landing.blocks_unread();
        assert!(unread > 0, "one batch of {BLOCKS_PER_END_STEP} read, the rest of 300 not");
        let past_the_timeout = Instant::now() + Duration::from_secs(60);
        let (tally, _) = landing.finish(past_the_timeout, &[], true);
        assert_eq!((tally.sent, tally.included, tally.dropped, tally.pending), (20, 0, 0, 20));
        assert!(tally.adds_up());
    }
}
