//! Hostile gRPC feeds, each an HTTP/2 server of our own on 127.0.0.1:0: one that accepts and
//! never sends (a stall after `--idle-timeout`, bounded), one that sends a GOAWAY mid-stream,
//! one that sends garbage, one whose message claims a gigabyte. Each is counted by its cause
//! in the subscription report, and none can make rpcbench buffer what it did not receive.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use prost::Message as _;
use rpcbench::engine::config::Target;
use rpcbench::engine::StopHandle;
use rpcbench::report::subscribe::SubscribeReport;
use rpcbench::subscribe::{run, SubscribeConfig, SubscriptionKind};
use yellowstone_grpc_proto::geyser::{subscribe_update::UpdateOneof, SubscribeUpdate, SubscribeUpdateSlot};

/// What the hostile feed does once a subscribe call arrives.
#[derive(Debug, Clone, Copy)]
enum Hostility {
    /// Accepts the TCP connection and never sends a byte.
    Silent,
    /// Answers, sends three slots, then a GOAWAY (ENHANCE_YOUR_CALM, as a server shedding load).
    GoAway,
    /// Answers, then a gRPC frame whose payload is not protobuf.
    NotProtobuf,
    /// Answers, then bytes that are not gRPC framing (a compression flag of 0xff).
    BadFraming,
    /// Answers, then a frame header claiming a 1 GiB message, and only a few bytes of it.
    Huge,
}

struct HostileFeed {
    addr: SocketAddr,
    /// Connections accepted.
    connections: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for HostileFeed {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One gRPC message: flag, length, payload.
fn frame(payload: &[u8]) -> Bytes {
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    framed.extend_from_slice(payload);
    Bytes::from(framed)
}

fn slot_update(slot: u64) -> Vec<u8> {
    SubscribeUpdate {
        filters: vec!["rpcbench".into()],
        update_oneof: Some(UpdateOneof::Slot(SubscribeUpdateSlot { slot, status: 0, ..Default::default() })),
        created_at: None,
    }
    .encode_to_vec()
}

fn hostile_feed(hostility: Hostility) -> HostileFeed {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicU64::new(0));
    let counted = connections.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let accepting = async {
                loop {
                    let Ok((socket, _)) = listener.accept().await else { continue };
                    counted.fetch_add(1, Ordering::Relaxed);
                    tokio::spawn(serve(socket, hostility));
                }
            };
            tokio::select! {
                () = accepting => {}
                _ = stopped => {}
            }
        });
    });
    HostileFeed { addr, connections, stop: Some(stop), thread: Some(thread) }
}

async fn serve(socket: tokio::net::TcpStream, hostility: Hostility) {
    if matches!(hostility, Hostility::Silent) {
        // Hold the connection open, reading nothing and sending nothing (until the client
        // closes it or the feed stops).
        let mut socket = socket;
        let mut byte = [0u8; 1];
        let _ = tokio::io::AsyncReadExt::read_exact(&mut socket, &mut byte).await;
        std::future::pending::<()>().await;
        return;
    }
    let Ok(mut connection) = h2::server::handshake(socket).await else { return };
    let Some(Ok((_request, mut respond))) = connection.accept().await else { return };
    let response =
        http::Response::builder().status(200).header("content-type", "application/grpc").body(()).unwrap();
    let Ok(mut stream) = respond.send_response(response, false) else { return };
    let data = match hostility {
        Hostility::GoAway => (1..=3).map(|slot| frame(&slot_update(slot))).collect(),
        Hostility::NotProtobuf => vec![frame(&[0x0a, 0x7f, 1, 2, 3])],
        Hostility::BadFraming => vec![Bytes::from_static(&[0xff; 64])],
        Hostility::Huge => vec![Bytes::from_static(&[0, 0x40, 0, 0, 0, 1, 2, 3, 4])],
        Hostility::Silent => Vec::new(),
    };
    for bytes in data {
        let _ = stream.send_data(bytes, false);
    }
    if matches!(hostility, Hostility::GoAway) {
        // Let the slots go out first, then go away.
        let _ = tokio::time::timeout(
            Duration::from_millis(20),
            std::future::poll_fn(|cx| connection.poll_closed(cx)),
        )
        .await;
        connection.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
    }
    // Drive the connection until the client leaves.
    let _ = std::future::poll_fn(|cx| connection.poll_closed(cx)).await;
    drop(stream);
}

