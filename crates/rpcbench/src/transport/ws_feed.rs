//! The WebSocket as a [`Feed`] of subscriptions (`rpcbench subscribe` over `ws://`, `wss://`):
//! JSON-RPC subscribe and unsubscribe requests, notifications matched to subscriptions by the
//! server's id, framed by tungstenite, with each message's arrival taken from the kernel's
//! receive stamp where plain TCP gives one. The request/response path is `super::websocket`.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::WebSocketStream;

use super::connect::Stream;
use super::feed::{
    Delivery, Feed, FeedEnd, FeedEvent, FeedOpener, Stray, SubscribeCall, MAX_SUBSCRIPTION_ID,
};
use super::websocket::{OpenError, PongBacklog, Upgrade};

impl Upgrade {
    /// Opens one socket whose plain TCP reads carry the kernel's receive stamps.
    async fn open_stamped(&self) -> Result<(FeedSocket, ReceiveStamp), OpenError> {
        let stream = self.connector.connect().await.map_err(OpenError::Connect)?;
        if let Stream::Plain(tcp, _) = &stream {
            // Without stamps (not Linux), arrivals are when a message was read whole.
            let _ = super::quiet_reads::set_stamped(std::os::fd::AsFd::as_fd(tcp));
        }
        let stamp = ReceiveStamp::default();
        let socket = self.upgrade(StampedStream { inner: stream, last: stamp.clone() }).await?;
        Ok((socket, stamp))
    }
}

/// When the bytes of a feed's socket last read arrived (the kernel's stamp), shared by the
/// stream that reads them and the feed that hands out the messages they complete.
type ReceiveStamp = Arc<Mutex<Option<Instant>>>;

/// A feed's socket.
type FeedSocket = WebSocketStream<StampedStream>;

/// A feed's stream: plain TCP is read with `recvmsg` and the kernel's receive stamp, kept in
/// `last`; TLS is read as it comes (no stamp: a message arrives when it was read whole).
#[derive(Debug)]
pub(crate) struct StampedStream {
    inner: Stream,
    last: ReceiveStamp,
}

impl tokio::io::AsyncRead for StampedStream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        use std::task::Poll;
        let this = self.get_mut();
        let Stream::Plain(tcp, None) = &mut this.inner else {
            return std::pin::Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        loop {
            match tcp.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                Poll::Pending => return Poll::Pending,
            }
            let unfilled = buf.initialize_unfilled();
            let read = tcp.try_io(tokio::io::Interest::READABLE, || {
                super::quiet_reads::recv_stamped(std::os::fd::AsFd::as_fd(&*tcp), unfilled)
            });
            match read {
                Ok((read, stamp)) => {
                    buf.advance(read);
                    let arrived = stamp.unwrap_or_else(Instant::now);
                    *this.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(arrived);
                    return Poll::Ready(Ok(()));
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

impl tokio::io::AsyncWrite for StampedStream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl FeedOpener for Upgrade {
    type Feed = WsFeed;
    type Error = OpenError;

    async fn open(&self) -> Result<WsFeed, OpenError> {
        let (socket, stamp) = self.open_stamped().await?;
        let (writer, reader) = socket.split();
        Ok(WsFeed {
            writer,
            reader,
            stamp,
            positions: HashMap::new(),
            by_id: HashMap::new(),
            pongs: PongBacklog::default(),
            end_detail: None,
        })
    }
}

/// A position's subscription on a [`WsFeed`].
#[derive(Debug, Default)]
struct FeedSlot {
    /// The server's id once confirmed (shared with the feed's table: kept once).
    id: Option<Arc<str>>,
    /// The method that ends it.
    unsubscribe: &'static str,
}

/// Subscriptions on one WebSocket: JSON-RPC subscribe requests (id `2 x position + 1`) and
/// unsubscribe requests (`2 x position + 2`), notifications matched to positions by the
/// server's subscription id. Ids are kept once and only up to [`MAX_SUBSCRIPTION_ID`] bytes.
#[derive(Debug)]
pub(crate) struct WsFeed {
    writer: SplitSink<FeedSocket, Message>,
    reader: SplitStream<FeedSocket>,
    /// When the bytes last read arrived, by the kernel (plain TCP on Linux).
    stamp: ReceiveStamp,
    /// The open subscriptions by position (a map: positions may be sparse and are forgotten
    /// once over).
    positions: HashMap<usize, FeedSlot>,
    by_id: HashMap<Arc<str>, usize>,
    pongs: PongBacklog,
    /// The close frame's reason or the read error that ended the connection (at most
    /// [`MAX_END_DETAIL`] bytes).
    end_detail: Option<String>,
}

/// The longest end detail kept (a close reason is at most 123 bytes by the protocol).
const MAX_END_DETAIL: usize = 200;

/// `text` cut to at most [`MAX_END_DETAIL`] bytes on a character boundary.
fn bounded_detail(text: &str) -> String {
    let mut end = text.len().min(MAX_END_DETAIL);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The envelope of any message on a subscription socket, members borrowed raw.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    params: Option<NotificationParams<'a>>,
}

#[derive(serde::Deserialize)]
struct NotificationParams<'a> {
    #[serde(borrow)]
    subscription: &'a serde_json::value::RawValue,
    #[serde(borrow)]
    result: &'a serde_json::value::RawValue,
}

/// The JSON-RPC error object of a refused request.
#[derive(serde::Deserialize, Default)]
struct ErrorObject {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default)]
    message: Option<String>,
}

