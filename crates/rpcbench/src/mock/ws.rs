//! WebSocket JSON-RPC for the mock nodes, on the same port as HTTP: request/response and
//! subscriptions (Ethereum `eth_subscribe`, Solana `slotSubscribe`, `accountSubscribe`,
//! `logsSubscribe`, and `signatureSubscribe` when the node takes transactions), with fault
//! knobs for the notifications.
//!
//! `http.rs` answers the upgrade (`101 Switching Protocols`) and hands the connection, with
//! any bytes read past the head, to [`serve`]; tokio-tungstenite does the framing, pings and
//! the close handshake. Every text or binary message is answered exactly as an HTTP body
//! (`server::respond_with`, same bytes), after the same fault gate (`server::gate`); a delayed
//! message is answered when its delay is over, so answers may go out of order (clients match
//! them by id). Notifications-only messages get no answer.
//!
//! One producer per server ([`produce`]) makes one item per block (Ethereum) or slot (Solana)
//! at `slot_time`, stamped with its production time (`rpcbenchProducedAt`, unix microseconds),
//! and broadcasts it; each connection's task fans it out to its subscriptions, applying
//! `ws_drop` and `ws_duplicate` per (subscription, item) from the seeded generator and
//! `ws_delay`. Notifications wait in the connection's queue until written; a connection that
//! still has more than `ws_max_queue` of them unsent when the next item comes (or lags the
//! broadcast) is closed with 1008: one item's own notifications, however many (a slot landing
//! thousands of a client's signatures), are a burst, not a slow subscriber.
//! The frames one read brings are all answered before the writer runs, and their answers leave
//! in one write (a client with several requests in flight is not answered one write each).

use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::stream::SplitSink;
use futures_util::{SinkExt, StreamExt};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{broadcast, mpsc, watch, Notify};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::dispatch::{gate, respond_with, Extension, Gate, Node, Shared};
use super::rpc::{positional_params, RpcError, SERVER_ERROR};
use super::ws_state::{Item, ItemData, S_DROP, S_DUPLICATE, S_SUBSCRIPTION_ID};
use super::{ethereum, prng, solana};

/// Requests a connection may have received and not yet answered (delayed or answers queued
/// unwritten) before it stops reading more: a client that does not read its answers is not
/// buffered for without bound.
const MAX_PENDING_ANSWERS: usize = 1024;
/// Longest wait for the close handshake (and the notifications before it) to be written.
const CLOSE_WAIT: Duration = Duration::from_secs(10);
/// What the writer gathers before it writes without being flushed: the answers to the frames
/// of one read (a client with several requests in flight), or a slot's signature
/// notifications, leave in one write.
const ANSWER_BATCH_BYTES: usize = 16 * 1024;
/// Frames the reader answers at most before the writer runs (a client that floods requests
/// still gets its answers and notifications written as they come).
const WRITE_AT_LEAST_EVERY: usize = 64;
/// The close reason of a slow subscriber, as geth's.
pub(crate) const QUEUE_OVERFLOW: &str = "subscription queue overflow";

