//! The gRPC feed: Solana Yellowstone Geyser `Subscribe` streams (`grpc://`, `grpcs://`), the
//! second implementation of the feed seam (`super::feed`) beside WebSocket. One connection is
//! one HTTP/2 connection (our own connector: TCP, and rustls with ALPN `h2` for `grpcs://`);
//! each subscription on it is one bidirectional `Subscribe` stream whose first request carries
//! the kind's filters. The `x-token` header goes with every call (a secret: it is never
//! printed).
//!
//! Items are handed to the kinds as the wire's own bytes (one protobuf `SubscribeUpdate`, not
//! decoded here, so a kind decodes each once); the feed only scans an update's top-level
//! fields for what the envelope says: a server `Ping` (answered on the same stream with a ping
//! request, as Yellowstone servers ask to keep a stream alive), a `Pong` (not an item), and
//! `created_at`, the server's production time. Memory stays bounded by configuration: a
//! message larger than the limit ends the stream, and a flood the driver does not read backs
//! up into HTTP/2 flow control, never into a queue here.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::{Buf, Bytes};
use futures_util::stream::{SelectAll, StreamExt};
use futures_util::Stream;
use prost::Message as _;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status, Streaming};
use yellowstone_grpc_proto::geyser::{SubscribeRequest, SubscribeRequestPing};

use super::connect::{Connector, Stream as WireStream};
use super::feed::{Delivery, Feed, FeedEnd, FeedEvent, FeedOpener, SubscribeCall};
use super::goaway_watch::{GoAwaySeen, GoAwayWatch};

/// The Geyser service's bidirectional subscribe call.
const SUBSCRIBE_PATH: &str = "/geyser.Geyser/Subscribe";

/// Ping answers queued for one stream (never more than a few at once).
const PING_ANSWER_QUEUE: usize = 16;

/// A server ping to answer on a stream: the queue carries only that one is due, and the
/// stream makes the request as it sends it. A queued `SubscribeRequest` (about 440 bytes:
/// seven filter maps) made every stream's queue reserve tokio's block of 32 of them (14 KB),
/// whose pages were touched one slot per ping: the subscriber's memory grew by some 45 bytes
/// per subscription per second at the mock's 10 s pings.
#[derive(Debug, Clone, Copy)]
struct PingDue;

/// A Geyser feed's `x-token`: a secret, so its `Debug` form says only that there is one.
#[derive(Clone, PartialEq, Eq)]
pub struct XToken(String);

impl XToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// Whether a header can carry the token (not empty, printable ASCII): checked with the
    /// run's settings, so the flag is named before anything connects, and the token is never
    /// quoted in the error.
    pub fn check(&self) -> Result<(), XTokenError> {
        if self.0.is_empty() {
            return Err(XTokenError::Empty);
        }
        if !self.0.bytes().all(|byte| (0x20..0x7f).contains(&byte)) {
            return Err(XTokenError::NotPrintable);
        }
        Ok(())
    }

    /// The token itself, for the header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

/// Why an `x-token` cannot be sent (the token itself is never quoted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XTokenError {
    /// The token is empty.
    Empty,
    /// The token holds a byte a header value cannot (a control character, non-ASCII).
    NotPrintable,
}

impl std::fmt::Display for XTokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            XTokenError::Empty => f.write_str("the token is empty"),
            XTokenError::NotPrintable => f.write_str(
                "must be printable ASCII (a header cannot carry a control character or non-ASCII)",
            ),
        }
    }
}

impl std::error::Error for XTokenError {}

impl std::fmt::Debug for XToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("XToken(<redacted>)")
    }
}

/// Opens gRPC connections to one Geyser endpoint.
#[derive(Clone)]
pub(crate) struct GeyserOpener {
    connector: Connector,
    /// `http://HOST:PORT` (or https): the `:authority` and scheme of every call.
    origin: String,
    x_token: Option<MetadataValue<tonic::metadata::Ascii>>,
    max_message: usize,
}

impl std::fmt::Debug for GeyserOpener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token is a secret: only whether there is one.
        f.debug_struct("GeyserOpener")
            .field("origin", &self.origin)
            .field("x_token", &self.x_token.is_some())
            .field("max_message", &self.max_message)
            .finish()
    }
}

