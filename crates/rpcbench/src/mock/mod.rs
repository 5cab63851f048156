//! Built-in mock JSON-RPC nodes: a static baseline server, a synthetic Solana node and a
//! synthetic Ethereum node, each with combinable fault knobs (latency, blocking latency,
//! injected errors, rate limiting and periodic stalls), served over HTTP/1.1 and HTTP/2 (h2c
//! with prior knowledge on the same port, or ALPN `h2` with [`MockOptions::tls`]) and over
//! WebSocket on the same port (`ws://host:port/`), with subscriptions (`ws.rs`).
//!
//! A [`MockServer`] binds synchronously and runs on threads of its own with its own tokio
//! runtime, so it can be started from plain sync code, from inside a `#[tokio::test]` or
//! beside the load engine:
//!
//! ```no_run
//! use rpcbench::mock::{Chain, MockOptions, MockServer};
//!
//! let server = MockServer::start(MockOptions::new(Chain::Solana)).expect("bind");
//! println!("mock node at {}", server.url());
//! server.stop();
//! ```

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

mod dispatch;
mod ethereum;
mod faults;
mod geyser;
mod geyser_sends;
mod h2;
mod http;
mod limiter_log;
mod mempool;
mod mempool_rpc;
pub(crate) mod prng;
mod read_log;
mod rest;
mod rpc;
mod server;
mod solana;
mod solana_block_signatures;
mod solana_blocks;
mod solana_sigverify;
mod solana_tx;
mod static_chain;
mod tls;
mod ws;
mod ws_state;

pub use dispatch::Dispatcher;
pub use faults::{
    parse_error_rate, parse_rate_limit, BlockingLatency, FaultParseError, Faults, HeadLagUnderLoad, Latency,
    MethodLatencies, RateLimitStyle, Stall,
};
pub use geyser::{mock_account, mock_owner, GeyserMock, GeyserMockError, GeyserMockOptions, GeyserTruth};
pub use geyser_sends::GeyserSends;
pub use limiter_log::{LimiterDecision, LimiterLog};
pub use mempool::TxPoolOptions;
pub use read_log::ReadLog;
pub use server::MockServer;
pub use solana_tx::SolanaTxOptions;
pub use ws_state::WsStats;

/// Which kind of node a [`MockServer`] pretends to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Chain {
    /// Answers every request with `"result":"0x1"`: the performance baseline.
    Static,
    /// A synthetic Solana ledger with the common RPC methods.
    Solana,
    /// A synthetic EVM chain with the common `eth_*` methods.
    Ethereum,
}

/// The methods the Solana mock answers (its dispatch; a test keeps the two alike).
const SOLANA_METHODS: &[&str] = &[
    "getSlot",
    "getBlockHeight",
    "getHealth",
    "getVersion",
    "getFirstAvailableBlock",
    "getGenesisHash",
    "getTransactionCount",
    "getEpochInfo",
    "getLatestBlockhash",
    "getBalance",
    "getAccountInfo",
    "getMultipleAccounts",
    "getBlock",
    "getBlocks",
    "getBlocksWithLimit",
    "getTransaction",
    "getSignaturesForAddress",
];

/// The methods the Ethereum mock answers (its dispatch; a test keeps the two alike).
const ETHEREUM_METHODS: &[&str] = &[
    "eth_chainId",
    "net_version",
    "net_listening",
    "web3_clientVersion",
    "eth_syncing",
    "eth_blockNumber",
    "eth_gasPrice",
    "eth_maxPriorityFeePerGas",
    "eth_feeHistory",
    "eth_getBalance",
    "eth_getTransactionCount",
    "eth_getCode",
    "eth_call",
    "eth_estimateGas",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getBlockTransactionCountByNumber",
    "eth_getTransactionByHash",
    "eth_getTransactionReceipt",
    "eth_getLogs",
];

