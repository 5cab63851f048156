//! The one HTTP/1.1 server of the crate, shared by the mock nodes, the metrics endpoint and
//! the proxy.
//!
//! Two parts:
//! - [`ServerThread`] binds a listener and runs a server on a tokio runtime of its own, on a
//!   thread of its own (a current-thread runtime for one thread, a multi-thread one
//!   otherwise); it stops on a shutdown watch and is joined on [`ServerThread::stop`] or drop.
//! - [`serve_connection`] is a keep-alive HTTP/1.1 connection loop written over `httparse`,
//!   generic over the byte stream and over a [`Handler`] that answers one complete request at
//!   a time. The loop does the framing and the refusals every server shares: requests are
//!   parsed from one reusable buffer, pipelined requests are answered in order with one
//!   `write` per batch, bodies are framed by `Content-Length` only, and a plain request
//!   allocates nothing. The buffer grows with the bytes received, never with a declared
//!   length (at most twice what arrived, or 64 KiB).
//!
//! Behaviour of the loop, as pinned by the tests in `tests/mock_nodes.rs`:
//! - keep-alive by default for HTTP/1.1; `Connection: close` and HTTP/1.0 (unless it asks
//!   for `keep-alive`) close the connection after the answer;
//! - `Expect: 100-continue` gets `100 Continue` before the body is read;
//! - a declared body over the handler's limit gets 413 ([`Handler::refuse_too_large`]), a
//!   `Transfer-Encoding` (chunked bodies) gets 411 Length Required, a malformed head or
//!   `Content-Length` gets 400, a head over 64 KiB or with more than 64 headers gets 431; all
//!   of these close the connection, and their body is a JSON-RPC error with id null;
//! - with [`Limits::head_timeout`], a connection whose next request head is not complete
//!   within that time is closed (idle keep-alive connections included);
//! - a server counts its connections with [`OpenConnections`]: past its cap, a new connection
//!   is closed at once, so idle or trickling clients cannot take every file descriptor
//!   (the metrics endpoint, the proxy and `serve` share it, each with its own cap);
//! - a handler may take the connection over after its answer (the mock's WebSocket upgrade):
//!   it gets the stream and the bytes read past the request.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Largest request head (request line and headers).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Most headers in one request.
pub(crate) const MAX_HEADERS: usize = 64;
/// Initial size of a connection's read buffer; it grows for large bodies.
const INITIAL_BUFFER: usize = 8 * 1024;
/// A buffer grows at once toward a declared body up to this size; past it, only by doubling
/// when full ([`body_room`]), so a declared length costs nothing until its bytes arrive.
const EAGER_BODY: usize = 64 * 1024;
/// The JSON-RPC error code of the HTTP-level refusals (Invalid Request).
const INVALID_REQUEST: i64 = -32600;

/// Why a server could not start.
#[derive(Debug)]
pub(crate) enum StartError {
    /// The listen address could not be bound.
    Bind { addr: SocketAddr, source: io::Error },
    /// The runtime or its thread could not be created.
    Runtime(io::Error),
}

/// A server running on a runtime and thread of its own. Stops (joining the thread) on
/// [`ServerThread::stop`] or drop.
#[derive(Debug)]
pub(crate) struct ServerThread {
    addr: SocketAddr,
    shutdown: Option<watch::Sender<bool>>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Binds `listen` and runs `serve(listener, shutdown)` on a runtime of `threads` workers
    /// (one: a current-thread runtime on the server's own thread) on a thread named `name`.
    /// When `serve` returns, the runtime gets `drain` to finish its other tasks. Returns once
    /// the socket is listening.
    pub(crate) fn start<F, Fut>(
        listen: SocketAddr,
        threads: usize,
        name: &str,
        drain: Duration,
        serve: F,
    ) -> Result<ServerThread, StartError>
    where
        F: FnOnce(TcpListener, watch::Receiver<bool>) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let std_listener = crate::server::listen::bind(listen)
            .map_err(|source| StartError::Bind { addr: listen, source })?;
        let addr = std_listener.local_addr().map_err(|source| StartError::Bind { addr: listen, source })?;
        std_listener.set_nonblocking(true).map_err(|source| StartError::Bind { addr, source })?;
        let runtime = if threads <= 1 {
            tokio::runtime::Builder::new_current_thread().enable_all().build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name(name)
                .enable_all()
                .build()
        }
        .map_err(StartError::Runtime)?;
        let listener = {
            let _entered = runtime.enter();
            TcpListener::from_std(std_listener).map_err(|source| StartError::Bind { addr, source })?
        };
        let (shutdown, shutdown_rx) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                runtime.block_on(serve(listener, shutdown_rx));
                runtime.shutdown_timeout(drain);
            })
            .map_err(StartError::Runtime)?;
        Ok(ServerThread { addr, shutdown: Some(shutdown), thread: Some(thread) })
    }

    /// The address the server listens on (the real port when 0 was asked for).
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server and joins its thread.
    pub(crate) fn stop(mut self) {
        self.shutdown_and_join();
    }

    /// Sends the shutdown and joins the thread (once; later calls do nothing).
    pub(crate) fn shutdown_and_join(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(true);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.shutdown_and_join();
    }
}

