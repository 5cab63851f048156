//! The mock nodes' own HTTP/1.1 connection loop, written over `httparse`.
//!
//! It does what a JSON-RPC endpoint needs and little else, so the static node is never the
//! bottleneck of a benchmark: requests are parsed from one reusable buffer, pipelined
//! requests are answered in order with one `write` per batch, bodies are framed by
//! `Content-Length` only, and a plain request allocates nothing.
//!
//! The loop is generic over the byte stream (plain TCP, or TLS after ALPN chose `http/1.1`)
//! and monomorphised for each. Behaviour, as pinned by the tests in `tests/mock_nodes.rs`:
//! - keep-alive by default for HTTP/1.1; `Connection: close` and HTTP/1.0 (unless it asks
//!   for `keep-alive`) close the connection after the answer;
//! - `Expect: 100-continue` gets `100 Continue` before the body is read;
//! - a method other than POST gets 405 with `Allow: POST` (HEAD: the same head, no body),
//!   except GET on the Ethereum node, which serves its REST API (`rest.rs`);
//! - a declared body over the limit gets 413, a `Transfer-Encoding` (chunked bodies) gets
//!   411 Length Required, a malformed head or `Content-Length` gets 400, a head over 64 KiB
//!   or with more than 64 headers gets 431; all of these close the connection;
//! - the fault knobs apply per request: 429 from the rate limiter, stalls and latency as
//!   asynchronous sleeps (answers already computed are sent first), blocking latency as a
//!   sleep of the worker thread;
//! - a GET with `Upgrade: websocket` (only GET heads are searched for it) is answered
//!   `101 Switching Protocols` and the connection, with any bytes read past the head, goes to
//!   `ws.rs`; a malformed upgrade gets 400 and one past `ws_max_connections` gets 503.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use super::server::{gate, respond, write_error, Gate, Node, RpcError, Shared, INVALID_REQUEST};

/// Largest request head (request line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// Most headers in one request.
const MAX_HEADERS: usize = 64;
/// Initial size of a connection's read buffer; it grows for large bodies.
const INITIAL_BUFFER: usize = 8 * 1024;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Request {
    head_len: usize,
    /// Where the request target (path and query) is, from the start of the request.
    path: (usize, usize),
    /// The declared body length (`u64::MAX` when it does not even fit a u64).
    body_len: u64,
    method: Method,
    keep_alive: bool,
    /// HTTP/1.0: a kept-alive connection says so in every answer.
    http10: bool,
    expect_continue: bool,
    /// A GET asking for WebSocket (`Upgrade: websocket`); only GET heads are searched for it.
    upgrade: Upgrade,
}

/// Whether a GET asks to switch to WebSocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Upgrade {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Post,
    Head,
    /// The mock Ethereum node's REST API (seed 002); elsewhere a 405.
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

/// The text of a `Date` header, recomputed at most once a second.
#[derive(Debug)]
struct DateCache {
    second: u64,
    text: [u8; 29],
}

impl DateCache {
    fn new() -> Self {
        let mut cache = DateCache { second: u64::MAX, text: [b' '; 29] };
        cache.refresh();
        cache
    }