/// Why a Geyser feed could not be set up.
#[derive(Debug)]
pub(crate) enum GeyserSetupError {
    /// The `x-token` is not a valid header value (printable ASCII).
    Token,
    /// The origin is not a valid URI.
    Origin,
}

impl GeyserSetupError {
    /// The setting at fault: the token, or the URL.
    pub(crate) fn as_setting(&self) -> crate::field::SettingError {
        use crate::field::{Field, SettingError};
        match self {
            GeyserSetupError::Token => SettingError::new(Field::XToken, "must be printable ASCII"),
            GeyserSetupError::Origin => {
                SettingError::new(Field::Url, "the gRPC URL's host and port do not make a valid URI")
            }
        }
    }
}

impl std::fmt::Display for GeyserSetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_setting().fmt(f)
    }
}

impl std::error::Error for GeyserSetupError {}

/// Why a connection could not be opened.
#[derive(Debug)]
pub(crate) struct GeyserOpenError(String);

impl std::fmt::Display for GeyserOpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl GeyserOpener {
    /// An opener over `connector` (which must offer ALPN `h2` for TLS), for `host:port`.
    pub(crate) fn new(
        connector: Connector,
        tls: bool,
        host: &str,
        port: u16,
        x_token: Option<&XToken>,
        max_message: usize,
    ) -> Result<Self, GeyserSetupError> {
        let host = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
        let origin = format!("{}://{host}:{port}", if tls { "https" } else { "http" });
        origin.parse::<http::Uri>().map_err(|_| GeyserSetupError::Origin)?;
        let x_token = x_token
            .map(|token| MetadataValue::try_from(token.expose()).map_err(|_| GeyserSetupError::Token))
            .transpose()?;
        Ok(Self { connector, origin, x_token, max_message })
    }
}

/// Our connector as the tower service tonic dials with; the server's frames are watched for
/// a GOAWAY (`super::goaway_watch`), noted in the feed's [`GoAwaySeen`].
#[derive(Clone)]
struct Dial(Connector, GoAwaySeen);

impl tower::Service<http::Uri> for Dial {
    type Response = hyper_util::rt::TokioIo<GoAwayWatch<WireStream>>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: http::Uri) -> Self::Future {
        let connector = self.0.clone();
        let seen = self.1.clone();
        Box::pin(async move {
            connector
                .connect()
                .await
                .map(|stream| hyper_util::rt::TokioIo::new(GoAwayWatch::new(stream, seen)))
        })
    }
}

impl FeedOpener for GeyserOpener {
    type Feed = GeyserFeed;
    type Error = GeyserOpenError;

    async fn open(&self) -> Result<GeyserFeed, GeyserOpenError> {
        let endpoint = Endpoint::from_shared(self.origin.clone())
            .map_err(|err| GeyserOpenError(err.to_string()))?
            .connect_timeout(self.connector.connect_timeout());
        let goaway = GoAwaySeen::default();
        let channel = endpoint
            .connect_with_connector(Dial(self.connector.clone(), goaway.clone()))
            .await
            .map_err(|err| GeyserOpenError(describe_transport_error(&err)))?;
        Ok(GeyserFeed {
            channel,
            x_token: self.x_token.clone(),
            max_message: self.max_message,
            streams: SelectAll::new(),
            ping_answers: Vec::new(),
            goaway,
        })
    }
}

/// A transport error with its causes (tonic's own text is only "transport error").
fn describe_transport_error(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The codec of a subscribe stream: requests encoded with prost, updates kept as bytes.
struct RawUpdates;

struct RequestEncoder;

struct BytesDecoder;

impl Encoder for RequestEncoder {
    type Item = SubscribeRequest;
    type Error = Status;

    fn encode(&mut self, item: SubscribeRequest, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst).map_err(|err| Status::internal(err.to_string()))
    }
}

impl Decoder for BytesDecoder {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

impl Codec for RawUpdates {
    type Encode = SubscribeRequest;
    type Decode = Bytes;
    type Encoder = RequestEncoder;
    type Decoder = BytesDecoder;

    fn encoder(&mut self) -> RequestEncoder {
        RequestEncoder
    }