/// What the head of the next request in the buffer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// The head is not complete yet.
    Partial,
    /// A request that cannot be answered normally: answer this status and close.
    Refuse(Refusal),
    Request(Request),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    BadRequest(&'static str),
    LengthRequired,
    HeadTooLarge,
}

impl Refusal {
    /// The status line and the error message.
    fn answer(self) -> (&'static [u8], String) {
        match self {
            Refusal::BadRequest(what) => (b"400 Bad Request", format!("bad HTTP request: {what}")),
            Refusal::LengthRequired => (
                b"411 Length Required",
                "request bodies need a Content-Length (Transfer-Encoding is not supported)".to_string(),
            ),
            Refusal::HeadTooLarge => (
                b"431 Request Header Fields Too Large",
                format!("request head too large: the limits are {MAX_HEAD} bytes and {MAX_HEADERS} headers"),
            ),
        }
    }
}

/// The head of one complete request. Places are offsets from the start of the request's
/// bytes (the `bytes` a [`Handler`] gets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) head_len: usize,
    /// Where the request target (path and query) is.
    path: (usize, usize),
    /// The declared body length (`u64::MAX` when it does not even fit a u64).
    pub(crate) body_len: u64,
    pub(crate) method: Method,
    pub(crate) keep_alive: bool,
    /// HTTP/1.0: a kept-alive connection says so in every answer.
    pub(crate) http10: bool,
    expect_continue: bool,
    /// A GET asking for WebSocket (`Upgrade: websocket`); only GET heads are searched for it.
    pub(crate) upgrade: Upgrade,
}

impl Request {
    /// The request target (path and query) in the request's bytes.
    pub(crate) fn path<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.path.0..self.path.0 + self.path.1]
    }

    /// The body in the request's bytes.
    pub(crate) fn body<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.head_len..]
    }

    /// Whether the connection closes after this request's answer.
    pub(crate) fn closes(&self) -> bool {
        !self.keep_alive
    }
}

/// Whether a GET asks to switch to WebSocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Upgrade {
    No,
    /// A well-formed upgrade; where the `Sec-WebSocket-Key` value is, from the request start.
    WebSocket {
        key: (usize, usize),
    },
    /// `Upgrade: websocket` with a missing key, another version or no `Connection: upgrade`.
    Bad(&'static str),
}

/// What a GET's headers say about WebSocket (RFC 6455 section 4.2.1).
fn websocket_upgrade(bytes: &[u8], headers: &[httparse::Header<'_>]) -> Upgrade {
    let (mut websocket, mut connection, mut version, mut key) = (false, false, None, None);
    for header in headers {
        let name = header.name.as_bytes();
        let value = header.value.trim_ascii();
        if name.eq_ignore_ascii_case(b"upgrade") {
            websocket |=
                value.split(|b| *b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(b"websocket"));
        } else if name.eq_ignore_ascii_case(b"connection") {
            connection |=
                value.split(|b| *b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(b"upgrade"));
        } else if name.eq_ignore_ascii_case(b"sec-websocket-version") {
            version = Some(value);
        } else if name.eq_ignore_ascii_case(b"sec-websocket-key") {
            key = Some(value);
        }
    }
    if !websocket {
        return Upgrade::No;
    }
    if !connection {
        return Upgrade::Bad("a WebSocket upgrade needs Connection: upgrade");
    }
    if version != Some(b"13") {
        return Upgrade::Bad("a WebSocket upgrade needs Sec-WebSocket-Version: 13");
    }
    match key {
        Some(key) if !key.is_empty() => {
            Upgrade::WebSocket { key: (key.as_ptr() as usize - bytes.as_ptr() as usize, key.len()) }
        }
        _ => Upgrade::Bad("a WebSocket upgrade needs a Sec-WebSocket-Key"),
    }
}

/// The request methods the servers tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Post,
    Head,
    Get,
    Other,
}

