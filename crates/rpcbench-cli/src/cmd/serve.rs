//! `rpcbench serve`: runs one of the built-in mock nodes (static, solana or ethereum), with
//! its fault knobs, until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use rpcbench::mock::BatchLimitStyle;
use rpcbench::mock::{
    parse_error_rate, parse_rate_limit, BlockingLatency, Chain, Faults, GeyserMock, GeyserMockOptions,
    Latency, MethodLatencies, MockError, MockOptions, MockServer, MockTls, Stall,
};
use rpcbench::{parse_duration, parse_size, UnitError};

/// `--chain`'s values, so that help and shell completion list the chains (with their short
/// aliases accepted).
fn chain_names() -> impl clap::builder::TypedValueParser<Value = Chain> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new([
        PossibleValue::new("static").help("answers \"0x1\" to everything: the performance baseline"),
        PossibleValue::new("solana").alias("sol").help("a synthetic Solana ledger"),
        PossibleValue::new("ethereum").aliases(["eth", "evm"]).help("a synthetic EVM chain"),
    ])
    .map(|name| name.parse::<Chain>().expect("a possible value is a chain"))
}

/// Options of `rpcbench serve`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "Examples:
  rpcbench serve --chain solana                      # http://127.0.0.1:8899 (WebSocket too)
  rpcbench serve --chain ethereum --block-time 2s    # http://127.0.0.1:8545
  rpcbench serve --chain ethereum --listen 127.0.0.1:9545 --latency 5ms:2ms --error-rate 1%
  rpcbench serve --chain static --threads 2 --rate-limit 5000/s --stall 2s/30s
  rpcbench serve --chain solana --tls --tls-dir /tmp/rpcbench-tls   # https://127.0.0.1:8899")]