/// A method a mock node does not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnknownMethodError {
    /// The node has no such method: the nearest it has (or all of them).
    NotAnswered {
        /// The node.
        chain: Chain,
        /// The method asked for.
        method: String,
        /// `did you mean …?` or the node's methods.
        offer: String,
    },
}

impl fmt::Display for UnknownMethodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnknownMethodError::NotAnswered { chain, method, offer } => {
                write!(f, "the {chain} node has no method '{method}': {offer}")
            }
        }
    }
}

impl std::error::Error for UnknownMethodError {}

impl Chain {
    /// Every chain, in the order the command line lists them.
    pub const ALL: [Chain; 3] = [Chain::Static, Chain::Solana, Chain::Ethereum];

    /// The methods this node answers; `None` for the static node, which answers any.
    pub fn methods(self) -> Option<&'static [&'static str]> {
        match self {
            Chain::Static => None,
            Chain::Solana => Some(SOLANA_METHODS),
            Chain::Ethereum => Some(ETHEREUM_METHODS),
        }
    }

    /// Refuses a method this node does not answer, naming the nearest it does (or all).
    pub fn check_method(self, method: &str) -> Result<(), UnknownMethodError> {
        let Some(methods) = self.methods() else { return Ok(()) };
        if methods.contains(&method) {
            return Ok(());
        }
        let lower = method.to_ascii_lowercase();
        let mut near: Vec<&str> = methods
            .iter()
            .copied()
            .filter(|known| {
                let known_lower = known.to_ascii_lowercase();
                known_lower.contains(&lower)
                    || lower.contains(&known_lower)
                    || edit_distance(&known_lower, &lower) <= 3
            })
            .collect();
        near.truncate(5);
        let offer = if near.is_empty() {
            format!("its methods: {}", methods.join(", "))
        } else {
            format!("did you mean {}?", near.join(", "))
        };
        Err(UnknownMethodError::NotAnswered { chain: self, method: method.to_string(), offer })
    }

    /// The lowercase name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Chain::Static => "static",
            Chain::Solana => "solana",
            Chain::Ethereum => "ethereum",
        }
    }
}

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Levenshtein distance of two short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The error of parsing a [`Chain`] name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownChain(pub String);

impl fmt::Display for UnknownChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown chain '{}': expected static, solana or ethereum", self.0)
    }
}

impl std::error::Error for UnknownChain {}

impl FromStr for Chain {
    type Err = UnknownChain;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "static" => Ok(Chain::Static),
            "solana" | "sol" => Ok(Chain::Solana),
            "ethereum" | "eth" | "evm" => Ok(Chain::Ethereum),
            _ => Err(UnknownChain(s.to_string())),
        }
    }
}

/// How a mock node refuses a batch longer than its limit, as the node it imitates does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BatchLimitStyle {
    /// geth: an array of one -32600 "batch too large" error with the first call's id.
    #[default]
    Geth,
    /// erigon: a bare error object (not an array), -32000 "batch limit N exceeded", id null.
    Erigon,
}

impl FromStr for BatchLimitStyle {
    type Err = FaultParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "geth" => Ok(BatchLimitStyle::Geth),
            "erigon" => Ok(BatchLimitStyle::Erigon),
            other => {
                Err(FaultParseError { input: other.to_string(), expected: "geth or erigon".to_string() })
            }
        }
    }
}