    fn decoder(&mut self) -> BytesDecoder {
        BytesDecoder
    }
}

/// What one subscribe stream produced next.
enum StreamStep {
    /// The server answered the call (its response headers): the subscription stands.
    Answered,
    /// The server refused the call.
    Refused(Status),
    /// One update.
    Update(Bytes),
    /// The stream ended: `None` without an error.
    Ended(Option<Status>),
}

type CallFuture = Pin<Box<dyn Future<Output = Result<tonic::Response<Streaming<Bytes>>, Status>> + Send>>;

/// A subscribe stream's state: calling, then streaming, then done.
enum StreamState {
    Calling(CallFuture),
    Streaming(Box<Streaming<Bytes>>),
    Done,
}

type PositionedStream = Pin<Box<dyn Stream<Item = (usize, StreamStep)>>>;

/// One connection's Geyser subscriptions: a stream each, read together.
pub(crate) struct GeyserFeed {
    channel: Channel,
    x_token: Option<MetadataValue<tonic::metadata::Ascii>>,
    max_message: usize,
    /// Every subscription's stream, by position (cancel-safe to poll: each keeps its own state).
    streams: SelectAll<PositionedStream>,
    /// Each position's ping-answer sender (dropping it ends the subscription's requests).
    ping_answers: Vec<Option<tokio::sync::mpsc::Sender<PingDue>>>,
    /// Whether the server sent this connection a GOAWAY.
    goaway: GoAwaySeen,
}

impl std::fmt::Debug for GeyserFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeyserFeed").field("streams", &self.streams.len()).finish()
    }
}

impl GeyserFeed {
    /// Starts the subscribe call at `position` with `first` as its first request.
    fn start(&mut self, position: usize, first: SubscribeRequest) {
        let (sender, receiver) = tokio::sync::mpsc::channel(PING_ANSWER_QUEUE);
        if self.ping_answers.len() <= position {
            self.ping_answers.resize_with(position + 1, || None);
        }
        self.ping_answers[position] = Some(sender);
        // The filters first, then a ping request for each ping due, until the sender is
        // dropped.
        let answers = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|PingDue| (ping_request(), receiver))
        });
        let outgoing = futures_util::stream::once(std::future::ready(first)).chain(answers);
        let mut request = Request::new(outgoing);
        if let Some(token) = &self.x_token {
            request.metadata_mut().insert("x-token", token.clone());
        }
        let mut grpc =
            tonic::client::Grpc::new(self.channel.clone()).max_decoding_message_size(self.max_message);
        let call: CallFuture = Box::pin(async move {
            grpc.ready().await.map_err(|err: tonic::transport::Error| {
                Status::unavailable(describe_transport_error(&err))
            })?;
            grpc.streaming(request, http::uri::PathAndQuery::from_static(SUBSCRIBE_PATH), RawUpdates).await
        });
        let steps = futures_util::stream::unfold(StreamState::Calling(call), move |state| async move {
            match state {
                StreamState::Calling(call) => match call.await {
                    Ok(response) => {
                        Some((StreamStep::Answered, StreamState::Streaming(Box::new(response.into_inner()))))
                    }
                    Err(status) => Some((StreamStep::Refused(status), StreamState::Done)),
                },
                StreamState::Streaming(mut updates) => match updates.message().await {
                    Ok(Some(update)) => Some((StreamStep::Update(update), StreamState::Streaming(updates))),
                    Ok(None) => Some((StreamStep::Ended(None), StreamState::Done)),
                    Err(status) => Some((StreamStep::Ended(Some(status)), StreamState::Done)),
                },
                StreamState::Done => None,
            }
        });
        self.streams.push(Box::pin(steps.map(move |step| (position, step))));
    }

    /// Answers a server ping on `position`'s stream (a full queue: the answer is skipped, the
    /// server pings again).
    fn answer_ping(&self, position: usize) {
        if let Some(Some(sender)) = self.ping_answers.get(position) {
            let _ = sender.try_send(PingDue);
        }
    }
}

/// The request that answers a server ping.
fn ping_request() -> SubscribeRequest {
    SubscribeRequest { ping: Some(SubscribeRequestPing { id: 1 }), ..Default::default() }
}