pub struct ServeArgs {
    /// The node to run: static (answers "0x1" to everything), solana or ethereum.
    #[arg(long, value_parser = chain_names())]
    pub chain: Chain,
    /// The address to listen on (port 0 picks a free port) [default: 127.0.0.1:8545 for
    /// ethereum, 127.0.0.1:8899 for solana and static, the nodes' usual ports].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// Also serve a Solana Yellowstone gRPC (Geyser) feed (with --chain solana): slots with all
    /// six stages at --slot-time, transactions, account writes, block metas, `created_at`
    /// stamps, and Ping/GetSlot/GetBlockHeight/GetLatestBlockhash.
    #[arg(long)]
    pub grpc: bool,
    /// Where the gRPC feed listens.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:10000", requires = "grpc")]
    pub grpc_listen: SocketAddr,
    /// gRPC feed: delay every update this long (a slower provider).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "grpc")]
    pub grpc_delay: Option<Duration>,
    /// gRPC feed: drop one update in N.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "grpc")]
    pub grpc_drop_one_in: u64,
    /// gRPC feed: end every subscription this long after it started (status unavailable).
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, requires = "grpc")]
    pub grpc_disconnect_every: Option<Duration>,
    /// gRPC feed: updates a subscriber may fall behind before it is cut off ("client lagged").
    #[arg(long, value_name = "N", default_value_t = 4096, requires = "grpc")]
    pub grpc_queue: usize,
    /// gRPC feed: the x-token clients must send.
    #[arg(long, value_name = "TOKEN", requires = "grpc")]
    pub grpc_x_token: Option<String>,
    /// Updates the gRPC feed keeps for a subscriber that resubscribes from_slot (replayed
    /// before the live ones); 0 refuses from_slot, as a server without replay does.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "grpc")]
    pub grpc_from_slot_history: usize,
    /// The gRPC feed answers one unary call (GetSlot, Ping...) in N with status unavailable
    /// (0: none): a server failing mid-run.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "grpc")]
    pub grpc_unary_fail_one_in: u64,
    /// Worker threads of the server (1 = one core).
    #[arg(long, default_value_t = 1, value_parser = parse_threads)]
    pub threads: usize,
    /// Seed of the synthetic ledger and of the injected errors.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Time between slots or blocks (default 400ms for solana, 12s for ethereum).
    #[arg(long, visible_alias = "block-time", value_parser = parse_positive_duration)]
    pub slot_time: Option<Duration>,
    /// Chain id answered by the ethereum node.
    #[arg(long, default_value_t = 1337)]
    pub chain_id: u64,
    /// Ethereum: a mempool that takes eth_sendRawTransaction (checking signature, chain id,
    /// nonce and balance; the dev mnemonic's first 10 accounts funded) and includes the
    /// transactions in the next blocks, for `rpcbench tx`.
    #[arg(long)]
    pub tx_pool: bool,
    /// With --tx-pool: gas included per block at most; the rest waits in the pool for the
    /// next blocks (a transfer is 21000 gas).
    #[arg(long, value_name = "GAS", default_value_t = 30_000_000, requires = "tx_pool", value_parser = clap::value_parser!(u64).range(21_000..))]
    pub block_gas_limit: u64,
    /// Solana: take sendTransaction (verifying ed25519 signatures and blockhash age, refusing
    /// a signature seen before), land each in the next slot with a block, and answer
    /// signatureSubscribe, getSignatureStatuses, requestAirdrop and getBalance, for `rpcbench tx`.
    #[arg(long)]
    pub solana_tx: bool,
    /// With --solana-tx: share of accepted transactions that never land (0 to 1).
    #[arg(long, value_name = "P", default_value_t = 0.0, requires = "solana_tx")]
    pub solana_tx_drop: f64,
    /// With --solana-tx: block heights a blockhash stays valid (Solana: 150); fewer makes
    /// transactions expire sooner.
    #[arg(long, value_name = "N", default_value_t = 150, requires = "solana_tx")]
    pub blockhash_max_age: u64,
    /// Stay N blocks (slots) behind the true head: the head answered, what is served and the
    /// subscriptions' heads, so that a freshness check has known truth.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub head_lag: u64,
    /// Show each new head this long after it is produced (200ms).
    #[arg(long, value_name = "D", value_parser = crate::args::duration)]
    pub head_delay: Option<Duration>,
    /// Answer a head N blocks (slots) ahead of what is served (`eth_blockNumber`, `getSlot`):
    /// a phantom head, which `rpcbench heads` finds by fetching the block
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub head_phantom: u64,
    /// The head stops advancing for the pause of every period, pause/period: 2s/10s (then
    /// catches up at once)
    #[arg(long, value_name = "PAUSE/PERIOD")]
    pub head_stall: Option<Stall>,
    /// Fall N more blocks (slots) behind while answering more than RATE requests a second
    /// (counted over the last 250 ms, a window sliding by 50 ms, so steps shorter than a second
    /// count too), N@RATE: 5@200; a node that lags under load, for capacity --heads
    #[arg(long, value_name = "N@RATE")]
    pub head_lag_under_load: Option<rpcbench::mock::HeadLagUnderLoad>,
    /// Asynchronous latency added to every request: 5ms, or base:jitter such as 5ms:2ms; or per
    /// JSON-RPC method, getBlock=50ms,default=1ms (a batch waits for its slowest call).
    #[arg(long, value_name = "LATENCY")]
    pub latency: Option<MethodLatencies<Latency>>,
    /// Latency that blocks the worker thread (std::thread::sleep), such as 10ms; or per method,
    /// getBlock=50ms,default=0ms.
    #[arg(long, value_name = "LATENCY")]
    pub blocking_latency: Option<MethodLatencies<BlockingLatency>>,
    /// Fraction of calls answered with -32603 "Internal error (injected)": 0.05 or 5%.
    #[arg(long, default_value = "0", value_parser = parse_error_rate)]
    pub error_rate: f64,
    /// Requests per second over all connections; the excess gets HTTP 429: 50/s.
    #[arg(long, value_parser = parse_rate_limit)]
    pub rate_limit: Option<f64>,
    /// With --rate-limit: requests let through at once after a quiet spell (the bucket's size)
    /// [default: a tenth of a second's worth, at least 1].
    #[arg(long, value_name = "N", requires = "rate_limit")]
    pub burst: Option<f64>,
    /// With --rate-limit: how the excess is answered, 429 (HTTP 429 with Retry-After), jsonrpc
    /// (HTTP 200 with the JSON-RPC error -32005 "rate limit exceeded") or batch-items (every
    /// call takes a token, one by one inside a batch; a call over the budget gets -32005 with
    /// its own id inside a valid array, as QuickNode answers).
    #[arg(long, value_name = "STYLE", default_value = "429", value_parser = ["429", "jsonrpc", "batch-items"], requires = "rate_limit")]
    pub rate_limit_style: String,
    /// With --rate-limit: every answer announces the limiter's state, as some providers do:
    /// X-RateLimit-Limit (the burst), X-RateLimit-Remaining (whole requests left now),
    /// X-RateLimit-Reset (seconds until the budget is full again), and the same as the IETF
    /// draft's RateLimit-Limit/-Remaining/-Reset.
    #[arg(long, requires = "rate_limit")]
    pub announce_headers: bool,
    /// A periodic full pause, pause/period: 2s/10s.
    #[arg(long)]
    pub stall: Option<Stall>,
    /// Largest accepted request body; larger ones get HTTP 413.
    #[arg(long, default_value = "1MiB", value_parser = parse_body_size)]
    pub max_body: usize,
    /// Cut every HTTP answer longer than this to this many bytes (a proxy's bounded response
    /// buffer): the truth `limits` finds as the largest response body.
    #[arg(long, value_name = "SIZE", value_parser = parse_body_size)]
    pub max_response_body: Option<usize>,
    /// Longest accepted batch; a longer one is refused as --batch-limit-style says (default as
    /// geth 1.17 does: an array of one -32600 "batch too large" error with the first call's id).
    #[arg(long, visible_alias = "batch-limit", default_value_t = 100, value_parser = parse_batch_len)]
    pub max_batch: usize,
    /// How a batch over --max-batch is refused: geth (an array of one -32600 "batch too large")
    /// or erigon (a bare -32000 "batch limit N exceeded" object).
    #[arg(long, value_name = "STYLE", default_value = "geth", value_parser = parse_batch_limit_style)]
    pub batch_limit_style: BatchLimitStyle,
    /// Serve HTTP/1.1 only: no h2c, and TLS offers only ALPN http/1.1.
    #[arg(long)]
    pub http1_only: bool,
    /// HTTP/2: the SETTINGS_MAX_CONCURRENT_STREAMS advertised per connection.
    #[arg(long, value_name = "N")]
    pub max_streams: Option<u32>,
    /// HTTP/2: after N requests on a connection, answer them, send GOAWAY and close (as nginx's
    /// http2_max_requests).
    #[arg(long, value_name = "N")]
    pub goaway_after: Option<u64>,
    /// HTTP/2: share of streams (0 to 1) reset with REFUSED_STREAM instead of answered.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub refuse_stream_rate: f64,
    /// Serve HTTPS (HTTP/2 and HTTP/1.1 by ALPN) with a self-signed certificate for localhost
    /// and 127.0.0.1; its path is printed on startup.
    #[arg(long)]
    pub tls: bool,
    /// Where --tls writes cert.pem and key.pem (default: a new directory under the temporary
    /// directory).
    #[arg(long, value_name = "DIR", requires = "tls")]
    pub tls_dir: Option<PathBuf>,
    /// WebSocket: share of subscription notifications dropped (0 to 1), drawn per
    /// subscription and item from --seed.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub ws_drop: f64,
    /// WebSocket: share of subscription notifications sent twice (0 to 1).
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub ws_duplicate: f64,
    /// WebSocket: delay added before each notification is sent, such as 200ms.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub ws_delay: Option<Duration>,
    /// WebSocket: close (1008) a connection with more than N notifications queued unsent when
    /// the next block or slot comes.
    #[arg(long, value_name = "N")]
    pub ws_max_queue: Option<usize>,
    /// WebSocket: upgrades past N open WebSocket connections get HTTP 503.
    #[arg(long, value_name = "N")]
    pub ws_max_connections: Option<usize>,
    /// WebSocket: subscribe calls past N subscriptions open on one connection get the JSON-RPC
    /// error -32000 "too many subscriptions on this connection (limit N)".
    #[arg(long, value_name = "N")]
    pub max_subscriptions: Option<usize>,
    /// WebSocket: close every connection this long after it opened, with 1001 "going away"
    /// (as a provider's idle limit or deploy does), such as 2s.
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub ws_close_after: Option<Duration>,
    /// WebSocket: upgrades past N over the server's life get HTTP 503 (a node that refuses
    /// every reconnect).
    #[arg(long, value_name = "N")]
    pub ws_max_upgrades: Option<u64>,
    #[command(flatten)]
    pub caps: crate::args::caps::ClientCapArgs,
}

