//! JSON-RPC 2.0 dispatch shared by all mock nodes and every wire they serve: the chain's
//! [`Node`], the state the handlers share ([`Shared`]: fault knobs, limits, the WebSocket
//! state), the admission gate (rate limits, stalls, refusals) and answering a request body
//! (single requests, batches and notifications per the JSON-RPC 2.0 specification, the id
//! echoed byte for byte; request bodies parsed with borrowed `RawValue`s only).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::ethereum::EthereumNode;
use super::faults::{unit_float, Admission, FaultState, HeadView};
use super::rpc::{
    write_error, RpcError, INTERNAL_ERROR, INVALID_REQUEST, LIMIT_EXCEEDED, PARSE_ERROR, SERVER_ERROR,
};
use super::solana::SolanaNode;
use super::static_chain::Plain;
use super::ws_state::WsState;
use super::{prng, static_chain, BatchLimitStyle, Chain, MockError, MockOptions};

/// The chain a server answers for.
#[derive(Debug)]
pub(crate) enum Node {
    Static,
    Solana(Box<SolanaNode>),
    Ethereum(Box<EthereumNode>),
}

impl Node {
    fn new(options: &MockOptions, started: Instant) -> Node {
        let unix_now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        match options.chain {
            Chain::Static => Node::Static,
            Chain::Solana => Node::Solana(Box::new(
                SolanaNode::new(options.seed, options.slot_time, started, unix_now)
                    .with_head(HeadView::of(options))
                    .with_tx_pool(options.solana_tx.as_ref()),
            )),
            Chain::Ethereum => Node::Ethereum(Box::new(
                EthereumNode::new(options.seed, options.slot_time, options.chain_id, started, unix_now)
                    .with_head(HeadView::of(options))
                    .with_mempool(options.tx_pool.as_ref()),
            )),
        }
    }

    /// Appends the JSON result of one call to `out`, or returns its error.
    fn call(&self, method: &str, params: Option<&RawValue>, out: &mut Vec<u8>) -> Result<(), RpcError> {
        let value = match self {
            Node::Static => {
                static_chain::answer(out);
                return Ok(());
            }
            Node::Solana(node) => node.call(method, params)?,
            Node::Ethereum(node) => return node.call_into(method, params, out),
        };
        serde_json::to_writer(out, &value).map_err(|err| RpcError::new(INTERNAL_ERROR, err.to_string()))
    }
}

/// Everything the request handlers share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) node: Node,
    pub(crate) faults: FaultState,
    pub(crate) max_body_bytes: usize,
    /// Answers longer than this are cut to it (`MockOptions::max_response_bytes`).
    pub(crate) max_response_bytes: Option<usize>,
    /// HTTP/1.1 connections: the longest wait for a complete request, or idle between them.
    pub(crate) idle_timeout: Option<Duration>,
    max_batch_len: usize,
    batch_limit_style: BatchLimitStyle,
    /// The static node without injected errors: plain requests take the single-pass scan.
    fast_static: bool,
    /// Whether h2c prior-knowledge connections are served as HTTP/2.
    pub(crate) http2: bool,
    pub(crate) max_streams: Option<u32>,
    pub(crate) goaway_after: Option<u64>,
    refuse_rate: f64,
    seed: u64,
    refuse_draws: AtomicU64,
    /// WebSocket connections, subscriptions and their fault knobs (`ws.rs`).
    pub(crate) ws: WsState,
}

impl Shared {
    pub(crate) fn new(options: &MockOptions, started: Instant) -> Shared {
        let faults = FaultState::new(options.faults.clone(), options.seed, started);
        Shared {
            node: Node::new(options, started),
            fast_static: options.chain == Chain::Static
                && !faults.has_error_rate()
                && !faults.limits_per_call(),
            faults,
            max_body_bytes: options.max_body_bytes,
            max_response_bytes: options.max_response_bytes,
            idle_timeout: options.idle_timeout,
            max_batch_len: options.max_batch_len,
            batch_limit_style: options.batch_limit_style,
            http2: options.http2,
            max_streams: options.max_streams,
            goaway_after: options.goaway_after,
            refuse_rate: options.refuse_rate,
            seed: options.seed,
            refuse_draws: AtomicU64::new(0),
            ws: WsState::new(options, started),
        }
    }

    /// Whether the next HTTP/2 stream is refused (`refuse_rate`), drawn from the seeded
    /// generator so a run is reproducible.
    pub(crate) fn refuse_stream(&self) -> bool {
        if self.refuse_rate <= 0.0 {
            return false;
        }
        if self.refuse_rate >= 1.0 {
            return true;
        }
        let draw = self.refuse_draws.fetch_add(1, Ordering::Relaxed);
        unit_float(prng::mix(self.seed ^ REFUSE_STREAM, draw)) < self.refuse_rate
    }
}

