//! Transports: how a request reaches the target and its reply comes back. A [`Transport`] opens
//! [`Lane`]s; a lane is one place a request can go (an HTTP/1.1 connection today; an HTTP/2
//! stream slot or an id slot on a WebSocket are the next ones). The engine's worker loop is
//! generic over the transport, chosen once per run, so each wire is its own module here and
//! never a copy of the request loop.
//!
//! A protocol (`crate::protocol`) writes what one request carries into an [`Outgoing`]; the
//! lane frames it for its wire, exchanges it and hands back a [`Reply`] whose body the
//! protocol then classifies.
//!
//! Items a server pushes (subscriptions) go through the other seam, [`feed`]: a
//! [`feed::FeedOpener`] opens connections whose [`feed::Feed`] subscribes, receives items with
//! their arrival time and unsubscribes. A new wire is one file here implementing `Transport`
//! and `Lane`, `FeedOpener` and `Feed`, or both.

pub(crate) mod connect;
pub(crate) mod feed;
pub(crate) mod goaway_watch;
pub(crate) mod grpc;
pub(crate) mod grpc_unary;
pub(crate) mod http1;
pub(crate) mod http2;
pub(crate) mod quiet_reads;
pub(crate) mod websocket;
pub(crate) mod ws_feed;
pub(crate) mod ws_frames;

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

/// The read buffer of a WebSocket (tungstenite zero-fills its whole read buffer before every
/// read: its 128 KiB default cost 70,000 instructions per message read, callgrind; a large
/// message is still read whole, in more reads).
pub(crate) const WEBSOCKET_READ_BUFFER: usize = 4 * 1024;

/// An HTTP request method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    /// GET.
    Get,
    /// POST (every JSON-RPC request).
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
    /// PATCH.
    Patch,
    /// HEAD.
    Head,
    /// OPTIONS.
    Options,
}

impl HttpMethod {
    /// Every method, in the order error messages list them.
    pub const ALL: [HttpMethod; 7] = [
        HttpMethod::Get,
        HttpMethod::Post,
        HttpMethod::Put,
        HttpMethod::Delete,
        HttpMethod::Patch,
        HttpMethod::Head,
        HttpMethod::Options,
    ];

    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Head => "HEAD",
            HttpMethod::Options => "OPTIONS",
        }
    }

    /// Parses a method name (upper case, as HTTP writes it).
    pub fn parse(name: &str) -> Option<HttpMethod> {
        HttpMethod::ALL.into_iter().find(|method| method.as_str() == name)
    }

    /// Whether requests of this method usually carry a body (a `Content-Length` is sent for
    /// them even when it is 0).
    pub fn has_body(self) -> bool {
        matches!(self, HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch)
    }
}

impl fmt::Display for HttpMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one request carries, written by a protocol, framed by a lane. Reused from request to
/// request: nothing here is allocated once the buffers have grown.
#[derive(Debug)]
pub struct Outgoing {
    /// The request method.
    pub method: HttpMethod,
    /// Path and query; empty means the target URL's own (every JSON-RPC request).
    pub path: Vec<u8>,
    /// Header lines of this request alone, each `Name: value\r\n` (the run's headers are the
    /// transport's).
    pub headers: Vec<u8>,
    /// The body.
    pub body: Vec<u8>,
}

impl Default for Outgoing {
    fn default() -> Self {
        Self {
            method: HttpMethod::Post,
            path: Vec::new(),
            headers: Vec::new(),
            body: Vec::with_capacity(256),
        }
    }
}

impl Outgoing {
    /// Empties the request for the next one (a POST to the target's path, no extra headers).
    pub fn clear(&mut self) {
        self.method = HttpMethod::Post;
        self.path.clear();
        self.headers.clear();
        self.body.clear();
    }

    /// Whether this is a plain POST to the target's own path, the JSON-RPC request the
    /// transports prepare their framing for.
    pub fn is_plain_post(&self) -> bool {
        self.method == HttpMethod::Post && self.path.is_empty() && self.headers.is_empty()
    }
}

/// A reply that came back complete. The body stays in the lane ([`Lane::body`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reply {
    /// HTTP status code.
    pub status: u16,
    /// Whether the lane may carry another request.
    pub reusable: bool,
    /// Bytes received for this reply as on the wire (head and body).
    pub wire_bytes: usize,
    /// Bytes of the request as written on the wire.
    pub request_bytes: usize,
    /// When the request was completely written.
    pub written_at: Instant,
    /// When the first byte of the reply arrived (the write's end when it was already there).
    pub first_byte_at: Instant,
    /// The reply was followed by bytes nobody asked for: the lane is not reusable, and the
    /// fault is counted once, on this reply.
    pub extra_bytes: bool,
    /// When the reply's last byte arrived, by the kernel's receive timestamp, if the lane read
    /// it later than that ([`Lane::read_at_slots`]); otherwise the reply ended when the
    /// exchange did.
    pub arrived_at: Option<Instant>,
    /// The rate-limit headers the answer carried (none over WebSocket).
    pub rate: crate::ratelimit::headers::RateHeaders,
}