impl Feed for GeyserFeed {
    async fn subscribe(&mut self, position: usize, call: &SubscribeCall) -> Result<(), FeedEnd> {
        // `SubscribeConfig::validate` pairs gRPC URLs with Geyser kinds only.
        let SubscribeCall::Geyser(request) = call else { return Err(FeedEnd::Protocol) };
        self.start(position, (**request).clone());
        Ok(())
    }

    async fn unsubscribe(&mut self, position: usize) -> Result<bool, FeedEnd> {
        // A Geyser subscription ends when its client closes the call: dropping the request
        // sender ends the requests, and the feed's close drops the streams. There is no answer
        // to wait for.
        if let Some(sender) = self.ping_answers.get_mut(position) {
            sender.take();
        }
        Ok(false)
    }

    async fn next(&mut self) -> FeedEvent {
        loop {
            let Some((position, step)) = self.streams.next().await else {
                // No stream left (all refused or ended): nothing more comes on this connection.
                return FeedEvent::Ended(FeedEnd::Status(0));
            };
            let arrived = Instant::now();
            match step {
                StreamStep::Answered => return FeedEvent::Confirmed { position, arrived },
                StreamStep::Refused(status) => {
                    let class = format!("grpc {}", status_name(status.code() as u8));
                    let message = format!("{class}: {}", status.message()).chars().take(200).collect();
                    return FeedEvent::Refused { position, class, message };
                }
                StreamStep::Ended(status) => {
                    let end = status.as_ref().map_or(FeedEnd::Status(0), stream_end);
                    // A GOAWAY that spared the stream, then the close: HTTP/2's client sees the
                    // connection lost under the stream, but the server said why.
                    if end == FeedEnd::Lost && self.goaway.code().is_some() {
                        return FeedEvent::Ended(FeedEnd::GoAway);
                    }
                    return FeedEvent::Ended(end);
                }
                StreamStep::Update(message) => {
                    let envelope = scan_update(&message);
                    match envelope.kind {
                        UpdateKind::Ping => {
                            self.answer_ping(position);
                            continue;
                        }
                        UpdateKind::Pong => continue,
                        UpdateKind::Malformed => return FeedEvent::Ended(FeedEnd::Protocol),
                        UpdateKind::Item => {}
                    }
                    let payload = 0..message.len();
                    return FeedEvent::Item(Delivery {
                        position,
                        message,
                        payload,
                        arrived,
                        produced: envelope.created_at,
                    });
                }
            }
        }
    }

    async fn close(&mut self) {
        self.ping_answers.clear();
        self.streams = SelectAll::new();
    }
}

/// Why a stream ended with `status`: a GOAWAY from the server that ended it, the connection
/// lost under it (closed or reset without a status: how a GOAWAY that spared the stream and the
/// close after it look to HTTP/2's client), a message over the limit (tonic refuses it from
/// its length prefix, before reading its bytes), a frame that is not gRPC's, or the status the
/// server sent.
fn stream_end(status: &Status) -> FeedEnd {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(cause) = source {
        if let Some(h2) = cause.downcast_ref::<h2::Error>() {
            if h2.is_go_away() && h2.is_remote() {
                return FeedEnd::GoAway;
            }
            if h2.is_io() {
                return FeedEnd::Lost;
            }
        }
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return FeedEnd::Lost;
        }
        source = cause.source();
    }
    let message = status.message();
    match status.code() {
        tonic::Code::OutOfRange if message.contains("too large") => FeedEnd::TooLarge,
        tonic::Code::Internal if message.starts_with("protocol error") => FeedEnd::Protocol,
        code => FeedEnd::Status(code as u8),
    }
}

/// `SubscribeUpdate`'s fields whose message carries a slot, and that slot's field number in
/// it: account (2: slot 2), slot (3: slot 1), transaction (4: slot 2), block (5: slot 1),
/// block meta (7: slot 1), entry (8: slot 1).
const SLOT_FIELDS: [(u64, u64); 6] = [(2, 2), (3, 1), (4, 2), (5, 1), (7, 1), (8, 1)];