fn parse_threads(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(threads) if (1..=1024).contains(&threads) => Ok(threads),
        _ => Err("expected a number of threads between 1 and 1024".to_string()),
    }
}

fn parse_batch_limit_style(text: &str) -> Result<BatchLimitStyle, String> {
    text.parse().map_err(|err: rpcbench::mock::FaultParseError| err.to_string())
}

fn parse_batch_len(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(len) if len >= 1 => Ok(len),
        _ => Err("expected a batch length of at least 1".to_string()),
    }
}

fn parse_positive_duration(text: &str) -> Result<Duration, UnitError> {
    match parse_duration(text)? {
        duration if duration.is_zero() => {
            Err(UnitError { input: text.to_string(), expected: "a duration longer than zero, such as 400ms" })
        }
        duration => Ok(duration),
    }
}

fn parse_body_size(text: &str) -> Result<usize, UnitError> {
    let err = || UnitError { input: text.to_string(), expected: "a size of at least 1 byte, such as 1MiB" };
    let size = parse_size(text)?;
    usize::try_from(size).ok().filter(|size| *size > 0).ok_or_else(err)
}

/// Where a node listens when `--listen` is not given: the port its real counterpart uses
/// (geth's 8545, Solana's 8899), on the loopback address.
pub fn default_listen(chain: Chain) -> SocketAddr {
    let port = match chain {
        Chain::Ethereum => 8545,
        _ => 8899,
    };
    SocketAddr::from(([127, 0, 0, 1], port))
}