/// One open WebSocket connection, counted against `ws_max_connections` until dropped.
#[derive(Debug)]
pub(crate) struct ConnectionSlot {
    shared: Arc<Shared>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.shared.ws.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A slot for one more WebSocket connection, or `None` past `ws_max_connections` open or
/// `ws_max_upgrades` over the server's life.
pub(crate) fn open_connection(shared: &Arc<Shared>) -> Option<ConnectionSlot> {
    let open = shared.ws.open.fetch_add(1, Ordering::Relaxed) + 1;
    let slot = ConnectionSlot { shared: shared.clone() };
    if shared.ws.max_connections.is_some_and(|max| open > max) {
        return None; // dropping the slot gives the count back
    }
    let upgrades = shared.ws.upgrades.fetch_add(1, Ordering::Relaxed) + 1;
    if shared.ws.max_upgrades.is_some_and(|max| upgrades > max) {
        shared.ws.upgrades_refused.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    Some(slot)
}

fn unix_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

fn with_produced_at(mut value: Value, produced_at_us: u64) -> Value {
    if let Value::Object(fields) = &mut value {
        fields.insert("rpcbenchProducedAt".into(), json!(produced_at_us));
    }
    value
}

/// The server's one producer: an item per block (Ethereum) or slot (Solana) at the time the
/// node's chain reaches it (`started + k * slot_time`), broadcast while anyone listens.
pub(crate) async fn produce(shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let first = match &shared.node {
        Node::Static => return,
        Node::Ethereum(_) => ethereum::START_BLOCK,
        Node::Solana(_) => solana::START_SLOT,
    };
    let ws = &shared.ws;
    let slot_nanos = ws.slot_time.as_nanos().max(1);
    let mut k: u64 = 1;
    loop {
        let at =
            ws.started + Duration::from_nanos((slot_nanos * u128::from(k)).min(u128::from(u64::MAX)) as u64);
        tokio::select! {
            _ = tokio::time::sleep_until(at.into()) => {}
            _ = shutdown.wait_for(|stop| *stop) => return,
        }
        if ws.items.receiver_count() > 0 {
            let number = (first + k).saturating_sub(ws.head_lag);
            let produced_at_us = unix_micros();
            let data = match &shared.node {
                Node::Static => return,
                Node::Ethereum(node) => ItemData::Ethereum {
                    head: with_produced_at(node.head_json(number), produced_at_us).to_string(),
                    logs: node
                        .block_logs(number)
                        .into_iter()
                        .map(|log| with_produced_at(log, produced_at_us))
                        .collect(),
                    pending: node.block_tx_hashes(number),
                },
                Node::Solana(node) => {
                    let (parent, root) = node.slot_parent_root(number);
                    ItemData::Solana {
                        slot: json!({"parent": parent, "root": root, "slot": number, "rpcbenchProducedAt": produced_at_us})
                            .to_string(),
                        logs: node.logs_notification_value(number),
                    }
                }
            };
            let _ = ws.items.send(Arc::new(Item { number, produced_at_us, data }));
        }
        k += 1;
        // Far behind (a suspended process): catch up without a burst of stale items.
        let due = (ws.started.elapsed().as_nanos() / slot_nanos) as u64;
        if due > k + 1000 {
            k = due;
        }
    }
}

/// What one subscription listens to.
#[derive(Debug)]
enum Kind {
    NewHeads,
    Logs(LogFilter),
    PendingTransactions,
    Slot,
    /// The account's serialized value.
    Account(String),
    SolanaLogs,
    /// A transaction's landing at a commitment (slots after its landing slot); one
    /// notification, then the subscription ends.
    Signature([u8; 64], u64),
    /// Every block at a commitment (slots after the block), its signatures listed
    /// (`solana_blocks.rs`).
    Block(u64),
}

#[derive(Debug)]
struct Subscription {
    /// The id as JSON: a quoted hex string (Ethereum) or an integer (Solana).
    id: String,
    /// The number the generator draws for it.
    key: u64,
    kind: Kind,
    /// Whether a notification was sent to it yet.
    sent_any: bool,
    /// Its notifications dropped since the last one sent (counted between sent ones when the
    /// next is sent).
    dropped_since_sent: u64,
    /// It ended on its own (a signature's one notification).
    finished: bool,
}

/// An `eth_subscribe("logs")` filter: addresses (any of) and topics by position.
#[derive(Debug, Default)]
struct LogFilter {
    addresses: Vec<String>,
    topics: Vec<Vec<String>>,
}

impl LogFilter {
    fn parse(value: Option<&Value>) -> Result<LogFilter, RpcError> {
        let Some(value) = value else { return Ok(LogFilter::default()) };
        let Some(fields) = value.as_object() else {
            return Err(RpcError::invalid_params("invalid logs filter: expected an object"));
        };
        let strings = |value: &Value| -> Result<Vec<String>, RpcError> {
            match value {
                Value::Null => Ok(Vec::new()),
                Value::String(text) => Ok(vec![text.to_ascii_lowercase()]),
                Value::Array(items) => items
                    .iter()
                    .map(|item| {
                        item.as_str().map(str::to_ascii_lowercase).ok_or_else(|| {
                            RpcError::invalid_params("invalid logs filter: expected hex strings")
                        })
                    })
                    .collect(),
                _ => Err(RpcError::invalid_params("invalid logs filter: expected a string or an array")),
            }
        };
        let addresses = fields.get("address").map(strings).transpose()?.unwrap_or_default();
        let topics = match fields.get("topics") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(positions)) => positions.iter().map(strings).collect::<Result<_, _>>()?,
            Some(_) => return Err(RpcError::invalid_params("invalid logs filter: topics must be an array")),
        };
        Ok(LogFilter { addresses, topics })
    }