fn parse_head(bytes: &[u8]) -> Head {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if bytes.len() > MAX_HEAD => {
            return Head::Refuse(Refusal::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => return Head::Partial,
        Err(httparse::Error::TooManyHeaders) => return Head::Refuse(Refusal::HeadTooLarge),
        Err(_) => return Head::Refuse(Refusal::BadRequest("malformed request head")),
    };
    if head_len > MAX_HEAD {
        return Head::Refuse(Refusal::HeadTooLarge);
    }
    let http10 = request.version == Some(0);
    let method = match request.method {
        Some("POST") => Method::Post,
        Some("HEAD") => Method::Head,
        Some("GET") => Method::Get,
        _ => Method::Other,
    };
    let path =
        request.path.map_or((0, 0), |path| (path.as_ptr() as usize - bytes.as_ptr() as usize, path.len()));
    let mut body_len: Option<u64> = None;
    let mut keep_alive = !http10;
    let mut expect_continue = false;
    for header in request.headers.iter() {
        let name = header.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let Some(len) = parse_content_length(header.value) else {
                return Head::Refuse(Refusal::BadRequest("invalid Content-Length"));
            };
            if body_len.is_some_and(|seen| seen != len) {
                return Head::Refuse(Refusal::BadRequest("conflicting Content-Length headers"));
            }
            body_len = Some(len);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return Head::Refuse(Refusal::LengthRequired);
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in header.value.split(|byte| *byte == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                    keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case(b"expect") {
            expect_continue = header.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    let body_len = body_len.unwrap_or(0);
    let upgrade = if method == Method::Get { websocket_upgrade(bytes, request.headers) } else { Upgrade::No };
    Head::Request(Request { head_len, path, body_len, method, keep_alive, http10, expect_continue, upgrade })
}

/// Decimal digits only (optionally surrounded by blanks); a number too large for a u64 is
/// `u64::MAX`, so it is refused as too large rather than as malformed.
fn parse_content_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')))
            .unwrap_or(u64::MAX),
    )
}

/// The value of header `name` (case-insensitive) in a request's head, if present once or more
/// (the first one).
pub(crate) fn header_value<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    request.parse(head).ok()?;
    request
        .headers
        .iter()
        .find(|header| header.name.as_bytes().eq_ignore_ascii_case(name))
        .map(|header| header.value.trim_ascii())
}

/// The text of a `Date` header, recomputed at most once a second.
#[derive(Debug)]
pub(crate) struct DateCache {
    second: u64,
    pub(crate) text: [u8; 29],
}

impl DateCache {
    pub(crate) fn new() -> Self {
        let mut cache = DateCache { second: u64::MAX, text: [b' '; 29] };
        cache.refresh();
        cache
    }

    pub(crate) fn refresh(&mut self) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        if now != self.second {
            self.second = now;
            self.text = http_date(now);
        }
    }
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for seconds since the Unix epoch.
fn http_date(unix: u64) -> [u8; 29] {
    const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
    const MONTHS: [&[u8; 3]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    let days = unix / 86_400;
    let secs = unix % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = (yoe + era * 400 + u64::from(month <= 2)) % 10_000;
    let mut out = [b' '; 29];
    out[..3].copy_from_slice(DAYS[(days % 7) as usize]);
    out[3] = b',';
    let two = |out: &mut [u8], at: usize, n: u64| {
        out[at] = b'0' + (n / 10 % 10) as u8;
        out[at + 1] = b'0' + (n % 10) as u8;
    };
    two(&mut out, 5, day);
    out[8..11].copy_from_slice(MONTHS[(month - 1) as usize]);
    two(&mut out, 12, year / 100);
    two(&mut out, 14, year % 100);
    two(&mut out, 17, secs / 3600);
    out[19] = b':';
    two(&mut out, 20, secs / 60 % 60);
    out[22] = b':';
    two(&mut out, 23, secs % 60);
    out[26..].copy_from_slice(b"GMT");
    out
}

/// The content type of JSON answers.
pub(crate) const JSON: &[u8] = b"application/json";

/// Appends a response head; `body_len` is `None` for 204, which has no body framing.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    status: &[u8],
    content_type: &[u8],
    body_len: Option<usize>,
    extra: &[u8],
    request: Option<&Request>,
    close: bool,
    date: &[u8; 29],
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status);
    if let Some(len) = body_len {
        out.extend_from_slice(b"\r\ncontent-type: ");
        out.extend_from_slice(content_type);
        out.extend_from_slice(b"\r\ncontent-length: ");
        out.extend_from_slice(itoa::Buffer::new().format(len).as_bytes());
    }
    out.extend_from_slice(b"\r\ndate: ");
    out.extend_from_slice(date);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(extra);
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    } else if request.is_some_and(|request| request.http10) {
        out.extend_from_slice(b"connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends a complete response: head and body (unless the request was HEAD).
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_response(
    out: &mut Vec<u8>,
    status: &[u8],
    content_type: &[u8],
    extra: &[u8],
    body: &[u8],
    request: Option<&Request>,
    close: bool,
    date: &[u8; 29],
) {
    write_head(out, status, content_type, Some(body.len()), extra, request, close, date);
    if !request.is_some_and(|request| request.method == Method::Head) {
        out.extend_from_slice(body);
    }
}

/// Appends a complete JSON response (see [`write_response`]).
pub(crate) fn write_json(
    out: &mut Vec<u8>,
    status: &[u8],
    extra: &[u8],
    body: &[u8],
    request: Option<&Request>,
    close: bool,
    date: &[u8; 29],
) {
    write_response(out, status, JSON, extra, body, request, close, date);
}

/// Replaces `body` with a JSON-RPC error with id null: the body of the HTTP-level refusals.
pub(crate) fn error_body(body: &mut Vec<u8>, code: i64, message: &str) {
    body.clear();
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":");
    body.extend_from_slice(itoa::Buffer::new().format(code).as_bytes());
    body.extend_from_slice(b",\"message\":");
    // Serializing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *body, message);
    body.extend_from_slice(b"}}");
}

/// The message of a 413.
pub(crate) fn too_large_message(limit: usize) -> String {
    format!("request body too large: the limit is {limit} bytes")
}

/// The limits of one connection loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The largest body accepted; a larger declared body is refused before it is read.
    pub(crate) max_body: usize,
    /// The longest wait for the next complete request head (`None`: no limit).
    pub(crate) head_timeout: Option<Duration>,
    /// Whether the handler is told when each request's first and last bytes were read.
    pub(crate) timed: bool,
}