fn subscribe(
    feed: &HostileFeed,
    millis: u64,
    configure: impl FnOnce(&mut SubscribeConfig),
) -> SubscribeReport {
    let target = Target::parse(&format!("grpc://{}", feed.addr)).unwrap();
    let kinds = vec![SubscriptionKind::parse("geyser-slot").unwrap()];
    let mut config = SubscribeConfig::new(target, kinds, Duration::from_millis(millis));
    config.reconnect = true;
    configure(&mut config);
    run(&config, &StopHandle::new()).expect("the subscriptions run")
}

#[test]
fn a_feed_that_accepts_and_never_sends_is_a_stall_after_the_idle_timeout_and_stalls_are_bounded() {
    let feed = hostile_feed(Hostility::Silent);
    let report = subscribe(&feed, 700, |config| config.idle_timeout = Some(Duration::from_millis(100)));
    let text = report.render_text();
    // Each stall takes at least the idle timeout (and a 50 ms pause before the next attempt).
    assert!(report.stalls >= 1 && report.stalls <= 7, "{text}");
    assert_eq!((report.subscribed, report.notifications), (0, 0), "{text}");
    assert!(feed.connections.load(Ordering::Relaxed) >= report.stalls, "{text}");
    assert!(text.contains("stall(s)"), "{text}");
}

#[test]
fn a_goaway_mid_stream_is_a_disconnect_by_its_cause_and_the_feed_is_reopened() {
    let feed = hostile_feed(Hostility::GoAway);
    // A cycle (connect, three slots, 20 ms, GOAWAY, a 50 ms pause) takes ~100 ms: two of
    // them fit the 1.2 s even with each one 500 ms late on a busy machine.
    let report = subscribe(&feed, 1200, |_| {});
    let text = report.render_text();
    // The GOAWAY names the open stream as processed, then the server closes: HTTP/2's client
    // sees the connection lost under the stream, but the server said GOAWAY, and so does the
    // report.
    let goaways = report.closed_by_server.get("grpc goaway").copied().unwrap_or(0);
    assert!(goaways >= 2, "{:?}\n{text}", report.closed_by_server);
    assert!(!report.closed_by_server.contains_key("grpc connection lost mid-stream"), "{text}");
    assert!(report.reconnects >= 1, "{text}");
    // The slots sent before each GOAWAY were received.
    assert!(report.notifications >= 3 * goaways, "{text}");
}

#[test]
fn garbage_from_a_feed_is_counted_as_malformed_and_ends_only_its_connection() {
    for hostility in [Hostility::NotProtobuf, Hostility::BadFraming] {
        let feed = hostile_feed(hostility);
        let report = subscribe(&feed, 400, |_| {});
        let text = report.render_text();
        let malformed = report.closed_by_server.get("grpc malformed message").copied().unwrap_or(0);
        assert!(malformed >= 1, "{hostility:?}: {:?}\n{text}", report.closed_by_server);
        assert_eq!(report.notifications, 0, "{hostility:?}: {text}");
    }
}

#[test]
fn a_message_claiming_a_gigabyte_is_refused_from_its_length_prefix_not_buffered() {
    let feed = hostile_feed(Hostility::Huge);
    // The feed sends 9 bytes of a "1 GiB" message: waiting to buffer it would never end; it is
    // refused at once from its prefix, over the 1 MiB limit, on every reconnect.
    // Two reconnects (each after a 50 ms pause) fit the 1 s even when each is 400 ms late.
    let report = subscribe(&feed, 1000, |config| config.max_message = 1 << 20);
    let text = report.render_text();
    let too_large = report.closed_by_server.get("grpc message too large").copied().unwrap_or(0);
    assert!(too_large >= 2, "{:?}\n{text}", report.closed_by_server);
    assert_eq!(report.notifications, 0, "{text}");
}