/// Everything a [`MockServer`] needs to start. [`MockOptions::new`] gives sensible defaults.
#[derive(Debug, Clone)]
pub struct MockOptions {
    /// The kind of node.
    pub chain: Chain,
    /// The address to bind; port 0 picks a free port (default `127.0.0.1:0`).
    pub listen: SocketAddr,
    /// Worker threads of the server's tokio runtime (default 1: one core).
    pub threads: usize,
    /// Seed of the synthetic ledger and of the injected faults.
    pub seed: u64,
    /// Time between slots (Solana, default 400ms) or blocks (Ethereum, default 2s).
    pub slot_time: Duration,
    /// The EVM chain id answered by `eth_chainId` and `net_version` (default 1337).
    pub chain_id: u64,
    /// Fault knobs, all off by default.
    pub faults: Faults,
    /// Largest accepted request body; larger bodies get HTTP 413 (default 1 MiB).
    pub max_body_bytes: usize,
    /// An answer body (HTTP/1.1 or HTTP/2) longer than this is cut to this many bytes, as a
    /// proxy with a bounded response buffer does: the client gets invalid JSON (default: none).
    pub max_response_bytes: Option<usize>,
    /// Longest accepted batch; longer ones are refused as [`MockOptions::batch_limit_style`]
    /// says (default 100).
    pub max_batch_len: usize,
    /// How a batch over `max_batch_len` is refused (default geth's).
    pub batch_limit_style: BatchLimitStyle,
    /// Whether HTTP/2 is served (default true): h2c with prior knowledge on the same port as
    /// HTTP/1.1, and ALPN `h2` over TLS. False serves HTTP/1.1 only.
    pub http2: bool,
    /// The SETTINGS_MAX_CONCURRENT_STREAMS an HTTP/2 connection advertises (default: none,
    /// unlimited).
    pub max_streams: Option<u32>,
    /// After this many requests accepted on an HTTP/2 connection, the server answers them and
    /// sends GOAWAY, like nginx's `http2_max_requests` (default: never).
    pub goaway_after: Option<u64>,
    /// Share (0..=1) of HTTP/2 streams answered with RST_STREAM REFUSED_STREAM instead of a
    /// response, drawn from the seeded generator (default 0).
    pub refuse_rate: f64,
    /// Blocks (Ethereum) or slots (Solana) the node stays behind the true head: its head, what
    /// it serves and its subscriptions' heads are this many behind a node without it (default
    /// 0), so that freshness is measured against known truth.
    pub head_lag: u64,
    /// A new head shows this long after it was produced (default: at once).
    pub head_delay: Duration,
    /// The head answered (`eth_blockNumber`, `getSlot`) is this many ahead of what the node
    /// serves (default 0): a phantom head, for the freshness check that fetches the block.
    pub head_phantom: u64,
    /// The head stops advancing for the pause of every period (it then catches up at once):
    /// a node that stalls now and then (default: never).
    pub head_stall: Option<Stall>,
    /// The head falls further behind while the node is loaded (default: never).
    pub head_lag_under_load: Option<HeadLagUnderLoad>,
    /// Serve HTTPS with a self-signed certificate (default: plain HTTP).
    pub tls: Option<MockTls>,
    /// WebSocket: share (0..=1) of subscription notifications not sent, drawn per
    /// (subscription, item) from the seeded generator and counted in [`WsStats`] (default 0).
    pub ws_drop: f64,
    /// WebSocket: share (0..=1) of subscription notifications sent twice (default 0).
    pub ws_duplicate: f64,
    /// WebSocket: a delay added before each notification is sent (default none).
    pub ws_delay: Option<Duration>,
    /// WebSocket: a connection with more than this many notifications queued unsent when the
    /// next block or slot comes is closed with code 1008 (default: none set, a built-in bound
    /// of 4096); one block's or slot's own notifications may outnumber it.
    pub ws_max_queue: Option<usize>,
    /// WebSocket: upgrades past this many open WebSocket connections get HTTP 503 (default:
    /// unlimited).
    pub ws_max_connections: Option<usize>,
    /// WebSocket: subscribe calls past this many subscriptions open on one connection get the
    /// JSON-RPC error -32000 "too many subscriptions on this connection (limit N)" (default:
    /// unlimited).
    pub ws_max_subscriptions: Option<usize>,
    /// WebSocket: every connection is closed this long after it opened, with a close frame
    /// 1001 "going away" (as a provider's idle limit, deploy or load shedding does), counted
    /// in [`WsStats::closed_on_schedule`] (default: never).
    pub ws_close_after: Option<Duration>,
    /// WebSocket: upgrades past this many over the server's life get HTTP 503 (a node that
    /// refuses every reconnect; default: unlimited).
    pub ws_max_upgrades: Option<u64>,
    /// Most connections open at once; one more is closed at once (default `None`: the
    /// open-file limit less 64).
    pub max_connections: Option<usize>,
    /// An HTTP/1.1 connection that has not sent a complete request within this, or stays idle
    /// this long between requests, is closed (default 60 s; `None`: never).
    pub idle_timeout: Option<Duration>,
    /// Ethereum: a mempool with real accounts, whose blocks (one per slot time) include the
    /// transactions sent to it (`None`: the synthetic chain only).
    pub tx_pool: Option<TxPoolOptions>,
    /// Solana: `sendTransaction` verified and landed, airdrops and balances
    /// (`solana_tx.rs`; `None`: the synthetic ledger only).
    pub solana_tx: Option<SolanaTxOptions>,
}