/// Why an exchange failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The connection closed or was reset before the reply was complete.
    Closed,
    /// The bytes are not a valid reply on this wire.
    Malformed,
    /// The body is larger than the limit.
    TooLarge,
    /// The connection the request needed could not be opened.
    Connect,
    /// HTTP/2: the stream was above the last one a GOAWAY said the server would process.
    GoAway,
    /// HTTP/2: the server reset the stream with this error code (REFUSED_STREAM is 7).
    StreamReset(u32),
    /// WebSocket: the socket closed (by the server, with this close code; 1006 when it went
    /// away without a close frame) before the answer came.
    WsClosed(u16),
    /// WebSocket: the server broke the protocol (a bad frame, text that is not UTF-8).
    WsProtocol,
    /// gRPC: the call ended with this `grpc-status`, not OK.
    GrpcStatus(u32),
    /// gRPC: the reply is not one well-framed message, or has no `grpc-status`.
    BadGrpc,
}

/// What a transport saw of its connections in one worker, beside the requests' outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WireStats {
    /// Connections opened (the first ones and every re-open).
    pub connections_opened: u64,
    /// HTTP/2: connections the server ended with a GOAWAY.
    pub goaways_received: u64,
    /// HTTP/2: requests sent again on a new connection because a graceful GOAWAY left them
    /// unprocessed (each still has exactly one outcome: that of its retry).
    pub retried_after_goaway: u64,
    /// HTTP/2: the lowest SETTINGS_MAX_CONCURRENT_STREAMS a server advertised (`None`: no
    /// limit, or no connection got that far).
    pub server_max_streams: Option<u64>,
    /// WebSocket: messages that were not JSON (no request was charged for them).
    pub stray_not_json: u64,
    /// WebSocket: answers with an id no request on the socket waited for (late answers to
    /// requests that timed out, answers sent twice).
    pub stray_unknown_id: u64,
    /// WebSocket: notifications (a `method`, no id) on a request/response socket.
    pub stray_notifications: u64,
}

impl WireStats {
    /// Adds another worker's figures.
    pub fn merge(&mut self, other: &WireStats) {
        self.connections_opened += other.connections_opened;
        self.goaways_received += other.goaways_received;
        self.retried_after_goaway += other.retried_after_goaway;
        self.stray_not_json += other.stray_not_json;
        self.stray_unknown_id += other.stray_unknown_id;
        self.stray_notifications += other.stray_notifications;
        self.server_max_streams = match (self.server_max_streams, other.server_max_streams) {
            (Some(ours), Some(theirs)) => Some(ours.min(theirs)),
            (ours, theirs) => ours.or(theirs),
        };
    }
}

/// Opens lanes to one target.
pub(crate) trait Transport: Clone {
    /// One place a request can go.
    type Lane: Lane;

    /// The transport one worker uses: lanes that share connections (HTTP/2 streams) share them
    /// within one worker only, never across threads.
    fn for_worker(&self) -> Self {
        self.clone()
    }

    /// Opens lane `index` of this worker (connects, within the connect timeout, unless the
    /// lane joins a connection that is already open).
    fn open(&self, index: usize) -> impl Future<Output = std::io::Result<Self::Lane>>;

    /// What this worker's transport saw of its connections.
    fn stats(&self) -> WireStats {
        WireStats::default()
    }
}

/// One place a request can go, one request at a time.
pub(crate) trait Lane {
    /// Writes `request` and reads its reply completely; `max_body` bounds the reply's body.
    fn exchange(
        &mut self,
        request: &Outgoing,
        max_body: u64,
    ) -> impl Future<Output = Result<Reply, WireError>>;

    /// The body of the reply last read.
    fn body(&self) -> &[u8];

    /// Whether replies carry a real HTTP status (a WebSocket message has none: its
    /// [`Reply::status`] is a stand-in 200, not counted as an HTTP status).
    const HAS_STATUS: bool = true;

    /// Whether the lane measures its own connect time ([`Lane::take_connect_time`]); when not,
    /// the time `open` took is the connect time.
    const MEASURES_CONNECT: bool = false;

    /// The time spent connecting for this lane since the last call: by `open` (`None` when the
    /// lane joined a connection already open) or by an exchange that had to re-open the
    /// connection (an HTTP/2 connection ended by a GOAWAY). Only with
    /// [`Lane::MEASURES_CONNECT`].
    fn take_connect_time(&mut self) -> Option<Duration> {
        None
    }

    /// Open loop at high rates: whether the lane may leave its replies in the kernel, without
    /// waking the worker, and read them when the worker wakes for the next slot of `clock`
    /// ([`crate::slot_timer::SlotClock::next_slot`]), each stamped with when it arrived
    /// ([`Reply::arrived_at`]); `None` stops it. Returns whether the lane now does so; one that
    /// cannot (TLS, HTTP/2, WebSocket) reads its replies as they come.
    fn read_at_slots(&mut self, clock: Option<crate::slot_timer::SlotClock>) -> bool {
        let _ = clock;
        false
    }
}
