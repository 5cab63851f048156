//! HTTP/2, the second transport (`--h2c`: cleartext with prior knowledge; `--http2`: TLS with
//! ALPN `h2`), framed by hyperium's `h2` crate. A lane is one stream slot: `-c N --streams S`
//! opens N connections per run and S lanes on each, so N x S requests are in flight and the
//! engine's request loop is the same as for HTTP/1.1.
//!
//! Lanes of one connection share it through a per-worker pool (connections never cross
//! threads). A connection the server ends with a GOAWAY is re-opened by the first lane that
//! needs it; the others join the new one. Requests on streams above the GOAWAY's last stream
//! id fail as [`WireError::GoAway`]; a request not yet sent when the GOAWAY came goes out on
//! the new connection instead (it was never lost). A stream the server resets fails as
//! [`WireError::StreamReset`] with its code, and a connection the server breaks (bad frames,
//! PROTOCOL_ERROR) fails its requests as malformed and is re-opened.
//!
//! Bytes counted for HTTP/2 are payload bytes: each DATA frame's data and each header's name
//! and value as decoded (HPACK's compression and the 9-byte frame headers are not seen here).

use std::future::poll_fn;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{HeaderMap, Method, Request, Uri};

use super::connect::{Connector, Stream};
use super::{HttpMethod, Lane, Outgoing, Reply, Transport, WireError, WireStats};
use crate::ratelimit::headers::RateHeaders;
use crate::settings::{Scheme, Target};

/// Each stream's receive window: a 1 MiB reply arrives without waiting for WINDOW_UPDATEs.
const STREAM_WINDOW: u32 = 1024 * 1024;
/// The connection's receive window (shared by its streams).
const CONNECTION_WINDOW: u32 = 16 * 1024 * 1024;
/// Largest header list a server may send (as HTTP/1.1's head limit).
const MAX_HEADER_LIST: u32 = 64 * 1024;

/// The trailer (or, in a reply without a body, the header) that ends a gRPC call.
const GRPC_STATUS: &str = "grpc-status";

/// Headers HTTP/2 forbids (connection-specific, RFC 9113 section 8.2.2): dropped from the
/// run's headers rather than sent and refused.
const CONNECTION_HEADERS: [&str; 6] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"];

/// What every request of a run shares.
#[derive(Debug)]
struct RequestParts {
    /// The target URL as `scheme://authority/path?query`.
    uri: Uri,
    /// `scheme://authority`, to put a REST call's own path after.
    origin: String,
    /// The run's headers, User-Agent and Content-Type included.
    headers: HeaderMap,
    /// Whether the run's headers set a Content-Type.
    has_content_type: bool,
    /// Bytes of the headers above, as counted for every request.
    header_bytes: usize,
    /// The headers of a plain JSON-RPC POST: the run's, with the Content-Type (prepared once,
    /// cloned per request).
    post_headers: HeaderMap,
    /// Bytes of `post_headers`.
    post_header_bytes: usize,
}