/// The generator stream of `refuse_rate` draws.
const REFUSE_STREAM: u64 = 0x7265_6675_7365;

/// The JSON-RPC side of a mock node without its HTTP server: answers request bodies exactly as
/// the server does, fault knobs included, except those that only delay (latency, stalls) or
/// refuse at the HTTP level (rate limiting, body size). For tests and fuzzing.
#[derive(Debug)]
pub struct Dispatcher {
    shared: Shared,
}

impl Dispatcher {
    /// A dispatcher for the node `options` describe.
    pub fn new(options: &MockOptions) -> Result<Self, MockError> {
        options.validate()?;
        Ok(Self { shared: Shared::new(options, Instant::now()) })
    }

    /// The body of the answer to one HTTP request body (a request, a batch, or anything
    /// else); `None` when nothing is answered (notifications only, HTTP 204).
    pub fn answer(&self, body: &[u8]) -> Option<Vec<u8>> {
        process(&self.shared, body)
    }
}

/// What the fault knobs decide for one POST request before its body is answered. Both HTTP
/// loops (`http.rs`, `h2.rs`) ask [`gate`] and differ only in how they write the answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Gate {
    /// Refused by the rate limiter: answer 429 with the JSON-RPC error [`gate`] wrote and a
    /// `Retry-After` of this many seconds.
    Limited {
        /// The `Retry-After`, in seconds.
        retry_after_secs: u64,
        /// How to answer.
        style: super::faults::RateLimitStyle,
    },
    /// Answer after these delays.
    Pass(Delays),
}

/// The delays the fault knobs put before one answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Delays {
    /// When the request was read: the delays count from here, not from when the wait starts,
    /// so that the work done before the wait does not add to them.
    read_at: Instant,
    stall: Duration,
    latency: Duration,
    blocking: Option<Duration>,
    /// When the serial service of the request ends ([`crate::mock::Faults::serial_service_time`]).
    serial_end: Option<Instant>,
}

impl Delays {
    /// No delay at all: the answer can be written at once.
    pub(crate) fn is_none(&self) -> bool {
        self.stall.is_zero() && self.latency.is_zero() && self.blocking.is_none() && self.serial_end.is_none()
    }

    /// The end of the asynchronous delays (a stall in progress, then the latency), counted
    /// from when the request was read; `None` without either.
    fn deadline(&self) -> Option<Instant> {
        let delay = self.stall + self.latency;
        (!delay.is_zero()).then(|| self.read_at + delay)
    }

    /// Waits out a stall in progress and the latency (asynchronous sleeps), then the blocking
    /// latency, which deliberately blocks the runtime worker like a handler doing synchronous
    /// work; then notes in `faults`' record that the request is answered.
    pub(crate) async fn wait(self, faults: &super::faults::FaultState) {
        if let Some(deadline) = self.deadline() {
            // Absolute: a sleep of the latency from now would add the time already spent on
            // the request (and the timer's rounding on top of it).
            tokio::time::sleep_until(deadline.into()).await;
        }
        if let Some(end) = self.serial_end {
            tokio::time::sleep_until(end.into()).await;
        }
        if let Some(blocking) = self.blocking {
            std::thread::sleep(blocking);
        }
        faults.note_answered(self.read_at);
    }
}

/// Applies the rate limiter and draws the delays for one POST request. When it answers
/// [`Gate::Limited`], `body_out` holds the JSON-RPC error to send with the 429.
pub(crate) fn gate(shared: &Shared, body: &[u8], body_out: &mut Vec<u8>) -> Gate {
    let read_at = Instant::now();
    shared.faults.note_read(read_at);
    // With `batch-items` the calls take their tokens one by one as they are answered.
    let admission = if shared.faults.limits_per_call() { Admission::Allowed } else { shared.faults.admit() };
    if let Admission::Limited { retry_after, allowed_rps, burst } = admission {
        let mut error = RpcError::new(LIMIT_EXCEEDED, "rate limit exceeded");
        error.data = Some(serde_json::json!({
            "allowed_rps": allowed_rps,
            "burst": burst,
            "retry_after_ms": retry_after.as_millis() as u64,
        }));
        body_out.clear();
        write_error(body_out, b"null", &error);
        let retry_after_secs = (retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0)).max(1);
        return Gate::Limited { retry_after_secs, style: shared.faults.rate_limit_style() };
    }
    Gate::Pass(Delays {
        read_at,
        stall: shared.faults.stall_wait(),
        latency: shared.faults.latency(body),
        blocking: shared.faults.blocking_latency(body),
        serial_end: shared.faults.serial_service_end(read_at),
    })
}

