//! JSON-RPC over WebSocket (`ws://`, `wss://`), the third transport: the upgrade request by
//! `tokio-tungstenite`, the frames of requests and answers by rpcbench itself ([`ws_frames`]:
//! written into the socket's outgoing bytes, read in place from its receive buffer), TLS by the
//! same rustls connector as HTTP. A lane is one request slot on
//! a socket: `-c N --in-flight K` opens N sockets and K lanes on each, so N x K requests are
//! outstanding, and answers are matched to requests by id in any order.
//!
//! Each socket has one reader task that hands every text message to the lane waiting for its
//! id: each lane has a slot on its socket where the reader puts the answer and wakes the lane's
//! task (no channel per request). A message that matches no request waiting on the socket (not
//! JSON, no id, an id nobody waits for: a late answer to a request that timed out, a
//! notification) is not charged to any request: it is counted by kind in [`WireStats`], and
//! the request it failed to answer times out. A socket the server closes ends the requests waiting on it as
//! [`WireError::WsClosed`] with the close code; a frame that breaks the protocol ends them as
//! [`WireError::WsProtocol`]; either way the lanes re-open a socket for their next request.
//! Nothing here grows with what a server sends: at most K waiters per socket, and messages
//! are bounded by the run's body limit. A server that sends PINGs and never reads would make
//! their PONGs queue without bound: the PONG bytes not yet taken by the kernel are counted, and
//! past [`MAX_UNSENT_PONGS`] rpcbench closes the socket itself (requests: closed with code
//! 1008, policy; subscriptions: `FeedEnd::NotReading`).
//!
//! The same socket as a feed of subscriptions (`rpcbench subscribe`), framed by tungstenite, is
//! `super::ws_feed`.
//!
//! [`ws_frames`]: super::ws_frames

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio_tungstenite::tungstenite;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::WebSocketStream;

use super::connect::{Connector, Stream};
use super::ws_frames::{self, FrameError, MaskKeys, UpgradeAnswer};
use super::{Lane, Outgoing, Reply, Transport, WireError, WireStats};
use crate::jsonrpc::{self, ScannedId};
use crate::settings::{Scheme, Target};

pub(crate) type Socket = WebSocketStream<Stream>;
/// An answer's bytes are the message tungstenite read, handed over without a copy.
type Answer = Result<(tungstenite::Bytes, Instant), WireError>;
/// Where the lanes of one socket index find their socket (re-opened in place).
type SocketSlot = Arc<tokio::sync::Mutex<Option<Arc<SharedSocket>>>>;