/// HTTPS for a [`MockServer`]: a self-signed certificate for `localhost` and `127.0.0.1`,
/// generated at start and written as PEM files (`cert.pem`, `key.pem`) into a directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MockTls {
    /// Where to write the certificate and key; `None` creates a new directory under
    /// [`std::env::temp_dir`].
    pub dir: Option<PathBuf>,
}

impl MockOptions {
    /// Default options for `chain`, listening on `127.0.0.1:0`.
    pub fn new(chain: Chain) -> Self {
        let slot_time = match chain {
            Chain::Ethereum => Duration::from_secs(2),
            Chain::Static | Chain::Solana => Duration::from_millis(400),
        };
        MockOptions {
            chain,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: 1,
            seed: 0,
            slot_time,
            chain_id: 1337,
            faults: Faults::default(),
            max_body_bytes: 1024 * 1024,
            max_response_bytes: None,
            max_batch_len: 100,
            batch_limit_style: BatchLimitStyle::Geth,
            http2: true,
            max_streams: None,
            goaway_after: None,
            refuse_rate: 0.0,
            head_lag: 0,
            head_delay: Duration::ZERO,
            head_phantom: 0,
            head_stall: None,
            head_lag_under_load: None,
            tls: None,
            ws_drop: 0.0,
            ws_duplicate: 0.0,
            ws_delay: None,
            ws_max_queue: None,
            ws_max_connections: None,
            ws_max_subscriptions: None,
            ws_close_after: None,
            ws_max_upgrades: None,
            max_connections: None,
            idle_timeout: Some(Duration::from_secs(60)),
            tx_pool: None,
            solana_tx: None,
        }
    }