/// The connections a server has open, against its cap. Cloned into each accept loop.
#[derive(Debug, Clone)]
pub(crate) struct OpenConnections {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// The cap on a server's connections: `configured`, or else the open-file limit (raised
/// toward the hard limit first) less `reserve` descriptors the process keeps for itself (at
/// least 16; 4,096 where there is no limit to read). Clients past it are closed at once
/// instead of taking the descriptors everyone else needs.
pub(crate) fn connection_cap(configured: Option<usize>, reserve: u64) -> usize {
    configured.unwrap_or_else(|| match crate::engine::limits::raise_open_file_limit(0) {
        Some(limit) => usize::try_from(limit.saturating_sub(reserve).max(16)).unwrap_or(usize::MAX),
        None => 4096,
    })
}

/// One admitted connection; dropping it frees its place.
#[derive(Debug)]
pub(crate) struct ConnectionSlot(Arc<AtomicUsize>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl OpenConnections {
    /// At most `max` connections at once (at least one).
    pub(crate) fn new(max: usize) -> Self {
        Self { open: Arc::default(), max: max.max(1) }
    }

    /// A place for one more connection, or `None` at the cap: the caller closes the
    /// connection at once. Accept loops run on one task, so the check and the count cannot
    /// race with another admission.
    pub(crate) fn admit(&self) -> Option<ConnectionSlot> {
        if self.open.load(Ordering::Relaxed) >= self.max {
            return None;
        }
        self.open.fetch_add(1, Ordering::Relaxed);
        Some(ConnectionSlot(self.open.clone()))
    }
}

/// When the bytes of one request were read ([`Limits::timed`] only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// The read that brought the request's first bytes (for a pipelined request, the read that
    /// completed the request before it).
    pub(crate) first: Instant,
    /// The read that completed the request.
    pub(crate) complete: Instant,
}

/// What the loop does after a handler's answer.
#[derive(Debug)]
pub(crate) enum Next<T> {
    /// Go on with the next request (or close, when the request asked to).
    Continue,
    /// Send what `out` holds and close the connection.
    Close,
    /// Close at once without sending what `out` holds.
    Drop,
    /// Send what `out` holds, then hand the connection to [`Handler::take_over`].
    TakeOver(T),
}

/// Answers the requests of one connection ([`serve_connection`]).
pub(crate) trait Handler<S>: Send {
    /// What [`Next::TakeOver`] carries to [`Handler::take_over`].
    type TakeOver: Send;

