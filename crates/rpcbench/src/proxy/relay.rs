//! The relay itself: the state every client connection shares (the upstream pool, fault
//! knobs, counters), the accept loop, and the handler that relays one request and answers it.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use super::*;
use crate::compare::FieldPath;
use crate::server::http1::{
    self as http_server, error_body, header_value, write_json, Arrival, DateCache, Handler, Limits, Method,
    Next, OpenConnections, Request,
};
use crate::traffic::{methods_of, response_digest, TrafficEntry, TrafficWriter};
use crate::transport::http1::{Connection, Http1};
use crate::transport::http2::{Http2, StreamSlot};
use crate::transport::{Lane, Outgoing, Reply, Transport, WireError};

/// What the connections share.
pub(super) struct State {
    pub(super) transport: Upstream,
    /// Idle upstream lanes.
    pub(super) idle: Mutex<Vec<UpstreamLane>>,
    /// One permit per upstream connection that may be open.
    pub(super) permits: Semaphore,
    pub(super) upstream_timeout: Duration,
    pub(super) queue_timeout: Duration,
    pub(super) max_body: usize,
    /// Client connections: the cap, and the head and idle timeout.
    pub(super) open: OpenConnections,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) latency: Duration,
    pub(super) error_rate: f64,
    pub(super) drop_rate: f64,
    pub(super) seed: u64,
    /// Requests so far: the index of the next request's fault draws.
    pub(super) arrivals: AtomicU64,
    pub(super) started: Instant,
    pub(super) stats: Mutex<ProxyStats>,
    pub(super) record: Option<mpsc::Sender<Recorded>>,
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State").field("arrivals", &self.arrivals).finish_non_exhaustive()
    }
}

/// The generator streams of the fault draws.
pub(super) const ERROR_STREAM: u64 = 0x7072_6f78_7965_7272;
pub(super) const DROP_STREAM: u64 = 0x7072_6f78_7964_7270;

