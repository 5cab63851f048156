//! JSON-RPC over WebSocket (`ws://`, `wss://`), the third transport: framing by
//! `tokio-tungstenite`, TLS by the same rustls connector as HTTP. A lane is one request slot on
//! a socket: `-c N --in-flight K` opens N sockets and K lanes on each, so N x K requests are
//! outstanding, and answers are matched to requests by id in any order.
//!
//! Each socket has one reader task that hands every text message to the lane waiting for its
//! id. A message that matches no request waiting on the socket (not JSON, no id, an id nobody
//! waits for: a late answer to a request that timed out, a notification) is not charged to
//! any request: it is counted by kind in [`WireStats`], and the request it failed to answer
//! times out. A socket the server closes ends the requests waiting on it as
//! [`WireError::WsClosed`] with the close code; a frame that breaks the protocol ends them as
//! [`WireError::WsProtocol`]; either way the lanes re-open a socket for their next request.
//! Nothing here grows with what a server sends: at most K waiters per socket, and messages
//! are bounded by the run's body limit.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use super::connect::{Connector, Stream};
use super::{Lane, Outgoing, Reply, Transport, WireError, WireStats};
use crate::jsonrpc::{self, ScannedId};
use crate::settings::{Scheme, Target};

pub(crate) type Socket = WebSocketStream<Stream>;
type Answer = Result<(Vec<u8>, Instant), WireError>;
/// Where the lanes of one socket index find their socket (re-opened in place).
type SocketSlot = Arc<tokio::sync::Mutex<Option<Arc<SharedSocket>>>>;

/// How every socket to one target is opened: TCP (and TLS) by the connector, then the HTTP
/// upgrade carrying the run's headers, within the connect timeout. Shared by request/response
/// runs and `subscribe`.
#[derive(Debug, Clone)]
pub(crate) struct Upgrade {
    connector: Connector,
    url: String,
    headers: Vec<(String, String)>,
    config: WebSocketConfig,
}

/// Why a socket could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// TCP or TLS failed.
    Connect(io::Error),
    /// The server answered the upgrade with this HTTP status instead.
    Refused(u16),
    /// The upgrade failed otherwise (a bad header, a broken answer, the timeout).
    Failed(String),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::Connect(err) => write!(f, "cannot connect: {err}"),
            OpenError::Refused(status) => {
                write!(f, "the server refused the WebSocket upgrade with HTTP {status}")
            }
            OpenError::Failed(why) => write!(f, "the WebSocket upgrade failed: {why}"),
        }
    }
}

impl Upgrade {
    /// Sockets to the `ws://`/`wss://` `target`, the upgrade carrying `headers` (and the URL's
    /// credentials, and rpcbench's User-Agent unless given); messages larger than `max_message`
    /// end their socket.
    pub(crate) fn new(
        connector: Connector,
        target: &Target,
        headers: &[(String, String)],
        max_message: u64,
    ) -> Self {
        let scheme = if target.scheme == Scheme::Https { "wss" } else { "ws" };
        let url = format!("{scheme}://{}{}", target.host_header, target.path_and_query);
        let mut headers = headers.to_vec();
        if let Some(credentials) = target.basic_authorization() {
            if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization")) {
                headers.push(("Authorization".into(), credentials.to_string()));
            }
        }
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("user-agent")) {
            headers.push(("User-Agent".into(), concat!("rpcbench/", env!("CARGO_PKG_VERSION")).into()));
        }
        let limit = usize::try_from(max_message).unwrap_or(usize::MAX);
        let config = WebSocketConfig::default()
            .read_buffer_size(super::WEBSOCKET_READ_BUFFER)
            .max_message_size(Some(limit))
            .max_frame_size(Some(limit));
        Self { connector, url, headers, config }
    }

    fn request(&self) -> Result<tungstenite::handshake::client::Request, tungstenite::Error> {
        let mut request = self.url.as_str().into_client_request()?;
        for (name, value) in &self.headers {
            let name = http::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|err| tungstenite::Error::HttpFormat(err.into()))?;
            let value = http::HeaderValue::from_str(value)
                .map_err(|err| tungstenite::Error::HttpFormat(err.into()))?;
            request.headers_mut().append(name, value);
        }
        Ok(request)
    }

    /// Opens one socket.
    pub(crate) async fn open(&self) -> Result<Socket, OpenError> {
        let stream = self.connector.connect().await.map_err(OpenError::Connect)?;
        let request = self.request().map_err(|err| OpenError::Failed(err.to_string()))?;
        let upgraded = tokio::time::timeout(
            self.connector.connect_timeout(),
            tokio_tungstenite::client_async_with_config(request, stream, Some(self.config)),
        )
        .await
        .map_err(|_| OpenError::Failed("no answer within the connect timeout".into()))?;
        match upgraded {
            Ok((socket, _)) => Ok(socket),
            Err(tungstenite::Error::Http(response)) => Err(OpenError::Refused(response.status().as_u16())),
            Err(other) => Err(OpenError::Failed(other.to_string())),
        }
    }
}