/// The slot an update belongs to, read from its top-level field without decoding the rest
/// (for resubscribing `from_slot` after a reconnect); `None` for pings, pongs and garbage.
pub(crate) fn update_slot(mut bytes: &[u8]) -> Option<u64> {
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let (field, wire_type) = (key >> 3, key & 7);
        match wire_type {
            0 => {
                varint(&mut bytes)?;
            }
            1 | 5 => bytes = bytes.get(if wire_type == 1 { 8 } else { 4 }..)?,
            2 => {
                let length = usize::try_from(varint(&mut bytes)?).ok()?;
                let value = bytes.get(..length)?;
                bytes = &bytes[length..];
                if let Some(&(_, slot_field)) = SLOT_FIELDS.iter().find(|(outer, _)| *outer == field) {
                    return varint_field(value, slot_field);
                }
            }
            _ => return None,
        }
    }
    None
}

/// A protobuf field's value as the wire gives it.
#[derive(Debug, Clone, Copy)]
enum WireValue<'a> {
    Varint(u64),
    /// A length-delimited value (a message, bytes or a string).
    Bytes(&'a [u8]),
    /// A fixed 32- or 64-bit value.
    Fixed,
}

/// Visits a message's top-level fields in order; `None` when it is not protobuf.
fn walk_fields<'a>(mut bytes: &'a [u8], mut visit: impl FnMut(u64, WireValue<'a>)) -> Option<()> {
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let value = match key & 7 {
            0 => WireValue::Varint(varint(&mut bytes)?),
            1 | 5 => {
                bytes = bytes.get(if key & 7 == 1 { 8 } else { 4 }..)?;
                WireValue::Fixed
            }
            2 => {
                let length = usize::try_from(varint(&mut bytes)?).ok()?;
                let value = bytes.get(..length)?;
                bytes = &bytes[length..];
                WireValue::Bytes(value)
            }
            _ => return None,
        };
        visit(key >> 3, value);
    }
    Some(())
}

/// `SubscribeUpdate`'s `update_oneof` fields (the last one on the wire is the update).
const ONEOF_FIELDS: [u64; 9] = [2, 3, 4, 5, 6, 7, 8, 9, 10];

/// An update's payload: its `update_oneof` field number and message, read without decoding
/// the message (`None` when the update is not protobuf or carries none).
fn update_payload(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut payload = None;
    walk_fields(bytes, |field, value| {
        if let (true, WireValue::Bytes(message)) = (ONEOF_FIELDS.contains(&field), value) {
            payload = Some((field, message));
        }
    })?;
    payload
}

/// A slot update's slot and status (`SubscribeUpdateSlot`: slot 1, status 3), read from the
/// wire without decoding the update; `None` for other updates and for what is not protobuf.
pub(crate) fn slot_update(bytes: &[u8]) -> Option<(u64, i32)> {
    let (3, message) = update_payload(bytes)? else { return None };
    let (mut slot, mut status) = (0, 0);
    walk_fields(message, |field, value| match (field, value) {
        (1, WireValue::Varint(value)) => slot = value,
        // An int32 goes on the wire sign-extended to 64 bits.
        (3, WireValue::Varint(value)) => status = value as i32,
        _ => {}
    })?;
    Some((slot, status))
}

/// What a transaction update carries: its signature (`SubscribeUpdateTransaction.transaction`
/// 1, then `signature` 1), read from the wire without decoding the transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransactionUpdate<'a> {
    /// A transaction with its signature (empty when the info has none).
    Signed(&'a [u8]),
    /// A transaction update without the transaction's info.
    NoInfo,
}

/// A transaction update's signature; `None` for other updates and for what is not protobuf.
pub(crate) fn transaction_update(bytes: &[u8]) -> Option<TransactionUpdate<'_>> {
    let (4, message) = update_payload(bytes)? else { return None };
    let mut info = None;
    walk_fields(message, |field, value| {
        if let (1, WireValue::Bytes(value)) = (field, value) {
            info = Some(value);
        }
    })?;
    let Some(info) = info else { return Some(TransactionUpdate::NoInfo) };
    let mut signature: &[u8] = &[];
    walk_fields(info, |field, value| {
        if let (1, WireValue::Bytes(value)) = (field, value) {
            signature = value;
        }
    })?;
    Some(TransactionUpdate::Signed(signature))
}

