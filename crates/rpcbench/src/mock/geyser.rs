//! The mock Solana Yellowstone gRPC (Geyser) feed: `serve --chain solana --grpc`. A tonic
//! server on its own port producing slots with all six stages at the slot time (first shred,
//! created bank, completed, processed, confirmed, finalized, at known offsets within the slot),
//! transactions touching a few accounts and the account writes they make, block metas, each
//! stamped with `created_at`; the unary calls `Ping`, `GetSlot`, `GetBlockHeight` and
//! `GetLatestBlockhash`; and fault knobs: a delay for every subscriber, a share of updates
//! dropped, a disconnect every N seconds, and a bounded queue per subscriber that cuts a slow
//! one off ("client lagged") instead of buffering without limit.
//!
//! The mock keeps the truth of what it sent ([`GeyserTruth`]): tests compare rpcbench's counts,
//! gaps and lags with it.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::Stream;
use tokio::sync::broadcast;
use tonic::{Request, Response, Status, Streaming};
use yellowstone_grpc_proto::geyser::geyser_server::{Geyser, GeyserServer};
use yellowstone_grpc_proto::geyser::{
    subscribe_update::UpdateOneof, CommitmentLevel, GetBlockHeightRequest, GetBlockHeightResponse,
    GetLatestBlockhashRequest, GetLatestBlockhashResponse, GetSlotRequest, GetSlotResponse,
    GetVersionRequest, GetVersionResponse, IsBlockhashValidRequest, IsBlockhashValidResponse, PingRequest,
    PongResponse, SlotStatus, SubscribeDeshredRequest, SubscribeGossipRequest, SubscribeReplayInfoRequest,
    SubscribeReplayInfoResponse, SubscribeRequest, SubscribeUpdate, SubscribeUpdateAccount,
    SubscribeUpdateAccountInfo, SubscribeUpdateBlockMeta, SubscribeUpdateDeshred, SubscribeUpdateGossip,
    SubscribeUpdatePing, SubscribeUpdatePong, SubscribeUpdateSlot, SubscribeUpdateTransaction,
    SubscribeUpdateTransactionInfo,
};

/// The six stages of a slot in the order the mock produces them, each at `index / 6` of the
/// slot time: download (first shred -> completed) and replay (created bank -> processed) are
/// both a third of the slot time.
pub(super) const STAGES: [SlotStatus; 6] = [
    SlotStatus::SlotFirstShredReceived,
    SlotStatus::SlotCreatedBank,
    SlotStatus::SlotCompleted,
    SlotStatus::SlotProcessed,
    SlotStatus::SlotConfirmed,
    SlotStatus::SlotFinalized,
];

/// The settings of a mock Geyser feed.
#[derive(Debug, Clone)]
pub struct GeyserMockOptions {
    /// Where to listen (port 0: any free port).
    pub listen: SocketAddr,
    /// One slot every this long (its six stages spread over it).
    pub slot_time: Duration,
    /// The first slot produced.
    pub first_slot: u64,
    /// Transactions per slot (each touching two of [`GeyserMockOptions::accounts`] accounts,
    /// every fourth a vote, every fifth failed), sent at the processed stage.
    pub transactions_per_slot: u32,
    /// Accounts the transactions touch (their writes are account updates).
    pub accounts: u32,
    /// A delay before every update reaches a subscriber (a slower provider).
    pub delay: Duration,
    /// Drop one update in this many (0: none), by its sequence number, the same for every
    /// subscriber.
    pub drop_one_in: u64,
    /// End every subscription this long after it started (status `unavailable`).
    pub disconnect_every: Option<Duration>,
    /// Updates a subscriber may fall behind by before it is cut off ("client lagged").
    pub queue: usize,
    /// A `Ping` update to every subscriber this often.
    pub ping_every: Duration,
    /// The `x-token` a client must send, if any.
    pub x_token: Option<String>,
    /// More ports serving the same updates, each with its own delay (providers of one chain
    /// racing: the same slot reaches each mirror that much later than the main port's
    /// subscribers before its own delay). Their addresses are [`GeyserMock::mirror_url`].
    pub mirrors: Vec<Duration>,
    /// Answer one unary call (`GetSlot`, `Ping`...) in this many with status `unavailable`
    /// (0: none), by the calls' order of arrival: a server failing mid-run.
    pub unary_fail_one_in: u64,
    /// Updates kept for a subscription that asks to start `from_slot` (a reconnecting client):
    /// the kept ones from that slot on are replayed before the live ones. 0: `from_slot` is
    /// refused (`invalid argument`), as a server without replay does.
    pub from_slot_history: usize,
}