/// One open socket: its writer, the requests waiting for answers, and whether it ended.
#[derive(Debug)]
struct SharedSocket {
    writer: tokio::sync::Mutex<SplitSink<Socket, Message>>,
    waiting: Mutex<Waiters>,
    /// The socket can take no new request (closed, failed).
    ended: AtomicBool,
}

impl SharedSocket {
    /// Ends every request waiting on the socket with `error`.
    fn end(&self, error: WireError) {
        self.ended.store(true, Ordering::Relaxed);
        let waiting: Vec<_> = match self.waiting.lock() {
            Ok(mut waiting) => waiting.drain().collect(),
            Err(poisoned) => poisoned.into_inner().drain().collect(),
        };
        for (_, waiter) in waiting {
            let _ = waiter.send(Err(error));
        }
    }
}

/// The sockets of one worker, by socket index, and what they saw.
#[derive(Debug, Default)]
struct SocketPool {
    slots: Mutex<Vec<SocketSlot>>,
    opened: AtomicU64,
    stray_not_json: AtomicU64,
    stray_unknown_id: AtomicU64,
    stray_notifications: AtomicU64,
}

impl SocketPool {
    fn slot(&self, socket: usize) -> SocketSlot {
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while slots.len() <= socket {
            slots.push(Arc::default());
        }
        slots[socket].clone()
    }
}

/// The WebSocket transport: sockets to one target, each carrying `in_flight` lanes.
#[derive(Debug, Clone)]
pub struct WebSocket {
    upgrade: Arc<Upgrade>,
    in_flight: usize,
    pool: Arc<SocketPool>,
}

impl WebSocket {
    /// A transport to the `ws://`/`wss://` `target` with `in_flight` requests outstanding per
    /// socket, sending `headers` with the upgrade request; messages larger than `max_body`
    /// end their socket.
    pub fn new(
        connector: Connector,
        target: &Target,
        headers: &[(String, String)],
        in_flight: usize,
        max_body: u64,
    ) -> Self {
        Self {
            upgrade: Arc::new(Upgrade::new(connector, target, headers, max_body)),
            in_flight: in_flight.max(1),
            pool: Arc::new(SocketPool::default()),
        }
    }

    /// Connects and upgrades, then starts the socket's reader task.
    async fn connect(&self) -> io::Result<Arc<SharedSocket>> {
        let socket = self.upgrade.open().await.map_err(|err| match err {
            OpenError::Connect(err) => err,
            other => io::Error::other(other.to_string()),
        })?;
        self.pool.opened.fetch_add(1, Ordering::Relaxed);
        let (writer, reader) = socket.split();
        let shared = Arc::new(SharedSocket {
            writer: tokio::sync::Mutex::new(writer),
            waiting: Mutex::new(Waiters::with_capacity_and_hasher(self.in_flight, Default::default())),
            ended: AtomicBool::new(false),
        });
        tokio::spawn(read_answers(reader, shared.clone(), self.pool.clone()));
        Ok(shared)
    }