    /// Answers one complete request: `bytes` are its head and body. The answer is appended
    /// to `out`, which may already hold answers to earlier pipelined requests; a handler that
    /// waits (an injected latency, an upstream) may write `out` to `stream` first, and must
    /// then clear it.
    #[allow(clippy::too_many_arguments)]
    fn answer<'a>(
        &'a mut self,
        stream: &'a mut S,
        out: &'a mut Vec<u8>,
        request: &'a Request,
        bytes: &'a [u8],
        arrival: Option<Arrival>,
        date: &'a mut DateCache,
    ) -> impl Future<Output = Next<Self::TakeOver>> + Send + 'a;

    /// Serves the connection after [`Next::TakeOver`]: `leftover` are the bytes read past the
    /// request. Handlers that never take over keep the default, which closes it.
    fn take_over(
        &mut self,
        stream: S,
        leftover: Vec<u8>,
        taken: Self::TakeOver,
    ) -> impl Future<Output = ()> + Send {
        let _ = (stream, leftover, taken);
        async {}
    }

    /// Appends the answer to a request whose declared body is over [`Limits::max_body`]; the
    /// connection closes after it. The default is 413 with a JSON-RPC error.
    fn refuse_too_large(&mut self, out: &mut Vec<u8>, request: &Request, limit: usize, date: &[u8; 29]) {
        let mut body = Vec::with_capacity(128);
        error_body(&mut body, INVALID_REQUEST, &too_large_message(limit));
        write_json(out, b"413 Payload Too Large", b"", &body, Some(request), true, date);
    }
}