/// A uniform draw in `0.0..1.0` for request `index` from `stream`.
pub(super) fn draw(seed: u64, stream: u64, index: u64) -> f64 {
    let bits = crate::mock::prng::mix(crate::mock::prng::mix(seed, stream), index);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

impl State {
    pub(super) fn snapshot(&self) -> ProxyStats {
        self.stats.lock().unwrap_or_else(|poison| poison.into_inner()).clone()
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, ProxyStats> {
        self.stats.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Relays one request; on success the upstream's status and body are handed to `answer`
    /// while the connection is held.
    async fn relay(
        &self,
        outgoing: &Outgoing,
        answer: impl FnOnce(u16, &[u8]),
    ) -> Result<(), UpstreamFailure> {
        // A bounded wait: a client holding every upstream connection with slow calls delays
        // the others by at most the queue timeout, and each of them is told so.
        let _permit = match tokio::time::timeout(self.queue_timeout, self.permits.acquire()).await {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(UpstreamFailure::Connect),
            Err(_) => return Err(UpstreamFailure::QueueTimeout),
        };
        let attempt = async {
            // A pooled connection the upstream closed while idle fails at once: one retry on a
            // fresh connection.
            let pooled = self.idle.lock().unwrap_or_else(|poison| poison.into_inner()).pop();
            let retry = pooled.is_some();
            let mut connection = match pooled {
                Some(connection) => connection,
                None => self.open().await?,
            };
            let reply = match connection.exchange(outgoing, self.max_body as u64).await {
                Ok(reply) => reply,
                Err(WireError::Closed) if retry => {
                    connection = self.open().await?;
                    connection
                        .exchange(outgoing, self.max_body as u64)
                        .await
                        .map_err(|_| UpstreamFailure::BadResponse)?
                }
                Err(_) => return Err(UpstreamFailure::BadResponse),
            };
            answer(reply.status, connection.body());
            if reply.reusable {
                self.idle.lock().unwrap_or_else(|poison| poison.into_inner()).push(connection);
            }
            Ok(())
        };
        match tokio::time::timeout(self.upstream_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(UpstreamFailure::Timeout),
        }
    }

    async fn open(&self) -> Result<UpstreamLane, UpstreamFailure> {
        let opened = match &self.transport {
            Upstream::Http1(http1) => http1.open(0).await.map(UpstreamLane::Http1),
            Upstream::Http2(http2) => {
                // Every lane joins the one connection (slot 0), a stream each.
                http2.open(0).await.map(UpstreamLane::Http2)
            }
        };
        opened.map_err(|error| match error.kind() {
            io::ErrorKind::TimedOut => UpstreamFailure::Timeout,
            _ => UpstreamFailure::Connect,
        })
    }
}

/// The upstream's transport, from the one wire selection ([`crate::engine::select`]). The
/// relay runs on a multi-threaded runtime, so it names the concrete lanes it can hold rather
/// than any [`Transport`].
#[derive(Debug)]
pub(super) enum Upstream {
    Http1(Http1),
    Http2(Http2),
}

/// One place a relayed request goes upstream: a keep-alive HTTP/1.1 connection, or a stream
/// slot on the HTTP/2 connection.
#[derive(Debug)]
pub(super) enum UpstreamLane {
    Http1(Connection),
    Http2(StreamSlot),
}

impl UpstreamLane {
    async fn exchange(&mut self, request: &Outgoing, max_body: u64) -> Result<Reply, WireError> {
        match self {
            UpstreamLane::Http1(connection) => connection.exchange(request, max_body).await,
            UpstreamLane::Http2(slot) => slot.exchange(request, max_body).await,
        }
    }

    fn body(&self) -> &[u8] {
        match self {
            UpstreamLane::Http1(connection) => connection.body(),
            UpstreamLane::Http2(slot) => slot.body(),
        }
    }
}

pub(super) async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    mut shutdown: watch::Receiver<bool>,
) {
    let live = Arc::new(());
    loop {
        let accepted = tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            // Out of file descriptors or a connection reset before accept: back off briefly.
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        // Past the cap a connection is closed at once: idle clients cannot lock others out.
        let Some(slot) = state.open.admit() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let limits = Limits { max_body: state.max_body, head_timeout: state.idle_timeout, timed: true };
        let handler = Relay { state: state.clone(), outgoing: Outgoing::default(), body: Vec::new() };
        let shutdown = shutdown.clone();
        let token = live.clone();
        tokio::spawn(async move {
            http_server::serve_connection(stream, handler, shutdown, limits).await;
            drop(slot);
            drop(token);
        });
    }
    drop(listener);
    let deadline = Instant::now() + Duration::from_secs(1);
    while Arc::strong_count(&live) > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// An entry for the writer thread, with the response body to digest; the sender waits for
/// `written` before answering the client.
pub(super) struct Recorded {
    entry: TrafficEntry,
    response: Vec<u8>,
    written: oneshot::Sender<()>,
}

pub(super) fn write_records(
    mut file: TrafficWriter,
    mut receiver: mpsc::Receiver<Recorded>,
    ignore: Vec<FieldPath>,
) {
    while let Some(mut recorded) = receiver.blocking_recv() {
        recorded.entry.response_hash = response_digest(&recorded.response, &ignore);
        let failed = file.append(&recorded.entry).is_err();
        // The sender learns of a failure by the closed channel.
        if !failed {
            let _ = recorded.written.send(());
        }
    }
}

/// One client connection's relay.
pub(super) struct Relay {
    state: Arc<State>,
    outgoing: Outgoing,
    /// The answer's body (reused).
    body: Vec<u8>,
}

/// The histogram key of a request body.
/// `key`, or [`OTHER_METHODS_KEY`] when it is new and the table already has
/// [`MAX_METHOD_KEYS`] rows (or it is over 128 bytes): a client sending ever new method names
/// cannot grow the table.
pub(super) fn bounded_key<V>(table: &BTreeMap<String, V>, key: String) -> String {
    if !table.contains_key(&key) && (table.len() >= MAX_METHOD_KEYS || key.len() > 128) {
        OTHER_METHODS_KEY.to_string()
    } else {
        key
    }
}

pub(super) fn method_key(body: &[u8]) -> String {
    if body.trim_ascii_start().first() == Some(&b'[') {
        return BATCH_KEY.to_string();
    }
    methods_of(body).into_iter().next().unwrap_or_else(|| UNKNOWN_KEY.to_string())
}

/// The JSON-RPC error answer to `body`: one error per call with the call's id (null when it
/// has none or the body is not JSON-RPC), in an array for a batch.
pub(super) fn injected_error(body: &[u8], out: &mut Vec<u8>) {
    #[derive(serde::Deserialize)]
    struct Call<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
    }
    let one = |out: &mut Vec<u8>, id: Option<&RawValue>| {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(id.map_or("null", RawValue::get).as_bytes());
        out.extend_from_slice(b",\"error\":{\"code\":");
        out.extend_from_slice(itoa::Buffer::new().format(INTERNAL_ERROR).as_bytes());
        out.extend_from_slice(b",\"message\":\"Internal error (injected by rpcbench proxy)\"}}");
    };
    out.clear();
    if let Ok(calls) = serde_json::from_slice::<Vec<Call<'_>>>(body) {
        out.push(b'[');
        for (at, call) in calls.iter().enumerate() {
            if at > 0 {
                out.push(b',');
            }
            one(out, call.id);
        }
        out.push(b']');
    } else {
        let call = serde_json::from_slice::<Call<'_>>(body).ok();
        one(out, call.and_then(|call| call.id));
    }
}

/// The status line of `status` (`200 OK`).
pub(super) fn status_line(status: u16) -> Vec<u8> {
    let reason =
        http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("Unknown");
    format!("{status} {reason}").into_bytes()
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Handler<S> for Relay {
    type TakeOver = ();

    // Written out to state the Send bound the trait asks for.
    #[allow(clippy::manual_async_fn)]
    fn answer<'a>(
        &'a mut self,
        stream: &'a mut S,
        out: &'a mut Vec<u8>,
        request: &'a Request,
        bytes: &'a [u8],
        arrival: Option<Arrival>,
        date: &'a mut DateCache,
    ) -> impl std::future::Future<Output = Next<()>> + Send + 'a {
        async move {
            let close = request.closes();
            if request.method != Method::Post {
                error_body(&mut self.body, -32600, "only POST requests with a JSON-RPC body are relayed");
                write_json(
                    out,
                    b"405 Method Not Allowed",
                    b"allow: POST\r\n",
                    &self.body,
                    Some(request),
                    close,
                    &date.text,
                );
                return Next::Continue;
            }
            let state = &*self.state;
            let complete = arrival.map_or_else(Instant::now, |arrival| arrival.complete);
            let first = arrival.map_or(complete, |arrival| arrival.first);
            let body = request.body(bytes);
            let index = state.arrivals.fetch_add(1, Ordering::Relaxed);
            // The client's Authorization goes on to the upstream; nothing else of its head.
            self.outgoing.clear();
            self.outgoing.body.extend_from_slice(body);
            if let Some(authorization) = header_value(&bytes[..request.head_len], b"authorization") {
                self.outgoing.headers.extend_from_slice(b"Authorization: ");
                self.outgoing.headers.extend_from_slice(authorization);
                self.outgoing.headers.extend_from_slice(b"\r\n");
            }
            let upstream_started = Instant::now();
            let mut status = 0u16;
            let answer_body = &mut self.body;
            let relayed = state
                .relay(&self.outgoing, |code, upstream_body| {
                    status = code;
                    answer_body.clear();
                    answer_body.extend_from_slice(upstream_body);
                })
                .await;
            let upstream_done = Instant::now();
            let upstream = upstream_done - upstream_started;
            let mut injected = false;
            match relayed {
                Ok(()) => {
                    if state.error_rate > 0.0 && draw(state.seed, ERROR_STREAM, index) < state.error_rate {
                        injected_error(body, answer_body);
                        status = 200;
                        injected = true;
                    }
                }
                Err(failure) => {
                    status = 502;
                    error_body(
                        answer_body,
                        INTERNAL_ERROR,
                        &format!("upstream failed: {}", failure.as_str()),
                    );
                    *state.stats().upstream_failures.entry(failure).or_default() += 1;
                }
            }
            let dropped = state.drop_rate > 0.0 && draw(state.seed, DROP_STREAM, index) < state.drop_rate;
            {
                let mut stats = state.stats();
                stats.requests += 1;
                stats.injected_errors += u64::from(injected && !dropped);
                stats.dropped += u64::from(dropped);
            }
            if !state.latency.is_zero() || dropped {
                // Answers already computed are not held back by this request.
                if !out.is_empty() {
                    if stream.write_all(out).await.is_err() {
                        return Next::Drop;
                    }
                    out.clear();
                }
            }
            if !state.latency.is_zero() {
                tokio::time::sleep(state.latency).await;
                date.refresh();
            }
            if let Some(record) = &state.record {
                let mut entry = TrafficEntry::for_request(
                    u64::try_from(first.saturating_duration_since(state.started).as_micros())
                        .unwrap_or(u64::MAX),
                    body,
                );
                entry.status = if dropped { 0 } else { status };
                entry.response_bytes = if dropped { 0 } else { answer_body.len() as u64 };
                entry.upstream_us = u64::try_from(upstream.as_micros()).unwrap_or(u64::MAX);
                let response = if dropped { Vec::new() } else { answer_body.clone() };
                let (written, done) = oneshot::channel();
                let sent = record.send(Recorded { entry, response, written }).await.is_ok();
                if !sent || done.await.is_err() {
                    state.stats().record_failures += 1;
                }
            }
            if dropped {
                return Next::Drop;
            }
            let write_started = Instant::now();
            let line = status_line(status);
            write_json(out, &line, b"", answer_body, Some(request), close, &date.text);
            let written = stream.write_all(out).await;
            out.clear();
            let done = Instant::now();
            let total = done - first;
            let read = complete - first;
            let write = done - write_started;
            let overhead = total.saturating_sub(upstream);
            let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            let mut stats = state.stats();
            let key = bounded_key(&stats.methods, method_key(body));
            stats.methods.entry(key).or_insert_with(PhaseHistograms::new).record([
                nanos(read),
                nanos(upstream),
                nanos(write),
                nanos(overhead),
            ]);
            drop(stats);
            if written.is_err() {
                return Next::Drop;
            }
            Next::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_client_sending_new_method_names_cannot_grow_the_per_method_table() {
        let mut table: BTreeMap<String, ()> = BTreeMap::new();
        for n in 0..1000 {
            let key = bounded_key(&table, format!("method{n}"));
            table.insert(key, ());
        }
        assert_eq!(table.len(), MAX_METHOD_KEYS + 1);
        assert!(table.contains_key(OTHER_METHODS_KEY));
        // Known names keep their row; long names share the other row.
        assert_eq!(bounded_key(&table, "method7".into()), "method7");
        let empty: BTreeMap<String, ()> = BTreeMap::new();
        assert_eq!(bounded_key(&empty, "x".repeat(200)), OTHER_METHODS_KEY);
    }

    #[test]
    fn injected_errors_echo_ids() {
        let mut out = Vec::new();
        injected_error(br#"{"jsonrpc":"2.0","id":"a7","method":"x"}"#, &mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["id"], "a7");
        assert_eq!(value["error"]["code"], INTERNAL_ERROR);
        injected_error(
            br#"[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","id":2,"method":"y"}]"#,
            &mut out,
        );
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value[0]["id"], 1);
        assert_eq!(value[1]["id"], 2);
        injected_error(b"not json", &mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(value["id"].is_null());
    }

    #[test]
    fn batches_have_their_own_key() {
        assert_eq!(method_key(br#" [{"jsonrpc":"2.0","id":1,"method":"x"}]"#), BATCH_KEY);
        assert_eq!(method_key(br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#), "getSlot");
        assert_eq!(method_key(b"garbage"), UNKNOWN_KEY);
    }

    #[test]
    fn fault_draws_are_seeded() {
        let hits = |seed| (0..10_000).filter(|i| draw(seed, ERROR_STREAM, *i) < 0.1).count();
        assert_eq!(hits(7), hits(7));
        assert!((800..1200).contains(&hits(7)), "{}", hits(7));
    }

    #[test]
    fn rates_out_of_range_name_the_setting() {
        use crate::field::Field;
        let mut options =
            ProxyOptions::new("127.0.0.1:0".parse().unwrap(), Target::parse("http://127.0.0.1:1/").unwrap());
        let field_at_fault = |options: &ProxyOptions| options.validate().err().map(|err| err.field);
        options.error_rate = 2.0;
        assert_eq!(field_at_fault(&options), Some(Field::ErrorRate));
        assert!(options.validate().unwrap_err().to_string().starts_with("error_rate: 2 is not a share"));
        options.error_rate = 0.0;
        options.drop_rate = -1.0;
        assert_eq!(field_at_fault(&options), Some(Field::DropRate));
    }

    #[test]
    fn a_clients_method_name_cannot_forge_a_row_of_the_proxy_table() {
        let mut stats = ProxyStats::default();
        stats
            .methods
            .entry("getSlot\nrelayed: 999999".into())
            .or_insert_with(PhaseHistograms::new)
            .record([1_000, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        assert_eq!(text.lines().filter(|line| line.starts_with("relayed:")).count(), 1, "{text}");
        assert!(text.contains("getSlot\\nrelayed: 999999"), "{text}");
    }

    #[test]
    fn stats_render_every_phase() {
        let mut stats = ProxyStats::default();
        stats
            .methods
            .entry("getSlot".into())
            .or_insert_with(PhaseHistograms::new)
            .record([1_000, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        assert!(text.contains("getSlot") && text.contains("overhead"), "{text}");
        let prometheus = stats.render_prometheus();
        assert!(
            prometheus.contains(
                "rpcbench_proxy_phase_seconds_bucket{le=\"0.01\",phase=\"overhead\",method=\"getSlot\"} 1"
            ),
            "{prometheus}"
        );
        assert_eq!(stats.to_json()["methods"]["getSlot"]["upstream"]["count"], 1);
    }

    #[test]
    fn a_read_phase_of_requests_that_came_in_one_read_is_left_out_of_the_table() {
        let mut stats = ProxyStats::default();
        let methods = &mut stats.methods;
        methods
            .entry("getSlot".into())
            .or_insert_with(PhaseHistograms::new)
            .record([0, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        assert!(!text.lines().any(|line| line.split_whitespace().nth(1) == Some("read")), "{text}");
        assert!(text.contains("read: not shown, every request arrived whole in one read"), "{text}");
        // A request that took two reads: the phase is measured and shown.
        let methods = &mut stats.methods;
        methods
            .entry("getSlot".into())
            .or_insert_with(PhaseHistograms::new)
            .record([700_000, 50_000, 2_000, 9_000]);
        let text = stats.render_text();
        let read =
            text.lines().find(|line| line.split_whitespace().nth(1) == Some("read")).expect("a read row");
        assert!(read.contains("700."), "{text}");
        assert!(!text.contains("read: not shown"), "{text}");
    }
}