    /// Checks the options, naming the first bad one.
    pub(crate) fn validate(&self) -> Result<(), MockError> {
        let invalid = |name: &'static str, reason: String| Err(MockError::InvalidOption { name, reason });
        if self.threads == 0 {
            return invalid("threads", "must be at least 1".into());
        }
        // A latency for a method the node does not have would never apply, without a word.
        let named = [
            (
                "latency",
                self.faults.latency_by_method.iter().map(|(method, _)| method.as_str()).collect::<Vec<_>>(),
            ),
            (
                "blocking_latency",
                self.faults.blocking_latency_by_method.iter().map(|(method, _)| method.as_str()).collect(),
            ),
        ];
        for (name, methods) in named {
            for method in methods {
                if let Err(reason) = self.chain.check_method(method) {
                    return invalid(name, reason.to_string());
                }
            }
        }
        if self.slot_time.is_zero() {
            return invalid("slot_time", "must be longer than zero".into());
        }
        if self.max_body_bytes == 0 {
            return invalid("max_body_bytes", "must be at least 1".into());
        }
        if self.max_response_bytes == Some(0) {
            return invalid("max_response_bytes", "must be at least 1".into());
        }
        if self.max_batch_len == 0 {
            return invalid("max_batch_len", "must be at least 1".into());
        }
        if self.max_streams == Some(0) {
            return invalid("max_streams", "must be at least 1".into());
        }
        if self.goaway_after == Some(0) {
            return invalid("goaway_after", "must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.refuse_rate) {
            return invalid("refuse_rate", format!("must be between 0 and 1, not {}", self.refuse_rate));
        }
        for (name, share) in [("ws_drop", self.ws_drop), ("ws_duplicate", self.ws_duplicate)] {
            if !(0.0..=1.0).contains(&share) {
                return invalid(name, format!("must be between 0 and 1, not {share}"));
            }
        }
        if let Some(solana_tx) = &self.solana_tx {
            if !(0.0..=1.0).contains(&solana_tx.drop_share) {
                return invalid(
                    "solana_tx_drop",
                    format!("must be between 0 and 1, not {}", solana_tx.drop_share),
                );
            }
            if !(0.0..=1.0).contains(&solana_tx.unnotified_share) {
                return invalid(
                    "solana_tx_unnotified",
                    format!("must be between 0 and 1, not {}", solana_tx.unnotified_share),
                );
            }
            if solana_tx.blockhash_max_age == 0 {
                return invalid("blockhash_max_age", "must be at least 1".into());
            }
        }
        if self.ws_max_queue == Some(0) {
            return invalid("ws_max_queue", "must be at least 1".into());
        }
        if self.max_connections == Some(0) {
            return invalid("max_connections", "must be at least 1".into());
        }
        if self.idle_timeout.is_some_and(|idle| idle.is_zero()) {
            return invalid("idle_timeout", "must be longer than zero".into());
        }
        if self.ws_max_subscriptions == Some(0) {
            return invalid("ws_max_subscriptions", "must be at least 1".into());
        }
        if self.ws_max_connections == Some(0) {
            return invalid("ws_max_connections", "must be at least 1".into());
        }
        if self.ws_close_after.is_some_and(|after| after.is_zero()) {
            return invalid("ws_close_after", "must be longer than zero".into());
        }
        self.faults.validate().map_err(|(name, reason)| MockError::InvalidOption { name, reason })
    }
}

/// Why a [`MockServer`] could not start.
#[derive(Debug)]
pub enum MockError {
    /// The listen address could not be bound.
    Bind {
        /// The address that was asked for.
        addr: SocketAddr,
        /// The underlying error.
        source: io::Error,
    },
    /// An option is out of range.
    InvalidOption {
        /// The option's name.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The runtime or its thread could not be created.
    Runtime(io::Error),
    /// The TLS certificate could not be made or written.
    Tls(String),
}

impl fmt::Display for MockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MockError::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
            MockError::InvalidOption { name, reason } => write!(f, "invalid {name}: {reason}"),
            MockError::Runtime(source) => {
                write!(f, "cannot start the mock server runtime: {source}")
            }
            MockError::Tls(reason) => write!(f, "cannot set up TLS: {reason}"),
        }
    }
}