impl RequestParts {
    fn new(target: &Target, run_headers: &[(String, String)]) -> io::Result<Self> {
        let scheme = match target.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        // The user's Host header names the authority (HTTP/2 has no Host line of its own).
        let authority = run_headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("host"))
            .map_or(target.host_header.as_str(), |(_, value)| value.as_str());
        let origin = format!("{scheme}://{authority}");
        let uri: Uri = format!("{origin}{}", target.path_and_query)
            .parse()
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidInput, format!("URL for HTTP/2: {err}")))?;
        let mut headers = HeaderMap::new();
        let has = |wanted: &str| run_headers.iter().any(|(name, _)| name.eq_ignore_ascii_case(wanted));
        if !has("user-agent") {
            headers.insert(
                http::header::USER_AGENT,
                HeaderValue::from_static(concat!("rpcbench/", env!("CARGO_PKG_VERSION"))),
            );
        }
        if let Some(credentials) = target.basic_authorization().filter(|_| !has("authorization")) {
            headers.insert(http::header::AUTHORIZATION, header_value(credentials)?);
        }
        for (name, value) in run_headers {
            let lower = name.to_ascii_lowercase();
            if CONNECTION_HEADERS.contains(&lower.as_str()) {
                continue;
            }
            let name = HeaderName::from_bytes(lower.as_bytes()).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("header name '{name}' for HTTP/2"))
            })?;
            headers.append(name, header_value(value)?);
        }
        let has_content_type = has("content-type");
        let size = |map: &HeaderMap| map.iter().map(|(name, value)| name.as_str().len() + value.len()).sum();
        let header_bytes = size(&headers);
        let mut post_headers = headers.clone();
        if !has_content_type {
            post_headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let post_header_bytes = size(&post_headers);
        Ok(Self { uri, origin, headers, has_content_type, header_bytes, post_headers, post_header_bytes })
    }

    /// The request `outgoing` describes, and its payload size without the body.
    fn request(&self, outgoing: &Outgoing) -> Result<(Request<()>, usize), WireError> {
        let mut request = Request::new(());
        if outgoing.is_plain_post() {
            *request.method_mut() = Method::POST;
            *request.uri_mut() = self.uri.clone();
            *request.headers_mut() = self.post_headers.clone();
            return Ok((request, self.post_header_bytes));
        }
        *request.method_mut() = method(outgoing.method);
        *request.uri_mut() = if outgoing.path.is_empty() {
            self.uri.clone()
        } else {
            let mut text = self.origin.clone();
            text.push_str(std::str::from_utf8(&outgoing.path).map_err(|_| WireError::Malformed)?);
            text.parse().map_err(|_| WireError::Malformed)?
        };
        let mut headers = self.headers.clone();
        let mut bytes = self.header_bytes;
        let mut own_content_type = false;
        // A request's own header replaces the run's of that name (the URL's credentials too):
        // one Authorization, as `run -H` does. Its lines of one name are all kept.
        let mut replaced: Vec<HeaderName> = Vec::new();
        for line in outgoing.headers.split(|&b| b == b'\n') {
            let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
            let name = line[..colon].trim_ascii();
            let value = line[colon + 1..].trim_ascii();
            let Ok(name) = HeaderName::from_bytes(&name.to_ascii_lowercase()) else { continue };
            if CONNECTION_HEADERS.contains(&name.as_str()) {
                continue;
            }
            let Ok(value) = HeaderValue::from_bytes(value) else { continue };
            if !replaced.contains(&name) {
                for old in headers.get_all(&name) {
                    bytes -= name.as_str().len() + old.len();
                }
                headers.remove(&name);
                replaced.push(name.clone());
            }
            own_content_type |= name == CONTENT_TYPE;
            bytes += name.as_str().len() + value.len();
            headers.append(name, value);
        }
        let has_body = !outgoing.body.is_empty() || outgoing.method.has_body();
        if has_body && !self.has_content_type && !own_content_type {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            bytes += "content-type".len() + "application/json".len();
        }
        *request.headers_mut() = headers;
        Ok((request, bytes))
    }
}

/// Why an h2c connection failed before its first PING was answered, pointing the right way: a
/// GOAWAY is an HTTP/2 server refusing the connection (it does speak h2c); a reset or bytes
/// that are not HTTP/2 frames are a server that does not.
fn h2c_refusal(err: &h2::Error, goaway_without_error: bool) -> String {
    // A GOAWAY of our own (h2 sends one on bytes that are not frames) is not the server's.
    let servers_goaway = err.is_go_away() && err.is_remote();
    if servers_goaway || goaway_without_error {
        let reason = match err.reason() {
            Some(reason) if servers_goaway => format!("{reason:?}"),
            _ => "NO_ERROR".to_string(),
        };
        return format!(
            "the server speaks HTTP/2 (h2c) but closed the connection with GOAWAY ({reason}) before \
             answering a PING: it refuses connections now (a connection or stream limit, shutting down)"
        );
    }
    if err.is_io() {
        return "the server closed the connection after the HTTP/2 preface without sending a frame: \
                it does not speak cleartext HTTP/2 with prior knowledge (h2c)"
            .to_string();
    }
    "the server does not speak cleartext HTTP/2 with prior knowledge (h2c): it answered the \
     connection preface with bytes that are not HTTP/2 frames"
        .to_string()
}

fn header_value(text: &str) -> io::Result<HeaderValue> {
    HeaderValue::from_str(text)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a header value HTTP/2 cannot carry"))
}