/// Why writing to a feed's socket ended it.
fn write_end(error: tungstenite::Error) -> FeedEnd {
    match error {
        tungstenite::Error::WriteBufferFull(_) => FeedEnd::NotReading,
        _ => FeedEnd::Closed(1006),
    }
}

impl WsFeed {
    /// The `*Subscribe` request for `position` (id `2 x position + 1`), noting the method that
    /// ends it; one framing for a single subscription and a batch.
    fn subscribe_request(&mut self, position: usize, call: &SubscribeCall) -> Result<String, FeedEnd> {
        // `SubscribeConfig::validate` pairs Geyser kinds with gRPC URLs only.
        let SubscribeCall::JsonRpc(call) = call else { return Err(FeedEnd::Protocol) };
        self.positions.entry(position).or_default().unsubscribe = call.unsubscribe;
        let mut request = Vec::with_capacity(160);
        request.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        request.extend_from_slice(itoa::Buffer::new().format(2 * position + 1).as_bytes());
        request.extend_from_slice(b",\"method\":");
        // A JSON string whatever the name holds.
        serde_json::to_writer(&mut request, &call.method).map_err(|_| FeedEnd::Protocol)?;
        request.extend_from_slice(b",\"params\":");
        serde_json::to_writer(&mut request, &call.params).map_err(|_| FeedEnd::Protocol)?;
        request.push(b'}');
        String::from_utf8(request).map_err(|_| FeedEnd::Protocol)
    }

    async fn send(&mut self, text: String) -> Result<(), FeedEnd> {
        let sent = self.writer.send(Message::Text(text.into())).await;
        sent.map_err(|error| self.write_failed(error))
    }

    /// Why a write ended the connection, its error kept as the end's detail.
    fn write_failed(&mut self, error: tungstenite::Error) -> FeedEnd {
        self.end_detail = Some(bounded_detail(&error.to_string()));
        write_end(error)
    }

    /// What one message says.
    fn event(&mut self, message: tungstenite::Bytes, arrived: Instant) -> FeedEvent {
        let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(&message) else {
            return FeedEvent::Stray(Stray::NotJson);
        };
        if let Some(params) = envelope.params {
            let Some(&position) = self.by_id.get(params.subscription.get()) else {
                return FeedEvent::Stray(Stray::Unknown);
            };
            let start = params.result.get().as_ptr() as usize - message.as_ptr() as usize;
            let payload = start..start + params.result.get().len();
            return FeedEvent::Item(Delivery {
                position,
                message: message.clone(),
                payload,
                arrived,
                produced: None,
            });
        }
        let Some(id) = envelope.id.and_then(|id| id.get().parse::<usize>().ok()).filter(|&id| id > 0) else {
            return FeedEvent::Stray(Stray::Unknown);
        };
        let position = (id - 1) / 2;
        let Some(slot) = self.positions.get_mut(&position) else { return FeedEvent::Stray(Stray::Unknown) };
        if id % 2 == 0 {
            // An unsubscribe answer: the subscription is over either way.
            let Some(old) = slot.id.take() else { return FeedEvent::Stray(Stray::Unknown) };
            self.by_id.remove(&old);
            let confirmed = envelope.error.is_none() && envelope.result.is_some_and(|r| r.get() == "true");
            return FeedEvent::Unsubscribed { confirmed };
        }
        match (envelope.result, envelope.error) {
            (Some(result), None) if result.get().len() > MAX_SUBSCRIPTION_ID => FeedEvent::Refused {
                position,
                class: "id too long".into(),
                message: format!(
                    "a subscription id of {} bytes (at most {MAX_SUBSCRIPTION_ID} are kept)",
                    result.get().len()
                ),
            },
            (Some(result), None) => {
                let id: Arc<str> = Arc::from(result.get());
                if let Some(old) = slot.id.replace(id.clone()) {
                    self.by_id.remove(&old);
                }
                self.by_id.insert(id, position);
                FeedEvent::Confirmed { position, arrived }
            }
            (_, error) => {
                let error = error.and_then(|error| serde_json::from_str::<ErrorObject>(error.get()).ok());
                let class = error
                    .as_ref()
                    .and_then(|error| error.code)
                    .map_or("invalid answer".to_string(), |code| code.to_string());
                let message = match error {
                    Some(ErrorObject { code, message }) => {
                        let code = code.map_or(String::new(), |code| format!("{code} "));
                        format!("{code}{}", message.unwrap_or_default())
                    }
                    None => "an answer that is neither a subscription id nor an error".into(),
                };
                let message = message.chars().take(200).collect();
                FeedEvent::Refused { position, class, message }
            }
        }
    }
}