    fn matches(&self, log: &Value) -> bool {
        let field = |name: &str| log.get(name).and_then(Value::as_str).unwrap_or("");
        if !self.addresses.is_empty() && !self.addresses.iter().any(|a| a == field("address")) {
            return false;
        }
        let topics = log.get("topics").and_then(Value::as_array);
        self.topics.iter().enumerate().all(|(i, wanted)| {
            wanted.is_empty()
                || topics
                    .and_then(|t| t.get(i))
                    .and_then(Value::as_str)
                    .is_some_and(|t| wanted.iter().any(|w| w == t))
        })
    }
}

/// A connection's subscriptions; answers the subscribe and unsubscribe methods.
#[derive(Debug)]
struct Subscriptions<'a> {
    shared: &'a Shared,
    list: Vec<Subscription>,
}

impl Subscriptions<'_> {
    fn add(&mut self, kind: Kind, ethereum: bool) -> Value {
        let ws = &self.shared.ws;
        let key = ws.next_subscription.fetch_add(1, Ordering::Relaxed);
        let (id, result) = if ethereum {
            let text = prng::hex_data(&prng::bytes::<16>(ws.seed, S_SUBSCRIPTION_ID, key, 0));
            (format!("\"{text}\""), json!(text))
        } else {
            (key.to_string(), json!(key))
        };
        self.list.push(Subscription {
            id,
            key,
            kind,
            sent_any: false,
            dropped_since_sent: 0,
            finished: false,
        });
        ws.opened.fetch_add(1, Ordering::Relaxed);
        result
    }

    fn remove(&mut self, id: &Value) -> bool {
        let Ok(id) = serde_json::to_string(id) else { return false };
        let before = self.list.len();
        self.list.retain(|subscription| subscription.id != id);
        self.list.len() != before
    }

    fn eth_subscribe(&mut self, params: &[Value]) -> Result<Value, RpcError> {
        let kind = match params.first().and_then(Value::as_str) {
            Some("newHeads") => Kind::NewHeads,
            Some("logs") => Kind::Logs(LogFilter::parse(params.get(1))?),
            Some("newPendingTransactions") => Kind::PendingTransactions,
            Some(other) => {
                return Err(RpcError::invalid_params(format!("no {other:?} subscription in eth namespace")))
            }
            None => return Err(RpcError::invalid_params("expected a subscription name as the first param")),
        };
        Ok(self.add(kind, true))
    }

    fn solana_subscribe(
        &mut self,
        node: &solana::SolanaNode,
        method: &str,
        params: &[Value],
    ) -> Result<Value, RpcError> {
        let kind = match method {
            "slotSubscribe" => Kind::Slot,
            "logsSubscribe" => Kind::SolanaLogs,
            "signatureSubscribe" if node.tx_pool().is_some() => signature_kind(params)?,
            "signatureSubscribe" => return Err(super::rpc::method_not_found(method)),
            "blockSubscribe" if node.tx_pool().is_some() => {
                Kind::Block(super::solana_blocks::block_depth(params)?)
            }
            "blockSubscribe" => return Err(super::rpc::method_not_found(method)),
            _ => {
                let key = params.first().ok_or_else(|| RpcError::invalid_params("missing pubkey"))?;
                Kind::Account(node.account_notification_value(key)?.to_string())
            }
        };
        Ok(self.add(kind, false))
    }
}