    /// The socket of lane `index`: the open one, or a new one when there is none or it ended.
    async fn socket(&self, index: usize) -> io::Result<(Arc<SharedSocket>, Option<Duration>)> {
        let slot = self.pool.slot(index / self.in_flight);
        let mut current = slot.lock().await;
        if let Some(open) = current.as_ref() {
            if !open.ended.load(Ordering::Relaxed) {
                return Ok((open.clone(), None));
            }
        }
        *current = None;
        let started = Instant::now();
        let open = self.connect().await?;
        *current = Some(open.clone());
        Ok((open, Some(started.elapsed())))
    }

    /// Opens one socket and reports why the server would not upgrade it, if it answered but
    /// refused (its HTTP status); `Ok` when it upgraded or could not be reached at all.
    pub async fn check_server(&self) -> Result<(), String> {
        match self.upgrade.open().await {
            Ok(mut socket) => {
                let _ = socket.close(None).await;
                Ok(())
            }
            Err(refused @ OpenError::Refused(_)) => Err(refused.to_string()),
            Err(_) => Ok(()),
        }
    }
}

/// Reads a socket's messages and hands each to the request waiting for its id.
async fn read_answers(mut reader: SplitStream<Socket>, socket: Arc<SharedSocket>, pool: Arc<SocketPool>) {
    let ended_by = loop {
        let Some(message) = reader.next().await else { break WireError::WsClosed(1006) };
        let arrived = Instant::now();
        let text: Vec<u8> = match message {
            Ok(Message::Text(text)) => text.as_bytes().to_vec(),
            Ok(Message::Binary(bytes)) => bytes.to_vec(),
            Ok(Message::Close(frame)) => {
                break WireError::WsClosed(frame.map_or(1005, |frame| u16::from(frame.code)))
            }
            Ok(_) => continue,
            Err(tungstenite::Error::Capacity(_)) => break WireError::TooLarge,
            Err(tungstenite::Error::Protocol(_) | tungstenite::Error::Utf8(_)) => {
                break WireError::WsProtocol
            }
            Err(_) => break WireError::Closed,
        };
        let id = match leading_id(&text) {
            Some(id) => Some(id),
            None => match jsonrpc::scan_response(&text) {
                Ok(scanned) => match scanned.id {
                    ScannedId::Number(id) => Some(id),
                    _ => None,
                },
                Err(_) => {
                    pool.stray_not_json.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            },
        };
        let waiter = id.and_then(|id| {
            let mut waiting = socket.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            waiting.remove(&id)
        });
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(Ok((text, arrived)));
            }
            None if id.is_none() && memchr::memmem::find(&text, b"\"method\"").is_some() => {
                pool.stray_notifications.fetch_add(1, Ordering::Relaxed);
            }
            None => {
                pool.stray_unknown_id.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    socket.end(ended_by);
}

impl Transport for WebSocket {
    type Lane = RequestSlot;

    fn for_worker(&self) -> Self {
        Self { pool: Arc::new(SocketPool::default()), ..self.clone() }
    }

    async fn open(&self, index: usize) -> io::Result<RequestSlot> {
        let (socket, connect_time) = self.socket(index).await?;
        Ok(RequestSlot { transport: self.clone(), index, socket, body: Vec::new(), connect_time })
    }

    fn stats(&self) -> WireStats {
        WireStats {
            connections_opened: self.pool.opened.load(Ordering::Relaxed),
            stray_not_json: self.pool.stray_not_json.load(Ordering::Relaxed),
            stray_unknown_id: self.pool.stray_unknown_id.load(Ordering::Relaxed),
            stray_notifications: self.pool.stray_notifications.load(Ordering::Relaxed),
            ..WireStats::default()
        }
    }
}

/// One request slot on a socket: one request at a time, the socket shared with the other
/// lanes of the same socket index.
#[derive(Debug)]
pub struct RequestSlot {
    transport: WebSocket,
    index: usize,
    socket: Arc<SharedSocket>,
    body: Vec<u8>,
    connect_time: Option<Duration>,
}

/// Removes a request's waiter however the exchange ends (answered, timed out, cut off), so a
/// socket's table holds only requests still waiting.
struct WaiterGuard<'a> {
    socket: &'a SharedSocket,
    id: u64,
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut waiting) = self.socket.waiting.lock() {
            waiting.remove(&self.id);
        }
    }
}

