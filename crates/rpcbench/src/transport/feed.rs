//! Feeds: the seam for items a server pushes, beside [`super::Lane`] for request and reply. A
//! [`FeedOpener`] opens one connection (and opens it again to reconnect); on it a [`Feed`]
//! subscribes any number of items by position, hands back what arrives as [`FeedEvent`]s
//! (confirmations, refusals, items with their arrival time and, when the wire's envelope says
//! so, the server's own production time), and unsubscribes.
//!
//! The WebSocket feed (`super::websocket::WsFeed`, JSON-RPC `eth_subscribe`/`slotSubscribe`...)
//! is the first. What a subscription asks for is a [`SubscribeCall`] built by the subscription
//! kinds (`crate::subscribe::kinds`); the payload of an item is the wire's own bytes (a JSON
//! `result` here, a protobuf update on a gRPC stream), parsed by the kind. What plugs in next
//! fits the same trait: a transaction tracker or a head monitor is a driver over one feed
//! beside a run; a gRPC stream (Solana Yellowstone Geyser) is a second implementation whose
//! envelope carries the production time (`created_at`) and whose items stamp `arrived` itself.

use std::future::Future;
use std::ops::Range;
use std::time::{Instant, SystemTime};

use tokio_tungstenite::tungstenite::Bytes;

/// The longest subscription id a feed keeps (a server's id is a short number or hex string;
/// anything longer is refused as a protocol fault, so memory does not follow its size).
pub(crate) const MAX_SUBSCRIPTION_ID: usize = 256;

/// What one subscription asks the server for: a JSON-RPC subscribe on WebSocket, or a Geyser
/// `SubscribeRequest` (its filters) on a gRPC stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SubscribeCall {
    /// `eth_subscribe`, `slotSubscribe`... over WebSocket.
    JsonRpc(JsonRpcSubscribe),
    /// A Yellowstone Geyser `Subscribe` call's first request (its filters and commitment).
    Geyser(Box<yellowstone_grpc_proto::geyser::SubscribeRequest>),
}

impl SubscribeCall {
    /// The JSON-RPC call, if it is one.
    #[cfg(test)]
    pub(crate) fn json_rpc(&self) -> Option<&JsonRpcSubscribe> {
        match self {
            SubscribeCall::JsonRpc(call) => Some(call),
            SubscribeCall::Geyser(_) => None,
        }
    }
}

/// A JSON-RPC subscription: what to call, with what, and how to end it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonRpcSubscribe {
    /// The subscribe method (`eth_subscribe`, `slotSubscribe`).
    pub method: &'static str,
    /// Its params.
    pub params: serde_json::Value,
    /// The method that ends it, given the subscription id.
    pub unsubscribe: &'static str,
}

/// One item a feed delivered.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The subscription's position on the feed.
    pub position: usize,
    /// The message it came in.
    pub message: Bytes,
    /// Where in the message the item's payload is.
    pub payload: Range<usize>,
    /// When it arrived: the kernel's receive stamp where the wire reads with one, else when the
    /// message was read whole.
    pub arrived: Instant,
    /// When the server says it produced the item, if the wire's envelope says so (a kind may
    /// still read one from the payload).
    pub produced: Option<SystemTime>,
}

impl Delivery {
    /// The item's payload.
    pub(crate) fn payload(&self) -> &[u8] {
        &self.message[self.payload.clone()]
    }
}

/// Why a feed's connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FeedEnd {
    /// The server closed it, with this close code (1006: without a close frame; 1005: a close
    /// frame without a code).
    Closed(u16),
    /// The server broke the wire's protocol.
    Protocol,
    /// A gRPC stream ended with this status code (14: unavailable, 8: resource exhausted,
    /// as a Geyser server cutting off a lagging client says; 0 when it ended without an error).
    Status(u8),
    /// A message was larger than the limit.
    TooLarge,
    /// The server sent an HTTP/2 GOAWAY that ended the stream (a gRPC server going away or
    /// shedding load): a disconnect by its own cause.
    GoAway,
    /// The connection ended under a stream without a status (closed or reset: a GOAWAY that
    /// spared the stream followed by the close looks so to an HTTP/2 client).
    Lost,
    /// The server stopped reading what we must send (the answers to its PINGs backed up past
    /// [`super::websocket::MAX_UNSENT_PONGS`]): rpcbench closed the connection.
    NotReading,
}

/// Messages that belonged to no subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stray {
    /// Not JSON (not the wire's format).
    NotJson,
    /// An item for a subscription id nobody holds, or an answer to no request.
    Unknown,
}

/// What a feed saw next.
#[derive(Debug, Clone)]
pub(crate) enum FeedEvent {
    /// The server confirmed the subscription at `position`.
    Confirmed {
        /// Its position.
        position: usize,
        /// When the confirmation arrived.
        arrived: Instant,
    },
    /// The server refused it (or answered with something that is not a subscription).
    Refused {
        /// Its position.
        position: usize,
        /// The class the report counts it under (a JSON-RPC error code, `invalid answer`,
        /// `id too long`).
        class: String,
        /// What the server said, as it said it (escaping and redaction are the report's).
        message: String,
    },
    /// An item.
    Item(Delivery),
    /// The server answered an unsubscribe request: `confirmed` when it said the subscription
    /// ended.
    Unsubscribed {
        /// Whether the server confirmed the end.
        confirmed: bool,
    },
    /// A message that belonged to nothing.
    Stray(Stray),
    /// The connection ended.
    Ended(FeedEnd),
}

/// Opens feeds to one target.
pub(crate) trait FeedOpener {
    /// The feed one connection carries.
    type Feed: Feed;
    /// Why a connection could not be opened.
    type Error: std::fmt::Display;

    /// Opens one connection (within the connect timeout).
    fn open(&self) -> impl Future<Output = Result<Self::Feed, Self::Error>>;
}

/// One connection's subscriptions.
pub(crate) trait Feed {
    /// Asks for the subscription at `position`; its answer comes as an event.
    fn subscribe(
        &mut self,
        position: usize,
        call: &SubscribeCall,
    ) -> impl Future<Output = Result<(), FeedEnd>>;

    /// Asks for the subscriptions of `calls` (position, call) in their order; their answers
    /// come as events. A wire that can writes them together (one flush for all: a run that
    /// subscribes per transaction pays one write per batch, not per transaction).
    fn subscribe_all(
        &mut self,
        calls: &[(usize, SubscribeCall)],
    ) -> impl Future<Output = Result<(), FeedEnd>> {
        async move {
            for (position, call) in calls {
                self.subscribe(*position, call).await?;
            }
            Ok(())
        }
    }

    /// Ends the subscription at `position`, if the server confirmed it; whether a request went
    /// out (its answer comes as [`FeedEvent::Unsubscribed`]).
    fn unsubscribe(&mut self, position: usize) -> impl Future<Output = Result<bool, FeedEnd>>;

    /// The next event. Cancel-safe: a message is never half read when the future is dropped.
    fn next(&mut self) -> impl Future<Output = FeedEvent>;

    /// Closes the connection politely.
    fn close(&mut self) -> impl Future<Output = ()>;

    /// What the wire said about the connection's end, once [`FeedEvent::Ended`] came: the
    /// server's close reason (WebSocket) or the I/O error, if there was one.
    fn end_detail(&self) -> Option<&str> {
        None
    }

    /// Forgets the subscription at `position` without a request: for subscriptions the server
    /// ends by itself after their one notification (Solana's `signatureSubscribe`), so a feed's
    /// tables follow the open subscriptions, not all there were. A later message for it is a
    /// stray.
    fn forget(&mut self, _position: usize) {}
}