impl Default for GeyserMockOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            slot_time: Duration::from_millis(400),
            first_slot: 1_000,
            transactions_per_slot: 4,
            accounts: 4,
            delay: Duration::ZERO,
            drop_one_in: 0,
            disconnect_every: None,
            queue: 4_096,
            ping_every: Duration::from_secs(10),
            x_token: None,
            unary_fail_one_in: 0,
            mirrors: Vec::new(),
            from_slot_history: 0,
        }
    }
}

/// What the mock sent: the truth tests compare with.
#[derive(Debug, Default)]
pub struct GeyserTruth {
    /// Slots produced (all six stages).
    pub slots: AtomicU64,
    /// Updates produced (before any subscriber's filter).
    pub produced: AtomicU64,
    /// Updates sent to subscribers, all subscribers together.
    pub sent: AtomicU64,
    /// Updates a subscriber's filter matched but the drop knob dropped.
    pub dropped: AtomicU64,
    /// Subscribers cut off because they fell more than the queue behind.
    pub lagged: AtomicU64,
    /// Subscriptions ended by the disconnect knob.
    pub disconnected: AtomicU64,
    /// Pings sent, and pings that clients answered.
    pub pings: AtomicU64,
    /// Ping requests received on subscribe streams.
    pub pongs: AtomicU64,
    /// Subscriptions refused (a wrong token, an unsupported filter).
    pub refused: AtomicU64,
    /// Subscriptions started.
    pub subscriptions: AtomicU64,
    /// Unary calls answered (those failed by [`GeyserMockOptions::unary_fail_one_in`]
    /// included).
    pub unary: AtomicU64,
    /// Unary calls failed with `unavailable` by [`GeyserMockOptions::unary_fail_one_in`].
    pub unary_failed: AtomicU64,
    /// Updates replayed to subscriptions that asked to start `from_slot`.
    pub replayed: AtomicU64,
    /// Live updates (not replayed) sent to a subscription registered after their `created_at`:
    /// a late tick broadcast them after the subscriber came, stamped with the time it was due.
    /// A client cannot tell them from a replay (both were made before it subscribed).
    pub live_stamped_before_subscribing: AtomicU64,
    /// When each port took each update for the wire (its first subscriber's): the offsets a race
    /// between ports really had.
    pub sends: super::geyser_sends::GeyserSends,
}

/// One update the producer made, before any subscriber's filter.
#[derive(Debug, Clone)]
struct Produced {
    /// Its sequence number (the drop knob's key).
    sequence: u64,
    /// Its `created_at`: the scheduled time of the tick that made it.
    at: SystemTime,
    /// When it was actually made (the tick may run late): the delay knobs count from here, so
    /// a port's delay is its own and not the timer's lateness.
    made: SystemTime,
    what: Made,
}

#[derive(Debug, Clone)]
enum Made {
    Slot { slot: u64, status: SlotStatus },
    Transaction { slot: u64, index: u32, accounts: [u32; 2], vote: bool, failed: bool },
    Account { slot: u64, account: u32, write_version: u64 },
    BlockMeta { slot: u64 },
}

impl Made {
    /// The slot it belongs to.
    fn slot(&self) -> u64 {
        match self {
            Made::Slot { slot, .. }
            | Made::Transaction { slot, .. }
            | Made::Account { slot, .. }
            | Made::BlockMeta { slot } => *slot,
        }
    }
}

/// The mock account `index`'s public key (base58 of 32 bytes made from the index).
pub fn mock_account(index: u32) -> String {
    bs58::encode(account_bytes(index)).into_string()
}

/// The owner program of every mock account.
pub fn mock_owner() -> String {
    bs58::encode([7u8; 32]).into_string()
}

fn account_bytes(index: u32) -> [u8; 32] {
    let mut key = [0u8; 32];
    key[0] = 0xac;
    key[28..].copy_from_slice(&index.to_be_bytes());
    key
}

/// A transaction's 64-byte signature, from its slot and index.
fn signature(slot: u64, index: u32) -> Vec<u8> {
    let mut signature = vec![0u8; 64];
    signature[..8].copy_from_slice(&slot.to_be_bytes());
    signature[8..12].copy_from_slice(&index.to_be_bytes());
    signature[63] = 0x5a;
    signature
}