/// One HTTP/2 frame: length, type, flags, stream, payload.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A feed written frame by frame (HTTP/2 preface, SETTINGS, HEADERS, DATA, then GOAWAY: bytes
/// of our own, as a Geyser server going away): it answers the first subscribe call with three
/// slots, then sends GOAWAY (ENHANCE_YOUR_CALM) naming that call's stream as the last it
/// processed, and closes the connection `close_after` later. Returns its address and how many
/// GOAWAYs it sent.
fn hand_written_goaway_feed(close_after: Duration) -> (SocketAddr, Arc<AtomicU64>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let counted = sent.clone();
    std::thread::spawn(move || {
        // Bounded: a few connections (the client reconnects after each GOAWAY), then it stops.
        for _ in 0..8 {
            let Ok((mut socket, _)) = listener.accept() else { return };
            let counted = counted.clone();
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if socket.read_exact(&mut preface).is_err() || &preface[..3] != b"PRI" {
                    return;
                }
                if socket.write_all(&h2_frame(4, 0, 0, &[])).is_err() {
                    return;
                }
                loop {
                    let mut head = [0u8; 9];
                    if socket.read_exact(&mut head).is_err() {
                        return;
                    }
                    let len =
                        (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
                    let (kind, flags) = (head[3], head[4]);
                    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
                    let mut payload = vec![0u8; len];
                    if socket.read_exact(&mut payload).is_err() {
                        return;
                    }
                    let reply = match kind {
                        // SETTINGS (acknowledged) and PING (answered).
                        4 if flags & 0x1 == 0 => h2_frame(4, 0x1, 0, &[]),
                        6 if flags & 0x1 == 0 => h2_frame(6, 0x1, 0, &payload),
                        // The subscribe call's HEADERS: answer it, send three slots, go away.
                        1 => {
                            // `:status 200` (HPACK static index 8) and `content-type:
                            // application/grpc` (literal value, static name index 31).
                            let mut head = vec![0x88, 0x0f, 0x10, 16];
                            head.extend_from_slice(b"application/grpc");
                            let mut out = h2_frame(1, 0x4, stream, &head);
                            for slot in 1..=3 {
                                out.extend(h2_frame(0, 0, stream, &frame(&slot_update(slot))));
                            }
                            let mut goaway = stream.to_be_bytes().to_vec();
                            goaway.extend_from_slice(&11u32.to_be_bytes()); // ENHANCE_YOUR_CALM
                            out.extend(h2_frame(7, 0, 0, &goaway));
                            if socket.write_all(&out).is_err() {
                                return;
                            }
                            counted.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(close_after);
                            return;
                        }
                        _ => continue,
                    };
                    if socket.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, sent)
}

#[test]
fn a_goaway_written_by_hand_mid_stream_is_reported_as_a_goaway_not_as_the_connection_lost() {
    let (addr, sent) = hand_written_goaway_feed(Duration::from_millis(30));
    let target = Target::parse(&format!("grpc://{addr}")).unwrap();
    let kinds = vec![SubscriptionKind::parse("geyser-slot").unwrap()];
    let mut config = SubscribeConfig::new(target, kinds, Duration::from_millis(400));
    config.reconnect = true;
    let report = run(&config, &StopHandle::new()).expect("the subscriptions run");
    let text = report.render_text();
    let goaways = report.closed_by_server.get("grpc goaway").copied().unwrap_or(0);
    assert!(goaways >= 1, "{:?}\n{text}", report.closed_by_server);
    assert!(goaways <= sent.load(Ordering::Relaxed), "no more GOAWAYs than the feed sent: {text}");
    assert!(!report.closed_by_server.contains_key("grpc connection lost mid-stream"), "{text}");
    // The three slots before each GOAWAY were received.
    assert!(report.notifications >= 3 * goaways, "{text}");
    assert!(text.contains("grpc goaway"), "{text}");
}
