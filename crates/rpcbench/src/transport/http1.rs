//! HTTP/1.1, the first transport: one request at a time per connection (a lane is a
//! connection). It writes a prepared request and reads one response into a reused buffer,
//! framing the body by Content-Length, chunked encoding or connection close. Headers are
//! parsed by `httparse` (a hand-written scan of the common head was measured slower than its
//! SIMD parser: bench/ANALYSIS.md).
//!
//! The head of a JSON-RPC request (a POST to the target's path with the run's headers) is
//! prepared once per run up to `Content-Length: `, so a request costs the length, the body and
//! one write. Other requests (REST calls) get their request line and headers written per
//! request from the same prepared parts.
//!
//! Buffers start at 4 KiB per connection and grow with what arrives: toward an announced
//! Content-Length, so that a large body is read in place without many copies, but never to
//! more than twice the bytes received (or [`EAGER_BODY`]), so a hostile `Content-Length` costs
//! nothing until its bytes come. Nothing is allocated per request once the buffers have grown
//! to the size of a response. Bytes left over after a response (no request is pipelined, so
//! nobody asked for them) mark the reply [`Reply::extra_bytes`] and end the connection.
//!
//! In open loop at high rates a plain-TCP connection reads *quietly* ([`Lane::read_at_slots`],
//! `quiet_reads`): its replies wait in the kernel until the worker wakes for a pacing slot, and
//! each read carries the time its bytes arrived.

use std::io;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::connect::{Connector, Stream};
use super::{HttpMethod, Lane, Outgoing, Reply, Transport, WireError, WireStats};
use crate::ratelimit::headers::RateHeaders;
use crate::settings::Target;

/// Why a response could not be read.
pub(crate) type ReadError = WireError;

/// A response that was read completely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseMeta {
    /// HTTP status code.
    pub status: u16,
    /// Whether the connection may be reused.
    pub keep_alive: bool,
    /// Bytes received for this response (head and body, as on the wire).
    pub wire_bytes: usize,
}

/// Most headers a response may have.
const MAX_HEADERS: usize = 64;
/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
/// A connection's first buffer (one page: a small response in one read). It doubles when a
/// head or a chunked or close-delimited body does not fit.
const INITIAL_BUFFER: usize = 4 * 1024;
/// A buffer grown for a Content-Length body is rounded up to this, so that bodies a few bytes
/// apart (ids of different lengths) reuse it.
const BUFFER_STEP: usize = 4 * 1024;
/// A buffer grows at once to an announced body of up to this size (beyond it, to twice what
/// was received): typical large replies (a 40 KB block) are read in place in one go, while a
/// lying `Content-Length` of gigabytes allocates at most this much before its bytes come.
pub(crate) const EAGER_BODY: usize = 256 * 1024;

/// The parts of a request head every request of a run shares.
#[derive(Debug)]
struct RequestHeads {
    /// A JSON-RPC request's head up to and including `Content-Length: `.
    post: Vec<u8>,
    /// The target's path and query.
    path: Vec<u8>,
    /// ` HTTP/1.1\r\n` and the header lines every request carries (Host, User-Agent, the run's
    /// headers, `Connection: close` without keep-alive); no Content-Type.
    common: Vec<u8>,
    /// Whether the run's headers set a Content-Type (else bodies get `application/json`).
    has_content_type: bool,
}

impl RequestHeads {
    fn new(target: &Target, headers: &[(String, String)], keepalive: bool) -> Self {
        let has = |wanted: &str| headers.iter().any(|(name, _)| name.eq_ignore_ascii_case(wanted));
        let mut common = String::from(" HTTP/1.1\r\n");
        // The user's Host header replaces ours (sent once, in the user's place).
        if !has("host") {
            common.push_str("Host: ");
            common.push_str(&target.host_header);
            common.push_str("\r\n");
        }
        if !has("user-agent") {
            common.push_str(concat!("User-Agent: rpcbench/", env!("CARGO_PKG_VERSION"), "\r\n"));
        }
        if !keepalive && !has("connection") {
            common.push_str("Connection: close\r\n");
        }
        // The URL's user name and password, as curl sends them, unless the user gave one.
        if let Some(credentials) = target.basic_authorization().filter(|_| !has("authorization")) {
            common.push_str("Authorization: ");
            common.push_str(credentials);
            common.push_str("\r\n");
        }
        for (name, value) in headers {
            common.push_str(name);
            common.push_str(": ");
            common.push_str(value);
            common.push_str("\r\n");
        }
        let has_content_type = has("content-type");
        let mut post = format!("POST {}", target.path_and_query).into_bytes();
        // The order requests have always had: Host, then Content-Type, then the rest.
        let (host_line, rest) = split_host_line(&common);
        post.extend_from_slice(host_line.as_bytes());
        if !has_content_type {
            post.extend_from_slice(b"Content-Type: application/json\r\n");
        }
        post.extend_from_slice(rest.as_bytes());
        post.extend_from_slice(b"Content-Length: ");
        Self {
            post,
            path: target.path_and_query.as_bytes().to_vec(),
            common: common.into_bytes(),
            has_content_type,
        }
    }