fn method(method: HttpMethod) -> Method {
    match method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Put => Method::PUT,
        HttpMethod::Delete => Method::DELETE,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Head => Method::HEAD,
        HttpMethod::Options => Method::OPTIONS,
    }
}

/// The state of one HTTP/2 connection that its lanes and its driver task share.
#[derive(Debug, Default)]
struct ConnectionState {
    /// The connection can take no new stream (it ended, failed, or got a GOAWAY).
    ended: AtomicBool,
    /// A GOAWAY from the server was seen (counted once per connection).
    goaway: AtomicBool,
    /// The server's stream limit has been read into the pool's figures.
    limit_read: AtomicBool,
}

/// An open connection: where its lanes send, and its state.
#[derive(Debug, Clone)]
struct OpenConnection {
    send: SendRequest<Bytes>,
    state: Arc<ConnectionState>,
}

/// The connections of one worker, by connection index, and what they saw.
#[derive(Debug, Default)]
struct Pool {
    slots: Mutex<Vec<Arc<tokio::sync::Mutex<Option<OpenConnection>>>>>,
    opened: AtomicU64,
    goaways: AtomicU64,
    /// Requests sent again on a new connection after a graceful GOAWAY left them unprocessed.
    retried_after_goaway: AtomicU64,
    /// The lowest stream limit a server advertised (`u64::MAX`: none seen).
    max_streams: AtomicU64,
}

impl Pool {
    fn new() -> Self {
        Self { max_streams: AtomicU64::new(u64::MAX), ..Self::default() }
    }

    fn slot(&self, connection: usize) -> Arc<tokio::sync::Mutex<Option<OpenConnection>>> {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while slots.len() <= connection {
            slots.push(Arc::default());
        }
        slots[connection].clone()
    }