impl Lane for RequestSlot {
    async fn exchange(&mut self, request: &Outgoing, _max_body: u64) -> Result<Reply, WireError> {
        if self.socket.ended.load(Ordering::Relaxed) {
            // The socket closed between two requests: this one goes out on a new socket (it
            // was never lost), and the time to open it is the exchange's connect phase.
            let (socket, connect_time) =
                self.transport.socket(self.index).await.map_err(|_| WireError::Connect)?;
            self.socket = socket;
            if connect_time.is_some() {
                self.connect_time = connect_time;
            }
        }
        let Some(id) = request_id(&request.body) else { return Err(WireError::Malformed) };
        let (sender, receiver) = oneshot::channel();
        {
            let mut waiting = self.socket.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            waiting.insert(id, sender);
        }
        let _guard = WaiterGuard { socket: &self.socket, id };
        let text = Utf8Bytes::try_from(request.body.clone()).map_err(|_| WireError::Malformed)?;
        let request_bytes = request.body.len();
        {
            let mut writer = self.socket.writer.lock().await;
            if writer.send(Message::Text(text)).await.is_err() {
                drop(writer);
                self.socket.end(WireError::Closed);
                return Err(WireError::Closed);
            }
        }
        let written_at = Instant::now();
        let answer = receiver.await;
        let (body, first_byte_at) = match answer {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(WireError::Closed),
        };
        self.body = body;
        Ok(Reply {
            // A message in a 2xx HTTP response's place: the protocol classifies the body.
            status: 200,
            reusable: !self.socket.ended.load(Ordering::Relaxed),
            wire_bytes: self.body.len(),
            request_bytes,
            written_at,
            first_byte_at: first_byte_at.max(written_at),
            extra_bytes: false,
            arrived_at: None,
        })
    }

    fn body(&self) -> &[u8] {
        &self.body
    }

    const MEASURES_CONNECT: bool = true;
    const HAS_STATUS: bool = false;

    fn take_connect_time(&mut self) -> Option<Duration> {
        self.connect_time.take()
    }
}

/// The id of an answer that starts `{"jsonrpc":"2.0","id":N,` or `{"id":N,` (how nodes write
/// them), read without scanning the rest; `None` sends the answer to the full scan.
fn leading_id(text: &[u8]) -> Option<u64> {
    let rest =
        text.strip_prefix(b"{\"jsonrpc\":\"2.0\",\"id\":").or_else(|| text.strip_prefix(b"{\"id\":"))?;
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 || digits > 19 || rest.get(digits) != Some(&b',') {
        return None;
    }
    rest[..digits].iter().try_fold(0u64, |id, digit| id.checked_mul(10)?.checked_add(u64::from(digit - b'0')))
}

/// Hashes request ids (unique numbers) with one multiplication instead of SipHash.
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Waiters = HashMap<u64, oneshot::Sender<Answer>, std::hash::BuildHasherDefault<IdHasher>>;

/// The id of the JSON-RPC request in `body` (the protocol wrote it: `"id":N`).
fn request_id(body: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(body, b"\"id\":")? + 5;
    let digits = body[at..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    std::str::from_utf8(&body[at..at + digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_id_is_read_without_a_scan_and_anything_else_is_left_to_it() {
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":42,"result":"0x1"}"#), Some(42));
        assert_eq!(leading_id(br#"{"id":7,"jsonrpc":"2.0","result":1}"#), Some(7));
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","result":{"id":5},"id":7}"#), None);
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":"7","result":1}"#), None);
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":99999999999999999999,"result":1}"#), None);
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":12}"#), None);
    }

    #[test]
    fn the_request_id_is_read_from_the_body_the_protocol_wrote() {
        assert_eq!(
            request_id(br#"{"jsonrpc":"2.0","id":1099511627777,"method":"getSlot"}"#),
            Some(1099511627777)
        );
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","method":"getSlot"}"#), None);
    }
}