/// The varint field `wanted` of a message's top level.
fn varint_field(mut bytes: &[u8], wanted: u64) -> Option<u64> {
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        match key & 7 {
            0 => {
                let value = varint(&mut bytes)?;
                if key >> 3 == wanted {
                    return Some(value);
                }
            }
            1 => bytes = bytes.get(8..)?,
            5 => bytes = bytes.get(4..)?,
            2 => {
                let length = usize::try_from(varint(&mut bytes)?).ok()?;
                bytes = bytes.get(length..)?;
            }
            _ => return None,
        }
    }
    None
}

/// A gRPC status code's name, lower case, for reports.
pub(crate) fn status_name(code: u8) -> &'static str {
    match code {
        0 => "ok",
        1 => "cancelled",
        2 => "unknown",
        3 => "invalid argument",
        4 => "deadline exceeded",
        5 => "not found",
        6 => "already exists",
        7 => "permission denied",
        8 => "resource exhausted",
        9 => "failed precondition",
        10 => "aborted",
        11 => "out of range",
        12 => "unimplemented",
        13 => "internal",
        14 => "unavailable",
        15 => "data loss",
        16 => "unauthenticated",
        _ => "unknown code",
    }
}

/// What an update's envelope says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UpdateKind {
    /// An update to hand to the kind.
    Item,
    /// A server ping (keep-alive).
    Ping,
    /// The answer to our ping.
    Pong,
    /// Not a protobuf message.
    Malformed,
}

#[derive(Debug, Clone, Copy)]
struct Envelope {
    kind: UpdateKind,
    created_at: Option<SystemTime>,
}

/// `SubscribeUpdate`'s field numbers the envelope reads.
const FIELD_PING: u64 = 6;
const FIELD_PONG: u64 = 9;
const FIELD_CREATED_AT: u64 = 11;

/// Scans an update's top-level fields without decoding its payload: ping or pong, and
/// `created_at` (a `google.protobuf.Timestamp`: seconds 1, nanos 2).
fn scan_update(mut bytes: &[u8]) -> Envelope {
    let mut envelope = Envelope { kind: UpdateKind::Item, created_at: None };
    while !bytes.is_empty() {
        let Some(key) = varint(&mut bytes) else { return malformed() };
        let (field, wire_type) = (key >> 3, key & 7);
        match wire_type {
            0 => {
                if varint(&mut bytes).is_none() {
                    return malformed();
                }
            }
            1 | 5 => {
                let width = if wire_type == 1 { 8 } else { 4 };
                if bytes.len() < width {
                    return malformed();
                }
                bytes = &bytes[width..];
            }
            2 => {
                let Some(length) = varint(&mut bytes) else { return malformed() };
                let Ok(length) = usize::try_from(length) else { return malformed() };
                if bytes.len() < length {
                    return malformed();
                }
                let (value, rest) = bytes.split_at(length);
                bytes = rest;
                match field {
                    FIELD_PING => envelope.kind = UpdateKind::Ping,
                    FIELD_PONG => envelope.kind = UpdateKind::Pong,
                    FIELD_CREATED_AT => envelope.created_at = timestamp(value),
                    _ => {}
                }
            }
            _ => return malformed(),
        }
    }
    envelope
}

fn malformed() -> Envelope {
    Envelope { kind: UpdateKind::Malformed, created_at: None }
}

/// A `google.protobuf.Timestamp`'s time (none before the epoch or with nanos out of range).
fn timestamp(mut bytes: &[u8]) -> Option<SystemTime> {
    let (mut seconds, mut nanos) = (0u64, 0u64);
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        if key & 7 != 0 {
            return None;
        }
        let value = varint(&mut bytes)?;
        match key >> 3 {
            1 => seconds = value,
            2 => nanos = value,
            _ => {}
        }
    }
    if seconds > i64::MAX as u64 || nanos >= 1_000_000_000 {
        return None;
    }
    UNIX_EPOCH.checked_add(Duration::new(seconds, nanos as u32))
}