    /// Counts a GOAWAY from the server on `state`'s connection, once per connection.
    fn goaway_received(&self, state: &ConnectionState) {
        state.ended.store(true, Ordering::Relaxed);
        if !state.goaway.swap(true, Ordering::Relaxed) {
            self.goaways.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The HTTP/2 transport: connections to one target, each carrying `streams` lanes.
#[derive(Debug, Clone)]
pub(crate) struct Http2 {
    connector: Connector,
    parts: Arc<RequestParts>,
    streams: usize,
    /// TLS: ALPN must agree on `h2`.
    tls: bool,
    pool: Arc<Pool>,
    /// gRPC calls (`super::grpc_unary`): each reply's `grpc-status` is kept, from its trailers
    /// or from its head (a trailers-only reply); other runs never look for one.
    keeps_grpc_status: bool,
}

impl Http2 {
    /// A transport to `target` with `streams` lanes per connection, sending `headers` with
    /// every request. The connector must offer ALPN `h2` for an https target
    /// ([`super::connect::Alpn::Http2`]).
    pub(crate) fn new(
        connector: Connector,
        target: &Target,
        headers: &[(String, String)],
        streams: usize,
    ) -> io::Result<Self> {
        Ok(Self {
            connector,
            parts: Arc::new(RequestParts::new(target, headers)?),
            streams: streams.max(1),
            tls: target.scheme == Scheme::Https,
            pool: Arc::new(Pool::new()),
            keeps_grpc_status: false,
        })
    }

    /// The same transport keeping each reply's `grpc-status` ([`StreamSlot::grpc_status`]).
    pub(crate) fn keeping_grpc_status(self) -> Self {
        Self { keeps_grpc_status: true, ..self }
    }

    /// Opens one connection and checks that the server speaks HTTP/2: over TLS, that ALPN
    /// chose `h2`; in cleartext, that the server answers a PING after the preface. `Ok` when
    /// it does, or when the server could not be reached at all (the run counts that);
    /// `Err` with the reason when it answered but not in HTTP/2.
    pub(crate) async fn check_server(&self) -> Result<(), String> {
        let stream = match self.connector.connect().await {
            Ok(stream) => stream,
            // rustls ends a handshake whose ALPN offers have nothing in common.
            Err(err) if is_no_common_protocol(&err) => {
                return Err("the server does not offer HTTP/2 over TLS: it refused ALPN h2 \
                            (no application protocol in common)"
                    .into())
            }
            Err(_) => return Ok(()),
        };
        if self.tls {
            return match stream.negotiated_protocol() {
                Some(b"h2") => Ok(()),
                Some(other) => Err(format!(
                    "the server does not offer HTTP/2 over TLS: ALPN chose {}",
                    String::from_utf8_lossy(other)
                )),
                None => Err("the server does not offer HTTP/2 over TLS: it did not answer ALPN".into()),
            };
        }
        let Ok((send, mut connection)) = h2::client::handshake(stream).await else {
            return Ok(());
        };
        let Some(mut ping) = connection.ping_pong() else { return Ok(()) };
        let driver = tokio::spawn(connection);
        // As long as a connection may take (--connect-timeout): a stalled server is the run's
        // to measure.
        let wait = self.connector.connect_timeout();
        let answered = tokio::time::timeout(wait, ping.ping(h2::Ping::opaque())).await;
        drop(send);
        match answered {
            Ok(Ok(_)) | Err(_) => {
                driver.abort();
                Ok(())
            }
            Ok(Err(ping_error)) => {
                // The connection's own end says why (a GOAWAY reaches it, not the PING).
                let ended = tokio::time::timeout(wait, driver).await;
                let cause = match &ended {
                    Ok(Ok(Err(err))) => err,
                    _ => &ping_error,
                };
                let goaway_without_error = matches!(ended, Ok(Ok(Ok(()))));
                Err(h2c_refusal(cause, goaway_without_error))
            }
        }
    }

    /// Connects, handshakes and starts the connection's driver task.
    async fn connect(&self) -> io::Result<OpenConnection> {
        let stream = self.connector.connect().await?;
        if self.tls && stream.negotiated_protocol() != Some(b"h2") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the server did not agree to HTTP/2 (ALPN)",
            ));
        }
        let (send, mut connection) = handshake(stream).await?;
        let ping = connection.ping_pong();
        let state = Arc::new(ConnectionState::default());
        let driver_state = state.clone();
        let pool = self.pool.clone();
        // The lanes hold handles to the connection anyway; this one tells, once the connection
        // has ended, whether the server had sent a GOAWAY (a GOAWAY with NO_ERROR ends the
        // connection without an error of its own).
        let mut probe = send.clone();
        let driver = tokio::spawn(async move {
            let ended_by = connection.await.err().or_else(|| {
                let mut context = std::task::Context::from_waker(std::task::Waker::noop());
                match probe.poll_ready(&mut context) {
                    std::task::Poll::Ready(Err(err)) => Some(err),
                    _ => None,
                }
            });
            if ended_by.is_some_and(|err| err.is_go_away() && err.is_remote()) {
                pool.goaway_received(&driver_state);
            }
            driver_state.ended.store(true, Ordering::Relaxed);
        });
        // The server's SETTINGS come before its answer to a PING: once the PING is answered,
        // its stream limit holds, and no stream is opened past it and refused.
        if let Some(mut ping) = ping {
            let answered =
                tokio::time::timeout(self.connector.connect_timeout(), ping.ping(h2::Ping::opaque())).await;
            let failed = match answered {
                Ok(Ok(_)) => None,
                Ok(Err(err)) => Some(io::Error::other(format!("HTTP/2 connection: {err}"))),
                Err(_) => {
                    Some(io::Error::new(io::ErrorKind::TimedOut, "HTTP/2: no SETTINGS from the server"))
                }
            };
            if let Some(err) = failed {
                // The driver holds a handle of its own (the probe), so the connection would
                // never end by itself: stop it, which closes the socket.
                driver.abort();
                return Err(err);
            }
        }
        self.pool.opened.fetch_add(1, Ordering::Relaxed);
        Ok(OpenConnection { send, state })
    }

    /// The connection of lane `index`: the open one, or a new one when there is none or it
    /// ended (`stale`: the one the lane had). Returns it and how long connecting took.
    async fn connection(
        &self,
        index: usize,
        stale: Option<&Arc<ConnectionState>>,
    ) -> io::Result<(OpenConnection, Option<Duration>)> {
        let slot = self.pool.slot(index / self.streams);
        let mut current = slot.lock().await;
        if let Some(open) = current.as_ref() {
            let same_as_stale = stale.is_some_and(|stale| Arc::ptr_eq(stale, &open.state));
            if !open.state.ended.load(Ordering::Relaxed) && !same_as_stale {
                return Ok((open.clone(), None));
            }
        }
        *current = None;
        let started = Instant::now();
        let open = self.connect().await?;
        *current = Some(open.clone());
        Ok((open, Some(started.elapsed())))
    }
}