    /// Writes the whole request into `out`.
    #[inline]
    fn write(&self, request: &Outgoing, out: &mut Vec<u8>) {
        out.clear();
        if request.is_plain_post() {
            out.extend_from_slice(&self.post);
            out.extend_from_slice(itoa::Buffer::new().format(request.body.len()).as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
            out.extend_from_slice(&request.body);
            return;
        }
        out.extend_from_slice(request.method.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(if request.path.is_empty() { &self.path } else { &request.path });
        if request.headers.is_empty() {
            out.extend_from_slice(&self.common);
        } else {
            // A request's own header replaces the run's line of that name (Host, or the URL's
            // credentials): sent once, as `run -H` does.
            let first = b" HTTP/1.1\r\n".len();
            out.extend_from_slice(&self.common[..first]);
            for line in self.common[first..].split_inclusive(|&b| b == b'\n') {
                let name = line.iter().position(|&b| b == b':').map_or(line, |colon| &line[..colon]);
                if !has_header(&request.headers, name) {
                    out.extend_from_slice(line);
                }
            }
        }
        let has_body = !request.body.is_empty() || request.method.has_body();
        if has_body && !self.has_content_type && !has_header(&request.headers, b"content-type") {
            out.extend_from_slice(b"Content-Type: application/json\r\n");
        }
        out.extend_from_slice(&request.headers);
        if has_body {
            out.extend_from_slice(b"Content-Length: ");
            out.extend_from_slice(itoa::Buffer::new().format(request.body.len()).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&request.body);
    }
}

/// ` HTTP/1.1\r\n` plus the Host line, and the lines after it.
fn split_host_line(common: &str) -> (&str, &str) {
    let first = " HTTP/1.1\r\n".len();
    if common[first..].starts_with("Host: ") {
        let end = common[first..].find("\r\n").map_or(common.len(), |at| first + at + 2);
        common.split_at(end)
    } else {
        common.split_at(first)
    }
}

/// Whether raw header lines name `wanted` (lower case).
fn has_header(lines: &[u8], wanted: &[u8]) -> bool {
    lines.split(|&b| b == b'\n').any(|line| {
        line.iter()
            .position(|&b| b == b':')
            .is_some_and(|colon| line[..colon].trim_ascii().eq_ignore_ascii_case(wanted))
    })
}

/// The HTTP/1.1 transport: opens connections to one target.
#[derive(Debug, Clone)]
pub(crate) struct Http1 {
    connector: Connector,
    heads: Arc<RequestHeads>,
    /// Connections this worker's transport opened (each worker counts its own).
    opened: Arc<AtomicU64>,
}

impl Http1 {
    /// A transport to `target`, sending `headers` with every request; without `keepalive`
    /// every request asks for the connection to close.
    pub(crate) fn new(
        connector: Connector,
        target: &Target,
        headers: &[(String, String)],
        keepalive: bool,
    ) -> Self {
        Self {
            connector,
            heads: Arc::new(RequestHeads::new(target, headers, keepalive)),
            opened: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl Transport for Http1 {
    type Lane = Connection;

    fn for_worker(&self) -> Self {
        Self { opened: Arc::new(AtomicU64::new(0)), ..self.clone() }
    }

    async fn open(&self, _index: usize) -> io::Result<Connection> {
        let stream = self.connector.connect().await?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(Connection::new(stream, self.heads.clone()))
    }

    fn stats(&self) -> WireStats {
        WireStats { connections_opened: self.opened.load(Ordering::Relaxed), ..WireStats::default() }
    }
}

impl Lane for Connection {
    async fn exchange(&mut self, request: &Outgoing, max_body: u64) -> Result<Reply, WireError> {
        self.heads.write(request, &mut self.request);
        let written = self.stream.write_all(&self.request).await;
        let request_bytes = self.request.len();
        let written_at = Instant::now();
        let head = request.method == HttpMethod::Head;
        let meta = match written {
            Ok(()) => self.read_response(max_body, head).await?,
            // A server may answer before it has read the whole request (413 for a body too
            // large) and close: that answer, if it came, is the outcome, not the reset.
            Err(_) => {
                let mut meta = self.read_response(max_body, head).await.map_err(|_| WireError::Closed)?;
                meta.keep_alive = false;
                meta
            }
        };
        let extra_bytes = self.start != self.end;
        // Read at the pacing slots: the kernel's stamps say when the reply came.
        let (first_arrival, arrived_at) = self.stream.take_arrivals();
        if first_arrival.is_some() {
            self.first_byte_at = first_arrival;
        }
        Ok(Reply {
            status: meta.status,
            reusable: meta.keep_alive && !extra_bytes,
            wire_bytes: meta.wire_bytes,
            request_bytes,
            written_at,
            first_byte_at: self.first_byte_at.map_or(written_at, |at| at.max(written_at)),
            extra_bytes,
            arrived_at,
            rate: self.rate,
        })
    }

    fn body(&self) -> &[u8] {
        Connection::body(self)
    }

    fn read_at_slots(&mut self, clock: Option<crate::slot_timer::SlotClock>) -> bool {
        self.stream.read_at_slots(clock)
    }
}

/// One HTTP/1.1 connection and its buffers.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: Stream,
    heads: Arc<RequestHeads>,
    /// The request being written (reused).
    request: Vec<u8>,
    /// Received bytes; `buf[start..end]` not yet consumed.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The body of the last response when it was chunked (decoded here).
    chunked_body: Vec<u8>,
    /// Where the last response's body is.
    body: BodyLocation,
    /// When the first byte of the response being read arrived.
    first_byte_at: Option<Instant>,
    /// The rate-limit headers of the last response.
    rate: RateHeaders,
}

#[derive(Debug, Clone, Copy)]
enum BodyLocation {
    InBuffer { start: usize, end: usize },
    Chunked,
}

impl Connection {
    fn new(stream: Stream, heads: Arc<RequestHeads>) -> Self {
        Self {
            stream,
            heads,
            request: Vec::with_capacity(512),
            buf: vec![0; INITIAL_BUFFER],
            start: 0,
            end: 0,
            chunked_body: Vec::new(),
            body: BodyLocation::InBuffer { start: 0, end: 0 },
            first_byte_at: None,
            rate: RateHeaders::NONE,
        }
    }

    /// The body of the response last read.
    pub(crate) fn body(&self) -> &[u8] {
        match self.body {
            BodyLocation::InBuffer { start, end } => &self.buf[start..end],
            BodyLocation::Chunked => &self.chunked_body,
        }
    }

    /// Reads more bytes into the buffer, growing it (doubling: at most twice what was received)
    /// if full. Returns false at end of stream.
    async fn fill(&mut self) -> Result<bool, ReadError> {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        match self.stream.read(&mut self.buf[self.end..]).await {
            Ok(0) => Ok(false),
            Ok(n) => {
                self.end += n;
                if self.first_byte_at.is_none() {
                    self.first_byte_at = Some(Instant::now());
                }
                Ok(true)
            }
            Err(_) => Err(ReadError::Closed),
        }
    }

    /// Makes sure `buf[start..start + len]` is filled. The buffer grows toward the body where
    /// it starts (after the head), so that reads take it in place and nothing already read is
    /// moved, but by no more than [`EAGER_BODY`] or twice the bytes received at a time; it is
    /// compacted first only when most of it is consumed (a long chunked body).
    async fn fill_to(&mut self, len: usize) -> Result<(), ReadError> {
        if self.start + len > self.buf.len() && self.start > self.buf.len() / 2 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while self.end - self.start < len {
            let need = self.start + len;
            // Grow at once up to EAGER_BODY; past it, double only when full (so at most
            // twice the bytes received).
            if need > self.buf.len() && (self.end == self.buf.len() || self.buf.len() < EAGER_BODY) {
                let grown = need.min((self.buf.len() * 2).max(EAGER_BODY)).next_multiple_of(BUFFER_STEP);
                self.buf.resize(grown.max(self.buf.len()), 0);
            }
            if !self.fill().await? {
                return Err(ReadError::Closed);
            }
        }
        Ok(())
    }

    /// Reads one complete response. `max_body` bounds the body size. The answer to a HEAD
    /// request (`head`) has no body whatever its head says (RFC 9110 section 9.3.2).
    async fn read_response(&mut self, max_body: u64, head: bool) -> Result<ResponseMeta, ReadError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.first_byte_at = None;
            // Nothing to parse yet: read first rather than parse an empty buffer.
            if !self.fill().await? {
                return Err(ReadError::Closed);
            }
        } else {
            // Bytes of this response arrived with the previous one.
            self.first_byte_at = Some(Instant::now());
        }
        let mut wire_bytes = 0;
        loop {
            // Parse the head, reading until it is complete.
            let Head { status, len: head_len, framing, keep_alive, rate } = loop {
                match parse_head(&self.buf[self.start..self.end])? {
                    Some(head) => break head,
                    None => {
                        if self.end - self.start > MAX_HEAD {
                            return Err(ReadError::Malformed);
                        }
                        if !self.fill().await? {
                            return Err(ReadError::Closed);
                        }
                    }
                }
            };
            self.start += head_len;
            wire_bytes += head_len;
            self.rate = rate;
            // Informational responses (100 Continue) precede the real one.
            if (100..200).contains(&status) {
                continue;
            }
            let framing = if head { Framing::Empty } else { framing };
            let body_wire = match framing {
                Framing::Empty => {
                    self.body = BodyLocation::InBuffer { start: self.start, end: self.start };
                    0
                }
                Framing::Length(len) => {
                    if len > max_body {
                        return Err(ReadError::TooLarge);
                    }
                    let len = len as usize;
                    self.fill_to(len).await?;
                    self.body = BodyLocation::InBuffer { start: self.start, end: self.start + len };
                    self.start += len;
                    len
                }
                Framing::Chunked => self.read_chunked(max_body).await?,
                Framing::UntilClose => {
                    loop {
                        if (self.end - self.start) as u64 > max_body {
                            return Err(ReadError::TooLarge);
                        }
                        if !self.fill().await? {
                            break;
                        }
                    }
                    let len = self.end - self.start;
                    self.body = BodyLocation::InBuffer { start: self.start, end: self.end };
                    self.start = self.end;
                    len
                }
            };
            wire_bytes += body_wire;
            let keep_alive = keep_alive && framing != Framing::UntilClose;
            return Ok(ResponseMeta { status, keep_alive, wire_bytes });
        }
    }

    /// Reads a chunked body into `chunked_body`; returns the bytes it took on the wire.
    async fn read_chunked(&mut self, max_body: u64) -> Result<usize, ReadError> {
        self.chunked_body.clear();
        let mut wire = 0;
        loop {
            let line_len = self.read_line().await?;
            let line = &self.buf[self.start..self.start + line_len - 2];
            let size_text = line.split(|&b| b == b';').next().unwrap_or_default();
            let size_text = std::str::from_utf8(size_text).map_err(|_| ReadError::Malformed)?.trim();
            let size = u64::from_str_radix(size_text, 16).map_err(|_| ReadError::Malformed)?;
            self.start += line_len;
            wire += line_len;
            if size == 0 {
                // Trailers, then an empty line.
                loop {
                    let trailer_len = self.read_line().await?;
                    self.start += trailer_len;
                    wire += trailer_len;
                    if trailer_len == 2 {
                        self.body = BodyLocation::Chunked;
                        return Ok(wire);
                    }
                }
            }
            // A hostile size (up to u64::MAX) must not overflow the sum.
            if (self.chunked_body.len() as u64).saturating_add(size) > max_body
                || usize::try_from(size).map_or(true, |size| size > usize::MAX - 2)
            {
                return Err(ReadError::TooLarge);
            }
            let size = size as usize;
            self.fill_to(size + 2).await?;
            if &self.buf[self.start + size..self.start + size + 2] != b"\r\n" {
                return Err(ReadError::Malformed);
            }
            self.chunked_body.extend_from_slice(&self.buf[self.start..self.start + size]);
            self.start += size + 2;
            wire += size + 2;
        }
    }

    /// Makes sure a whole CRLF-terminated line starts at `start`; returns its length with CRLF.
    async fn read_line(&mut self) -> Result<usize, ReadError> {
        loop {
            if let Some(offset) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                if offset == 0 || self.buf[self.start + offset - 1] != b'\r' {
                    return Err(ReadError::Malformed);
                }
                return Ok(offset + 1);
            }
            if self.end - self.start > MAX_HEAD {
                return Err(ReadError::Malformed);
            }
            if !self.fill().await? {
                return Err(ReadError::Closed);
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// A complete response head: what reading the rest needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    status: u16,
    /// Bytes of the head, up to and including the empty line.
    len: usize,
    framing: Framing,
    keep_alive: bool,
    /// The rate-limit headers it carried.
    rate: RateHeaders,
}

/// Parses the head at the start of `buf` with `httparse`: `Ok(None)` while it is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, ReadError> {
    // Uninitialised header slots: no 2 KiB memset per parse.
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut response,
        buf,
        &mut headers,
    );
    match parsed {
        Ok(httparse::Status::Complete(len)) => {
            let mut fields = HeadFields::new(response.code.unwrap_or(0), response.version == Some(1));
            for header in response.headers.iter() {
                fields.add(header.name.as_bytes(), header.value)?;
            }
            let (framing, keep_alive) = fields.framing();
            Ok(Some(Head { status: fields.status, len, framing, keep_alive, rate: fields.rate }))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => Err(ReadError::Malformed),
    }
}

/// A Content-Length value: decimal digits, with optional spaces around them (no sign, no
/// overflow). Digits are read directly, which costs a tenth of `from_utf8` and `str::parse`
/// on the hot path (callgrind).
fn parse_length(value: &[u8]) -> Option<u64> {
    let digits = value.trim_ascii();
    if digits.is_empty() {
        return None;
    }
    let mut length: u64 = 0;
    for &byte in digits {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        length = length.checked_mul(10)?.checked_add(u64::from(digit))?;
    }
    Some(length)
}

/// The header fields that decide framing and keep-alive, gathered one header at a time.
#[derive(Debug)]
struct HeadFields {
    status: u16,
    keep_alive: bool,
    length: Option<u64>,
    chunked: bool,
    /// Rate-limit headers, read only when one of their names is there.
    rate: RateHeaders,
}

impl HeadFields {
    fn new(status: u16, http11: bool) -> Self {
        Self { status, keep_alive: http11, length: None, chunked: false, rate: RateHeaders::NONE }
    }

    /// Takes one header; names are compared by length first, then without case.
    fn add(&mut self, name: &[u8], value: &[u8]) -> Result<(), ReadError> {
        match name.len() {
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let value = parse_length(value).ok_or(ReadError::Malformed)?;
                if self.length.is_some_and(|previous| previous != value) {
                    return Err(ReadError::Malformed);
                }
                self.length = Some(value);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                self.chunked = value
                    .split(|&b| b == b',')
                    .next_back()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            }
            10 if name.eq_ignore_ascii_case(b"connection") => {
                for token in value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        self.keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        self.keep_alive = true;
                    }
                }
            }
            _ => {
                self.rate.add(name, value);
            }
        }
        Ok(())
    }

    fn framing(&self) -> (Framing, bool) {
        let status = self.status;
        let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
            Framing::Empty
        } else if self.chunked {
            Framing::Chunked
        } else if let Some(length) = self.length {
            Framing::Length(length)
        } else {
            Framing::UntilClose
        };
        (framing, self.keep_alive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use crate::transport::HttpMethod;

    fn test_heads(headers: &[(String, String)], keepalive: bool) -> RequestHeads {
        RequestHeads::new(&Target::parse("http://127.0.0.1:8899/rpc?x=1").unwrap(), headers, keepalive)
    }

    fn test_connection(stream: TcpStream) -> Connection {
        Connection::new(Stream::Plain(stream, None), Arc::new(test_heads(&[], true)))
    }

    /// Serves `raw` once to a connection and returns what the client read.
    async fn read_raw(raw: &'static [u8], max_body: u64) -> (Result<ResponseMeta, ReadError>, Vec<u8>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            for piece in raw.chunks(7) {
                socket.write_all(piece).await.unwrap();
            }
            socket.shutdown().await.ok();
        });
        let mut conn = test_connection(TcpStream::connect(addr).await.unwrap());
        let meta = conn.read_response(max_body, false).await;
        let body = conn.body().to_vec();
        server.await.unwrap();
        (meta, body)
    }

    fn written(heads: &RequestHeads, request: &Outgoing) -> String {
        let mut out = Vec::new();
        heads.write(request, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_request_head_carries_user_headers() {
        let heads = test_heads(&[("Authorization".into(), "Bearer abc".into())], false);
        let mut request = Outgoing::default();
        request.body.extend_from_slice(b"{}");
        let head = written(&heads, &request);
        assert!(
            head.starts_with(
                "POST /rpc?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8899\r\nContent-Type: application/json\r\n"
            ),
            "{head}"
        );
        assert!(head.contains("Connection: close\r\n"));
        assert!(head.contains("Authorization: Bearer abc\r\n"));
        assert!(head.ends_with("Content-Length: 2\r\n\r\n{}"), "{head}");
    }

    #[test]
    fn secrets_of_the_url_userinfo_are_sent_as_basic_credentials_and_never_shown() {
        // "alice:p@ss word" once percent-decoded, as curl sends it.
        let target = Target::parse("http://alice:p%40ss%20word@127.0.0.1:8899/").unwrap();
        let head = written(&RequestHeads::new(&target, &[], true), &Outgoing::default());
        assert!(head.contains("Authorization: Basic YWxpY2U6cEBzcyB3b3Jk\r\n"), "{head}");
        assert_eq!(target.redacted(), "http://***:***@127.0.0.1:8899/");
        let shown = format!("{target:?}");
        for secret in ["alice", "p%40ss", "YWxpY2U6cEBzcyB3b3Jk"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert_eq!(target.secrets().scrub("alice sent p@ss word"), "*** sent ***");
        // A user name alone gets an empty password; an Authorization header of the user wins.
        let target = Target::parse("http://bob@127.0.0.1:8899/").unwrap();
        let head = written(&RequestHeads::new(&target, &[], true), &Outgoing::default());
        assert!(head.contains("Authorization: Basic Ym9iOg==\r\n"), "{head}");
        let mine = [("authorization".to_string(), "Bearer mine".to_string())];
        let head = written(&RequestHeads::new(&target, &mine, true), &Outgoing::default());
        assert_eq!(head.to_ascii_lowercase().matches("authorization:").count(), 1, "{head}");
        assert!(head.contains("authorization: Bearer mine\r\n"), "{head}");
        assert_eq!(Target::parse("http://127.0.0.1:8899/").unwrap().basic_authorization(), None);
    }

    #[test]
    fn a_requests_own_authorization_or_host_replaces_the_urls_and_is_sent_once() {
        // The proxy relays a client's Authorization, a targets file gives a Host: either goes
        // to an upstream whose URL has credentials.
        let target = Target::parse("http://bob:pw@127.0.0.1:8899/rpc").unwrap();
        let heads = RequestHeads::new(&target, &[("X-Api-Key".into(), "k".into())], true);
        let request = Outgoing {
            headers: b"Authorization: Bearer client\r\nhost: rpc.example.com\r\n".to_vec(),
            body: b"{}".to_vec(),
            ..Outgoing::default()
        };
        let head = written(&heads, &request);
        let lower = head.to_ascii_lowercase();
        assert_eq!(lower.matches("authorization:").count(), 1, "{head}");
        assert_eq!(lower.matches("host:").count(), 1, "{head}");
        assert!(
            head.contains("Authorization: Bearer client\r\n") && head.contains("host: rpc.example.com\r\n")
        );
        assert!(head.starts_with("POST /rpc HTTP/1.1\r\n") && head.contains("X-Api-Key: k\r\n"), "{head}");
        assert!(head.ends_with("Content-Length: 2\r\n\r\n{}"), "{head}");
    }

    #[test]
    fn a_host_header_given_by_the_user_replaces_ours() {
        let heads = test_heads(&[("Host".into(), "rpc.example.com".into())], true);
        for request in [
            Outgoing::default(),
            Outgoing { method: HttpMethod::Get, path: b"/x".to_vec(), ..Outgoing::default() },
        ] {
            let head = written(&heads, &request);
            assert_eq!(head.matches("Host:").count(), 1, "{head}");
            assert!(head.contains("Host: rpc.example.com\r\n"), "{head}");
        }
    }

    #[test]
    fn rest_requests_get_their_own_request_line_and_no_body_headers_on_get() {
        let heads = test_heads(&[], true);
        let get = Outgoing {
            method: HttpMethod::Get,
            path: b"/block/12".to_vec(),
            headers: b"Accept: application/json\r\n".to_vec(),
            body: Vec::new(),
        };
        let head = written(&heads, &get);
        assert!(head.starts_with("GET /block/12 HTTP/1.1\r\nHost: 127.0.0.1:8899\r\n"), "{head}");
        assert!(head.ends_with("Accept: application/json\r\n\r\n"), "{head}");
        assert!(!head.contains("Content-Length") && !head.contains("Content-Type"), "{head}");
        let post = Outgoing {
            method: HttpMethod::Post,
            path: b"/call".to_vec(),
            headers: Vec::new(),
            body: b"{}".to_vec(),
        };
        let head = written(&heads, &post);
        assert!(head.starts_with("POST /call HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("Content-Type: application/json\r\n"), "{head}");
        assert!(head.ends_with("Content-Length: 2\r\n\r\n{}"), "{head}");
    }

    /// A server on its own thread that answers each request after `delay` (or closes instead
    /// of answering, with `close`), and a lane to it reading at the slots of a pacing timer
    /// `slot` wide, current on the test's thread. Returns the reply's outcome, when the request
    /// was written and when the exchange returned.
    fn quiet_exchange(
        delay: std::time::Duration,
        slot: std::time::Duration,
        close: bool,
    ) -> (Result<Reply, WireError>, Instant) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let (mut socket, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = socket.read(&mut buf);
            std::thread::sleep(delay);
            if !close {
                socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
        });
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let outcome = tokio::task::LocalSet::new().block_on(&runtime, async move {
            let timer = crate::slot_timer::PacingTimer::start(Instant::now(), slot);
            let _current = timer.make_current();
            let mut conn = test_connection(TcpStream::connect(addr).await.unwrap());
            assert!(conn.read_at_slots(timer.clock()), "a plain TCP lane reads at the slots");
            let mut request = Outgoing::default();
            request.body.extend_from_slice(b"{}");
            let reply = conn.exchange(&request, 1 << 20).await;
            (reply, Instant::now())
        });
        server.join().unwrap();
        outcome
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_reply_read_at_a_later_slot_keeps_the_time_it_arrived() {
        use std::time::Duration;
        let (reply, returned) = quiet_exchange(Duration::from_millis(20), Duration::from_millis(400), false);
        let reply = reply.unwrap();
        let arrived = reply.arrived_at.expect("a quiet read is stamped");
        let took = arrived.saturating_duration_since(reply.written_at);
        assert!(
            took >= Duration::from_millis(15) && took < Duration::from_millis(200),
            "stamped {took:?} after the write"
        );
        // Read at the next slot (up to 400 ms after the write), not when it came.
        assert!(
            returned.duration_since(arrived) >= Duration::from_millis(50),
            "read when it arrived: not quiet"
        );
        assert_eq!(reply.status, 200);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_quiet_lane_sees_the_server_close_at_its_next_slot() {
        use std::time::Duration;
        let (reply, _) = quiet_exchange(Duration::from_millis(5), Duration::from_millis(20), true);
        assert_eq!(reply.unwrap_err(), WireError::Closed);
    }

    #[test]
    fn without_a_pacing_timer_a_lane_does_not_read_at_slots() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio::task::LocalSet::new().block_on(&runtime, async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut conn = test_connection(TcpStream::connect(listener.local_addr().unwrap()).await.unwrap());
            assert!(!conn.read_at_slots(None));
            // A clock whose timer is not current on this thread (its worker is elsewhere, or
            // gone) is refused too: waiting on it would never be woken by a slot.
            let timer =
                crate::slot_timer::PacingTimer::start(Instant::now(), std::time::Duration::from_millis(1));
            if let Some(clock) = timer.clock() {
                assert!(!clock.is_here());
                assert!(!conn.read_at_slots(Some(clock)));
                let _current = timer.make_current();
                assert!(clock.is_here());
            }
            assert_eq!(crate::slot_timer::PacingTimer::coarse().clock(), None);
        });
    }

    /// Serves `raw` once after reading a request and returns the reply the lane read.
    async fn exchange_with(raw: &'static [u8]) -> (Result<Reply, ReadError>, Vec<u8>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = socket.read(&mut buf).await;
            socket.write_all(raw).await.unwrap();
            // Keep the connection open a moment so the client sees what was sent, not a close.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        });
        let mut conn = test_connection(TcpStream::connect(addr).await.unwrap());
        let mut request = Outgoing::default();
        request.body.extend_from_slice(b"{}");
        let reply = conn.exchange(&request, 1 << 20).await;
        let body = conn.body().to_vec();
        server.await.unwrap();
        (reply, body)
    }

    #[tokio::test]
    async fn bytes_after_a_response_mark_the_reply_and_end_the_connection() {
        let (reply, body) = exchange_with(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        )
        .await;
        let reply = reply.unwrap();
        assert!(reply.extra_bytes && !reply.reusable, "{reply:?}");
        assert_eq!(body, b"ok");
        let (reply, _) = exchange_with(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
        assert!(!reply.unwrap().extra_bytes);
    }

    #[tokio::test]
    async fn an_announced_length_does_not_allocate_before_its_bytes_come() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 62914560\r\n\r\n0123456789").await.unwrap();
            socket.shutdown().await.ok();
        });
        let mut conn = test_connection(TcpStream::connect(addr).await.unwrap());
        assert_eq!(conn.read_response(u64::MAX, false).await, Err(ReadError::Closed));
        assert!(conn.buf.len() <= EAGER_BODY, "a lying Content-Length grew the buffer to {}", conn.buf.len());
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_head_answer_is_complete_without_the_body_its_content_length_describes() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 512];
            let _ = socket.read(&mut head).await;
            // The length a GET would have had, and no body (RFC 9110 section 9.3.2); the
            // connection then ends, so waiting for 1000 bytes would fail as closed.
            socket.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n").await.unwrap();
            socket.shutdown().await.ok();
        });
        let mut conn = test_connection(TcpStream::connect(addr).await.unwrap());
        let request = Outgoing { method: HttpMethod::Head, path: b"/x".to_vec(), ..Outgoing::default() };
        let reply = conn.exchange(&request, 1 << 20).await.expect("a complete HEAD answer");
        assert_eq!((reply.status, reply.reusable, reply.extra_bytes), (200, true, false));
        assert!(conn.body().is_empty());
        server.await.unwrap();
    }

    #[tokio::test]
    async fn an_early_413_is_read_even_when_the_request_cannot_be_written() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 256];
            let _ = socket.read(&mut head).await;
            socket
                .write_all(
                    b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await
                .unwrap();
            socket.shutdown().await.ok();
            // Close without reading the rest of the body: the client's write fails.
            drop(socket);
        });
        let mut conn = test_connection(TcpStream::connect(addr).await.unwrap());
        let mut request = Outgoing::default();
        request.body.resize(32 * 1024 * 1024, b' ');
        let reply = conn.exchange(&request, 1 << 20).await.unwrap();
        assert_eq!(reply.status, 413);
        assert!(!reply.reusable);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn content_length_bodies() {
        let (meta, body) = read_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 100).await;
        assert_eq!(meta, Ok(ResponseMeta { status: 200, keep_alive: true, wire_bytes: 43 }));
        assert_eq!(body, b"hello");
    }

    #[tokio::test]
    async fn chunked_bodies_are_decoded() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n";
        let (meta, body) = read_raw(raw, 100).await;
        assert_eq!(meta.map(|m| m.status), Ok(200));
        assert_eq!(body, b"abcde");
    }

    #[tokio::test]
    async fn http10_and_close_framing() {
        let (meta, body) = read_raw(b"HTTP/1.0 200 OK\r\n\r\nuntil close", 100).await;
        assert_eq!(meta.map(|m| m.keep_alive), Ok(false));
        assert_eq!(body, b"until close");
        let (meta, _) =
            read_raw(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 100).await;
        assert_eq!(meta.map(|m| m.keep_alive), Ok(false));
    }

    #[tokio::test]
    async fn truncation_garbage_and_size_limits() {
        let cases: [(&'static [u8], ReadError); 5] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", ReadError::Closed),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", ReadError::Closed),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", ReadError::Malformed),
            (b"SSH-2.0-OpenSSH\r\n\r\n", ReadError::Malformed),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", ReadError::TooLarge),
        ];
        for (raw, expected) in cases {
            let (meta, _) = read_raw(raw, 100).await;
            assert_eq!(meta, Err(expected), "{}", String::from_utf8_lossy(raw));
        }
        let (meta, _) = read_raw(b"HTTP/1.1 200 OK\r\n", 100).await;
        assert_eq!(meta, Err(ReadError::Closed));
    }

    #[tokio::test]
    async fn a_chunk_size_of_u64_max_is_too_large_not_an_overflow() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n";
        assert_eq!(read_raw(raw, u64::MAX).await.0, Err(ReadError::TooLarge));
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\nffffffffffffffff\r\n";
        assert_eq!(read_raw(raw, 100).await.0, Err(ReadError::TooLarge));
    }

    #[tokio::test]
    async fn informational_responses_are_skipped() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        let (meta, body) = read_raw(raw, 100).await;
        assert_eq!(meta.map(|m| m.status), Ok(201));
        assert_eq!(body, b"ok");
    }

    #[test]
    fn content_lengths_are_digits_only() {
        assert_eq!(parse_length(b"0"), Some(0));
        assert_eq!(parse_length(b" 1234 "), Some(1234));
        assert_eq!(parse_length(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b" ", b"-1", b"+1", b"1 2", b"0x10", b"18446744073709551616", b"\xff"] {
            assert_eq!(parse_length(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn heads_are_framed_by_their_headers() {
        let cases: [(&[u8], u16, Framing, bool); 5] = [
            (
                b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: application/json\r\nContent-Length: 40\r\nConnection: keep-alive\r\n\r\n{}",
                200,
                Framing::Length(40),
                true,
            ),
            (b"HTTP/1.1 429 Too Many Requests\r\ncontent-length: 0\r\nConnection: close\r\n\r\n", 429, Framing::Length(0), false),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 9\r\n\r\n", 200, Framing::Chunked, true),
            (b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", 204, Framing::Empty, true),
            (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\n", 200, Framing::UntilClose, true),
        ];
        for (raw, status, framing, keep_alive) in cases {
            let head = parse_head(raw).unwrap().unwrap();
            assert_eq!((head.status, head.framing, head.keep_alive), (status, framing, keep_alive));
            assert_eq!(&raw[head.len - 4..head.len], b"\r\n\r\n");
        }
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"), Ok(None));
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            Err(ReadError::Malformed)
        );
    }
}