impl Extension for Subscriptions<'_> {
    fn call(&mut self, method: &str, params: Option<&RawValue>) -> Option<Result<Value, RpcError>> {
        let shared = self.shared;
        let (ethereum, solana) = match (&shared.node, method) {
            (Node::Ethereum(_), "eth_subscribe" | "eth_unsubscribe") => (true, None),
            (
                Node::Solana(node),
                "slotSubscribe"
                | "accountSubscribe"
                | "logsSubscribe"
                | "slotUnsubscribe"
                | "accountUnsubscribe"
                | "logsUnsubscribe"
                | "signatureSubscribe"
                | "signatureUnsubscribe"
                | "blockSubscribe"
                | "blockUnsubscribe",
            ) => (false, Some(&**node)),
            _ => return None,
        };
        let params = match positional_params(params) {
            Ok(params) => params,
            Err(error) => return Some(Err(error)),
        };
        let unsubscribe = method.ends_with("nsubscribe");
        if let Some(max) = shared.ws.max_subscriptions.filter(|max| !unsubscribe && self.list.len() >= *max) {
            let message = format!("too many subscriptions on this connection (limit {max})");
            return Some(Err(RpcError::new(SERVER_ERROR, message)));
        }
        Some(if unsubscribe {
            let removed = params.first().is_some_and(|id| self.remove(id));
            if removed || ethereum {
                Ok(json!(removed))
            } else {
                Err(RpcError::invalid_params("Invalid subscription id."))
            }
        } else if let Some(node) = solana {
            self.solana_subscribe(node, method, &params)
        } else {
            self.eth_subscribe(&params)
        })
    }
}

/// A `signatureSubscribe`'s signature and how many slots after its landing its commitment is.
fn signature_kind(params: &[Value]) -> Result<Kind, RpcError> {
    let signature = params
        .first()
        .and_then(Value::as_str)
        .and_then(crate::tx::solana::base58::signature_from_text)
        .ok_or_else(|| RpcError::invalid_params("Invalid Request: Invalid signature"))?;
    let commitment = params.get(1).and_then(|config| config.get("commitment")).and_then(Value::as_str);
    let depth = match commitment {
        Some("processed") => 0,
        Some("confirmed") => 1,
        None | Some("finalized") => super::solana_tx::FINALIZED_DEPTH,
        Some(other) => return Err(RpcError::invalid_params(format!("unknown commitment `{other}`"))),
    };
    Ok(Kind::Signature(signature, depth))
}