/// Whether a connect failed because TLS found no application protocol both sides offer.
fn is_no_common_protocol(err: &io::Error) -> bool {
    let Some(inner) = err.get_ref() else { return false };
    matches!(
        inner.downcast_ref::<rustls::Error>(),
        Some(rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol))
            | Some(rustls::Error::NoApplicationProtocol)
    )
}

async fn handshake(
    stream: Stream,
) -> io::Result<(SendRequest<Bytes>, h2::client::Connection<Stream, Bytes>)> {
    h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_header_list_size(MAX_HEADER_LIST)
        .enable_push(false)
        .handshake(stream)
        .await
        .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, format!("HTTP/2 handshake: {err}")))
}

impl Transport for Http2 {
    type Lane = StreamSlot;

    fn for_worker(&self) -> Self {
        Self { pool: Arc::new(Pool::new()), ..self.clone() }
    }

    async fn open(&self, index: usize) -> io::Result<StreamSlot> {
        let (open, connect_time) = self.connection(index, None).await?;
        Ok(StreamSlot {
            transport: self.clone(),
            index,
            open,
            body: Vec::new(),
            connect_time,
            unprocessed: false,
            grpc_status: None,
        })
    }

    fn stats(&self) -> WireStats {
        let max_streams = self.pool.max_streams.load(Ordering::Relaxed);
        WireStats {
            connections_opened: self.pool.opened.load(Ordering::Relaxed),
            goaways_received: self.pool.goaways.load(Ordering::Relaxed),
            retried_after_goaway: self.pool.retried_after_goaway.load(Ordering::Relaxed),
            server_max_streams: (max_streams != u64::MAX).then_some(max_streams),
            ..WireStats::default()
        }
    }
}

/// One stream slot on an HTTP/2 connection: one request at a time, the connection shared with
/// the other lanes of the same connection index.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    transport: Http2,
    index: usize,
    open: OpenConnection,
    /// The body of the last reply.
    body: Vec<u8>,
    /// Time spent connecting for this lane and not yet taken: by `open` (`None` when the lane
    /// joined an open connection) or by an exchange that re-opened the connection.
    connect_time: Option<Duration>,
    /// The last exchange's stream was above the last stream id of a graceful GOAWAY (NO_ERROR):
    /// the server never processed it, so it may be sent again (RFC 9113 section 6.8).
    unprocessed: bool,
    /// The last reply's `grpc-status`, when the transport keeps it.
    grpc_status: Option<HeaderValue>,
}

/// How an `h2` error ends an exchange, and whether the connection is done for.
fn classify_error(err: &h2::Error) -> (WireError, bool) {
    if err.is_go_away() {
        if err.is_remote() {
            return (WireError::GoAway, true);
        }
        // We ended the connection: the server broke the protocol.
        return (WireError::Malformed, true);
    }
    if err.is_reset() && err.is_remote() {
        let code = err.reason().map_or(crate::outcome::UNKNOWN_RESET_CODE, u32::from);
        return (WireError::StreamReset(code), false);
    }
    if err.is_io() {
        return (WireError::Closed, true);
    }
    match err.reason() {
        Some(reason) if err.is_reset() => (WireError::StreamReset(u32::from(reason)), false),
        _ => (WireError::Closed, true),
    }
}

impl StreamSlot {
    /// Moves this lane to a live connection (the same slot's new one).
    async fn reconnect(&mut self) -> Result<(), WireError> {
        let stale = self.open.state.clone();
        match self.transport.connection(self.index, Some(&stale)).await {
            Ok((open, connect_time)) => {
                self.open = open;
                if connect_time.is_some() {
                    self.connect_time = connect_time;
                }
                Ok(())
            }
            Err(_) => Err(WireError::Connect),
        }
    }

