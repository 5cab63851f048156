//! A lean HTTP/1.1 client connection for the hot path: it writes a prepared request and reads
//! one response into a reused buffer, framing the body by Content-Length, chunked encoding or
//! connection close. Headers are parsed by `httparse` (a hand-written scan of the common
//! head was measured slower than its SIMD parser: bench/ANALYSIS.md). Buffers start at 4 KiB per connection and grow on demand: to the size of the body
//! when a Content-Length announces it, so that a large body is read in place without doubling
//! and copying. Nothing is allocated per request once the buffers have grown to the size of a
//! response.

use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

/// A plain or TLS stream.
#[derive(Debug)]
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            Stream::Tls(stream) => Pin::new(stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            Stream::Tls(stream) => Pin::new(stream).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_flush(cx),
            Stream::Tls(stream) => Pin::new(stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            Stream::Tls(stream) => Pin::new(stream).poll_shutdown(cx),
        }
    }
}

/// Why a response could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The connection closed or was reset before the response was complete.
    Closed,
    /// The bytes are not an HTTP/1.x response.
    Malformed,
    /// The body is larger than the limit.
    TooLarge,
}

/// A response that was read completely.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseMeta {
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

/// One HTTP/1.1 connection and its buffers.
#[derive(Debug)]
pub struct Connection {
    stream: Stream,
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
}

#[derive(Debug, Clone, Copy)]
enum BodyLocation {
    InBuffer { start: usize, end: usize },
    Chunked,
}

impl Connection {
    /// Wraps a connected stream.
    pub fn new(stream: Stream) -> Self {
        Self {
            stream,
            buf: vec![0; INITIAL_BUFFER],
            start: 0,
            end: 0,
            chunked_body: Vec::new(),
            body: BodyLocation::InBuffer { start: 0, end: 0 },
            first_byte_at: None,
        }
    }

    /// Sends a complete request.
    pub async fn send(&mut self, request: &[u8]) -> io::Result<()> {
        self.stream.write_all(request).await
    }

    /// When the first byte of the response last read arrived.
    pub fn first_byte_at(&self) -> Option<Instant> {
        self.first_byte_at
    }

    /// The body of the response last read.
    pub fn body(&self) -> &[u8] {
        match self.body {
            BodyLocation::InBuffer { start, end } => &self.buf[start..end],
            BodyLocation::Chunked => &self.chunked_body,
        }
    }

    /// Reads more bytes into the buffer, growing it if full. Returns false at end of stream.
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

    /// Makes sure `buf[start..start + len]` is filled. The buffer grows to hold the body where
    /// it starts (after the head), so one read can take all of it and nothing already read is
    /// moved; it is compacted first only when most of it is consumed (a long chunked body).
    async fn fill_to(&mut self, len: usize) -> Result<(), ReadError> {
        if self.start + len > self.buf.len() {
            if self.start > self.buf.len() / 2 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let need = self.start + len;
            if need > self.buf.len() {
                self.buf.resize(need.next_multiple_of(BUFFER_STEP), 0);
            }
        }
        while self.end - self.start < len {
            if !self.fill().await? {
                return Err(ReadError::Closed);
            }
        }
        Ok(())
    }

    /// Reads one complete response. `max_body` bounds the body size.
    pub async fn read_response(&mut self, max_body: u64) -> Result<ResponseMeta, ReadError> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.first_byte_at = None;
        } else {
            // Bytes of this response arrived with the previous one.
            self.first_byte_at = Some(Instant::now());
        }
        let mut wire_bytes = 0;
        loop {
            // Parse the head, reading until it is complete.
            let Head { status, len: head_len, framing, keep_alive } = loop {
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
            // Informational responses (100 Continue) precede the real one.
            if (100..200).contains(&status) {
                continue;
            }
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
            Ok(Some(Head { status: fields.status, len, framing, keep_alive }))
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(_) => Err(ReadError::Malformed),
    }
}

/// The header fields that decide framing and keep-alive, gathered one header at a time.
#[derive(Debug)]
struct HeadFields {
    status: u16,
    keep_alive: bool,
    length: Option<u64>,
    chunked: bool,
}

impl HeadFields {
    fn new(status: u16, http11: bool) -> Self {
        Self { status, keep_alive: http11, length: None, chunked: false }
    }

    /// Takes one header; names are compared by length first, then without case.
    fn add(&mut self, name: &[u8], value: &[u8]) -> Result<(), ReadError> {
        match name.len() {
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let text = std::str::from_utf8(value).map_err(|_| ReadError::Malformed)?;
                let value: u64 = text.trim().parse().map_err(|_| ReadError::Malformed)?;
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
            _ => {}
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
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

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
        let mut conn = Connection::new(Stream::Plain(TcpStream::connect(addr).await.unwrap()));
        let meta = conn.read_response(max_body).await;
        let body = conn.body().to_vec();
        server.await.unwrap();
        (meta, body)
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