/// One request object, every member borrowed raw from the body.
#[derive(Deserialize)]
struct RawRequest<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// Keeps a member that is present as `Some`, even when it is `null`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

fn is_json_whitespace(byte: &u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// Methods a transport answers itself before the node does: the WebSocket subscriptions.
/// The HTTP loops pass [`NoExtension`], which the compiler removes.
pub(crate) trait Extension {
    /// The result of `method`, or `None` to let the node answer it.
    fn call(&mut self, method: &str, params: Option<&RawValue>) -> Option<Result<Value, RpcError>>;
}

/// No methods of its own: plain HTTP.
#[derive(Debug)]
pub(crate) struct NoExtension;

impl Extension for NoExtension {
    #[inline(always)]
    fn call(&mut self, _method: &str, _params: Option<&RawValue>) -> Option<Result<Value, RpcError>> {
        None
    }
}

/// Answers a whole HTTP body; `None` when there is nothing to answer (notifications only).
fn process(shared: &Shared, body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(96);
    respond(shared, body, &mut out);
    (!out.is_empty()).then_some(out)
}

/// Cuts an answer body longer than `max_response_bytes` to that many bytes.
pub(crate) fn cap_answer(shared: &Shared, out: &mut Vec<u8>) {
    if let Some(max) = shared.max_response_bytes {
        out.truncate(max);
    }
}

/// Appends the answer to a whole HTTP body to `out`, which is left empty when there is
/// nothing to answer (notifications only).
pub(crate) fn respond(shared: &Shared, body: &[u8], out: &mut Vec<u8>) {
    respond_with(shared, body, out, &mut NoExtension);
}

/// [`respond`], with methods `extension` answers before the node (WebSocket subscriptions).
pub(crate) fn respond_with<E: Extension>(shared: &Shared, body: &[u8], out: &mut Vec<u8>, extension: &mut E) {
    if shared.fast_static {
        if let Some(plain) = static_chain::scan(body) {
            if let Plain::Call(id) = plain {
                static_chain::write_response(out, id);
            }
            return;
        }
    }
    respond_extended(shared, body, out, extension);
}

/// [`respond`] without the static node's scan.
#[cfg(test)]
fn respond_general(shared: &Shared, body: &[u8], out: &mut Vec<u8>) {
    respond_extended(shared, body, out, &mut NoExtension);
}

/// [`respond_with`] without the static node's scan.
fn respond_extended<E: Extension>(shared: &Shared, body: &[u8], out: &mut Vec<u8>, extension: &mut E) {
    match body.iter().find(|byte| !is_json_whitespace(byte)) {
        Some(b'{') => match serde_json::from_slice::<RawRequest>(body) {
            Ok(request) => {
                call(shared, &request, out, extension);
            }
            Err(_) => write_envelope_error(out, body),
        },
        Some(b'[') => match serde_json::from_slice::<Vec<&RawValue>>(body) {
            Ok(items) => batch(shared, &items, out, extension),
            Err(_) => write_envelope_error(out, body),
        },
        _ => write_envelope_error(out, body),
    }
}

/// A body that is not a request object or array: -32700 if it is not JSON, else -32600.
fn write_envelope_error(out: &mut Vec<u8>, body: &[u8]) {
    let is_json = std::str::from_utf8(body)
        .is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
    let error = if is_json {
        RpcError::new(INVALID_REQUEST, "Invalid request: expected a request object or a batch array")
    } else {
        RpcError::new(PARSE_ERROR, "Parse error: the body is not valid JSON")
    };
    write_error(out, b"null", &error);
}

/// The id of a batch's first call (an item with a usable id and a method name, as geth's
/// `isCall`), or `null`.
fn first_call_id<'a>(items: &[&'a RawValue]) -> &'a [u8] {
    items
        .iter()
        .find_map(|item| {
            let request = serde_json::from_str::<RawRequest<'a>>(item.get()).ok()?;
            let id = request.id?.get().as_bytes();
            let usable = matches!(id.first(), Some(b'"' | b'-' | b'0'..=b'9' | b'n'));
            let named = request.method.and_then(method_name).is_some_and(|name| !name.is_empty());
            (usable && named).then_some(id)
        })
        .unwrap_or(b"null")
}