    /// Waits for a free stream on the connection, re-opening it once if it ended before the
    /// request could go (a GOAWAY between requests loses nothing).
    async fn ready(&mut self) -> Result<(), WireError> {
        if self.open.state.ended.load(Ordering::Relaxed) {
            self.reconnect().await?;
        }
        for attempt in 0..2 {
            match poll_fn(|cx| self.open.send.poll_ready(cx)).await {
                Ok(()) => return Ok(()),
                Err(err) => {
                    let (wire, ended) = classify_error(&err);
                    if wire == WireError::GoAway {
                        self.transport.pool.goaway_received(&self.open.state);
                    }
                    if ended {
                        self.open.state.ended.store(true, Ordering::Relaxed);
                    }
                    if attempt == 1 || !ended {
                        return Err(if wire == WireError::GoAway { WireError::Closed } else { wire });
                    }
                    self.reconnect().await?;
                }
            }
        }
        Err(WireError::Closed)
    }

    /// Notes the failure `err` on the connection and returns the exchange's error.
    fn failed(&mut self, err: &h2::Error) -> WireError {
        let (wire, ended) = classify_error(err);
        if wire == WireError::GoAway {
            self.transport.pool.goaway_received(&self.open.state);
            // A graceful GOAWAY fails only the streams above its last stream id; one with an
            // error code ends every stream, processed or not.
            self.unprocessed = err.reason() == Some(h2::Reason::NO_ERROR);
        } else if ended {
            self.open.state.ended.store(true, Ordering::Relaxed);
        }
        wire
    }
}

impl Lane for StreamSlot {
    async fn exchange(&mut self, request: &Outgoing, max_body: u64) -> Result<Reply, WireError> {
        self.unprocessed = false;
        match self.exchange_once(request, max_body).await {
            // The server never processed it: once more on a new connection (the lane's slot
            // re-opens it); a second GOAWAY for the same request counts as its outcome.
            Err(WireError::GoAway) if self.unprocessed => {
                // The time up to the retry's write is its send phase; the latency runs from the
                // request's intended time as for any other.
                self.transport.pool.retried_after_goaway.fetch_add(1, Ordering::Relaxed);
                self.exchange_once(request, max_body).await
            }
            result => result,
        }
    }

    fn body(&self) -> &[u8] {
        &self.body
    }

    const MEASURES_CONNECT: bool = true;

    fn take_connect_time(&mut self) -> Option<Duration> {
        self.connect_time.take()
    }
}

impl StreamSlot {
    /// The last reply's `grpc-status` (from its trailers, or its head when it had no body),
    /// when the transport keeps it ([`Http2::keeping_grpc_status`]).
    pub(crate) fn grpc_status(&self) -> Option<&HeaderValue> {
        self.grpc_status.as_ref()
    }