/// Reads one protobuf varint (at most 10 bytes).
fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (index, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            *bytes = &bytes[index + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use yellowstone_grpc_proto::geyser::{
        subscribe_update::UpdateOneof, SubscribeUpdate, SubscribeUpdatePing, SubscribeUpdateSlot,
    };
    use yellowstone_grpc_proto::prost_types::Timestamp;

    #[test]
    fn the_envelope_scan_finds_pings_and_the_production_time() {
        let slot = SubscribeUpdate {
            filters: vec!["s".into()],
            update_oneof: Some(UpdateOneof::Slot(SubscribeUpdateSlot { slot: 7, ..Default::default() })),
            created_at: Some(Timestamp { seconds: 1_700_000_000, nanos: 250_000 }),
        };
        let envelope = scan_update(&slot.encode_to_vec());
        assert_eq!(envelope.kind, UpdateKind::Item);
        assert_eq!(envelope.created_at, Some(UNIX_EPOCH + Duration::new(1_700_000_000, 250_000)));
        let ping = SubscribeUpdate {
            update_oneof: Some(UpdateOneof::Ping(SubscribeUpdatePing {})),
            ..Default::default()
        };
        assert_eq!(scan_update(&ping.encode_to_vec()).kind, UpdateKind::Ping);
    }

    #[test]
    fn the_slot_of_every_kind_of_update_is_read_without_decoding_it() {
        use yellowstone_grpc_proto::geyser::{
            SubscribeUpdateAccount, SubscribeUpdateBlockMeta, SubscribeUpdateTransaction,
        };
        let update = |oneof| SubscribeUpdate {
            filters: vec!["f".into()],
            update_oneof: Some(oneof),
            created_at: Some(Timestamp { seconds: 5, nanos: 0 }),
        };
        let slot =
            update(UpdateOneof::Slot(SubscribeUpdateSlot { slot: 42, status: 2, ..Default::default() }));
        assert_eq!(update_slot(&slot.encode_to_vec()), Some(42));
        let tx =
            update(UpdateOneof::Transaction(SubscribeUpdateTransaction { slot: 43, ..Default::default() }));
        assert_eq!(update_slot(&tx.encode_to_vec()), Some(43));
        let account = update(UpdateOneof::Account(SubscribeUpdateAccount { slot: 44, ..Default::default() }));
        assert_eq!(update_slot(&account.encode_to_vec()), Some(44));
        let meta =
            update(UpdateOneof::BlockMeta(SubscribeUpdateBlockMeta { slot: 45, ..Default::default() }));
        assert_eq!(update_slot(&meta.encode_to_vec()), Some(45));
        let ping = update(UpdateOneof::Ping(SubscribeUpdatePing {}));
        assert_eq!(update_slot(&ping.encode_to_vec()), None);
        assert_eq!(update_slot(&[0x1a, 0x7f, 1]), None);
    }

    /// Slots tokio's bounded channel allocates at once (its block), touched one message at a
    /// time.
    const CHANNEL_SLOT_BLOCK: usize = 32;

    /// The bytes of slots a stream's queue of `T` reserves while open: a sender never more
    /// than [`PING_ANSWER_QUEUE`] ahead of the stream holds at most two blocks.
    const fn queue_slot_bytes<T>() -> usize {
        2 * CHANNEL_SLOT_BLOCK * std::mem::size_of::<T>()
    }

    #[test]
    fn answering_pings_does_not_reserve_room_for_whole_requests_on_every_stream() {
        // Each subscription has its own queue for ping answers, held for the whole run; tokio
        // reserves its slots in blocks and touches one more per ping, so what a slot holds is
        // memory per subscription that grows ping by ping up to the block. A queue of whole
        // requests reserved a 14 KB block per subscription, touched 440 bytes a ping: the
        // 45 bytes per subscription per second the bench saw at the mock's 10 s pings.
        const BOUND: usize = 1024;
        assert!(queue_slot_bytes::<PingDue>() <= BOUND, "{}", queue_slot_bytes::<PingDue>());
        assert!(queue_slot_bytes::<SubscribeRequest>() > BOUND, "the bound tells the two apart");
        // A ping due still goes out as a ping request.
        assert_eq!(ping_request().ping, Some(SubscribeRequestPing { id: 1 }));
    }

    #[test]
    fn malformed_protobuf_is_named_not_read_past_its_end() {
        // A length-delimited field longer than the message, a varint that never ends, a
        // group wire type.
        for bytes in [&[0x0a, 0x7f, 1][..], &[0x08, 0xff, 0xff], &[0x0b]] {
            assert_eq!(scan_update(bytes).kind, UpdateKind::Malformed, "{bytes:?}");
        }
    }
}