fn batch<E: Extension>(shared: &Shared, items: &[&RawValue], out: &mut Vec<u8>, extension: &mut E) {
    if items.is_empty() {
        write_error(out, b"null", &RpcError::new(INVALID_REQUEST, "Invalid request: empty batch"));
        return;
    }
    if items.len() > shared.max_batch_len {
        match shared.batch_limit_style {
            BatchLimitStyle::Geth => {
                // As geth 1.17 answers a batch over its BatchRequestLimit: an array of one -32600
                // error carrying the id of the batch's first call (null when no item is a call).
                out.push(b'[');
                write_error(out, first_call_id(items), &RpcError::new(INVALID_REQUEST, "batch too large"));
                out.push(b']');
            }
            BatchLimitStyle::Erigon => {
                // As erigon answers a batch over its --rpc.batch.limit: one bare error object.
                let message = format!("batch limit {} exceeded", shared.max_batch_len);
                write_error(out, b"null", &RpcError::new(SERVER_ERROR, message));
            }
        }
        return;
    }
    out.push(b'[');
    for item in items {
        let before = out.len();
        if before > 1 {
            out.push(b',');
        }
        let wrote = match serde_json::from_str::<RawRequest>(item.get()) {
            Ok(request) => call(shared, &request, out, extension),
            Err(_) => {
                let error = RpcError::new(INVALID_REQUEST, "Invalid request: expected a request object");
                write_error(out, b"null", &error);
                true
            }
        };
        if !wrote {
            out.truncate(before);
        }
    }
    if out.len() == 1 {
        out.clear();
    } else {
        out.push(b']');
    }
}

/// Answers one request object; returns whether a response was written.
fn call<E: Extension>(shared: &Shared, request: &RawRequest, out: &mut Vec<u8>, extension: &mut E) -> bool {
    let id = match request.id {
        Some(id) => match id.get().as_bytes().first() {
            Some(b'"' | b'-' | b'0'..=b'9' | b'n') => Some(id.get().as_bytes()),
            _ => {
                let error =
                    RpcError::new(INVALID_REQUEST, "Invalid request: id must be a string, a number or null");
                write_error(out, b"null", &error);
                return true;
            }
        },
        None => None,
    };
    let reply_id = id.unwrap_or(b"null");
    if request.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        let error = RpcError::new(INVALID_REQUEST, "Invalid request: jsonrpc must be \"2.0\"");
        write_error(out, reply_id, &error);
        return true;
    }
    let Some(method) = request.method.and_then(method_name) else {
        let error = RpcError::new(INVALID_REQUEST, "Invalid request: method must be a string");
        write_error(out, reply_id, &error);
        return true;
    };
    if let Some(params) = request.params {
        if !matches!(params.get().as_bytes().first(), Some(b'[' | b'{')) {
            let error =
                RpcError::new(INVALID_REQUEST, "Invalid request: params must be an array or an object");
            write_error(out, reply_id, &error);
            return true;
        }
    }
    let Some(id) = id else {
        // A notification: nothing is answered, so nothing needs computing.
        return false;
    };
    match &shared.node {
        Node::Solana(node) => node.head_view().count_request(),
        Node::Ethereum(node) => node.head_view().count_request(),
        Node::Static => {}
    }
    if shared.faults.limits_per_call() && shared.faults.admit() != Admission::Allowed {
        write_error(out, id, &RpcError::new(LIMIT_EXCEEDED, "rate limit exceeded"));
        return true;
    }
    if shared.faults.has_error_rate() && shared.faults.inject_error() {
        write_error(out, id, &RpcError::new(INTERNAL_ERROR, "Internal error (injected)"));
        return true;
    }
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(b",\"result\":");
    let answered = match extension.call(&method, request.params) {
        Some(Ok(value)) => serde_json::to_writer(&mut *out, &value)
            .map_err(|err| RpcError::new(INTERNAL_ERROR, err.to_string())),
        Some(Err(error)) => Err(error),
        None => shared.node.call(&method, request.params, out),
    };
    match answered {
        Ok(()) => out.push(b'}'),
        Err(error) => {
            out.truncate(start);
            write_error(out, id, &error);
        }
    }
    true
}