/// How every socket to one target is opened: TCP (and TLS) by the connector, then the HTTP
/// upgrade carrying the run's headers, within the connect timeout. Shared by request/response
/// runs and `subscribe`.
#[derive(Debug, Clone)]
pub(crate) struct Upgrade {
    pub(super) connector: Connector,
    url: String,
    headers: Vec<(String, String)>,
    config: WebSocketConfig,
    /// The largest frame or message a server may send (the run's body limit).
    max_message: usize,
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
            .max_frame_size(Some(limit))
            // A backstop behind the PONG count: what we queue to send never grows past this.
            .max_write_buffer_size(WRITE_BUFFER + limit.clamp(MAX_UNSENT_PONGS, MAX_QUEUED_REQUEST) + 1);
        Self { connector, url, headers, config, max_message: limit }
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
        self.upgrade(stream).await
    }

    /// Opens one socket for requests and answers framed by rpcbench: the upgrade request
    /// written by tungstenite, its answer checked here, within the connect timeout. Returns the
    /// stream and what the server sent past the answer's head (frames already).
    async fn open_framed(&self) -> Result<(Stream, BytesMut), OpenError> {
        let mut stream = self.connector.connect().await.map_err(OpenError::Connect)?;
        let request = self.request().map_err(|err| OpenError::Failed(err.to_string()))?;
        let (head, key) = tungstenite::handshake::client::generate_request(request)
            .map_err(|err| OpenError::Failed(err.to_string()))?;
        let answer = async {
            stream.write_all(&head).await.map_err(|err| OpenError::Failed(err.to_string()))?;
            let mut received = BytesMut::with_capacity(super::WEBSOCKET_READ_BUFFER);
            loop {
                if received.len() >= MAX_UPGRADE_ANSWER {
                    return Err(OpenError::Failed("an answer head over 64 KiB".into()));
                }
                received.reserve(super::WEBSOCKET_READ_BUFFER);
                match stream.read_buf(&mut received).await {
                    Ok(0) => return Err(OpenError::Failed("the server closed the connection".into())),
                    Ok(_) => {}
                    Err(err) => return Err(OpenError::Failed(err.to_string())),
                }
                match ws_frames::check_upgrade_answer(&received, &key) {
                    UpgradeAnswer::Partial => continue,
                    UpgradeAnswer::Upgraded(head_len) => {
                        received.advance(head_len);
                        return Ok(received);
                    }
                    UpgradeAnswer::Refused(status) => return Err(OpenError::Refused(status)),
                    UpgradeAnswer::Broken(why) => return Err(OpenError::Failed(why.into())),
                }
            }
        };
        let received = tokio::time::timeout(self.connector.connect_timeout(), answer)
            .await
            .map_err(|_| OpenError::Failed("no answer within the connect timeout".into()))??;
        Ok((stream, received))
    }

    /// The HTTP upgrade over an open `stream`, within the connect timeout.
    pub(super) async fn upgrade<S>(&self, stream: S) -> Result<WebSocketStream<S>, OpenError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
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

/// The PONG bytes a socket may owe a server that does not read before rpcbench closes it.
pub(crate) const MAX_UNSENT_PONGS: usize = 1024 * 1024;
/// tungstenite's write buffer (frames are written out past it).
const WRITE_BUFFER: usize = 128 * 1024;
/// The largest request queued on a socket at once.
const MAX_QUEUED_REQUEST: usize = 64 * 1024 * 1024;
/// The longest answer head to an upgrade request.
const MAX_UPGRADE_ANSWER: usize = 64 * 1024;

/// The answers a socket owes to its server's PINGs and could not hand to the kernel yet.
#[derive(Debug, Default)]
pub(crate) struct PongBacklog {
    owed: usize,
}

impl PongBacklog {
    /// A PING of `payload` bytes arrived; `flushed` says whether everything queued (its PONG
    /// too) has since gone to the kernel (`None`: not known, the writer was busy). Whether the
    /// server is still reading: false once the unsent PONGs pass [`MAX_UNSENT_PONGS`].
    pub(crate) fn ping(&mut self, payload: usize, flushed: Option<bool>) -> bool {
        // A masked PONG: 2 head bytes, 4 of mask, the payload (at most 125 bytes).
        self.owed = self.owed.saturating_add(payload + 6);
        if flushed == Some(true) {
            self.owed = 0;
        }
        self.owed <= MAX_UNSENT_PONGS
    }
}

/// The frames a socket's lanes (and its reader, for PONGs and the close reply) queued and the
/// kernel has not taken yet, with the half of the stream they go out on.
#[derive(Debug)]
struct Outbox {
    half: WriteHalf<Stream>,
    bytes: Vec<u8>,
    keys: MaskKeys,
    /// A task has the write turn: it writes everything queued, frames queued while it writes
    /// too, and gives the turn up when the outbox is empty (or when it is cut off).
    writer: bool,
}

/// One open socket: its outgoing frames, the requests waiting for answers, and whether it ended.
#[derive(Debug)]
struct SharedSocket {
    outbox: Mutex<Outbox>,
    waiting: Mutex<AnswerSlots>,
    /// The socket can take no new request (closed, failed).
    ended: AtomicBool,
}

impl SharedSocket {
    fn new(half: WriteHalf<Stream>, in_flight: usize) -> Self {
        Self {
            outbox: Mutex::new(Outbox { half, bytes: Vec::new(), keys: MaskKeys::new(), writer: false }),
            waiting: Mutex::new(AnswerSlots::new(in_flight)),
            ended: AtomicBool::new(false),
        }
    }