    /// One attempt of an exchange on the lane's connection.
    async fn exchange_once(&mut self, request: &Outgoing, max_body: u64) -> Result<Reply, WireError> {
        self.body.clear();
        self.grpc_status = None;
        let (head, header_bytes) = self.transport.parts.request(request)?;
        self.ready().await?;
        let end_of_stream = request.body.is_empty();
        let (response, mut body_out) = match self.open.send.send_request(head, end_of_stream) {
            Ok(sent) => sent,
            Err(err) => return Err(self.failed(&err)),
        };
        if !end_of_stream {
            if let Err(err) = body_out.send_data(Bytes::copy_from_slice(&request.body), true) {
                return Err(self.failed(&err));
            }
        }
        let written_at = Instant::now();
        let response = match response.await {
            Ok(response) => response,
            Err(err) => return Err(self.failed(&err)),
        };
        let first_byte_at = Instant::now();
        let state = &self.open.state;
        if !state.limit_read.swap(true, Ordering::Relaxed) {
            let limit = self.open.send.current_max_send_streams();
            if limit != usize::MAX {
                self.transport.pool.max_streams.fetch_min(limit as u64, Ordering::Relaxed);
            }
        }
        let status = response.status().as_u16();
        let mut wire_bytes = 0;
        let mut rate = RateHeaders::NONE;
        for (name, value) in response.headers() {
            wire_bytes += name.as_str().len() + value.len();
            rate.add(name.as_str().as_bytes(), value.as_bytes());
        }
        let response_head_status = if self.transport.keeps_grpc_status {
            response.headers().get(GRPC_STATUS).cloned()
        } else {
            None
        };
        let mut incoming = response.into_body();
        // Stops at the frame that ends the stream, without one more poll to learn that.
        while !incoming.is_end_stream() {
            let Some(chunk) = incoming.data().await else { break };
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(err) => return Err(self.failed(&err)),
            };
            let _ = incoming.flow_control().release_capacity(chunk.len());
            wire_bytes += chunk.len();
            if (self.body.len() + chunk.len()) as u64 > max_body {
                // Dropping the stream resets it (CANCEL); the connection stays up.
                return Err(WireError::TooLarge);
            }
            self.body.extend_from_slice(&chunk);
        }
        if self.transport.keeps_grpc_status {
            self.grpc_status = response_head_status;
            if !incoming.is_end_stream() {
                // The data ended without END_STREAM: trailers follow.
                match incoming.trailers().await {
                    Ok(Some(trailers)) => {
                        for (name, value) in &trailers {
                            wire_bytes += name.as_str().len() + value.len();
                        }
                        if let Some(status) = trailers.get(GRPC_STATUS) {
                            self.grpc_status = Some(status.clone());
                        }
                    }
                    Ok(None) => {}
                    Err(err) => return Err(self.failed(&err)),
                }
            }
        }
        Ok(Reply {
            status,
            reusable: !self.open.state.ended.load(Ordering::Relaxed),
            wire_bytes,
            request_bytes: header_bytes + request.body.len(),
            written_at,
            first_byte_at,
            extra_bytes: false,
            arrived_at: None,
            rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::SocketAddr;

    use super::*;
    use crate::settings::TlsOptions;

    /// A hand-written HTTP/2 server (the `h2` crate's server cannot send a GOAWAY whose last
    /// stream id is below a stream it has read): on each connection it answers the first
    /// `answered[connection]` requests with 200, and then answers the next request with a
    /// graceful GOAWAY (NO_ERROR) whose last stream id is the last stream it answered.
    fn goaway_server(answered: Vec<usize>) -> SocketAddr {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for answer in answered {
                let Ok((mut socket, _)) = listener.accept() else { return };
                std::thread::spawn(move || serve_h2_frames(&mut socket, answer));
            }
        });
        addr
    }

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    fn serve_h2_frames(socket: &mut std::net::TcpStream, mut answer: usize) {
        const END_STREAM: u8 = 0x1;
        let mut preface = [0u8; 24];
        if socket.read_exact(&mut preface).is_err() {
            return;
        }
        let _ = socket.write_all(&frame(4, 0, 0, &[]));
        let mut last_answered = 0u32;
        loop {
            let mut head = [0u8; 9];
            if socket.read_exact(&mut head).is_err() {
                return;
            }
            let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
            let (kind, flags) = (head[3], head[4]);
            let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
            let mut payload = vec![0u8; len];
            if socket.read_exact(&mut payload).is_err() {
                return;
            }
            let reply = match kind {
                4 if flags & 0x1 == 0 => frame(4, 0x1, 0, &[]),
                6 if flags & 0x1 == 0 => frame(6, 0x1, 0, &payload),
                // The end of a request (HEADERS or DATA with END_STREAM).
                0 | 1 if flags & END_STREAM != 0 && answer > 0 => {
                    answer -= 1;
                    last_answered = stream;
                    // HEADERS `:status 200` (HPACK static index 8), then the body.
                    let mut out = frame(1, 0x4, stream, &[0x88]);
                    out.extend(frame(0, END_STREAM, stream, br#"{"jsonrpc":"2.0","id":1,"result":1}"#));
                    out
                }
                0 | 1 if flags & END_STREAM != 0 => {
                    let mut goaway = last_answered.to_be_bytes().to_vec();
                    goaway.extend_from_slice(&0u32.to_be_bytes());
                    frame(7, 0, 0, &goaway)
                }
                _ => continue,
            };
            if socket.write_all(&reply).is_err() {
                return;
            }
        }
    }

    async fn lane_to(addr: SocketAddr) -> (Http2, StreamSlot) {
        let target = Target::parse(&format!("http://{addr}/")).unwrap();
        let connector = Connector::new(&target, &TlsOptions::default(), Duration::from_secs(30)).unwrap();
        let transport = Http2::new(connector, &target, &[], 1).unwrap();
        let lane = transport.open(0).await.unwrap();
        (transport, lane)
    }

    #[tokio::test]
    async fn a_request_left_unprocessed_by_a_graceful_goaway_is_retried_once_on_a_new_connection() {
        // The first connection answers one request, then GOAWAYs the second; the second
        // connection answers it.
        let (transport, mut lane) = lane_to(goaway_server(vec![1, 1])).await;
        let mut request = Outgoing::default();
        request.body.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#);
        assert_eq!(lane.exchange(&request, 1 << 20).await.map(|reply| reply.status), Ok(200));
        let retried = lane.exchange(&request, 1 << 20).await.expect("answered after the retry");
        assert_eq!(retried.status, 200);
        assert_eq!(lane.body(), br#"{"jsonrpc":"2.0","id":1,"result":1}"#);
        let stats = transport.stats();
        assert_eq!((stats.retried_after_goaway, stats.goaways_received, stats.connections_opened), (1, 1, 2));
    }

    #[tokio::test]
    async fn a_second_goaway_for_the_same_request_is_its_outcome() {
        // Every connection GOAWAYs its first request: one retry, then the GOAWAY counts.
        let (transport, mut lane) = lane_to(goaway_server(vec![0, 0, 0])).await;
        let mut request = Outgoing::default();
        request.body.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#);
        assert_eq!(lane.exchange(&request, 1 << 20).await.map(|reply| reply.status), Err(WireError::GoAway));
        let stats = transport.stats();
        assert_eq!((stats.retried_after_goaway, stats.goaways_received, stats.connections_opened), (1, 2, 2));
    }

    #[tokio::test]
    async fn a_connect_whose_ping_is_never_answered_leaves_no_socket_or_task_behind() {
        // Takes the preface and the client's frames, never answers; tells when the client closed.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (closed, mut closed_rx) = tokio::sync::mpsc::unbounded_channel();
        const ATTEMPTS: usize = 20;
        std::thread::spawn(move || {
            for _ in 0..ATTEMPTS {
                let Ok((mut socket, _)) = listener.accept() else { return };
                let closed = closed.clone();
                std::thread::spawn(move || {
                    let mut scratch = [0u8; 1024];
                    while socket.read(&mut scratch).is_ok_and(|n| n > 0) {}
                    drop(socket);
                    let _ = closed.send(());
                });
            }
        });
        let target = Target::parse(&format!("http://{addr}/")).unwrap();
        let connector = Connector::new(&target, &TlsOptions::default(), Duration::from_millis(50)).unwrap();
        let transport = Http2::new(connector, &target, &[], 1).unwrap();
        let metrics = tokio::runtime::Handle::current().metrics();
        let tasks_before = metrics.num_alive_tasks();
        for _ in 0..ATTEMPTS {
            let err = transport.connect().await.expect_err("no answer to the PING");
            assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        }
        // Every client socket is closed (the server reads its end), whatever the time it takes;
        // the bound only keeps a leak from hanging the test.
        for attempt in 0..ATTEMPTS {
            tokio::time::timeout(Duration::from_secs(120), closed_rx.recv())
                .await
                .unwrap_or_else(|_| panic!("connection {attempt} of {ATTEMPTS} was never closed"));
        }
        assert_eq!(metrics.num_alive_tasks(), tasks_before, "a driver task outlived its failed connect");
        assert_eq!(transport.pool.opened.load(Ordering::Relaxed), 0);
    }
}

#[cfg(test)]
mod request_header_tests {
    use super::*;

    #[test]
    fn a_requests_own_authorization_replaces_the_urls_and_is_sent_once() {
        let target = Target::parse("http://bob:pw@127.0.0.1:8899/rpc").unwrap();
        let parts = RequestParts::new(&target, &[("accept".into(), "application/json".into())]).unwrap();
        let outgoing = Outgoing {
            headers: b"Authorization: Bearer client\r\nHost: x\r\nAccept: a\r\nAccept: b\r\n".to_vec(),
            body: b"{}".to_vec(),
            ..Outgoing::default()
        };
        let (request, bytes) = parts.request(&outgoing).unwrap();
        let headers = request.headers();
        let all = |name: &str| {
            headers.get_all(name).iter().map(|v| v.to_str().unwrap().to_string()).collect::<Vec<_>>()
        };
        assert_eq!(all("authorization"), ["Bearer client"]);
        assert_eq!(all("accept"), ["a", "b"]);
        assert!(all("host").is_empty());
        let counted: usize = headers.iter().map(|(name, value)| name.as_str().len() + value.len()).sum();
        assert_eq!(bytes, counted);
    }
}