/// The method name of a raw JSON string, borrowed unless it has escapes.
fn method_name(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::{Faults, RateLimitStyle};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_mock_latency_counts_from_when_the_request_was_read() {
        let read_at = Instant::now();
        let ms = Duration::from_millis;
        let delays = |stall, latency| Delays { read_at, stall, latency, blocking: None, serial_end: None };
        assert_eq!(delays(ms(0), ms(0)).deadline(), None);
        assert_eq!(delays(ms(0), ms(10)).deadline(), Some(read_at + ms(10)));
        assert_eq!(delays(ms(500), ms(10)).deadline(), Some(read_at + ms(510)));
        // A request read 10 s ago with a 5 s latency is due already: no sleep from now.
        let late =
            Delays { read_at: read_at - Duration::from_secs(10), ..delays(ms(0), Duration::from_secs(5)) };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let faults = Faults {
            latency: Some(crate::mock::Latency::fixed(Duration::from_secs(5))),
            ..Faults::default()
        };
        let state = super::super::faults::FaultState::new(faults, 7, read_at);
        let waited =
            runtime.block_on(async { tokio::time::timeout(Duration::from_secs(4), late.wait(&state)).await });
        assert!(waited.is_ok(), "slept the latency again from the start of the wait");
        // The mock's record has it answered, held the 10 s since it was read.
        let log = state.read_log().expect("a mock with a latency keeps its reads");
        assert!(log.longest_hold_between(late.read_at, read_at) >= Duration::from_secs(10));
    }

    fn shared(chain: Chain, faults: Faults) -> Shared {
        let mut options = MockOptions::new(chain);
        options.faults = faults;
        options.max_batch_len = 3;
        options.seed = 1;
        Shared::new(&options, Instant::now())
    }

    fn answer(shared: &Shared, body: &str) -> Option<Value> {
        process(shared, body.as_bytes()).map(|out| serde_json::from_slice(&out).expect("responses are JSON"))
    }

    #[test]
    fn refused_streams_are_seeded_draws_near_the_rate() {
        let with_rate = |rate: f64, seed: u64| {
            let mut options = MockOptions::new(Chain::Static);
            options.refuse_rate = rate;
            options.seed = seed;
            let shared = Shared::new(&options, Instant::now());
            (0..2000).map(|_| shared.refuse_stream()).collect::<Vec<bool>>()
        };
        assert!(with_rate(0.0, 1).iter().all(|refused| !refused));
        assert!(with_rate(1.0, 1).iter().all(|refused| *refused));
        let draws = with_rate(0.25, 7);
        assert_eq!(draws, with_rate(0.25, 7), "the same seed refuses the same streams");
        assert_ne!(draws, with_rate(0.25, 8));
        let refused = draws.iter().filter(|refused| **refused).count();
        assert!((400..600).contains(&refused), "{refused} of 2000 at 25%");
    }

    #[test]
    fn a_batch_over_the_limit_gets_geths_one_item_array_with_the_first_calls_id() {
        let node = shared(Chain::Ethereum, Faults::default());
        let call = |id: u64| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_blockNumber"}}"#);
        let four: Vec<String> = (7..=10).map(call).collect();
        let refused = answer(&node, &format!("[{}]", four.join(","))).unwrap();
        assert_eq!(
            refused,
            serde_json::json!([{"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "batch too large"}}])
        );
        // The first item that is a call gives the id; none: null.
        let answer_to = |body: &str| answer(&node, body).unwrap();
        assert_eq!(answer_to(&format!("[1,{{\"id\":2}},{}]", four[1..].join(",")))[0]["id"], 8);
        assert_eq!(answer_to("[1,2,3,4]")[0]["id"], serde_json::Value::Null);
        let three = answer_batch(&node, 3);
        let ids: Vec<u64> =
            three.as_array().unwrap().iter().map(|item| item["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, vec![1, 2, 3], "items come back in request order");
    }

    #[test]
    fn a_batch_over_the_limit_gets_erigons_bare_error_object() {
        let mut options = MockOptions::new(Chain::Static);
        options.max_batch_len = 3;
        options.batch_limit_style = BatchLimitStyle::Erigon;
        let node = Shared::new(&options, Instant::now());
        assert_eq!(
            answer_batch(&node, 4),
            serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "batch limit 3 exceeded"}})
        );
        assert_eq!(answer_batch(&node, 3).as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn batch_items_style_refuses_the_calls_over_the_budget_inside_a_valid_array() {
        let mut options = MockOptions::new(Chain::Static);
        options.faults.rate_limit = Some(0.001);
        options.faults.rate_limit_burst = Some(5.0);
        options.faults.rate_limit_style = RateLimitStyle::BatchItems;
        let node = Shared::new(&options, Instant::now());
        let mut out = Vec::new();
        assert!(matches!(gate(&node, b"[]", &mut out), Gate::Pass(_)), "the request itself takes no token");
        let answered = answer_batch(&node, 7);
        let items = answered.as_array().expect("an array");
        assert_eq!(items.len(), 7);
        for (n, item) in items.iter().enumerate() {
            assert_eq!(item["id"], n as u64 + 1, "each call keeps its own id");
            if n < 5 {
                assert!(item.get("result").is_some(), "{item}");
            } else {
                assert_eq!(item["error"]["code"], -32005, "{item}");
                assert_eq!(item["error"]["message"], "rate limit exceeded");
            }
        }
        let single = answer(&node, r#"{"jsonrpc":"2.0","id":"x","method":"m"}"#).unwrap();
        assert_eq!(single["error"]["code"], -32005, "a single call takes a token too: {single}");
    }

    fn answer_batch(node: &Shared, n: u64) -> Value {
        let calls: Vec<String> = (1..=n)
            .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_blockNumber"}}"#))
            .collect();
        answer(node, &format!("[{}]", calls.join(","))).unwrap()
    }

    #[test]
    fn static_echoes_ids_exactly() {
        let node = shared(Chain::Static, Faults::default());
        for id in ["1", "\"abc\"", "null", "-5", "1.5e3", "123456789012345678901234567890", "\"\\u00e9\""] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"anything","params":[1]}}"#);
            let out = process(&node, body.as_bytes()).unwrap();
            let expected = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#);
            assert_eq!(String::from_utf8(out).unwrap(), expected);
        }
    }

    #[test]
    fn static_scan_and_general_path_agree_on_tricky_bodies() {
        let node = shared(Chain::Static, Faults::default());
        assert!(node.fast_static);
        for body in [
            r#"{"jsonrpc":"2.0","id":1e999999,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":-0,"method":"x","params":[1e999999,-0.0e-0]}"#,
            r#"{"jsonrpc":"2.0","id":"","method":"","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[],"extra":null}"#,
            r#" {"method":"x","jsonrpc":"2.0"} "#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[tru]}"#,
        ] {
            let mut fast = Vec::new();
            respond(&node, body.as_bytes(), &mut fast);
            let mut general = Vec::new();
            respond_general(&node, body.as_bytes(), &mut general);
            assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&general), "{body}");
        }
        // Injected errors go through the general path.
        assert!(!shared(Chain::Static, Faults { error_rate: 0.5, ..Faults::default() }).fast_static);
        assert!(!shared(Chain::Solana, Faults::default()).fast_static);
    }

    #[test]
    fn envelope_errors() {
        let node = shared(Chain::Static, Faults::default());
        let code = |body: &str| answer(&node, body).unwrap()["error"]["code"].as_i64().unwrap();
        assert_eq!(code("{"), PARSE_ERROR);
        assert_eq!(code("nonsense"), PARSE_ERROR);
        assert_eq!(code("42"), INVALID_REQUEST);
        assert_eq!(code("[]"), INVALID_REQUEST);
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), INVALID_REQUEST);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":7}"#), INVALID_REQUEST);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), INVALID_REQUEST);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#), INVALID_REQUEST);
        let too_long = answer(&node, "[1,2,3,4]").unwrap();
        assert_eq!(too_long[0]["error"]["code"], INVALID_REQUEST);
        assert_eq!(too_long[0]["error"]["message"], "batch too large");
        assert_eq!(answer(&node, r#"{"jsonrpc":"2.0","method":"x"}"#), None);
        assert_eq!(answer(&node, r#"[{"jsonrpc":"2.0","method":"x"}]"#), None);
    }

    #[test]
    fn batches_mix_answers_and_errors() {
        let node = shared(Chain::Static, Faults::default());
        let body = r#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},5]"#;
        let out = answer(&node, body).unwrap();
        let items = out.as_array().unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["id"], 1);
        assert_eq!(items[0]["result"], "0x1");
        assert_eq!(items[1]["error"]["code"], INVALID_REQUEST);
        assert_eq!(items[1]["id"], Value::Null);
    }

    #[test]
    fn injected_errors_keep_the_id() {
        let node = shared(Chain::Static, Faults { error_rate: 1.0, ..Faults::default() });
        let out = answer(&node, r#"{"jsonrpc":"2.0","id":"q","method":"a"}"#).unwrap();
        assert_eq!(out["id"], "q");
        assert_eq!(out["error"]["code"], INTERNAL_ERROR);
        assert_eq!(out["error"]["message"], "Internal error (injected)");
    }

    #[test]
    fn random_bytes_never_panic() {
        let nodes = [
            shared(Chain::Static, Faults::default()),
            shared(Chain::Solana, Faults::default()),
            shared(Chain::Ethereum, Faults::default()),
        ];
        let mut rng = SmallRng::seed_from_u64(7);
        let fragments: [&[u8]; 14] = [
            b"{",
            b"}",
            b"[",
            b"]",
            b"\"jsonrpc\":\"2.0\"",
            b"\"id\":",
            b"\"method\":\"getBlock\"",
            b"\"method\":\"eth_getLogs\"",
            b"\"params\":",
            b"1e999999",
            b"-0",
            b",",
            b"\xff\xfe",
            b"\"\\ud800\"",
        ];
        for _ in 0..3000 {
            let mut body = Vec::new();
            for _ in 0..rng.gen_range(0..12) {
                if rng.gen_bool(0.3) {
                    body.push(rng.gen());
                } else {
                    body.extend_from_slice(fragments[rng.gen_range(0..fragments.len())]);
                }
            }
            for node in &nodes {
                if let Some(out) = process(node, &body) {
                    serde_json::from_slice::<Value>(&out).expect("every answer is JSON");
                }
            }
        }
        let deep = "[".repeat(100_000);
        let deep_object = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{deep}"#);
        for node in &nodes {
            assert_eq!(answer(node, &deep).unwrap()["error"]["code"], PARSE_ERROR);
            assert_eq!(answer(node, &deep_object).unwrap()["error"]["code"], PARSE_ERROR);
        }
    }
}

#[cfg(test)]
mod proptests {
    //! The request handling of every mock node on arbitrary and near-valid bodies: it never
    //! panics, every answer is JSON, malformed JSON gets -32700, and ids are echoed.

    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn dispatchers() -> [Dispatcher; 3] {
        [Chain::Static, Chain::Solana, Chain::Ethereum].map(|chain| {
            let mut options = MockOptions::new(chain);
            options.max_batch_len = 8;
            Dispatcher::new(&options).unwrap()
        })
    }

    thread_local! {
        static NODES: [Dispatcher; 3] = dispatchers();
        static STATIC: Shared = Shared::new(&MockOptions::new(Chain::Static), Instant::now());
    }

    /// Near misses of real method names, beside the ones the nodes answer.
    const NEAR_MISSES: [&str; 5] = ["unknown_method", "", "getslot", "eth_", "rpc.discover"];

    /// Every method a mock node answers, and near misses.
    fn methods() -> Vec<&'static str> {
        let answered =
            [Chain::Solana, Chain::Ethereum].into_iter().flat_map(|chain| chain.methods().unwrap_or(&[]));
        answered.copied().chain(NEAR_MISSES).collect()
    }

    fn param() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|f| json!(f)),
            prop_oneof![
                Just("latest"),
                Just("earliest"),
                Just("pending"),
                Just("finalized"),
                Just("safe"),
                Just("confirmed"),
                Just("processed"),
                Just("jsonParsed"),
                Just("base64"),
                Just("base58"),
                Just("full"),
                Just("signatures"),
                Just("none"),
                Just("0x"),
                Just("0x0"),
                Just("0xffffffffffffffffff"),
                Just("0x1b4"),
                Just("-0x1"),
                Just("4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ"),
                Just("0x00000000000000000000000000000000deadbeef"),
            ]
            .prop_map(|s| json!(s)),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop_oneof![
                            Just("commitment".to_string()),
                            Just("encoding".to_string()),
                            Just("transactionDetails".to_string()),
                            Just("maxSupportedTransactionVersion".to_string()),
                            Just("limit".to_string()),
                            Just("before".to_string()),
                            Just("fromBlock".to_string()),
                            Just("toBlock".to_string()),
                            Just("address".to_string()),
                            Just("topics".to_string()),
                            Just("blockHash".to_string()),
                            Just("rewards".to_string()),
                            Just("to".to_string()),
                            Just("data".to_string()),
                            any::<String>(),
                        ],
                        inner,
                    ),
                    0..6,
                )
                .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    fn request() -> impl Strategy<Value = Value> {
        let id = prop_oneof![
            Just(None),
            any::<u64>().prop_map(|n| Some(json!(n))),
            any::<i64>().prop_map(|n| Some(json!(n))),
            any::<String>().prop_map(|s| Some(json!(s))),
            Just(Some(Value::Null)),
            Just(Some(json!([1]))),
        ];
        let params = prop_oneof![
            1 => Just(None),
            4 => prop::collection::vec(param(), 0..5).prop_map(|p| Some(Value::Array(p))),
            1 => param().prop_map(Some),
        ];
        let version =
            prop_oneof![8 => Just(Some(json!("2.0"))), 1 => Just(None), 1 => Just(Some(json!("1.0")))];
        (id, prop::sample::select(methods()), params, version).prop_map(|(id, method, params, version)| {
            let mut request = serde_json::Map::new();
            if let Some(version) = version {
                request.insert("jsonrpc".into(), version);
            }
            if let Some(id) = id {
                request.insert("id".into(), id);
            }
            request.insert("method".into(), json!(method));
            if let Some(params) = params {
                request.insert("params".into(), params);
            }
            Value::Object(request)
        })
    }

    /// Every node's answer, checked to be JSON. An answer that is JSON but not representable
    /// as a `Value` (an id echoed byte for byte with an exponent beyond f64) maps to `Null`.
    fn answers(body: &[u8]) -> [Option<Value>; 3] {
        NODES.with(|nodes| {
            nodes.each_ref().map(|node| {
                node.answer(body).map(|out| {
                    assert!(is_json(&out), "every answer is JSON: {}", String::from_utf8_lossy(&out));
                    serde_json::from_slice::<Value>(&out).unwrap_or(Value::Null)
                })
            })
        })
    }

    fn is_json(body: &[u8]) -> bool {
        std::str::from_utf8(body)
            .is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("RPCBENCH_PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
            ..ProptestConfig::default()
        })]

        #[test]
        fn arbitrary_bytes_never_panic_and_malformed_json_gets_a_parse_error(
            body in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..512),
                request().prop_flat_map(|request| {
                    let text = request.to_string().into_bytes();
                    let len = text.len();
                    (Just(text), 0..len, any::<u8>())
                }).prop_map(|(mut text, at, byte)| { text[at] = byte; text }),
                request().prop_map(|request| {
                    let text = request.to_string();
                    text.as_bytes()[..text.len() / 2].to_vec()
                }),
            ],
        ) {
            let answers = answers(&body);
            if !is_json(&body) {
                for answer in answers {
                    let answer = answer.expect("malformed JSON is answered");
                    prop_assert_eq!(&answer["error"]["code"], &json!(PARSE_ERROR), "{:?}", String::from_utf8_lossy(&body));
                    prop_assert_eq!(&answer["id"], &Value::Null);
                    prop_assert_eq!(&answer["jsonrpc"], &json!("2.0"));
                }
            }
        }

        #[test]
        fn near_valid_requests_never_panic_and_echo_the_id(request in request()) {
            let body = request.to_string();
            for answer in answers(body.as_bytes()) {
                match (request.get("id"), answer) {
                    (None, None) => {}
                    (None, Some(answer)) => {
                        // A notification is answered only when it is not a valid request.
                        prop_assert!(answer["error"]["code"] == json!(INVALID_REQUEST), "{} -> {}", body, answer);
                    }
                    (Some(_), None) => prop_assert!(false, "a request with an id got no answer: {}", body),
                    (Some(id), Some(answer)) => {
                        let valid_id = matches!(id, Value::Null | Value::Number(_) | Value::String(_));
                        if valid_id {
                            prop_assert_eq!(&answer["id"], id, "{} -> {}", body, answer);
                        }
                        prop_assert!(answer.get("result").is_some() != answer.get("error").is_some(), "{} -> {}", body, answer);
                        if let Some(code) = answer.get("error").map(|error| &error["code"]) {
                            prop_assert!(code.is_i64(), "{} -> {}", body, answer);
                        }
                    }
                }
            }
        }

        #[test]
        fn the_static_scan_answers_exactly_like_the_general_path(
            body in prop_oneof![
                request().prop_map(|request| request.to_string().into_bytes()),
                request().prop_map(|request| serde_json::to_string_pretty(&request).unwrap().into_bytes()),
                request().prop_flat_map(|request| {
                    let text = request.to_string().into_bytes();
                    let len = text.len();
                    (Just(text), 0..len, prop::sample::select(&b" \"{}[],:0-.eE+nul19tx\\"[..]))
                }).prop_map(|(mut text, at, byte)| { text[at] = byte; text }),
                request().prop_flat_map(|request| {
                    let text = request.to_string().into_bytes();
                    let len = text.len();
                    (Just(text), 0..=len)
                }).prop_map(|(text, cut)| text[..cut].to_vec()),
            ],
        ) {
            STATIC.with(|shared| {
                let mut fast = Vec::new();
                respond(shared, &body, &mut fast);
                let mut general = Vec::new();
                respond_general(shared, &body, &mut general);
                let (fast, general) = (String::from_utf8_lossy(&fast), String::from_utf8_lossy(&general));
                prop_assert_eq!(fast, general, "{:?}", String::from_utf8_lossy(&body));
                Ok(())
            })?;
        }

        #[test]
        fn batches_of_near_valid_requests_never_panic(requests in prop::collection::vec(request(), 0..12)) {
            let body = Value::Array(requests.clone()).to_string();
            for answer in answers(body.as_bytes()).into_iter().flatten() {
                if requests.is_empty() {
                    prop_assert_eq!(&answer["error"]["code"], &json!(INVALID_REQUEST));
                } else if requests.len() > 8 {
                    // geth's refusal of a batch over the limit: an array of one error.
                    prop_assert_eq!(answer.as_array().map(Vec::len), Some(1));
                    prop_assert_eq!(&answer[0]["error"]["code"], &json!(INVALID_REQUEST));
                } else {
                    let items = answer.as_array().expect("a batch answers with an array");
                    prop_assert!(items.len() <= requests.len());
                }
            }
        }
    }
}