impl ServeArgs {
    /// The gRPC feed's options these arguments describe.
    pub fn geyser_options(&self) -> GeyserMockOptions {
        GeyserMockOptions {
            listen: self.grpc_listen,
            slot_time: self.slot_time.unwrap_or(Duration::from_millis(400)),
            delay: self.grpc_delay.unwrap_or_default(),
            drop_one_in: self.grpc_drop_one_in,
            disconnect_every: self.grpc_disconnect_every,
            queue: self.grpc_queue,
            x_token: self.grpc_x_token.clone(),
            from_slot_history: self.grpc_from_slot_history,
            unary_fail_one_in: self.grpc_unary_fail_one_in,
            ..GeyserMockOptions::default()
        }
    }

    /// The server options these arguments describe.
    pub fn options(&self) -> MockOptions {
        let mut options = MockOptions::new(self.chain);
        options.listen = self.listen.unwrap_or_else(|| default_listen(self.chain));
        options.threads = self.threads;
        options.seed = self.seed;
        if let Some(slot_time) = self.slot_time {
            options.slot_time = slot_time;
        } else if self.chain == Chain::Ethereum {
            // Mainnet's block time; the library's default stays 2s.
            options.slot_time = Duration::from_secs(12);
        }
        options.chain_id = self.chain_id;
        if self.tx_pool {
            options.tx_pool = Some(rpcbench::mock::TxPoolOptions {
                block_gas_limit: self.block_gas_limit,
                ..rpcbench::mock::TxPoolOptions::default()
            });
        }
        if self.solana_tx {
            options.solana_tx = Some(rpcbench::mock::SolanaTxOptions {
                drop_share: self.solana_tx_drop,
                blockhash_max_age: self.blockhash_max_age,
                ..rpcbench::mock::SolanaTxOptions::default()
            });
        }
        options.faults = Faults {
            latency: self.latency.as_ref().and_then(|latency| latency.default),
            latency_by_method: self
                .latency
                .as_ref()
                .map(|latency| latency.by_method.clone())
                .unwrap_or_default(),
            blocking_latency: self
                .blocking_latency
                .as_ref()
                .and_then(|blocking| blocking.default)
                .map(|b| b.0),
            blocking_latency_by_method: self
                .blocking_latency
                .as_ref()
                .map(|blocking| blocking.by_method.iter().map(|(method, b)| (method.clone(), b.0)).collect())
                .unwrap_or_default(),
            error_rate: self.error_rate,
            rate_limit: self.rate_limit,
            rate_limit_burst: self.burst,
            // A test's knob (one stray refusal), not a server's.
            rate_limit_stray: None,
            rate_limit_style: self.rate_limit_style.parse().unwrap_or_default(),
            announce_headers: self.announce_headers,
            stall: self.stall,
            serial_service_time: None,
        };
        options.max_body_bytes = self.max_body;
        options.max_response_bytes = self.max_response_body;
        options.max_batch_len = self.max_batch;
        options.batch_limit_style = self.batch_limit_style;
        options.http2 = !self.http1_only;
        options.max_streams = self.max_streams;
        options.goaway_after = self.goaway_after;
        options.head_lag = self.head_lag;
        options.head_delay = self.head_delay.unwrap_or_default();
        options.head_phantom = self.head_phantom;
        options.head_stall = self.head_stall;
        options.head_lag_under_load = self.head_lag_under_load;
        options.refuse_rate = self.refuse_stream_rate;
        options.tls = self.tls.then(|| MockTls { dir: self.tls_dir.clone() });
        options.ws_drop = self.ws_drop;
        options.ws_duplicate = self.ws_duplicate;
        options.ws_delay = self.ws_delay;
        options.ws_max_queue = self.ws_max_queue;
        options.ws_max_connections = self.ws_max_connections;
        options.ws_max_subscriptions = self.max_subscriptions;
        options.ws_close_after = self.ws_close_after;
        options.ws_max_upgrades = self.ws_max_upgrades;
        // Zero is refused by the options' check, naming the flag.
        options.max_connections = self.caps.max_connections;
        options.idle_timeout = Some(self.caps.idle_timeout);
        options
    }
}