/// A running mock Geyser feed; dropping it stops the server.
#[derive(Debug)]
pub struct GeyserMock {
    addr: SocketAddr,
    mirrors: Vec<SocketAddr>,
    truth: Arc<GeyserTruth>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Why the mock feed could not start.
#[derive(Debug)]
pub enum GeyserMockError {
    /// The address could not be bound, or the runtime not started.
    Io(std::io::Error),
    /// A setting is out of range.
    Setting(crate::field::SettingError),
}

impl std::fmt::Display for GeyserMockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GeyserMockError::Io(err) => write!(f, "cannot start the gRPC feed: {err}"),
            GeyserMockError::Setting(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for GeyserMockError {}

impl GeyserMock {
    /// Binds and starts serving on a thread of its own.
    pub fn start(options: GeyserMockOptions) -> Result<GeyserMock, GeyserMockError> {
        use crate::field::{Field, SettingError};
        let refuse =
            |field: Field, message: &str| Err(GeyserMockError::Setting(SettingError::new(field, message)));
        if options.slot_time < Duration::from_millis(6) {
            return refuse(Field::SlotTime, "must be at least 6ms for a gRPC feed");
        }
        if options.queue == 0 {
            return refuse(Field::FeedQueue, "must be at least 1");
        }
        if options.accounts == 0 {
            return refuse(Field::FeedAccounts, "must be at least 1");
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(GeyserMockError::Io)?;
        let bind = |addr: SocketAddr| -> std::io::Result<(std::net::TcpListener, SocketAddr)> {
            let listener = std::net::TcpListener::bind(addr)?;
            listener.set_nonblocking(true)?;
            let bound = listener.local_addr()?;
            Ok((listener, bound))
        };
        let mut listeners = vec![(bind(options.listen).map_err(GeyserMockError::Io)?, options.delay)];
        for delay in &options.mirrors {
            let loopback = SocketAddr::new(options.listen.ip(), 0);
            listeners.push((bind(loopback).map_err(GeyserMockError::Io)?, *delay));
        }
        let addr = listeners[0].0 .1;
        let mirrors = listeners[1..].iter().map(|((_, addr), _)| *addr).collect();
        let truth = Arc::new(GeyserTruth::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service_truth = truth.clone();
        let thread = std::thread::Builder::new()
            .name("geyser-mock".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let (updates, _) = broadcast::channel(options.queue);
                    let state = Arc::new(Shared {
                        options: options.clone(),
                        truth: service_truth,
                        updates: updates.clone(),
                        slot: AtomicU64::new(options.first_slot),
                        history: std::sync::Mutex::new(std::collections::VecDeque::new()),
                    });
                    tokio::spawn(produce(state.clone()));
                    let (stopping, stop_watch) = tokio::sync::watch::channel(false);
                    let mut servers = Vec::new();
                    for (port, ((listener, _), delay)) in listeners.into_iter().enumerate() {
                        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                        let token = options.x_token.clone();
                        let geyser = MockGeyser { state: state.clone(), delay, port };
                        let service = GeyserServer::with_interceptor(geyser, move |request| {
                            check_token(token.as_deref(), request)
                        });
                        let incoming = tonic::transport::server::TcpIncoming::from(listener);
                        let mut stop_watch = stop_watch.clone();
                        servers.push(tokio::spawn(async move {
                            let _ = tonic::transport::Server::builder()
                                .add_service(service)
                                .serve_with_incoming_shutdown(incoming, async move {
                                    let _ = stop_watch.wait_for(|stop| *stop).await;
                                })
                                .await;
                        }));
                    }
                    let _ = stopped.await;
                    let _ = stopping.send(true);
                    for server in servers {
                        let _ = server.await;
                    }
                });
            })
            .map_err(GeyserMockError::Io)?;
        Ok(GeyserMock { addr, mirrors, truth, stop: Some(stop), thread: Some(thread) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `grpc://ADDR`.
    pub fn url(&self) -> String {
        format!("grpc://{}", self.addr)
    }

    /// `grpc://ADDR` of mirror `index` (see [`GeyserMockOptions::mirrors`]).
    pub fn mirror_url(&self, index: usize) -> Option<String> {
        self.mirrors.get(index).map(|addr| format!("grpc://{addr}"))
    }

    /// What it sent so far.
    pub fn truth(&self) -> &GeyserTruth {
        &self.truth
    }

    /// Stops serving and waits for the server's thread.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for GeyserMock {
    fn drop(&mut self) {
        self.shut();
    }
}

/// Refuses a call without the right `x-token`.
fn check_token(expected: Option<&str>, request: Request<()>) -> Result<Request<()>, Status> {
    let Some(expected) = expected else { return Ok(request) };
    match request.metadata().get("x-token").and_then(|value| value.to_str().ok()) {
        Some(given) if given == expected => Ok(request),
        Some(_) => Err(Status::unauthenticated("invalid x-token")),
        None => Err(Status::unauthenticated("x-token required")),
    }
}

struct Shared {
    options: GeyserMockOptions,
    truth: Arc<GeyserTruth>,
    updates: broadcast::Sender<Arc<Produced>>,
    /// The newest processed slot.
    slot: AtomicU64,
    /// The last updates made, oldest first, for `from_slot` (at most
    /// [`GeyserMockOptions::from_slot_history`]).
    history: std::sync::Mutex<std::collections::VecDeque<Arc<Produced>>>,
}

/// Makes the slots, their stages, transactions, account writes and block metas, one stage
/// every sixth of the slot time, on a fixed schedule (a late tick does not shift the next).
async fn produce(state: Arc<Shared>) {
    let options = &state.options;
    let tick = options.slot_time / 6;
    let mut ticker = tokio::time::interval(tick);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut sequence = 0u64;
    let mut write_version = 0u64;
    // Every update is stamped with its tick's scheduled time, not the time the (possibly late)
    // tick ran: the stages of a slot are exactly a tick apart by the server's stamps.
    let (base, base_wall) = (tokio::time::Instant::now(), SystemTime::now());
    let send = |what: Made, sequence: &mut u64, at: SystemTime| {
        let produced = Arc::new(Produced { sequence: *sequence, at, made: SystemTime::now(), what });
        *sequence += 1;
        state.truth.produced.fetch_add(1, Ordering::Relaxed);
        // Kept for `from_slot` and sent under one lock: a subscriber registering takes the
        // history and its receiver together, so a replay neither skips nor repeats an update.
        let mut history = state.history.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if options.from_slot_history > 0 {
            if history.len() == options.from_slot_history {
                history.pop_front();
            }
            history.push_back(produced.clone());
        }
        // No subscriber is not an error.
        let _ = state.updates.send(produced);
    };
    for slot in options.first_slot.. {
        for status in STAGES {
            let scheduled = ticker.tick().await;
            let at = base_wall + scheduled.saturating_duration_since(base);
            send(Made::Slot { slot, status }, &mut sequence, at);
            if status == SlotStatus::SlotProcessed {
                state.slot.store(slot, Ordering::Relaxed);
                for index in 0..options.transactions_per_slot {
                    let first = (index + slot as u32) % options.accounts;
                    let accounts = [first, (first + 1) % options.accounts];
                    send(
                        Made::Transaction {
                            slot,
                            index,
                            accounts,
                            vote: index % 4 == 3,
                            failed: index % 5 == 4,
                        },
                        &mut sequence,
                        at,
                    );
                    for account in accounts {
                        write_version += 1;
                        send(Made::Account { slot, account, write_version }, &mut sequence, at);
                    }
                }
            }
            if status == SlotStatus::SlotCompleted {
                send(Made::BlockMeta { slot }, &mut sequence, at);
            }
        }
        state.truth.slots.fetch_add(1, Ordering::Relaxed);
    }
}

/// One subscription's filters, as the mock understands them.
#[derive(Debug, Default)]
struct Filters {
    commitment: i32,
    slots: Vec<(String, bool, bool)>,
    transactions: Vec<(String, TransactionFilter)>,
    accounts: Vec<(String, Vec<u32>, bool)>,
    blocks_meta: Vec<String>,
}

#[derive(Debug, Default)]
struct TransactionFilter {
    vote: Option<bool>,
    failed: Option<bool>,
    include: Vec<u32>,
    exclude: Vec<u32>,
    required: Vec<u32>,
}

/// The mock account a public key names, if any.
fn account_index(key: &str, accounts: u32) -> Option<u32> {
    (0..accounts).find(|index| mock_account(*index) == key)
}

impl Filters {
    /// Reads a request's filters; filters the mock does not serve are refused by name.
    fn from_request(request: &SubscribeRequest, accounts: u32) -> Result<Filters, Status> {
        for (name, present) in [
            ("blocks", !request.blocks.is_empty()),
            ("entry", !request.entry.is_empty()),
            ("transactions_status", !request.transactions_status.is_empty()),
            ("block_footer", !request.block_footer.is_empty()),
        ] {
            if present {
                return Err(Status::invalid_argument(format!("filter '{name}' is not supported")));
            }
        }
        let keys = |keys: &[String]| -> Vec<u32> {
            // An unknown account matches nothing: u32::MAX is no mock account.
            keys.iter().map(|key| account_index(key, accounts).unwrap_or(u32::MAX)).collect()
        };
        let owner = mock_owner();
        Ok(Filters {
            commitment: request.commitment.unwrap_or(CommitmentLevel::Processed as i32),
            slots: request
                .slots
                .iter()
                .map(|(name, filter)| {
                    (
                        name.clone(),
                        filter.filter_by_commitment.unwrap_or(false),
                        filter.interslot_updates.unwrap_or(false),
                    )
                })
                .collect(),
            transactions: request
                .transactions
                .iter()
                .map(|(name, filter)| {
                    (
                        name.clone(),
                        TransactionFilter {
                            vote: filter.vote,
                            failed: filter.failed,
                            include: keys(&filter.account_include),
                            exclude: keys(&filter.account_exclude),
                            required: keys(&filter.account_required),
                        },
                    )
                })
                .collect(),
            accounts: request
                .accounts
                .iter()
                .map(|(name, filter)| {
                    let by_owner = filter.owner.contains(&owner);
                    let all = filter.account.is_empty() && filter.owner.is_empty();
                    (name.clone(), keys(&filter.account), by_owner || all)
                })
                .collect(),
            blocks_meta: request.blocks_meta.keys().cloned().collect(),
        })
    }

    /// The names of the filters `made` matches (none: not sent).
    fn matches(&self, made: &Made) -> Vec<String> {
        match made {
            Made::Slot { status, .. } => self
                .slots
                .iter()
                .filter(|(_, by_commitment, interslot)| {
                    let level = match status {
                        SlotStatus::SlotProcessed => Some(CommitmentLevel::Processed as i32),
                        SlotStatus::SlotConfirmed => Some(CommitmentLevel::Confirmed as i32),
                        SlotStatus::SlotFinalized => Some(CommitmentLevel::Finalized as i32),
                        _ => None,
                    };
                    match level {
                        Some(level) => !*by_commitment || level == self.commitment,
                        None => *interslot && !*by_commitment,
                    }
                })
                .map(|(name, ..)| name.clone())
                .collect(),
            Made::Transaction { accounts, vote, failed, .. } => self
                .transactions
                .iter()
                .filter(|(_, filter)| {
                    filter.vote.is_none_or(|wanted| wanted == *vote)
                        && filter.failed.is_none_or(|wanted| wanted == *failed)
                        && (filter.include.is_empty() || accounts.iter().any(|a| filter.include.contains(a)))
                        && !accounts.iter().any(|a| filter.exclude.contains(a))
                        && filter.required.iter().all(|a| accounts.contains(a))
                })
                .map(|(name, _)| name.clone())
                .collect(),
            Made::Account { account, .. } => self
                .accounts
                .iter()
                .filter(|(_, keys, any)| *any || keys.contains(account))
                .map(|(name, ..)| name.clone())
                .collect(),
            Made::BlockMeta { .. } => self.blocks_meta.clone(),
        }
    }
}

/// The update a subscriber receives.
fn encode(produced: &Produced, filters: Vec<String>) -> SubscribeUpdate {
    let update = match &produced.what {
        Made::Slot { slot, status } => UpdateOneof::Slot(SubscribeUpdateSlot {
            slot: *slot,
            parent: Some(slot.saturating_sub(1)),
            status: *status as i32,
            dead_error: None,
            bank_id: None,
        }),
        Made::Transaction { slot, index, vote, .. } => UpdateOneof::Transaction(SubscribeUpdateTransaction {
            transaction: Some(SubscribeUpdateTransactionInfo {
                signature: signature(*slot, *index),
                is_vote: *vote,
                transaction: None,
                meta: None,
                index: u64::from(*index),
            }),
            slot: *slot,
            bank_id: 0,
        }),
        Made::Account { slot, account, write_version } => UpdateOneof::Account(SubscribeUpdateAccount {
            account: Some(SubscribeUpdateAccountInfo {
                pubkey: account_bytes(*account).to_vec(),
                lamports: 1_000_000 + write_version,
                owner: vec![7u8; 32],
                executable: false,
                rent_epoch: 0,
                data: write_version.to_le_bytes().to_vec(),
                write_version: *write_version,
                txn_signature: None,
            }),
            slot: *slot,
            is_startup: false,
            bank_id: None,
        }),
        Made::BlockMeta { slot } => UpdateOneof::BlockMeta(SubscribeUpdateBlockMeta {
            slot: *slot,
            blockhash: bs58::encode(slot.to_be_bytes()).into_string(),
            parent_slot: slot.saturating_sub(1),
            ..Default::default()
        }),
    };
    SubscribeUpdate { filters, update_oneof: Some(update), created_at: Some(timestamp(produced.at)) }
}

fn timestamp(at: SystemTime) -> prost_types_timestamp::Timestamp {
    let since = at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    prost_types_timestamp::Timestamp { seconds: since.as_secs() as i64, nanos: since.subsec_nanos() as i32 }
}

mod prost_types_timestamp {
    pub(super) use yellowstone_grpc_proto::prost_types::Timestamp;
}

type UpdateStream = Pin<Box<dyn Stream<Item = Result<SubscribeUpdate, Status>> + Send + 'static>>;

struct MockGeyser {
    state: Arc<Shared>,
    /// This port's delay before every update.
    delay: Duration,
    /// This port's number (0 the main one, then the mirrors).
    port: usize,
}

/// Updates queued for one subscriber's HTTP/2 stream: small, so a client that does not read
/// backs up into the broadcast queue and is cut off there.
const STREAM_QUEUE: usize = 64;

impl MockGeyser {
    /// Counts a unary call; every [`GeyserMockOptions::unary_fail_one_in`]th fails.
    fn unary_call(&self) -> Result<(), Status> {
        let truth = &self.state.truth;
        let number = truth.unary.fetch_add(1, Ordering::Relaxed) + 1;
        let every = self.state.options.unary_fail_one_in;
        if every > 0 && number % every == 0 {
            truth.unary_failed.fetch_add(1, Ordering::Relaxed);
            return Err(Status::unavailable("the mock fails this call (--grpc-unary-fail-one-in)"));
        }
        Ok(())
    }
}

#[tonic::async_trait]
impl Geyser for MockGeyser {
    type SubscribeStream = UpdateStream;
    type SubscribeDeshredStream =
        Pin<Box<dyn Stream<Item = Result<SubscribeUpdateDeshred, Status>> + Send + 'static>>;
    type SubscribeGossipStream =
        Pin<Box<dyn Stream<Item = Result<SubscribeUpdateGossip, Status>> + Send + 'static>>;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let state = self.state.clone();
        let mut requests = request.into_inner();
        // The first request carries the filters (a later one may replace them or ping).
        let first = match requests.message().await? {
            Some(first) => first,
            None => return Err(Status::invalid_argument("no subscribe request")),
        };
        let filters = match Filters::from_request(&first, state.options.accounts) {
            Ok(filters) => filters,
            Err(status) => {
                state.truth.refused.fetch_add(1, Ordering::Relaxed);
                return Err(status);
            }
        };
        let (out, out_rx) = tokio::sync::mpsc::channel(STREAM_QUEUE);
        // Registered before the answer: every update made after the client sees the
        // subscription stand is its to receive (a later registration would open a gap at its
        // start). With `from_slot`, the kept updates from that slot on come first: taken with
        // the receiver under the producer's lock, so none is missed or repeated.
        let (updates, replay) = {
            let history = state.history.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let replay = match first.from_slot {
                None => Vec::new(),
                Some(_) if state.options.from_slot_history == 0 => {
                    state.truth.refused.fetch_add(1, Ordering::Relaxed);
                    return Err(Status::invalid_argument("from_slot is not supported"));
                }
                Some(from) => {
                    let oldest = history.front().map(|kept| kept.what.slot());
                    if oldest.is_none_or(|oldest| from < oldest) {
                        state.truth.refused.fetch_add(1, Ordering::Relaxed);
                        return Err(Status::invalid_argument(format!(
                            "from_slot {from} is older than the oldest slot kept"
                        )));
                    }
                    history.iter().filter(|kept| kept.what.slot() >= from).cloned().collect()
                }
            };
            (state.updates.subscribe(), replay)
        };
        let registered = SystemTime::now();
        state.truth.subscriptions.fetch_add(1, Ordering::Relaxed);
        let (truth, port) = (state.truth.clone(), self.port);
        tokio::spawn(serve_subscriber(
            state,
            self.delay,
            filters,
            requests,
            (replay, updates, registered),
            out,
        ));
        // An update's send is timed as the server takes it for the wire, the nearest the mock
        // sees to the client's arrival.
        let stream = futures_util::stream::unfold(out_rx, move |mut rx| {
            let truth = truth.clone();
            async move {
                let (item, sequence) = rx.recv().await?;
                if let Some(sequence) = sequence {
                    truth.sends.record(port, sequence, SystemTime::now());
                }
                Some((item, rx))
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn subscribe_deshred(
        &self,
        _request: Request<Streaming<SubscribeDeshredRequest>>,
    ) -> Result<Response<Self::SubscribeDeshredStream>, Status> {
        Err(Status::unimplemented("the mock feed does not serve deshred transactions"))
    }

    async fn subscribe_gossip(
        &self,
        _request: Request<SubscribeGossipRequest>,
    ) -> Result<Response<Self::SubscribeGossipStream>, Status> {
        Err(Status::unimplemented("the mock feed does not serve gossip"))
    }

    async fn subscribe_replay_info(
        &self,
        _request: Request<SubscribeReplayInfoRequest>,
    ) -> Result<Response<SubscribeReplayInfoResponse>, Status> {
        self.state.truth.unary.fetch_add(1, Ordering::Relaxed);
        Ok(Response::new(SubscribeReplayInfoResponse {
            first_available: Some(self.state.options.first_slot),
        }))
    }

    async fn ping(&self, request: Request<PingRequest>) -> Result<Response<PongResponse>, Status> {
        self.unary_call()?;
        Ok(Response::new(PongResponse { count: request.into_inner().count }))
    }

    async fn get_latest_blockhash(
        &self,
        _request: Request<GetLatestBlockhashRequest>,
    ) -> Result<Response<GetLatestBlockhashResponse>, Status> {
        self.unary_call()?;
        let slot = self.state.slot.load(Ordering::Relaxed);
        Ok(Response::new(GetLatestBlockhashResponse {
            slot,
            blockhash: bs58::encode(slot.to_be_bytes()).into_string(),
            last_valid_block_height: slot + 150,
        }))
    }

    async fn get_block_height(
        &self,
        _request: Request<GetBlockHeightRequest>,
    ) -> Result<Response<GetBlockHeightResponse>, Status> {
        self.unary_call()?;
        Ok(Response::new(GetBlockHeightResponse { block_height: self.state.slot.load(Ordering::Relaxed) }))
    }

    async fn get_slot(&self, _request: Request<GetSlotRequest>) -> Result<Response<GetSlotResponse>, Status> {
        self.unary_call()?;
        Ok(Response::new(GetSlotResponse { slot: self.state.slot.load(Ordering::Relaxed) }))
    }

    async fn is_blockhash_valid(
        &self,
        _request: Request<IsBlockhashValidRequest>,
    ) -> Result<Response<IsBlockhashValidResponse>, Status> {
        Err(Status::unimplemented("the mock feed does not check blockhashes"))
    }

    async fn get_version(
        &self,
        _request: Request<GetVersionRequest>,
    ) -> Result<Response<GetVersionResponse>, Status> {
        self.unary_call()?;
        Ok(Response::new(GetVersionResponse { version: "rpcbench-mock-geyser".into() }))
    }
}

/// One subscriber: the broadcast's updates through its filters, the drop and delay knobs, its
/// pings and the disconnect knob, until it goes away or falls too far behind.
async fn serve_subscriber(
    state: Arc<Shared>,
    delay: Duration,
    mut filters: Filters,
    mut requests: Streaming<SubscribeRequest>,
    (replay, mut updates, registered): (Vec<Arc<Produced>>, broadcast::Receiver<Arc<Produced>>, SystemTime),
    out: tokio::sync::mpsc::Sender<(Result<SubscribeUpdate, Status>, Option<u64>)>,
) {
    let options = &state.options;
    let truth = &state.truth;
    // The replay first, through the same filters and drop knob as the live updates.
    for produced in replay {
        let matched = filters.matches(&produced.what);
        if matched.is_empty() || dropped(options.drop_one_in, &produced) {
            continue;
        }
        if out.send((Ok(encode(&produced, matched)), Some(produced.sequence))).await.is_err() {
            return;
        }
        truth.replayed.fetch_add(1, Ordering::Relaxed);
        truth.sent.fetch_add(1, Ordering::Relaxed);
    }
    let started = tokio::time::Instant::now();
    let disconnect = async {
        match options.disconnect_every {
            Some(every) => tokio::time::sleep_until(started + every).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(disconnect);
    let mut pings = tokio::time::interval_at(started + options.ping_every, options.ping_every);
    let mut reading = true;
    loop {
        let produced = tokio::select! {
            received = updates.recv() => match received {
                Ok(produced) => produced,
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    truth.lagged.fetch_add(1, Ordering::Relaxed);
                    let _ = out.try_send((Err(Status::resource_exhausted("client lagged")), None));
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = &mut disconnect => {
                truth.disconnected.fetch_add(1, Ordering::Relaxed);
                let _ = out.send((Err(Status::unavailable("the mock feed disconnects every subscriber on schedule")), None)).await;
                return;
            }
            _ = pings.tick() => {
                truth.pings.fetch_add(1, Ordering::Relaxed);
                let ping = SubscribeUpdate {
                    filters: Vec::new(),
                    update_oneof: Some(UpdateOneof::Ping(SubscribeUpdatePing {})),
                    created_at: Some(timestamp(SystemTime::now())),
                };
                if out.send((Ok(ping), None)).await.is_err() {
                    return;
                }
                continue;
            }
            request = requests.message(), if reading => {
                match request {
                    Ok(Some(request)) => {
                        if let Some(ping) = request.ping {
                            truth.pongs.fetch_add(1, Ordering::Relaxed);
                            let pong = SubscribeUpdate {
                                filters: Vec::new(),
                                update_oneof: Some(UpdateOneof::Pong(SubscribeUpdatePong { id: ping.id })),
                                created_at: Some(timestamp(SystemTime::now())),
                            };
                            if out.send((Ok(pong), None)).await.is_err() {
                                return;
                            }
                        } else {
                            match Filters::from_request(&request, options.accounts) {
                                Ok(replaced) => filters = replaced,
                                Err(status) => {
                                    let _ = out.send((Err(status), None)).await;
                                    return;
                                }
                            }
                        }
                    }
                    // The client closed its side: keep sending until it goes away.
                    Ok(None) | Err(_) => reading = false,
                }
                continue;
            }
        };
        let matched = filters.matches(&produced.what);
        if matched.is_empty() {
            continue;
        }
        if dropped(options.drop_one_in, &produced) {
            truth.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if !delay.is_zero() {
            wait_until(produced.made + delay).await;
        }
        if out.send((Ok(encode(&produced, matched)), Some(produced.sequence))).await.is_err() {
            return;
        }
        truth.sent.fetch_add(1, Ordering::Relaxed);
        if produced.at < registered {
            truth.live_stamped_before_subscribing.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Whether the drop knob drops `produced` (one in `one_in` by sequence number; 0: none).
fn dropped(one_in: u64, produced: &Produced) -> bool {
    one_in > 0 && produced.sequence % one_in == one_in - 1
}

/// Waits until `due` to well within a millisecond: the timer (whole milliseconds, rounding
/// up) for all but the last two, then yielding until the time (a delay knob that overshot by
/// half a millisecond on average would skew the race it sets up).
async fn wait_until(due: SystemTime) {
    const SPIN: Duration = Duration::from_millis(2);
    if let Ok(wait) = due.duration_since(SystemTime::now()) {
        if wait > SPIN {
            tokio::time::sleep(wait - SPIN).await;
        }
    }
    while SystemTime::now() < due {
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yellowstone_grpc_proto::geyser::{SubscribeRequestFilterSlots, SubscribeRequestFilterTransactions};

    #[test]
    fn slot_filters_pass_the_statuses_they_ask_for() {
        let mut request = SubscribeRequest::default();
        request.slots.insert(
            "all".into(),
            SubscribeRequestFilterSlots { filter_by_commitment: Some(false), interslot_updates: Some(true) },
        );
        request.slots.insert(
            "confirmed".into(),
            SubscribeRequestFilterSlots { filter_by_commitment: Some(true), interslot_updates: None },
        );
        request.commitment = Some(CommitmentLevel::Confirmed as i32);
        let filters = Filters::from_request(&request, 4).unwrap();
        let names = |status| {
            let mut names = filters.matches(&Made::Slot { slot: 1, status });
            names.sort();
            names
        };
        assert_eq!(names(SlotStatus::SlotFirstShredReceived), ["all"]);
        assert_eq!(names(SlotStatus::SlotConfirmed), ["all", "confirmed"]);
        assert_eq!(names(SlotStatus::SlotProcessed), ["all"]);
    }

    #[test]
    fn transaction_filters_include_exclude_and_skip_votes() {
        let mut request = SubscribeRequest::default();
        request.transactions.insert(
            "t".into(),
            SubscribeRequestFilterTransactions {
                vote: Some(false),
                account_include: vec![mock_account(1)],
                account_exclude: vec![mock_account(3)],
                ..Default::default()
            },
        );
        let filters = Filters::from_request(&request, 4).unwrap();
        let tx = |accounts, vote| Made::Transaction { slot: 1, index: 0, accounts, vote, failed: false };
        assert_eq!(filters.matches(&tx([1, 2], false)), ["t"]);
        assert!(filters.matches(&tx([1, 2], true)).is_empty());
        assert!(filters.matches(&tx([1, 3], false)).is_empty());
        assert!(filters.matches(&tx([0, 2], false)).is_empty());
    }

    #[test]
    fn a_filter_the_mock_does_not_serve_is_refused_by_name() {
        let mut request = SubscribeRequest::default();
        request.blocks.insert("b".into(), Default::default());
        let refused = Filters::from_request(&request, 4).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        assert!(refused.message().contains("'blocks'"), "{}", refused.message());
    }
}