impl std::error::Error for MockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MockError::Bind { source, .. } | MockError::Runtime(source) => Some(source),
            MockError::InvalidOption { .. } | MockError::Tls(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_names_round_trip() {
        for chain in [Chain::Static, Chain::Solana, Chain::Ethereum] {
            assert_eq!(chain.to_string().parse::<Chain>(), Ok(chain));
        }
        let err = "bitcoin".parse::<Chain>().unwrap_err();
        assert!(err.to_string().contains("'bitcoin'"), "{err}");
        assert!(err.to_string().contains("static, solana or ethereum"), "{err}");
    }

    /// The string literals that open the arms of a chain's `call` dispatch, in order.
    fn dispatched(source: &str) -> Vec<String> {
        let body = source.split("pub(crate) fn call(&self, method: &str").nth(1).expect("the dispatch");
        let body = body.split("\n    }\n").next().unwrap();
        body.lines()
            .filter(|line| line.starts_with("            \"") && line.contains("\" =>"))
            .flat_map(|line| {
                line.split(" => ")
                    .next()
                    .unwrap()
                    .split(" | ")
                    .map(|name| name.trim_matches([' ', '"']).to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn each_chains_method_list_is_exactly_what_it_dispatches() {
        assert_eq!(dispatched(include_str!("solana.rs")), SOLANA_METHODS);
        assert_eq!(dispatched(include_str!("ethereum.rs")), ETHEREUM_METHODS);
        for chain in [Chain::Solana, Chain::Ethereum] {
            let node = dispatch::Dispatcher::new(&MockOptions::new(chain)).unwrap();
            for method in chain.methods().unwrap() {
                let body = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"{method}\"}}");
                let answer = String::from_utf8(node.answer(body.as_bytes()).unwrap()).unwrap();
                assert!(!answer.contains("-32601"), "{chain} {method}: {answer}");
            }
        }
    }

    #[test]
    fn a_latency_for_a_method_the_chain_does_not_have_is_refused_naming_the_nearest() {
        let mut options = MockOptions::new(Chain::Ethereum);
        options.faults.latency_by_method =
            vec![("getBlock".into(), Latency::fixed(Duration::from_millis(50)))];
        match options.validate() {
            Err(MockError::InvalidOption { name: "latency", reason }) => {
                assert!(reason.contains("the ethereum node has no method 'getBlock'"), "{reason}");
                assert!(reason.contains("eth_getBlockByNumber"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        options.faults.latency_by_method.clear();
        options.faults.blocking_latency_by_method = vec![("nonsense".into(), Duration::from_millis(5))];
        match options.validate() {
            Err(MockError::InvalidOption { name: "blocking_latency", reason }) => {
                assert!(reason.contains("its methods: eth_chainId"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        options.faults.blocking_latency_by_method = vec![("eth_call".into(), Duration::from_millis(5))];
        assert!(options.validate().is_ok());
        let mut any = MockOptions::new(Chain::Static);
        any.faults.latency_by_method = vec![("getBlock".into(), Latency::fixed(Duration::from_millis(1)))];
        assert!(any.validate().is_ok(), "the static node answers any method");
    }

    #[test]
    fn bad_options_are_named() {
        let mut options = MockOptions::new(Chain::Static);
        options.threads = 0;
        let err = options.validate().unwrap_err();
        assert!(err.to_string().contains("threads"), "{err}");
        let mut options = MockOptions::new(Chain::Static);
        options.faults.error_rate = 1.5;
        let err = options.validate().unwrap_err();
        assert!(err.to_string().contains("error_rate"), "{err}");
        for (name, change) in [
            ("max_streams", (|o: &mut MockOptions| o.max_streams = Some(0)) as fn(&mut MockOptions)),
            ("goaway_after", |o| o.goaway_after = Some(0)),
            ("refuse_rate", |o| o.refuse_rate = 2.0),
            ("refuse_rate", |o| o.refuse_rate = f64::NAN),
            ("ws_drop", |o| o.ws_drop = 2.0),
            ("ws_duplicate", |o| o.ws_duplicate = -0.1),
            ("ws_max_queue", |o| o.ws_max_queue = Some(0)),
            ("ws_max_connections", |o| o.ws_max_connections = Some(0)),
            ("ws_max_subscriptions", |o| o.ws_max_subscriptions = Some(0)),
            ("ws_close_after", |o| o.ws_close_after = Some(Duration::ZERO)),
            ("max_connections", |o| o.max_connections = Some(0)),
            ("idle_timeout", |o| o.idle_timeout = Some(Duration::ZERO)),
        ] {
            let mut options = MockOptions::new(Chain::Static);
            change(&mut options);
            let err = options.validate().unwrap_err();
            assert!(err.to_string().contains(name), "{err}");
        }
    }
}