impl Feed for WsFeed {
    fn end_detail(&self) -> Option<&str> {
        self.end_detail.as_deref()
    }

    fn forget(&mut self, position: usize) {
        if let Some(FeedSlot { id: Some(id), .. }) = self.positions.remove(&position) {
            self.by_id.remove(&id);
        }
    }

    async fn subscribe(&mut self, position: usize, call: &SubscribeCall) -> Result<(), FeedEnd> {
        let request = self.subscribe_request(position, call)?;
        self.send(request).await
    }

    async fn subscribe_all(&mut self, calls: &[(usize, SubscribeCall)]) -> Result<(), FeedEnd> {
        // Each request framed into the writer's buffer, then one flush (one write) for all.
        for (position, call) in calls {
            let request = self.subscribe_request(*position, call)?;
            let fed = self.writer.feed(Message::Text(request.into())).await;
            fed.map_err(|error| self.write_failed(error))?;
        }
        let flushed = self.writer.flush().await;
        flushed.map_err(|error| self.write_failed(error))
    }

    async fn unsubscribe(&mut self, position: usize) -> Result<bool, FeedEnd> {
        let Some(slot) = self.positions.get(&position) else { return Ok(false) };
        let Some(id) = &slot.id else { return Ok(false) };
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"{}","params":[{id}]}}"#,
            2 * position + 2,
            slot.unsubscribe
        );
        self.send(request).await.map(|()| true)
    }

    async fn next(&mut self) -> FeedEvent {
        loop {
            let message = self.reader.next().await;
            // A message arrived when the last bytes read for it did (the kernel's stamp, never
            // later than now), else now.
            let now = Instant::now();
            let stamped = *self.stamp.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let arrived = stamped.map_or(now, |stamp| stamp.min(now));
            let bytes = match message {
                None => return FeedEvent::Ended(FeedEnd::Closed(1006)),
                Some(Ok(Message::Text(text))) => tungstenite::Bytes::from(text),
                Some(Ok(Message::Binary(bytes))) => bytes,
                Some(Ok(Message::Close(frame))) => {
                    let code = frame.as_ref().map_or(1005, |frame| u16::from(frame.code));
                    self.end_detail = frame
                        .filter(|frame| !frame.reason.is_empty())
                        .map(|frame| bounded_detail(&frame.reason));
                    return FeedEvent::Ended(FeedEnd::Closed(code));
                }
                Some(Ok(Message::Ping(payload))) => {
                    let flushed = self.writer.flush().now_or_never().map(|flushed| flushed.is_ok());
                    if self.pongs.ping(payload.len(), flushed) {
                        continue;
                    }
                    return FeedEvent::Ended(FeedEnd::NotReading);
                }
                Some(Ok(_)) => continue,
                Some(Err(tungstenite::Error::Capacity(_))) => return FeedEvent::Ended(FeedEnd::TooLarge),
                Some(Err(error @ (tungstenite::Error::Protocol(_) | tungstenite::Error::Utf8(_)))) => {
                    self.end_detail = Some(bounded_detail(&error.to_string()));
                    return FeedEvent::Ended(FeedEnd::Protocol);
                }
                Some(Err(error)) => {
                    self.end_detail = Some(bounded_detail(&error.to_string()));
                    return FeedEvent::Ended(FeedEnd::Closed(1006));
                }
            };
            return self.event(bytes, arrived);
        }
    }

    async fn close(&mut self) {
        // A server that does not read cannot hold the close up.
        let _ =
            tokio::time::timeout(Duration::from_millis(100), self.writer.send(Message::Close(None))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Target;
    use crate::transport::connect::Connector;

    /// A server that upgrades one connection, reads one frame, answers it with a subscription
    /// id and one notification, says so on `written`, and keeps the socket open a while.
    fn one_notification_server(written: std::sync::mpsc::Sender<()>) -> String {
        answering_server(
            &[
                r#"{"jsonrpc":"2.0","id":1,"result":7}"#,
                r#"{"jsonrpc":"2.0","method":"slotNotification","params":{"subscription":7,"result":{"slot":5}}}"#,
            ],
            written,
        )
    }

    /// A server that upgrades one connection, reads one frame, answers it with `texts` (each
    /// under 126 bytes), says so on `written`, and keeps the socket open a while.
    fn answering_server(texts: &'static [&'static str], written: std::sync::mpsc::Sender<()>) -> String {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let Ok((mut stream, _)) = listener.accept() else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if stream.read_exact(&mut byte).is_err() {
                    return;
                }
                head.push(byte[0]);
            }
            let text = String::from_utf8_lossy(&head).to_string();
            let key = text
                .lines()
                .find(|line| line.to_ascii_lowercase().starts_with("sec-websocket-key:"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, key)| key.trim().to_string())
                .unwrap_or_default();
            let accept = tungstenite::handshake::derive_accept_key(key.trim().as_bytes());
            let reply = format!(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
            );
            let _ = stream.write_all(reply.as_bytes());
            // The subscribe request: a masked frame under 126 bytes.
            let mut frame = [0u8; 2];
            let _ = stream.read_exact(&mut frame);
            let mut rest = vec![0u8; 4 + usize::from(frame[1] & 0x7f)];
            let _ = stream.read_exact(&mut rest);
            let mut out = Vec::new();
            for text in texts {
                out.push(0x81);
                out.push(text.len() as u8);
                out.extend_from_slice(text.as_bytes());
            }
            let _ = stream.write_all(&out);
            let _ = written.send(());
            std::thread::sleep(Duration::from_secs(2));
        });
        format!("ws://{addr}/")
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_feed_item_arrives_when_the_kernel_got_it_not_when_it_was_read() {
        crate::transport::quiet_reads::wait_for_kernel_stamps();
        let (written, was_written) = std::sync::mpsc::channel();
        let target = Target::parse(&one_notification_server(written)).unwrap();
        let connector =
            Connector::new(&target, &crate::settings::TlsOptions::default(), Duration::from_secs(5)).unwrap();
        let upgrade = Upgrade::new(connector, &target, &[], 1 << 20);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let mut feed = FeedOpener::open(&upgrade).await.unwrap();
            let call = SubscribeCall::JsonRpc(crate::transport::feed::JsonRpcSubscribe {
                method: "slotSubscribe",
                params: serde_json::json!([]),
                unsubscribe: "slotUnsubscribe",
            });
            feed.subscribe(0, &call).await.unwrap();
            was_written.recv_timeout(Duration::from_secs(30)).unwrap();
            // The answers wait in the kernel while this thread is busy.
            std::thread::sleep(Duration::from_millis(80));
            let FeedEvent::Confirmed { position: 0, .. } = feed.next().await else { panic!("not confirmed") };
            let FeedEvent::Item(item) = feed.next().await else { panic!("no item") };
            assert_eq!(item.payload(), br#"{"slot":5}"#);
            let waited = Instant::now().duration_since(item.arrived);
            assert!(waited >= Duration::from_millis(50), "stamped when read: {waited:?} after arrival");
        });
    }

    #[test]
    fn a_forgotten_subscription_frees_its_entries_and_a_later_notification_for_it_is_a_stray() {
        let (written, was_written) = std::sync::mpsc::channel();
        // Confirmed as subscription 7, then two notifications for it.
        const TEXTS: &[&str] = &[
            r#"{"jsonrpc":"2.0","id":5,"result":7}"#,
            r#"{"jsonrpc":"2.0","method":"signatureNotification","params":{"subscription":7,"result":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"signatureNotification","params":{"subscription":7,"result":{}}}"#,
        ];
        let target = Target::parse(&answering_server(TEXTS, written)).unwrap();
        let connector =
            Connector::new(&target, &crate::settings::TlsOptions::default(), Duration::from_secs(5)).unwrap();
        let upgrade = Upgrade::new(connector, &target, &[], 1 << 20);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let mut feed = FeedOpener::open(&upgrade).await.unwrap();
            let call = SubscribeCall::JsonRpc(crate::transport::feed::JsonRpcSubscribe {
                method: "signatureSubscribe",
                params: serde_json::json!([]),
                unsubscribe: "signatureUnsubscribe",
            });
            feed.subscribe(2, &call).await.unwrap();
            was_written.recv_timeout(Duration::from_secs(30)).unwrap();
            let FeedEvent::Confirmed { position: 2, .. } = feed.next().await else { panic!("not confirmed") };
            let FeedEvent::Item(item) = feed.next().await else { panic!("no item") };
            assert_eq!((item.position, feed.positions.len(), feed.by_id.len()), (2, 1, 1));
            feed.forget(2);
            assert_eq!((feed.positions.len(), feed.by_id.len()), (0, 0));
            assert!(matches!(feed.next().await, FeedEvent::Stray(Stray::Unknown)));
        });
    }
}