/// One message for the writer.
#[derive(Debug)]
struct Out {
    message: Message,
    kind: OutKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutKind {
    /// Counted in the connection's queued notifications.
    Notification,
    /// Counted in its pending answers.
    Answer,
    /// The close frame.
    Close,
}

/// A connection's counts shared by its task and its writer.
#[derive(Debug, Default)]
struct Queues {
    /// Notifications queued unsent (`ws_max_queue`).
    notifications: AtomicUsize,
    /// Requests received and not answered on the wire yet ([`MAX_PENDING_ANSWERS`]).
    answers: AtomicUsize,
    /// Woken when an answer is written, for a task that stopped reading.
    answer_written: Notify,
}

/// Writes what the connection's task queues, flushing when the queue is empty; ends (closing
/// the sink) when the task drops its sender or the connection breaks.
async fn write_loop<S: AsyncRead + AsyncWrite + Unpin>(
    mut sink: SplitSink<WebSocketStream<S>, Message>,
    mut queue: mpsc::UnboundedReceiver<Out>,
    counts: &Queues,
) {
    while let Some(out) = queue.recv().await {
        match out.kind {
            OutKind::Notification => {
                counts.notifications.fetch_sub(1, Ordering::Relaxed);
            }
            OutKind::Answer => {
                counts.answers.fetch_sub(1, Ordering::Relaxed);
                counts.answer_written.notify_one();
            }
            OutKind::Close => {}
        }
        if sink.feed(out.message).await.is_err() {
            return;
        }
        if queue.is_empty() && sink.flush().await.is_err() {
            return;
        }
    }
    let _ = sink.close().await;
}

fn text(bytes: Vec<u8>) -> Message {
    match String::from_utf8(bytes) {
        Ok(text) => Message::text(text),
        Err(err) => Message::binary(err.into_bytes()),
    }
}

/// Serves one upgraded connection until either side closes it, it breaks, or shutdown.
/// `_live` and `_slot` are held for as long as it is served.
pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    leftover: Vec<u8>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    _live: Arc<()>,
    _slot: ConnectionSlot,
) {
    let config = WebSocketConfig::default()
        .read_buffer_size(crate::transport::WEBSOCKET_READ_BUFFER)
        .max_message_size(Some(shared.max_body_bytes))
        .max_frame_size(Some(shared.max_body_bytes))
        // The writer feeds what is queued and flushes when the queue is empty, so the answers
        // to the frames of one read leave in one write; past ANSWER_BATCH_BYTES a message goes
        // to the socket at once, so unsent notifications stay in our queue (the slow-consumer
        // limit counts them there).
        .write_buffer_size(ANSWER_BATCH_BYTES);
    let socket = WebSocketStream::from_partially_read(stream, leftover, Role::Server, Some(config)).await;
    let (sink, mut incoming) = socket.split();
    let counts = Queues::default();
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Out>();
    let mut writer = pin!(write_loop(sink, out_rx, &counts));
    let mut writer_done = false;
    let (delayed_tx, mut delayed_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let ws = &shared.ws;
    let mut subscriptions = Subscriptions { shared: &shared, list: Vec::new() };
    let mut items: Option<broadcast::Receiver<Arc<Item>>> = None;
    let mut answer = Vec::new();
    let mut close: Option<CloseFrame> = None;
    let mut answered_unwritten = 0usize;
    // `ws_close_after`: the connection's end, on schedule.
    let closes_at = ws.close_after.map(|after| tokio::time::Instant::now() + after);
    let mut on_schedule = pin!(async move {
        match closes_at {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    });
    loop {
        // The reader goes before the writer (below), so that a flood of frames does not keep
        // the writer, and the notifications it owes, waiting: after WRITE_AT_LEAST_EVERY frames
        // it writes what is queued.
        if answered_unwritten >= WRITE_AT_LEAST_EVERY {
            answered_unwritten = 0;
            if std::future::poll_fn(|cx| {
                std::task::Poll::Ready(std::future::Future::poll(writer.as_mut(), cx))
            })
            .await
            .is_ready()
            {
                writer_done = true;
                break;
            }
        }
        let body = tokio::select! {
            biased;
            _ = shutdown.wait_for(|stop| *stop) => {
                close = Some(CloseFrame { code: CloseCode::Away, reason: "server shutting down".into() });
                break;
            }
            () = &mut on_schedule => {
                ws.closed_on_schedule.fetch_add(1, Ordering::Relaxed);
                close = Some(CloseFrame { code: CloseCode::Away, reason: "going away".into() });
                break;
            }
            _ = counts.answer_written.notified(), if counts.answers.load(Ordering::Relaxed) >= MAX_PENDING_ANSWERS => {
                continue;
            }
            // Before the writer: the frames already read are answered first, and the writer
            // then sends all their answers in one write.
            message = incoming.next(), if counts.answers.load(Ordering::Relaxed) < MAX_PENDING_ANSWERS => match message {
                Some(Ok(Message::Text(text))) => Body::Now(text.as_bytes().to_vec()),
                Some(Ok(Message::Binary(bytes))) => Body::Now(bytes.to_vec()),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                Some(Ok(_)) => continue,
            },
            _ = &mut writer => {
                writer_done = true;
                break;
            }
            Some(body) = delayed_rx.recv() => Body::Delayed(body),
            item = next_item(&mut items) => {
                match item {
                    Ok(item) => {
                        // Slow is a backlog of earlier items' notifications still unsent when
                        // the next item comes, not one item's own notifications: a slot that
                        // lands thousands of a client's signatures at once (two slots' worth
                        // after a skipped one) is one burst, written as the client reads.
                        if counts.notifications.load(Ordering::Relaxed) > ws.max_queue {
                            ws.closed_slow.fetch_add(1, Ordering::Relaxed);
                            close = Some(CloseFrame { code: CloseCode::Policy, reason: QUEUE_OVERFLOW.into() });
                            break;
                        }
                        fan_out(&shared, &mut subscriptions.list, &item, &out_tx, &counts.notifications);
                        subscriptions.list.retain(|subscription| !subscription.finished);
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        ws.closed_slow.fetch_add(1, Ordering::Relaxed);
                        close = Some(CloseFrame { code: CloseCode::Policy, reason: QUEUE_OVERFLOW.into() });
                        break;
                    }
                    Err(broadcast::error::RecvError::Closed) => items = None,
                }
                continue;
            }
        };
        let body = match body {
            Body::Delayed(body) => body,
            Body::Now(body) => {
                answered_unwritten += 1;
                counts.answers.fetch_add(1, Ordering::Relaxed);
                match gate(&shared, &body, &mut answer) {
                    Gate::Limited { .. } => {
                        let _ = out_tx.send(Out { message: text(answer.clone()), kind: OutKind::Answer });
                        continue;
                    }
                    Gate::Pass(delays) if !delays.is_none() => {
                        let delayed_tx = delayed_tx.clone();
                        let shared = Arc::clone(&shared);
                        tokio::spawn(async move {
                            delays.wait(&shared.faults).await;
                            let _ = delayed_tx.send(body);
                        });
                        continue;
                    }
                    Gate::Pass(_) => body,
                }
            }
        };
        answer.clear();
        respond_with(&shared, &body, &mut answer, &mut subscriptions);
        if answer.is_empty() {
            counts.answers.fetch_sub(1, Ordering::Relaxed);
        } else {
            let _ = out_tx.send(Out { message: text(std::mem::take(&mut answer)), kind: OutKind::Answer });
        }
        if subscriptions.list.is_empty() {
            items = None;
        } else if items.is_none() {
            items = Some(ws.items.subscribe());
        }
    }
    drop(items);
    if let Some(frame) = close {
        let _ = out_tx.send(Out { message: Message::Close(Some(frame)), kind: OutKind::Close });
    }
    drop(out_tx);
    // Let the writer finish (the queued notifications, then the close frame) and read until
    // the peer answers the close, for a bounded time.
    let _ = tokio::time::timeout(CLOSE_WAIT, async {
        loop {
            tokio::select! {
                _ = &mut writer, if !writer_done => writer_done = true,
                message = incoming.next() => match message {
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                },
            }
        }
    })
    .await;
}

/// A message to answer: just received (the fault gate still applies) or back from its delay.
enum Body {
    Now(Vec<u8>),
    Delayed(Vec<u8>),
}

async fn next_item(
    items: &mut Option<broadcast::Receiver<Arc<Item>>>,
) -> Result<Arc<Item>, broadcast::error::RecvError> {
    match items {
        Some(items) => items.recv().await,
        None => std::future::pending().await,
    }
}

/// Queues the notifications of one item for a connection's subscriptions, applying the drop,
/// duplicate and delay knobs.
fn fan_out(
    shared: &Shared,
    subscriptions: &mut [Subscription],
    item: &Item,
    out: &mpsc::UnboundedSender<Out>,
    queued: &AtomicUsize,
) {
    let ws = &shared.ws;
    let mut messages = Vec::new();
    let watches_signatures =
        subscriptions.iter().any(|s| matches!(s.kind, Kind::Signature(..) | Kind::Block(..)));
    let (pool, solana) = match &shared.node {
        Node::Solana(node) if watches_signatures => (node.tx_pool_verified(), Some(&**node)),
        _ => (None, None),
    };
    for subscription in subscriptions {
        let numbered = matches!(subscription.kind, Kind::NewHeads | Kind::Slot);
        let mut finished = false;
        let mut emit = |index: u64, method: &str, result: &str| {
            if ws.draw(S_DROP, ws.drop, subscription.key, index) {
                ws.dropped.fetch_add(1, Ordering::Relaxed);
                subscription.dropped_since_sent += u64::from(numbered && subscription.sent_any);
                return;
            }
            ws.dropped_between.fetch_add(subscription.dropped_since_sent, Ordering::Relaxed);
            subscription.dropped_since_sent = 0;
            subscription.sent_any = true;
            let text = match &item.data {
                ItemData::Ethereum { .. } => format!(
                    r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"subscription":{},"result":{result}}}}}"#,
                    subscription.id
                ),
                ItemData::Solana { .. } => format!(
                    r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"result":{result},"subscription":{}}}}}"#,
                    subscription.id
                ),
            };
            ws.sent.fetch_add(1, Ordering::Relaxed);
            if ws.draw(S_DUPLICATE, ws.duplicate, subscription.key, index) {
                ws.duplicates.fetch_add(1, Ordering::Relaxed);
                messages.push(text.clone());
            }
            messages.push(text);
        };
        match (&subscription.kind, &item.data) {
            (Kind::NewHeads, ItemData::Ethereum { head, .. }) => emit(item.number, "eth_subscription", head),
            (Kind::Logs(filter), ItemData::Ethereum { logs, .. }) => {
                for (i, log) in logs.iter().enumerate().filter(|(_, log)| filter.matches(log)) {
                    emit(item.number << 16 | i as u64, "eth_subscription", &log.to_string());
                }
            }
            (Kind::PendingTransactions, ItemData::Ethereum { pending, .. }) => {
                for (i, hash) in pending.iter().enumerate() {
                    emit(item.number << 16 | i as u64, "eth_subscription", &format!("\"{hash}\""));
                }
            }
            (Kind::Slot, ItemData::Solana { slot, .. }) => emit(item.number, "slotNotification", slot),
            (Kind::Account(value), ItemData::Solana { .. }) => {
                let result = format!(
                    r#"{{"context":{{"slot":{}}},"value":{value},"rpcbenchProducedAt":{}}}"#,
                    item.number, item.produced_at_us
                );
                emit(item.number, "accountNotification", &result);
            }
            (Kind::SolanaLogs, ItemData::Solana { logs, .. }) => {
                let result = format!(
                    r#"{{"context":{{"slot":{}}},"value":{logs},"rpcbenchProducedAt":{}}}"#,
                    item.number, item.produced_at_us
                );
                emit(item.number, "logsNotification", &result);
            }
            (Kind::Signature(signature, depth), ItemData::Solana { .. }) => {
                let landed =
                    pool.as_ref().and_then(|pool| pool.landed(signature, item.number.saturating_sub(*depth)));
                if let Some(landed) = landed.filter(|landed| !landed.unnotified) {
                    let err = landed.err.as_ref().map_or("null".to_string(), Value::to_string);
                    let result = format!(
                        r#"{{"context":{{"slot":{}}},"value":{{"err":{err}}},"rpcbenchProducedAt":{}}}"#,
                        landed.slot, item.produced_at_us
                    );
                    emit(item.number, "signatureNotification", &result);
                    finished = true;
                }
            }
            (Kind::Block(depth), ItemData::Solana { .. }) => {
                let block = item.number.checked_sub(*depth).and_then(|slot| {
                    super::solana_blocks::block_notification_result(
                        solana?,
                        pool.as_deref()?,
                        slot,
                        item.produced_at_us,
                    )
                });
                if let Some(result) = block {
                    emit(item.number, "blockNotification", &result);
                }
            }
            _ => {}
        }
        subscription.finished |= finished;
    }
    if messages.is_empty() {
        return;
    }
    queued.fetch_add(messages.len(), Ordering::Relaxed);
    let send = |out: &mpsc::UnboundedSender<Out>, messages: Vec<String>| {
        for message in messages {
            let _ = out.send(Out { message: Message::text(message), kind: OutKind::Notification });
        }
    };
    match ws.delay {
        None => send(out, messages),
        Some(delay) => {
            let out = out.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                send(&out, messages);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Instant;

    use tokio::io::{DuplexStream, ReadBuf};

    use super::*;
    use crate::mock::{Chain, MockOptions};

    /// The server's end of an in-memory pipe, counting the writes that reach it.
    struct CountedWrites {
        pipe: DuplexStream,
        writes: Arc<AtomicUsize>,
    }

    impl AsyncRead for CountedWrites {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.pipe).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for CountedWrites {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let written = Pin::new(&mut self.pipe).poll_write(cx, buf);
            if matches!(written, Poll::Ready(Ok(_))) {
                self.writes.fetch_add(1, Ordering::Relaxed);
            }
            written
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.pipe).poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.pipe).poll_shutdown(cx)
        }
    }

    /// A client of `serve` over an in-memory pipe, and the count of the server's writes.
    struct PipedClient {
        client: WebSocketStream<DuplexStream>,
        writes: Arc<AtomicUsize>,
        served: tokio::task::JoinHandle<()>,
        /// The server's shutdown signal, held while the test runs.
        _stop: watch::Sender<bool>,
    }

    /// Serves a static mock over a pipe of `capacity` bytes once the client has written
    /// `requests` getSlot calls (ids 0 to `requests - 1`): all in the pipe before the server
    /// reads one.
    async fn served_after_requests(capacity: usize, requests: usize) -> PipedClient {
        let shared = Arc::new(Shared::new(&MockOptions::new(Chain::Static), Instant::now()));
        let slot = open_connection(&shared).expect("a connection slot");
        let (client_end, server_end) = tokio::io::duplex(capacity);
        let writes = Arc::new(AtomicUsize::new(0));
        let (stop, shutdown) = watch::channel(false);
        let mut client = WebSocketStream::from_raw_socket(client_end, Role::Client, None).await;
        for id in 0..requests {
            let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot","params":[]}}"#);
            client.feed(Message::text(request)).await.unwrap();
        }
        client.flush().await.unwrap();
        let server = CountedWrites { pipe: server_end, writes: writes.clone() };
        let served = tokio::spawn(serve(server, Vec::new(), shared, shutdown, Arc::new(()), slot));
        PipedClient { client, writes, served, _stop: stop }
    }

    #[test]
    fn the_answers_to_frames_read_together_leave_in_one_write() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            // Eight requests in one write, all in the pipe before the server reads.
            let PipedClient { mut client, writes, served, _stop } = served_after_requests(1 << 16, 8).await;
            let mut ids = Vec::new();
            for _ in 0..8 {
                let answer = client.next().await.expect("an answer").expect("a frame");
                let answer: Value = serde_json::from_str(answer.to_text().unwrap()).unwrap();
                ids.push(answer["id"].as_u64().expect("an id"));
            }
            ids.sort_unstable();
            assert_eq!(ids, (0..8).collect::<Vec<u64>>(), "every request answered once");
            assert_eq!(writes.load(Ordering::Relaxed), 1, "eight answers, one write");
            served.abort();
        });
    }

    #[test]
    fn a_flood_of_frames_is_answered_in_writes_as_it_goes_not_after_the_last() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let frames = 4 * WRITE_AT_LEAST_EVERY;
            let PipedClient { mut client, writes, served, _stop } =
                served_after_requests(1 << 20, frames).await;
            for _ in 0..frames {
                client.next().await.expect("an answer").expect("a frame");
            }
            // Every frame was in the pipe before the server read one: the writer still ran
            // while they were being answered (one write after the last, were it not so).
            assert!(writes.load(Ordering::Relaxed) >= 3, "{} writes", writes.load(Ordering::Relaxed));
            served.abort();
        });
    }

    #[test]
    fn a_signature_subscription_takes_exactly_64_bytes_of_base58_and_refuses_anything_else() {
        let signature = [0x5au8; 64];
        let text = bs58::encode(signature).into_string();
        match signature_kind(&[json!(text), json!({"commitment": "confirmed"})]) {
            Ok(Kind::Signature(read, depth)) => assert_eq!((read, depth), (signature, 1)),
            other => panic!("expected a signature subscription, got {other:?}"),
        }
        let mut leading_zeros = [9u8; 64];
        leading_zeros[..3].fill(0);
        let text = bs58::encode(leading_zeros).into_string();
        assert!(
            matches!(signature_kind(&[json!(text)]), Ok(Kind::Signature(read, _)) if read == leading_zeros)
        );
        let mut bad = bs58::encode([9u8; 64]).into_string();
        bad.replace_range(5..6, "l");
        for refused in
            [bs58::encode([9u8; 63]).into_string(), bs58::encode([9u8; 65]).into_string(), bad, String::new()]
        {
            let error = signature_kind(&[json!(refused)]).expect_err("not a signature");
            assert_eq!(error.message, "Invalid Request: Invalid signature", "{refused}");
        }
        assert!(signature_kind(&[json!(7)]).is_err(), "a number is not a signature");
    }
}