    fn lock_outbox(&self) -> std::sync::MutexGuard<'_, Outbox> {
        self.outbox.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a frame of `payload`, masked with a fresh key.
    fn queue(&self, opcode: u8, payload: &[u8]) {
        let mut outbox = self.lock_outbox();
        let key = outbox.keys.next_key();
        ws_frames::write_frame(&mut outbox.bytes, opcode, payload, key);
    }

    /// Queues a request's frame; true when no task has the write turn and the caller took it
    /// (it must then write the outbox out), false when the task writing will take this frame.
    fn queue_request(&self, payload: &[u8]) -> bool {
        let mut outbox = self.lock_outbox();
        let key = outbox.keys.next_key();
        ws_frames::write_frame(&mut outbox.bytes, ws_frames::OP_TEXT, payload, key);
        !std::mem::replace(&mut outbox.writer, true)
    }

    /// Hands the queued bytes to the kernel as far as it takes them; what it took leaves the
    /// outbox at once, so a write cut off (a timed-out request) loses and repeats nothing.
    fn poll_write_out(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut outbox = self.lock_outbox();
        let Outbox { half, bytes, .. } = &mut *outbox;
        while !bytes.is_empty() {
            match std::pin::Pin::new(&mut *half).poll_write(cx, bytes) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(written)) if written == bytes.len() => bytes.clear(),
                Poll::Ready(Ok(written)) => {
                    bytes.drain(..written);
                }
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            }
        }
        std::pin::Pin::new(half).poll_flush(cx)
    }

    /// Writes what the kernel takes now, without waiting: whether everything queued went out
    /// (`None`: a lane has the write turn, not known).
    fn try_write_out(&self) -> Option<bool> {
        {
            let mut outbox = self.lock_outbox();
            if outbox.writer {
                return None;
            }
            outbox.writer = true;
        }
        let turn = WriteTurn { socket: self };
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        let written = matches!(self.poll_write_out(&mut cx), Poll::Ready(Ok(())));
        drop(turn);
        Some(written)
    }

    /// Ends every request waiting on the socket with `error`.
    fn end(&self, error: WireError) {
        self.ended.store(true, Ordering::Relaxed);
        self.lock_waiting().end_all(error);
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, AnswerSlots> {
        self.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The write turn held: given up however the write ends (done, failed, cut off with the
/// request's timeout). Frames still queued then go out with the next write.
struct WriteTurn<'a> {
    socket: &'a SharedSocket,
}

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        self.socket.lock_outbox().writer = false;
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
pub(crate) struct WebSocket {
    upgrade: Arc<Upgrade>,
    in_flight: usize,
    pool: Arc<SocketPool>,
}

impl WebSocket {
    /// A transport to the `ws://`/`wss://` `target` with `in_flight` requests outstanding per
    /// socket, sending `headers` with the upgrade request; messages larger than `max_body`
    /// end their socket.
    pub(crate) fn new(
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
        let (stream, received) = self.upgrade.open_framed().await.map_err(|err| match err {
            OpenError::Connect(err) => err,
            other => io::Error::other(other.to_string()),
        })?;
        self.pool.opened.fetch_add(1, Ordering::Relaxed);
        let (reader, writer) = tokio::io::split(stream);
        let shared = Arc::new(SharedSocket::new(writer, self.in_flight));
        let frames = FrameReader { reader, received, max_message: self.upgrade.max_message };
        tokio::spawn(read_answers(frames, shared.clone(), self.pool.clone()));
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
    pub(crate) async fn check_server(&self) -> Result<(), String> {
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

/// A socket's read half and what was received and not yet read as frames.
struct FrameReader {
    reader: ReadHalf<Stream>,
    received: BytesMut,
    max_message: usize,
}

/// Reads a socket's frames and hands each message to the request waiting for its id.
async fn read_answers(mut frames: FrameReader, socket: Arc<SharedSocket>, pool: Arc<SocketPool>) {
    let mut pongs = PongBacklog::default();
    // A fragmented message being put together: its opcode and the payload so far.
    let mut fragmented: Option<(u8, Vec<u8>)> = None;
    // The answers of one read arrived when it returned.
    let mut arrived = Instant::now();
    let received = &mut frames.received;
    let ended_by = 'socket: loop {
        loop {
            let head = match ws_frames::parse_head(received, frames.max_message) {
                Ok(Some(head)) => head,
                Ok(None) => break,
                Err(FrameError::TooLarge) => break 'socket WireError::TooLarge,
                Err(FrameError::Protocol) => break 'socket WireError::WsProtocol,
            };
            let whole = head.head_len + head.payload_len;
            if received.len() < whole {
                // Room for what is missing, grown at most twofold per read: memory follows the
                // bytes that arrive, not the length a frame declares.
                let missing = whole - received.len();
                received.reserve(missing.min(received.len().max(super::WEBSOCKET_READ_BUFFER)));
                break;
            }
            let payload = &received[head.head_len..whole];
            // A whole message in one frame is split off the buffer as it is; every other frame
            // is passed over once read.
            let mut split_off = false;
            let message = match (head.opcode, fragmented.as_mut()) {
                (ws_frames::OP_TEXT | ws_frames::OP_BINARY, Some(_)) => break 'socket WireError::WsProtocol,
                (ws_frames::OP_TEXT | ws_frames::OP_BINARY, None) if head.fin => {
                    if head.opcode == ws_frames::OP_TEXT && !is_utf8(payload) {
                        break 'socket WireError::WsProtocol;
                    }
                    let mut message = received.split_to(whole).freeze();
                    message.advance(head.head_len);
                    split_off = true;
                    Some(message)
                }
                (ws_frames::OP_TEXT | ws_frames::OP_BINARY, None) => {
                    fragmented = Some((head.opcode, payload.to_vec()));
                    None
                }
                (ws_frames::OP_CONTINUATION, None) => break 'socket WireError::WsProtocol,
                (ws_frames::OP_CONTINUATION, Some((_, so_far))) => {
                    if so_far.len() + payload.len() > frames.max_message {
                        break 'socket WireError::TooLarge;
                    }
                    so_far.extend_from_slice(payload);
                    match fragmented.take() {
                        Some((opcode, whole_message)) if head.fin => {
                            if opcode == ws_frames::OP_TEXT && !is_utf8(&whole_message) {
                                break 'socket WireError::WsProtocol;
                            }
                            Some(tungstenite::Bytes::from(whole_message))
                        }
                        unfinished => {
                            fragmented = unfinished;
                            None
                        }
                    }
                }
                (ws_frames::OP_PING, _) => {
                    socket.queue(ws_frames::OP_PONG, payload);
                    let flushed = socket.try_write_out();
                    if !pongs.ping(payload.len(), flushed) {
                        // The server does not read: closed by us, as a policy violation (1008).
                        break 'socket WireError::WsClosed(1008);
                    }
                    None
                }
                (ws_frames::OP_CLOSE, _) => match ws_frames::close_code(payload) {
                    Ok(code) => {
                        // The closing handshake's answer, as far as the kernel takes it now.
                        let reply = if code == 1005 { Vec::new() } else { code.to_be_bytes().to_vec() };
                        socket.queue(ws_frames::OP_CLOSE, &reply);
                        let _ = socket.try_write_out();
                        break 'socket WireError::WsClosed(code);
                    }
                    Err(_) => break 'socket WireError::WsProtocol,
                },
                _ => None, // a PONG
            };
            if !split_off {
                received.advance(whole);
            }
            if let Some(message) = message {
                deliver(message, arrived, &socket, &pool);
            }
        }
        if received.capacity() - received.len() < super::WEBSOCKET_READ_BUFFER / 4 {
            received.reserve(super::WEBSOCKET_READ_BUFFER);
        }
        match frames.reader.read_buf(received).await {
            // Closed without the closing handshake (tungstenite: a reset without closing).
            Ok(0) => break WireError::WsProtocol,
            Ok(_) => arrived = Instant::now(),
            Err(_) => break WireError::Closed,
        }
    };
    socket.end(ended_by);
}

/// Hands one message to the request waiting for its id, or counts it as a stray.
fn deliver(text: tungstenite::Bytes, arrived: Instant, socket: &SharedSocket, pool: &SocketPool) {
    let id = match leading_id(&text) {
        Some(id) => Some(id),
        None => match jsonrpc::scan_response(&text) {
            Ok(scanned) => match scanned.id {
                ScannedId::Number(id) => Some(id),
                _ => None,
            },
            Err(_) => {
                pool.stray_not_json.fetch_add(1, Ordering::Relaxed);
                return;
            }
        },
    };
    match id {
        Some(id) => {
            if !socket.lock_waiting().answer(id, Ok((text, arrived))) {
                pool.stray_unknown_id.fetch_add(1, Ordering::Relaxed);
            }
        }
        None if memchr::memmem::find(&text, b"\"method\"").is_some() => {
            pool.stray_notifications.fetch_add(1, Ordering::Relaxed);
        }
        None => {
            pool.stray_unknown_id.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Transport for WebSocket {
    type Lane = RequestSlot;

    fn for_worker(&self) -> Self {
        Self { pool: Arc::new(SocketPool::default()), ..self.clone() }
    }

    async fn open(&self, index: usize) -> io::Result<RequestSlot> {
        let (socket, connect_time) = self.socket(index).await?;
        Ok(RequestSlot {
            transport: self.clone(),
            index,
            socket,
            body: tungstenite::Bytes::new(),
            connect_time,
        })
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
pub(crate) struct RequestSlot {
    transport: WebSocket,
    index: usize,
    socket: Arc<SharedSocket>,
    body: tungstenite::Bytes,
    connect_time: Option<Duration>,
}

/// Empties a lane's answer slot however the exchange ends (answered, timed out, cut off), so a
/// socket's table holds only requests still waiting.
struct WaiterGuard<'a> {
    socket: &'a SharedSocket,
    slot: usize,
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.socket.lock_waiting().forget(self.slot);
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
        let slot = self.index % self.transport.in_flight;
        self.socket.lock_waiting().wait_for(slot, id);
        let _guard = WaiterGuard { socket: &self.socket, slot };
        if !is_utf8(&request.body) {
            return Err(WireError::Malformed);
        }
        let request_bytes = request.body.len();
        // The frame is queued. The lane that finds no one with the write turn takes it and
        // writes after one yield: the socket's other lanes woken in the same turn (their answers
        // came in one read) queue theirs meanwhile and go straight to waiting, and the one write
        // takes every queued frame in one system call.
        if self.socket.queue_request(&request.body) {
            // Held from here: a lane cut off by its timeout during the yield or the write gives
            // the turn up, and the next lane to queue writes what is left.
            let turn = WriteTurn { socket: &self.socket };
            tokio::task::yield_now().await;
            let written = std::future::poll_fn(|cx| self.socket.poll_write_out(cx)).await;
            drop(turn);
            if written.is_err() {
                self.socket.end(WireError::Closed);
                return Err(WireError::Closed);
            }
        }
        let written_at = Instant::now();
        let (body, first_byte_at) =
            std::future::poll_fn(|cx| self.socket.lock_waiting().poll_answer(slot, cx)).await?;
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
            rate: crate::ratelimit::headers::RateHeaders::NONE,
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

/// Where a socket's answers meet the lanes waiting for them: one slot per lane of the socket
/// (its index among them), found by request id. The reader puts an answer in its slot and wakes
/// only that lane's task; nothing is allocated per request. At most the socket's lanes wait.
#[derive(Debug)]
struct AnswerSlots {
    slots: Vec<AnswerSlot>,
    /// The slot waiting for each request id (the ids are the engine's own, so one
    /// multiplication hashes them, not SipHash).
    by_id: HashMap<u64, usize, crate::util::fast_hash::MultiplyHasherBuilder>,
}

/// One lane's place on its socket.
#[derive(Debug, Default)]
struct AnswerSlot {
    /// The request the lane waits for, until its answer (or the socket's end) arrives.
    waiting_for: Option<u64>,
    answer: Option<Answer>,
    /// The lane's task, kept across requests (woken by reference, so not cloned per request).
    waker: Option<Waker>,
}

impl AnswerSlots {
    fn new(lanes: usize) -> Self {
        Self {
            slots: (0..lanes).map(|_| AnswerSlot::default()).collect(),
            by_id: HashMap::with_capacity_and_hasher(lanes, Default::default()),
        }
    }

    /// Lane `slot` waits for the answer to request `id`. A lane already waiting for the same id
    /// on this socket (two requests cannot both be answered by one message) ends as closed.
    fn wait_for(&mut self, slot: usize, id: u64) {
        self.forget(slot);
        if let Some(previous) = self.by_id.insert(id, slot) {
            if previous != slot {
                self.settle(previous, Err(WireError::Closed));
            }
        }
        self.slots[slot].waiting_for = Some(id);
    }

    /// Puts an answer to request `id` in the slot waiting for it and wakes its lane; false when
    /// no lane waits for `id` (a stray: late, duplicate or unknown).
    fn answer(&mut self, id: u64, answer: Answer) -> bool {
        match self.by_id.remove(&id) {
            Some(slot) => {
                self.settle(slot, answer);
                true
            }
            None => false,
        }
    }

    fn settle(&mut self, slot: usize, answer: Answer) {
        let place = &mut self.slots[slot];
        place.waiting_for = None;
        place.answer = Some(answer);
        if let Some(waker) = &place.waker {
            waker.wake_by_ref();
        }
    }

    /// Ends every lane still waiting with `error`.
    fn end_all(&mut self, error: WireError) {
        self.by_id.clear();
        for slot in 0..self.slots.len() {
            if self.slots[slot].waiting_for.is_some() {
                self.settle(slot, Err(error));
            }
        }
    }

    /// Lane `slot` no longer waits (answered, timed out, cut off): its id and any answer left
    /// in the slot go, so a later answer to that id is a stray.
    fn forget(&mut self, slot: usize) {
        let place = &mut self.slots[slot];
        if let Some(id) = place.waiting_for.take() {
            self.by_id.remove(&id);
        }
        place.answer = None;
    }

    /// The answer in lane `slot`'s place, or the lane's task kept to be woken when it comes.
    fn poll_answer(&mut self, slot: usize, cx: &mut Context<'_>) -> Poll<Answer> {
        let place = &mut self.slots[slot];
        if let Some(answer) = place.answer.take() {
            return Poll::Ready(answer);
        }
        if !place.waker.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
            place.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// The id of the JSON-RPC request in `body` (the protocol wrote it: `"id":N`), read without a
/// search when the body opens as the protocols write it.
fn request_id(body: &[u8]) -> Option<u64> {
    // The searcher is built once: building it per request cost more than the search.
    static ID_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"id\":"));
    const VERSION_THEN_ID: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    let at = if body.starts_with(VERSION_THEN_ID) { VERSION_THEN_ID.len() } else { ID_KEY.find(body)? + 5 };
    let digits = body[at..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    body[at..at + digits]
        .iter()
        .try_fold(0u64, |id, digit| id.checked_mul(10)?.checked_add(u64::from(digit - b'0')))
}

/// Whether `bytes` are UTF-8, the common all-ASCII case checked a word at a time first.
fn is_utf8(bytes: &[u8]) -> bool {
    bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()
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
        assert_eq!(request_id(br#"{"method":"getSlot","id":17,"jsonrpc":"2.0"}"#), Some(17));
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":99999999999999999999,"method":"m"}"#), None);
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":"7","method":"m"}"#), None);
    }
}