/// The command-line flag of a [`MockOptions`] field.
fn flag_of(option: &str) -> &'static str {
    match option {
        "threads" => "--threads",
        "slot_time" => "--slot-time",
        "max_body_bytes" => "--max-body",
        "max_response_bytes" => "--max-response-body",
        "max_batch_len" => "--max-batch",
        "error_rate" => "--error-rate",
        "rate_limit" => "--rate-limit",
        "rate_limit_burst" => "--burst",
        "stall" => "--stall",
        "latency" => "--latency",
        "blocking_latency" => "--blocking-latency",
        "max_streams" => "--max-streams",
        "goaway_after" => "--goaway-after",
        "refuse_rate" => "--refuse-stream-rate",
        "ws_drop" => "--ws-drop",
        "solana_tx_drop" => "--solana-tx-drop",
        "blockhash_max_age" => "--blockhash-max-age",
        "ws_duplicate" => "--ws-duplicate",
        "ws_max_queue" => "--ws-max-queue",
        "ws_max_connections" => "--ws-max-connections",
        "ws_max_subscriptions" => "--max-subscriptions",
        "ws_close_after" => "--ws-close-after",
        "max_connections" => "--max-connections",
        "idle_timeout" => "--idle-timeout",
        _ => "--chain",
    }
}