/// Serves one connection until the client closes it, an error, a handler's close, or
/// shutdown while idle.
pub(crate) async fn serve_connection<S, H>(
    mut stream: S,
    mut handler: H,
    mut shutdown: watch::Receiver<bool>,
    limits: Limits,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send,
    H: Handler<S>,
{
    let stop = async move {
        let _ = shutdown.wait_for(|stop| *stop).await;
    };
    let mut stop = std::pin::pin!(stop);
    let mut buf = vec![0u8; INITIAL_BUFFER];
    let (mut start, mut end) = (0usize, 0usize);
    let mut out: Vec<u8> = Vec::with_capacity(INITIAL_BUFFER);
    let mut date = DateCache::new();
    let mut continued = false;
    // Set when the connection closes after what `out` holds.
    let mut closing = false;
    // The head timeout's deadline, reset after every answered request.
    let mut head_deadline = limits.head_timeout.map(|timeout| Box::pin(tokio::time::sleep(timeout)));
    // Timed loops: when the request being read began to arrive, and the last read.
    let mut first_read: Option<Instant> = None;
    let mut last_read = Instant::now();
    loop {
        date.refresh();
        // Answer every complete request in the buffer.
        while start < end && !closing {
            let request = match parse_head(&buf[start..end]) {
                Head::Partial => break,
                Head::Refuse(refusal) => {
                    let (status, message) = refusal.answer();
                    let mut body = Vec::with_capacity(128);
                    error_body(&mut body, INVALID_REQUEST, &message);
                    write_json(&mut out, status, b"", &body, None, true, &date.text);
                    closing = true;
                    break;
                }
                Head::Request(request) => request,
            };
            if request.body_len > limits.max_body as u64 {
                // Refused without reading the body, so the connection cannot be reused.
                handler.refuse_too_large(&mut out, &request, limits.max_body, &date.text);
                closing = true;
                break;
            }
            let total = request.head_len + request.body_len as usize;
            if end - start < total {
                if request.expect_continue && !request.http10 && !continued {
                    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    continued = true;
                }
                if buf.len() - start < total {
                    // Move the request to the front, then grow toward its end by what has
                    // arrived: a declared length alone allocates nothing.
                    buf.copy_within(start..end, 0);
                    end -= start;
                    start = 0;
                    let grown = body_room(buf.len(), end, total);
                    if grown > buf.len() {
                        buf.resize(grown, 0);
                    }
                }
                break;
            }
            continued = false;
            let request_start = start;
            start += total;
            let arrival = if limits.timed {
                let first = first_read.unwrap_or(last_read);
                // A pipelined request behind this one began with the read that completed it.
                first_read = Some(last_read);
                Some(Arrival { first, complete: last_read })
            } else {
                None
            };
            let next = handler
                .answer(&mut stream, &mut out, &request, &buf[request_start..start], arrival, &mut date)
                .await;
            match next {
                Next::Continue => closing |= request.closes(),
                Next::Close => closing = true,
                Next::Drop => return,
                Next::TakeOver(taken) => {
                    if stream.write_all(&out).await.is_err() {
                        return;
                    }
                    let leftover = buf[start..end].to_vec();
                    drop(buf);
                    handler.take_over(stream, leftover, taken).await;
                    return;
                }
            }
            if let (Some(deadline), Some(timeout)) = (head_deadline.as_mut(), limits.head_timeout) {
                deadline.as_mut().reset(tokio::time::Instant::now() + timeout);
            }
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        if closing {
            linger(stream).await;
            return;
        }
        if start == end {
            start = 0;
            end = 0;
            first_read = None;
            if buf.len() > MAX_HEAD {
                // Give back what a large body needed.
                buf = vec![0u8; INITIAL_BUFFER];
            }
        } else if end == buf.len() {
            if start > 0 {
                buf.copy_within(start..end, 0);
                end -= start;
                start = 0;
            } else {
                // A head larger than the buffer: grow it (parse_head refuses heads over the limit).
                buf.resize(buf.len() * 2, 0);
            }
        }
        let read = match head_deadline.as_mut() {
            None => tokio::select! {
                biased;
                read = stream.read(&mut buf[end..]) => read,
                _ = &mut stop => return,
            },
            Some(deadline) => tokio::select! {
                biased;
                read = stream.read(&mut buf[end..]) => read,
                _ = &mut stop => return,
                _ = deadline.as_mut() => return,
            },
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if limits.timed {
                    last_read = Instant::now();
                    if start == end {
                        first_read = Some(last_read);
                    }
                }
                end += n;
            }
        }
    }
}

/// The size a connection's buffer grows to while it holds `received` bytes of a request that
/// is `total` bytes long (head and declared body), from `len`: at once up to [`EAGER_BODY`],
/// past it by doubling only when full, and never past `total`. So a buffer is never larger
/// than twice the bytes received or [`EAGER_BODY`], whatever a client announces.
fn body_room(len: usize, received: usize, total: usize) -> usize {
    if total <= len || (received < len && len >= EAGER_BODY) {
        return len;
    }
    total.min((len * 2).max(EAGER_BODY))
}

/// Closes the sending side, then reads and drops what the client still sends (for at most
/// half a second and 1 MiB), so that closing with unread data does not reset the connection
/// before the client has read the answer.
pub(crate) async fn linger<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let deadline = tokio::time::sleep(Duration::from_millis(500));
    let mut deadline = std::pin::pin!(deadline);
    let mut scratch = [0u8; 4096];
    let mut left = 1usize << 20;
    while left > 0 {
        tokio::select! {
            read = stream.read(&mut scratch) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => left = left.saturating_sub(n),
            },
            _ = &mut deadline => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn hostile_heads_never_panic(
            bytes in prop_oneof![
                prop::collection::vec(any::<u8>(), 0..600),
                (prop::collection::vec(prop::sample::select(vec![
                    &b"POST / HTTP/1.1\r\n"[..], b"GET / HTTP/1.0\r\n", b"Content-Length: ",
                    b"Content-Length: 18446744073709551616",
                    b"Transfer-Encoding: chunked", b"Connection: close, keep-alive", b"Expect: 100-continue",
                    b"\r\n", b"\n", b":", b" ", b"0", b"9", b"\xff", b"\0",
                ]), 0..24)).prop_map(|parts| parts.concat()),
            ],
        ) {
            match parse_head(&bytes) {
                Head::Request(request) => prop_assert!(request.head_len <= bytes.len()),
                Head::Partial => prop_assert!(bytes.len() <= MAX_HEAD),
                Head::Refuse(_) => {}
            }
        }
    }

    #[test]
    fn a_declared_body_is_not_allocated_before_its_bytes_arrive() {
        // A 60-byte head announcing 16 MB: no more than the eager step.
        let total = 16 << 20;
        assert_eq!(body_room(INITIAL_BUFFER, 60, total), EAGER_BODY);
        // Bytes trickle in: the buffer is never larger than twice what arrived (or the eager
        // step), and it ends exactly at the request's size.
        let (mut len, mut received) = (INITIAL_BUFFER, 60);
        while received < total {
            len = body_room(len, received, total);
            assert!(len <= (2 * received).max(EAGER_BODY), "{len} bytes for {received} received");
            received = (received + 1000).max(len).min(total);
        }
        assert_eq!(body_room(len, received, total), total);
        // Small bodies get their room in one step; a buffer never shrinks here.
        assert_eq!(body_room(INITIAL_BUFFER, 100, 20_000), 20_000);
        assert_eq!(body_room(100_000, 10, 50_000), 100_000);
    }

    #[test]
    fn connections_past_the_cap_are_refused_until_one_closes() {
        let open = OpenConnections::new(2);
        let first = open.admit().expect("under the cap");
        let _second = open.admit().expect("at the cap");
        assert!(open.admit().is_none());
        assert!(open.clone().admit().is_none(), "clones share the count");
        drop(first);
        assert!(open.admit().is_some(), "a closed connection frees its place");
    }

    #[test]
    fn dates_are_imf_fixdates() {
        assert_eq!(&http_date(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&http_date(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&http_date(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(&http_date(1_798_761_599), b"Thu, 31 Dec 2026 23:59:59 GMT");
    }

    #[test]
    fn header_values_are_found_by_name() {
        let head = b"POST /x HTTP/1.1\r\nAuthorization: Bearer k\r\nX-A:  b \r\n\r\n";
        assert_eq!(header_value(head, b"authorization"), Some(&b"Bearer k"[..]));
        assert_eq!(header_value(head, b"x-a"), Some(&b"b"[..]));
        assert_eq!(header_value(head, b"host"), None);
    }

    #[test]
    fn refusal_bodies_are_json_rpc_errors() {
        let mut body = Vec::new();
        error_body(&mut body, INVALID_REQUEST, "bad \"x\"");
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["error"]["code"], -32600);
        assert_eq!(value["error"]["message"], "bad \"x\"");
        assert!(value["id"].is_null());
    }

    #[test]
    fn heads_are_parsed() {
        let request = |text: &str| match parse_head(text.as_bytes()) {
            Head::Request(request) => request,
            other => panic!("{text:?}: {other:?}"),
        };
        let post = request("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n");
        assert_eq!(
            (post.method, post.body_len, post.keep_alive, post.head_len),
            (Method::Post, 12, true, 39)
        );
        assert!(!request("POST / HTTP/1.1\r\nConnection: Close\r\n\r\n").keep_alive);
        assert!(!request("POST / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(request("POST / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
        assert!(request("POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").expect_continue);
        assert_eq!(request("HEAD / HTTP/1.1\r\n\r\n").method, Method::Head);
        let get = request("GET /block/12?full=1 HTTP/1.1\r\n\r\n");
        assert_eq!(get.method, Method::Get);
        assert_eq!(get.path, (4, 16), "the request target's place");
        assert_eq!(request("DELETE / HTTP/1.1\r\n\r\n").method, Method::Other);
        assert_eq!(
            request("POST / HTTP/1.1\r\ncontent-length: 99999999999999999999999\r\n\r\n").body_len,
            u64::MAX
        );
        assert_eq!(request("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n").body_len, 3);
        assert_eq!(parse_head(b"POST / HTTP/1.1\r\nContent-Len"), Head::Partial);
        for bad in [
            "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            "\x01\x02 garbage\r\n\r\n",
        ] {
            assert!(matches!(parse_head(bad.as_bytes()), Head::Refuse(Refusal::BadRequest(_))), "{bad:?}");
        }
        assert_eq!(
            parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Head::Refuse(Refusal::LengthRequired)
        );
        let many = format!("POST / HTTP/1.1\r\n{}\r\n", "X-A: b\r\n".repeat(MAX_HEADERS + 1));
        assert_eq!(parse_head(many.as_bytes()), Head::Refuse(Refusal::HeadTooLarge));
        let long = format!("POST / HTTP/1.1\r\nX-A: {}", "b".repeat(MAX_HEAD));
        assert_eq!(parse_head(long.as_bytes()), Head::Refuse(Refusal::HeadTooLarge));
    }
}