    fn refresh(&mut self) {
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

/// Appends a response head; `body_len` is `None` for 204, which has no body framing.
fn write_head(
    out: &mut Vec<u8>,
    status: &[u8],
    body_len: Option<usize>,
    extra: &[u8],
    request: Option<&Request>,
    close: bool,
    date: &[u8; 29],
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status);
    if let Some(len) = body_len {
        out.extend_from_slice(b"\r\ncontent-type: application/json\r\ncontent-length: ");
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

/// Appends a complete JSON response: head and body (unless the request was HEAD).
fn write_json(
    out: &mut Vec<u8>,
    status: &[u8],
    extra: &[u8],
    body: &[u8],
    request: Option<&Request>,
    close: bool,
    date: &[u8; 29],
) {
    write_head(out, status, Some(body.len()), extra, request, close, date);
    if !request.is_some_and(|request| request.method == Method::Head) {
        out.extend_from_slice(body);
    }
}

/// Replaces `body` with a JSON-RPC error (id null): the body of the HTTP-level refusals.
pub(crate) fn error_body(body: &mut Vec<u8>, code: i64, message: String) {
    body.clear();
    write_error(body, b"null", &RpcError::new(code, message));
}

/// Serves one connection until the client closes it, an error, or shutdown while idle.
/// `_live` is held for as long as the connection is served.
pub(crate) async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    live: Arc<()>,
) {
    let ws_shutdown = shutdown.clone();
    let stop = async move {
        let _ = shutdown.wait_for(|stop| *stop).await;
    };
    let mut stop = std::pin::pin!(stop);
    let mut buf = vec![0u8; INITIAL_BUFFER];
    let (mut start, mut end) = (0usize, 0usize);
    let mut out: Vec<u8> = Vec::with_capacity(INITIAL_BUFFER);
    let mut body_out: Vec<u8> = Vec::with_capacity(256);
    let mut date = DateCache::new();
    let mut continued = false;
    // Set when the connection closes after what `out` holds.
    let mut closing = false;
    loop {
        date.refresh();
        // Answer every complete request in the buffer.
        while start < end && !closing {
            let request = match parse_head(&buf[start..end]) {
                Head::Partial => break,
                Head::Refuse(refusal) => {
                    let (status, message) = refusal.answer();
                    error_body(&mut body_out, INVALID_REQUEST, message);
                    write_json(&mut out, status, b"", &body_out, None, true, &date.text);
                    closing = true;
                    break;
                }
                Head::Request(request) => request,
            };
            if request.body_len > shared.max_body_bytes as u64 {
                // Refused without reading the body, so the connection cannot be reused.
                if request.method == Method::Post {
                    error_body(&mut body_out, INVALID_REQUEST, too_large_message(shared.max_body_bytes));
                    write_json(
                        &mut out,
                        b"413 Payload Too Large",
                        b"",
                        &body_out,
                        Some(&request),
                        true,
                        &date.text,
                    );
                } else {
                    method_not_allowed(&mut out, &mut body_out, &request, true, &date.text);
                }
                closing = true;
                break;
            }
            let body_len = request.body_len as usize;
            let total = request.head_len + body_len;
            if end - start < total {
                if request.expect_continue && !request.http10 && !continued {
                    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                    continued = true;
                }
                if buf.len() - start < total {
                    // Make room for the whole request.
                    buf.copy_within(start..end, 0);
                    end -= start;
                    start = 0;
                    if buf.len() < total {
                        buf.resize(total.max(buf.len() * 2), 0);
                    }
                }
                break;
            }
            continued = false;
            let body_at = start + request.head_len;
            let path = &buf[start + request.path.0..start + request.path.0 + request.path.1];
            let request_start = start;
            start += total;
            let close = !request.keep_alive;
            if request.upgrade != Upgrade::No {
                // A bad upgrade gets 400, one past the connection limit 503; either closes.
                let bad = match request.upgrade {
                    Upgrade::Bad(why) => Some(format!("bad WebSocket upgrade: {why}")),
                    _ => None,
                };
                let opened = if bad.is_none() { super::ws::open_connection(&shared) } else { None };
                let (Some(slot), Upgrade::WebSocket { key }) = (opened, request.upgrade) else {
                    let (status, message): (&[u8], String) = match bad {
                        Some(message) => (b"400 Bad Request", message),
                        None => (b"503 Service Unavailable", "too many WebSocket connections".into()),
                    };
                    error_body(&mut body_out, INVALID_REQUEST, message);
                    write_json(&mut out, status, b"", &body_out, Some(&request), true, &date.text);
                    closing = true;
                    break;
                };
                let key = &buf[request_start + key.0..request_start + key.0 + key.1];
                out.extend_from_slice(
                    b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ",
                );
                out.extend_from_slice(derive_accept_key(key).as_bytes());
                out.extend_from_slice(b"\r\n\r\n");
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                let leftover = buf[start..end].to_vec();
                drop(buf);
                super::ws::serve(stream, leftover, shared, ws_shutdown, live, slot).await;
                return;
            } else if request.method == Method::Get {
                match (&shared.node, std::str::from_utf8(path)) {
                    (Node::Ethereum(node), Ok(path)) => {
                        let (status, body) = super::rest::answer(node, path);
                        write_json(&mut out, status, b"", &body, Some(&request), close, &date.text);
                    }
                    _ => method_not_allowed(&mut out, &mut body_out, &request, close, &date.text),
                }
            } else if request.method != Method::Post {
                method_not_allowed(&mut out, &mut body_out, &request, close, &date.text);
            } else {
                answer_post(
                    &shared,
                    &mut stream,
                    &mut out,
                    &mut body_out,
                    &buf[body_at..body_at + body_len],
                    &request,
                    close,
                    &mut date,
                )
                .await;
            }
            if close {
                closing = true;
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
        let read = tokio::select! {
            biased;
            read = stream.read(&mut buf[end..]) => read,
            _ = &mut stop => return,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) => end += n,
        }
    }
}

/// Closes the sending side, then reads and drops what the client still sends (for at most
/// half a second and 1 MiB), so that closing with unread data does not reset the connection
/// before the client has read the answer.
async fn linger<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S) {
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

/// The message of a 405 (both HTTP loops).
pub(crate) fn not_post_message() -> String {
    "only POST requests with a JSON-RPC body are served".to_string()
}

/// The message of a 413 (both HTTP loops).
pub(crate) fn too_large_message(limit: usize) -> String {
    format!("request body too large: the limit is {limit} bytes")
}

fn method_not_allowed(
    out: &mut Vec<u8>,
    body_out: &mut Vec<u8>,
    request: &Request,
    close: bool,
    date: &[u8; 29],
) {
    error_body(body_out, INVALID_REQUEST, not_post_message());
    write_json(out, b"405 Method Not Allowed", b"allow: POST\r\n", body_out, Some(request), close, date);
}

/// Answers one POST request, applying the fault knobs.
#[allow(clippy::too_many_arguments)]
async fn answer_post<S: AsyncWrite + Unpin>(
    shared: &Shared,
    stream: &mut S,
    out: &mut Vec<u8>,
    body_out: &mut Vec<u8>,
    body: &[u8],
    request: &Request,
    close: bool,
    date: &mut DateCache,
) {
    match gate(shared, body, body_out) {
        Gate::Limited { retry_after_secs } => {
            let mut extra = b"retry-after: ".to_vec();
            extra.extend_from_slice(itoa::Buffer::new().format(retry_after_secs).as_bytes());
            extra.extend_from_slice(b"\r\n");
            write_json(out, b"429 Too Many Requests", &extra, body_out, Some(request), close, &date.text);
            return;
        }
        Gate::Pass(delays) if !delays.is_none() => {
            // Answers already computed are not held back by this request's delay.
            if !out.is_empty() {
                if stream.write_all(out).await.is_err() {
                    // The connection is gone; the caller's next read or write ends it.
                    out.clear();
                    return;
                }
                out.clear();
            }
            delays.wait().await;
            date.refresh();
        }
        Gate::Pass(_) => {}
    }
    body_out.clear();
    respond(shared, body, body_out);
    if body_out.is_empty() {
        write_head(out, b"204 No Content", None, b"", Some(request), close, &date.text);
    } else {
        write_json(out, b"200 OK", b"", body_out, Some(request), close, &date.text);
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
    fn dates_are_imf_fixdates() {
        assert_eq!(&http_date(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&http_date(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&http_date(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(&http_date(1_798_761_599), b"Thu, 31 Dec 2026 23:59:59 GMT");
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