/// Runs the mock node until Ctrl-C. Exit code 2 for bad options, 1 if it cannot start.
pub fn run(args: ServeArgs) -> ExitCode {
    let chain = args.chain;
    if args.grpc && chain != Chain::Solana {
        eprintln!("error: --grpc: the Geyser feed is Solana's: give --chain solana");
        return ExitCode::from(2);
    }
    if args.tx_pool && chain != Chain::Ethereum {
        eprintln!("error: --tx-pool: the mempool is Ethereum's: give --chain ethereum");
        return ExitCode::from(2);
    }
    if args.solana_tx && chain != Chain::Solana {
        eprintln!("error: --solana-tx: give --chain solana");
        return ExitCode::from(2);
    }
    let server = match MockServer::start(args.options()) {
        Ok(server) => server,
        Err(MockError::InvalidOption { name, reason }) => {
            eprintln!("error: {}: {reason}", flag_of(name));
            return ExitCode::from(2);
        }
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    // Ctrl-C is watched before the server says it is listening: an interrupt sent as soon as
    // the line is read stops it cleanly (a handler installed later let it kill the process).
    let watched = tokio::runtime::Builder::new_current_thread().enable_all().build().and_then(|runtime| {
        let interrupt = {
            let _context = runtime.enter();
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?
        };
        Ok((runtime, interrupt))
    });
    let (runtime, mut interrupt) = match watched {
        Ok(both) => both,
        Err(err) => {
            eprintln!("error: cannot wait for Ctrl-C: {err}");
            server.stop();
            return ExitCode::FAILURE;
        }
    };
    eprintln!("rpcbench serve: {chain} node listening on {}", server.url());
    let geyser = if args.grpc {
        match GeyserMock::start(args.geyser_options()) {
            Ok(geyser) => {
                eprintln!("rpcbench serve: Geyser gRPC feed listening on {}", geyser.url());
                Some(geyser)
            }
            Err(rpcbench::mock::GeyserMockError::Setting(err)) => {
                server.stop();
                return crate::output::usage_error(crate::fields::ConfigError::from(err));
            }
            Err(err) => {
                eprintln!("error: --grpc: {err}");
                server.stop();
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    if let Some(certificate) = server.certificate_path() {
        eprintln!("rpcbench serve: TLS certificate (self-signed): {}", certificate.display());
    }
    let faults = describe_faults(&args);
    if !faults.is_empty() {
        eprintln!("rpcbench serve: faults: {}", faults.join(", "));
    }
    runtime.block_on(interrupt.recv());
    eprintln!("rpcbench serve: stopping");
    if let Some(geyser) = geyser {
        let truth = geyser.truth();
        let count =
            |counter: &std::sync::atomic::AtomicU64| counter.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "rpcbench serve: gRPC: {} slots, {} subscriptions ({} refused), {} updates sent, {} dropped, \
             {} subscribers cut off as lagging, {} disconnected on schedule",
            count(&truth.slots),
            count(&truth.subscriptions),
            count(&truth.refused),
            count(&truth.sent),
            count(&truth.dropped),
            count(&truth.lagged),
            count(&truth.disconnected)
        );
        geyser.stop();
    }
    let ws = server.ws_stats();
    if ws.subscriptions_opened > 0 {
        eprintln!(
            "rpcbench serve: websocket: {} subscriptions, {} notifications sent, {} dropped ({} of them \
             between two sent to the same newHeads or slot subscription, which its client can count \
             as gaps), {} duplicates, {} slow subscribers closed",
            ws.subscriptions_opened,
            ws.notifications_sent,
            ws.notifications_dropped,
            ws.drops_between_sent,
            ws.duplicates_sent,
            ws.subscribers_closed_slow
        );
    }
    server.stop();
    ExitCode::SUCCESS
}

fn describe_faults(args: &ServeArgs) -> Vec<String> {
    let mut faults = Vec::new();
    if let Some(latency) = &args.latency {
        faults.push(format!("latency {latency}"));
    }
    if let Some(blocking) = &args.blocking_latency {
        faults.push(format!("blocking latency {blocking}"));
    }
    if args.error_rate > 0.0 {
        faults.push(format!("error rate {}", args.error_rate));
    }
    if let Some(rate) = args.rate_limit {
        faults.push(format!("rate limit {rate}/s"));
    }
    if let Some(stall) = args.stall {
        faults.push(format!("stall {:?} every {:?}", stall.pause, stall.every));
    }
    if args.ws_drop > 0.0 {
        faults.push(format!("ws drop {}", args.ws_drop));
    }
    if args.ws_duplicate > 0.0 {
        faults.push(format!("ws duplicate {}", args.ws_duplicate));
    }
    if let Some(delay) = args.ws_delay {
        faults.push(format!("ws delay {delay:?}"));
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied())).map(|cli| cli.serve)
    }

    #[test]
    fn flags_build_options() {
        let args = parse(&[
            "--chain",
            "solana",
            "--listen",
            "127.0.0.1:0",
            "--latency",
            "5ms:2ms",
            "--error-rate",
            "5%",
            "--rate-limit",
            "50/s",
            "--stall",
            "2s/10s",
            "--max-body",
            "64KiB",
            "--slot-time",
            "100ms",
        ])
        .unwrap();
        let options = args.options();
        assert_eq!(options.chain, Chain::Solana);
        assert_eq!(options.faults.latency.unwrap().jitter, Duration::from_millis(2));
        let mixed = parse(&[
            "--chain",
            "solana",
            "--latency",
            "getBlock=50ms,default=1ms",
            "--blocking-latency",
            "getBlock=5ms",
        ])
        .unwrap()
        .options();
        assert_eq!(mixed.faults.latency, Some(Latency::fixed(Duration::from_millis(1))));
        assert_eq!(
            mixed.faults.latency_by_method,
            [("getBlock".to_string(), Latency::fixed(Duration::from_millis(50)))]
        );
        assert_eq!(mixed.faults.blocking_latency, None);
        assert_eq!(
            mixed.faults.blocking_latency_by_method,
            [("getBlock".to_string(), Duration::from_millis(5))]
        );
        assert_eq!(options.faults.error_rate, 0.05);
        assert_eq!(options.faults.rate_limit, Some(50.0));
        assert_eq!(options.faults.stall.unwrap().every, Duration::from_secs(10));
        assert_eq!(options.max_body_bytes, 65536);
        assert_eq!(options.max_response_bytes, None);
        let capped = parse(&["--chain", "ethereum", "--max-response-body", "1KiB"]).unwrap().options();
        assert_eq!(capped.max_response_bytes, Some(1024));
        assert!(parse(&["--chain", "ethereum", "--max-response-body", "0"]).is_err());
        assert_eq!(options.slot_time, Duration::from_millis(100));
        assert_eq!(parse(&["--chain", "ethereum"]).unwrap().options().slot_time, Duration::from_secs(12));
        assert_eq!(parse(&["--chain", "solana"]).unwrap().options().slot_time, Duration::from_millis(400));
        let ws = parse(&[
            "--chain",
            "ethereum",
            "--ws-drop",
            "0.1",
            "--ws-duplicate",
            "0.2",
            "--ws-delay",
            "50ms",
            "--ws-max-queue",
            "16",
            "--ws-max-connections",
            "3",
        ])
        .unwrap()
        .options();
        assert_eq!((ws.ws_drop, ws.ws_duplicate, ws.ws_delay), (0.1, 0.2, Some(Duration::from_millis(50))));
        assert_eq!((ws.ws_max_queue, ws.ws_max_connections), (Some(16), Some(3)));
        let closing = parse(&["--chain", "ethereum", "--ws-close-after", "2s", "--ws-max-upgrades", "3"])
            .unwrap()
            .options();
        assert_eq!(
            (closing.ws_close_after, closing.ws_max_upgrades),
            (Some(Duration::from_secs(2)), Some(3))
        );
        assert!(parse(&["--chain", "ethereum", "--ws-close-after", "soon"]).is_err());
        assert_eq!(parse(&["--chain", "ethereum"]).unwrap().options().listen.port(), 8545);
        assert_eq!(parse(&["--chain", "solana"]).unwrap().options().listen.port(), 8899);
        assert_eq!(parse(&["--chain", "static"]).unwrap().options().listen.port(), 8899);
        let defaults = parse(&["--chain", "static"]).unwrap().options();
        assert!(defaults.http2 && defaults.tls.is_none() && defaults.refuse_rate == 0.0);
        let h2 = parse(&[
            "--chain",
            "static",
            "--max-streams",
            "8",
            "--goaway-after",
            "100",
            "--refuse-stream-rate",
            "0.25",
            "--tls",
            "--tls-dir",
            "/tmp/x",
        ])
        .unwrap()
        .options();
        assert_eq!((h2.max_streams, h2.goaway_after, h2.refuse_rate), (Some(8), Some(100), 0.25));
        assert_eq!(h2.tls.unwrap().dir, Some(std::path::PathBuf::from("/tmp/x")));
        assert!(!parse(&["--chain", "static", "--http1-only"]).unwrap().options().http2);
        assert!(parse(&["--chain", "static", "--tls-dir", "/tmp/x"]).is_err(), "--tls-dir needs --tls");
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for bad in [
            &["--chain", "bitcoin"][..],
            &[],
            &["--chain", "static", "--latency", "fast"],
            &["--chain", "static", "--latency", "getBlock="],
            &["--chain", "static", "--blocking-latency", "getBlock=5ms,getBlock=6ms"],
            &["--chain", "static", "--stall", "10s/2s"],
            &["--chain", "static", "--error-rate", "2"],
            &["--chain", "static", "--rate-limit", "0/s"],
            &["--chain", "static", "--threads", "0"],
            &["--chain", "static", "--max-body", "0"],
        ] {
            let err = parse(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
        let err = parse(&["--chain", "static", "--stall", "10s/2s"]).unwrap_err().to_string();
        assert!(err.contains("--stall") && err.contains("2s/10s"), "{err}");
    }
}
