//! Integration tests of the mock nodes' WebSocket JSON-RPC: servers on 127.0.0.1:0, driven by
//! tokio-tungstenite's client over a plain `TcpStream`: request/response like HTTP,
//! subscriptions and their fault knobs, limits, and hostile input.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use rpcbench::mock::{Chain, Latency, MockOptions, MockServer};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{client_async, WebSocketStream};

type Ws = WebSocketStream<TcpStream>;

const WAIT: Duration = Duration::from_secs(10);

fn start(options: MockOptions) -> MockServer {
    MockServer::start(options).expect("the mock node starts")
}

fn options(chain: Chain, slot_time_ms: u64) -> MockOptions {
    let mut options = MockOptions::new(chain);
    options.slot_time = Duration::from_millis(slot_time_ms);
    options
}

async fn connect(server: &MockServer) -> Ws {
    let tcp = TcpStream::connect(server.local_addr()).await.expect("connect");
    let (ws, response) = client_async(server.ws_url(), tcp).await.expect("the upgrade succeeds");
    assert_eq!(response.status(), 101);
    ws
}

async fn send(ws: &mut Ws, text: &str) {
    ws.send(Message::text(text)).await.expect("send");
}

/// The next text message, parsed; pings and pongs are skipped.
async fn recv(ws: &mut Ws) -> Value {
    loop {
        let message = tokio::time::timeout(WAIT, ws.next()).await.expect("a message in time");
        match message.expect("the connection is open").expect("a message") {
            Message::Text(text) => {
                return serde_json::from_str(text.as_str()).unwrap_or_else(|err| panic!("{err}: {text}"))
            }
            Message::Binary(bytes) => return serde_json::from_slice(&bytes).expect("JSON"),
            Message::Close(frame) => panic!("closed: {frame:?}"),
            _ => {}
        }
    }
}

/// Whether any text message arrives within `wait`.
async fn silent_for(ws: &mut Ws, wait: Duration) -> bool {
    match tokio::time::timeout(wait, ws.next()).await {
        Err(_) => true,
        Ok(message) => panic!("unexpected message: {message:?}"),
    }
}

/// Whether `message` is a subscription's notification (a method with a subscription, no id).
fn is_notification(message: &Value) -> bool {
    message.get("id").is_none()
        && message["method"].is_string()
        && !message["params"]["subscription"].is_null()
}

/// Sends `body` and returns its answer: the first message that is not a notification. With a
/// subscription open, an item produced while the request is in flight (or a backlog the test
/// has not read yet, on a busy machine) is on the wire before the answer; those are skipped.
async fn call(ws: &mut Ws, body: &str) -> Value {
    send(ws, body).await;
    tokio::time::timeout(WAIT, async {
        loop {
            let message = recv(ws).await;
            if !is_notification(&message) {
                return message;
            }
        }
    })
    .await
    .expect("an answer in time, not only notifications")
}

/// Sends `body`, collecting notifications until the answer with `id` arrives.
async fn call_collecting(ws: &mut Ws, body: &str, id: u64) -> (Value, Vec<Value>) {
    send(ws, body).await;
    let mut notifications = Vec::new();
    let answer = tokio::time::timeout(WAIT, async {
        loop {
            let message = recv(ws).await;
            if message["id"] == json!(id) {
                return message;
            }
            notifications.push(message);
        }
    })
    .await
    .expect("the answer in time, not only notifications");
    (answer, notifications)
}

/// The raw body of an HTTP POST answer.
async fn http_post(server: &MockServer, body: &str) -> String {
    let mut tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    tcp.read_to_end(&mut reply).await.unwrap();
    let text = String::from_utf8(reply).unwrap();
    text.split_once("\r\n\r\n").expect("a head").1.to_string()
}

/// The status line and headers of a raw GET with `headers`, then whether the server closed.
async fn raw_get(server: &MockServer, headers: &str) -> String {
    let mut tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    tcp.write_all(format!("GET / HTTP/1.1\r\nHost: x\r\n{headers}\r\n").as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(WAIT, tcp.read_to_end(&mut reply)).await.expect("the server closes").unwrap();
    String::from_utf8_lossy(&reply).into_owned()
}

fn hex_u64(value: &Value) -> u64 {
    u64::from_str_radix(value.as_str().expect("hex").trim_start_matches("0x"), 16).expect("hex")
}

fn unix_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

#[tokio::test]
async fn a_request_over_ws_gets_the_same_body_as_over_http() {
    let server = start(MockOptions::new(Chain::Ethereum));
    let mut ws = connect(&server).await;
    for body in [
        r#"{"jsonrpc":"2.0","id":7,"method":"eth_chainId"}"#,
        r#"{"jsonrpc":"2.0","id":"b","method":"eth_getBlockByNumber","params":["0x10",false]}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"no_such_method"}"#,
    ] {
        send(&mut ws, body).await;
        let Some(Ok(Message::Text(over_ws))) = ws.next().await else { panic!("a text answer") };
        assert_eq!(over_ws.as_str(), http_post(&server, body).await, "{body}");
    }
}

#[tokio::test]
async fn a_batch_over_ws_is_answered_with_an_array_and_notifications_get_nothing() {
    let server = start(MockOptions::new(Chain::Solana));
    let mut ws = connect(&server).await;
    let answer = call(
        &mut ws,
        r#"[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","method":"getSlot"},{"jsonrpc":"2.0","id":2,"method":"getVersion"}]"#,
    )
    .await;
    let items = answer.as_array().expect("an array");
    assert_eq!(items.len(), 2);
    assert_eq!((items[0]["id"].clone(), items[1]["id"].clone()), (json!(1), json!(2)));
    send(&mut ws, r#"{"jsonrpc":"2.0","method":"getSlot"}"#).await;
    assert!(silent_for(&mut ws, Duration::from_millis(200)).await, "a notification gets no answer");
}

#[tokio::test]
async fn answers_under_latency_go_out_of_order_with_the_right_ids() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.faults.latency =
        Some(Latency { base: Duration::from_millis(1), jitter: Duration::from_millis(80) });
    let server = start(options);
    let mut ws = connect(&server).await;
    for id in 0..30 {
        send(
            &mut ws,
            &format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_getBlockByNumber","params":["{id:#x}",false]}}"#
            ),
        )
        .await;
    }
    let mut order = Vec::new();
    for _ in 0..30 {
        let answer = recv(&mut ws).await;
        let id = answer["id"].as_u64().expect("an id");
        assert_eq!(hex_u64(&answer["result"]["number"]), id, "the answer matches its request");
        order.push(id);
    }
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..30).collect::<Vec<_>>());
    assert_ne!(order, sorted, "random latency reorders the answers");
}

#[tokio::test]
async fn eth_new_heads_deliver_consecutive_blocks_with_their_production_time() {
    let server = start(options(Chain::Ethereum, 50));
    let mut ws = connect(&server).await;
    let answer =
        call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    let id = answer["result"].as_str().expect("a hex id").to_string();
    assert!(id.len() == 34 && id.starts_with("0x"), "{id}");
    let mut numbers = Vec::new();
    for _ in 0..6 {
        let note = recv(&mut ws).await;
        assert_eq!(note["method"], "eth_subscription");
        assert_eq!(note["params"]["subscription"], json!(id));
        let head = &note["params"]["result"];
        let produced = head["rpcbenchProducedAt"].as_u64().expect("rpcbenchProducedAt");
        assert!(produced <= unix_micros() && unix_micros() - produced < 5_000_000, "{produced}");
        assert!(head["hash"].is_string() && head["parentHash"].is_string() && head["timestamp"].is_string());
        assert!(head.get("transactions").is_none(), "a header, not a block");
        numbers.push(hex_u64(&head["number"]));
    }
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    assert_eq!(server.ws_stats().notifications_dropped, 0);
    assert_eq!(server.ws_stats().subscriptions_opened, 1);
}

#[tokio::test]
async fn eth_logs_and_pending_transactions_are_notified_and_unknown_kinds_refused() {
    let server = start(options(Chain::Ethereum, 30));
    let mut ws = connect(&server).await;
    let refused =
        call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["nope"]}"#).await;
    assert_eq!(refused["error"]["code"], -32602);
    call(&mut ws, r#"{"jsonrpc":"2.0","id":2,"method":"eth_subscribe","params":["logs",{}]}"#).await;
    let mut log = Value::Null;
    while log.is_null() {
        let note = recv(&mut ws).await;
        log = note["params"]["result"].clone();
    }
    assert!(log["blockNumber"].is_string() && log["logIndex"].is_string() && log["address"].is_string());
    assert!(log["rpcbenchProducedAt"].is_u64());
    let mut ws = connect(&server).await;
    call(&mut ws, r#"{"jsonrpc":"2.0","id":3,"method":"eth_subscribe","params":["newPendingTransactions"]}"#)
        .await;
    let hash = recv(&mut ws).await["params"]["result"].clone();
    assert_eq!(hash.as_str().expect("a hash").len(), 66);
}

#[tokio::test]
async fn solana_slot_subscribe_delivers_consecutive_slots_with_their_production_time() {
    let server = start(options(Chain::Solana, 50));
    let mut ws = connect(&server).await;
    let answer = call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}"#).await;
    let id = answer["result"].as_u64().expect("an integer id");
    let mut slots = Vec::new();
    for _ in 0..6 {
        let note = recv(&mut ws).await;
        assert_eq!(note["method"], "slotNotification");
        assert_eq!(note["params"]["subscription"], json!(id));
        let result = &note["params"]["result"];
        let slot = result["slot"].as_u64().expect("slot");
        assert!(result["parent"].as_u64().unwrap() < slot && result["root"].as_u64().unwrap() < slot);
        assert!(result["rpcbenchProducedAt"].as_u64().expect("rpcbenchProducedAt") <= unix_micros());
        slots.push(slot);
    }
    assert!(slots.windows(2).all(|w| w[1] == w[0] + 1), "{slots:?}");
    let account = call(
        &mut ws,
        r#"{"jsonrpc":"2.0","id":2,"method":"accountSubscribe","params":["11111111111111111111111111111111",{"encoding":"base64"}]}"#,
    )
    .await;
    assert!(account["result"].is_u64(), "{account}");
    let (_, _) =
        call_collecting(&mut ws, r#"{"jsonrpc":"2.0","id":3,"method":"slotUnsubscribe","params":[0]}"#, 3)
            .await;
    let note = loop {
        let note = recv(&mut ws).await;
        if note["method"] == "accountNotification" {
            break note;
        }
    };
    assert!(note["params"]["result"]["context"]["slot"].is_u64());
    let logs =
        call_collecting(&mut ws, r#"{"jsonrpc":"2.0","id":4,"method":"logsSubscribe","params":["all"]}"#, 4)
            .await;
    assert!(logs.0["result"].is_u64());
    let note = loop {
        let note = recv(&mut ws).await;
        if note["method"] == "logsNotification" {
            break note;
        }
    };
    assert!(note["params"]["result"]["value"]["logs"].is_array());
}

/// Waits (for at most `WAIT`) until the server has queued `count` notifications in all.
async fn until_notifications_sent(server: &MockServer, count: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while server.ws_stats().notifications_sent < count {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", server.ws_stats());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_request_behind_unread_notifications_is_answered_after_them_and_call_finds_the_answer() {
    // Heads every 5 ms, none read until three are queued: they are on the wire before the
    // answer to the next request, as on a busy machine where the test reads late.
    let server = start(options(Chain::Ethereum, 5));
    let mut ws = connect(&server).await;
    let subscribed =
        call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    assert!(subscribed["result"].is_string(), "{subscribed}");
    until_notifications_sent(&server, 3).await;
    let (answer, before) =
        call_collecting(&mut ws, r#"{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}"#, 2).await;
    assert!(before.len() >= 3 && before.iter().all(is_notification), "{before:?}");
    assert!(hex_u64(&answer["result"]) > 1000, "{answer}");
    // `call` skips what is queued before the answer, and returns the answer itself.
    let sent = server.ws_stats().notifications_sent;
    until_notifications_sent(&server, sent + 3).await;
    let answer = call(&mut ws, r#"{"jsonrpc":"2.0","id":3,"method":"eth_blockNumber"}"#).await;
    assert_eq!(answer["id"], json!(3), "{answer}");
    assert!(hex_u64(&answer["result"]) > 1000, "{answer}");
}

#[tokio::test]
async fn ws_drop_one_delivers_nothing_and_counts_every_drop() {
    let mut options = options(Chain::Ethereum, 20);
    options.ws_drop = 1.0;
    let server = start(options);
    let mut ws = connect(&server).await;
    call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    assert!(silent_for(&mut ws, Duration::from_millis(400)).await);
    let (answer, notes) =
        call_collecting(&mut ws, r#"{"jsonrpc":"2.0","id":2,"method":"eth_unsubscribe","params":[]}"#, 2)
            .await;
    assert!(notes.is_empty() && answer["result"] == json!(false));
    let stats = server.ws_stats();
    assert_eq!(stats.notifications_sent, 0);
    assert!(stats.notifications_dropped >= 10, "{stats:?}");
}

#[tokio::test]
async fn ws_drop_half_leaves_gaps_equal_to_the_counted_drops() {
    let mut options = options(Chain::Ethereum, 100);
    options.ws_drop = 0.5;
    options.seed = 3;
    let server = start(options);
    // Subscribed before the first block (100ms after start), so every block from the first
    // produced one (START_BLOCK + 1 = 1001) is either delivered or counted as dropped.
    let mut ws = connect(&server).await;
    let answer =
        call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    let id = answer["result"].as_str().unwrap().to_string();
    let mut received = Vec::new();
    while received.last().is_none_or(|last| *last < 1025) {
        received.push(hex_u64(&recv(&mut ws).await["params"]["result"]["number"]));
    }
    let unsubscribe = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"eth_unsubscribe","params":["{id}"]}}"#);
    let (answer, late) = call_collecting(&mut ws, &unsubscribe, 2).await;
    assert_eq!(answer["result"], json!(true));
    received.extend(late.iter().map(|note| hex_u64(&note["params"]["result"]["number"])));
    let last = *received.last().unwrap();
    let gaps = (last - 1000) - received.len() as u64;
    let stats = server.ws_stats();
    assert!(gaps > 0, "half of the blocks are dropped: {received:?}");
    assert_eq!(stats.notifications_sent, received.len() as u64);
    assert_eq!(stats.notifications_dropped, gaps, "{received:?} {stats:?}");
}

#[tokio::test]
async fn ws_duplicate_one_sends_every_notification_twice() {
    let mut options = options(Chain::Solana, 30);
    options.ws_duplicate = 1.0;
    let server = start(options);
    let mut ws = connect(&server).await;
    call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}"#).await;
    let mut slots = Vec::new();
    for _ in 0..8 {
        slots.push(recv(&mut ws).await["params"]["result"]["slot"].as_u64().unwrap());
    }
    for pair in slots.chunks(2) {
        assert_eq!(pair[0], pair[1], "{slots:?}");
    }
    let stats = server.ws_stats();
    assert!(stats.duplicates_sent >= 4 && stats.duplicates_sent == stats.notifications_sent, "{stats:?}");
}

#[tokio::test]
async fn ws_max_queue_closes_a_subscriber_that_does_not_read_with_1008() {
    let mut options = options(Chain::Ethereum, 1);
    options.ws_max_queue = Some(8);
    let server = start(options);
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let tcp = socket.connect(server.local_addr()).await.unwrap();
    let (mut ws, _) = client_async(server.ws_url(), tcp).await.unwrap();
    send(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while server.ws_stats().subscribers_closed_slow == 0 {
        assert!(tokio::time::Instant::now() < deadline, "not closed: {:?}", server.ws_stats());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let frame = loop {
        match tokio::time::timeout(WAIT, ws.next()).await.expect("the close in time") {
            Some(Ok(Message::Close(frame))) => break frame.expect("a close frame with a code"),
            Some(Ok(_)) => {}
            other => panic!("no close frame: {other:?}"),
        }
    };
    assert_eq!(frame.code, CloseCode::Policy);
    assert!(frame.reason.contains("queue"), "{}", frame.reason);
}

#[tokio::test]
async fn ws_max_connections_one_refuses_the_second_upgrade_with_503() {
    let mut options = MockOptions::new(Chain::Static);
    options.ws_max_connections = Some(1);
    let server = start(options);
    let mut first = connect(&server).await;
    let tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    match client_async(server.ws_url(), tcp).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("expected a 503: {other:?}"),
    }
    assert_eq!(call(&mut first, r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).await["result"], "0x1");
    first.close(None).await.unwrap();
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    connect(&server).await;
}

#[tokio::test]
async fn unsubscribe_stops_notifications() {
    let server = start(options(Chain::Ethereum, 20));
    let mut ws = connect(&server).await;
    let answer =
        call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    let id = answer["result"].as_str().unwrap().to_string();
    recv(&mut ws).await;
    let unsubscribe = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"eth_unsubscribe","params":["{id}"]}}"#);
    let (answer, _) = call_collecting(&mut ws, &unsubscribe, 2).await;
    assert_eq!(answer["result"], json!(true));
    assert!(silent_for(&mut ws, Duration::from_millis(200)).await);
    let unsubscribe = unsubscribe.replace("\"id\":2", "\"id\":3");
    assert_eq!(call(&mut ws, &unsubscribe).await["result"], json!(false));
}

#[tokio::test]
async fn garbage_text_gets_a_parse_error_and_the_connection_stays_open() {
    let server = start(MockOptions::new(Chain::Solana));
    let mut ws = connect(&server).await;
    let answer = call(&mut ws, "this is not json {").await;
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(call(&mut ws, r#"{"jsonrpc":"2.0","id":5,"method":"getHealth"}"#).await["result"], "ok");
}

#[tokio::test]
async fn binary_garbage_and_invalid_utf8_do_not_panic_the_server() {
    let server = start(MockOptions::new(Chain::Ethereum));
    let mut ws = connect(&server).await;
    ws.send(Message::binary(vec![0xff, 0xfe, 0x00, 0x7b])).await.unwrap();
    assert_eq!(recv(&mut ws).await["error"]["code"], -32700);
    // A text frame with invalid UTF-8, written by hand (masked, as from a client).
    let mut tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    tcp.write_all(
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .await
    .unwrap();
    let payload = [0xc3u8, 0x28, 0xff];
    let mask = [1u8, 2, 3, 4];
    let mut frame = vec![0x81, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    tcp.write_all(&frame).await.unwrap();
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(WAIT, tcp.read_to_end(&mut reply)).await.expect("the server closes");
    let text = String::from_utf8_lossy(&reply);
    assert!(text.starts_with("HTTP/1.1 101"), "{text}");
    assert!(text.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "{text}");
    // The server lives on.
    assert_eq!(call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#).await["result"], "0x539");
}

#[tokio::test]
async fn bad_upgrades_get_400_and_a_plain_get_is_unchanged() {
    let server = start(MockOptions::new(Chain::Solana));
    let no_key =
        raw_get(&server, "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n").await;
    assert!(no_key.starts_with("HTTP/1.1 400"), "{no_key}");
    let old = raw_get(
        &server,
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n",
    )
    .await;
    assert!(old.starts_with("HTTP/1.1 400"), "{old}");
    let plain = raw_get(&server, "Connection: close\r\n").await;
    assert!(plain.starts_with("HTTP/1.1 405"), "{plain}");
}

#[tokio::test]
async fn a_ping_gets_a_pong_and_a_close_gets_a_close() {
    let server = start(MockOptions::new(Chain::Static));
    let mut ws = connect(&server).await;
    ws.send(Message::Ping(b"hi".to_vec().into())).await.unwrap();
    match tokio::time::timeout(WAIT, ws.next()).await.expect("a pong in time") {
        Some(Ok(Message::Pong(payload))) => assert_eq!(&payload[..], b"hi"),
        other => panic!("expected a pong: {other:?}"),
    }
    ws.close(None).await.unwrap();
    loop {
        match tokio::time::timeout(WAIT, ws.next()).await.expect("the close answered in time") {
            Some(Ok(Message::Close(_))) | None => break,
            Some(Ok(_)) => {}
            Some(Err(err)) => panic!("{err}"),
        }
    }
}

#[tokio::test]
async fn thousands_of_requests_sent_before_reading_are_all_answered() {
    let server = start(MockOptions::new(Chain::Static));
    let mut ws = connect(&server).await;
    let total = 3000u64;
    for id in 0..total {
        ws.feed(Message::text(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x"}}"#))).await.unwrap();
    }
    ws.flush().await.unwrap();
    for id in 0..total {
        assert_eq!(recv(&mut ws).await["id"], json!(id));
    }
}

#[tokio::test]
async fn wss_on_the_tls_port_subscribes_like_ws() {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let dir = std::env::temp_dir().join(format!("rpcbench-mock-ws-tls-{}", std::process::id()));
    let mut options = options(Chain::Solana, 30);
    options.tls = Some(rpcbench::mock::MockTls { dir: Some(dir.clone()) });
    let server = start(options);
    assert!(server.ws_url().starts_with("wss://"), "{}", server.ws_url());
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(server.certificate_path().unwrap()).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("TLS handshake");
    let (mut ws, _) = client_async(server.ws_url(), tls).await.expect("the upgrade over TLS");
    ws.send(Message::text(r#"{"jsonrpc":"2.0","id":1,"method":"slotSubscribe"}"#)).await.unwrap();
    let mut methods = Vec::new();
    while methods.len() < 3 {
        let Some(Ok(Message::Text(text))) = tokio::time::timeout(WAIT, ws.next()).await.unwrap() else {
            panic!("a text message")
        };
        let message: Value = serde_json::from_str(text.as_str()).unwrap();
        methods.push(message.get("method").cloned().unwrap_or(message["result"].clone()));
    }
    assert_eq!(methods[0], json!(0), "the subscription id");
    assert_eq!(methods[1..], [json!("slotNotification"), json!("slotNotification")]);
    drop(ws);
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn ws_delay_holds_each_notification_back_from_its_production() {
    let mut options = options(Chain::Ethereum, 50);
    options.ws_delay = Some(Duration::from_millis(300));
    let server = start(options);
    let mut ws = connect(&server).await;
    call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    let mut numbers = Vec::new();
    for _ in 0..4 {
        let note = recv(&mut ws).await;
        let produced = note["params"]["result"]["rpcbenchProducedAt"].as_u64().unwrap();
        let lag = unix_micros() - produced;
        assert!(lag >= 290_000, "a lag of {lag}µs");
        numbers.push(hex_u64(&note["params"]["result"]["number"]));
    }
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "the order holds: {numbers:?}");
}

#[tokio::test]
async fn a_node_behind_sends_the_heads_it_answers_not_the_true_ones() {
    // The chain starts at block 1000; 500 behind, every head is below it.
    let mut lagging = options(Chain::Ethereum, 50);
    lagging.head_lag = 500;
    let server = start(lagging);
    let mut ws = connect(&server).await;
    call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
    let head = hex_u64(&recv(&mut ws).await["params"]["result"]["number"]);
    let answered =
        hex_u64(&call(&mut ws, r#"{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}"#).await["result"]);
    assert!((500..1000).contains(&head), "{head}");
    assert!(answered.abs_diff(head) <= 1, "subscription {head}, eth_blockNumber {answered}");
}

#[tokio::test]
async fn ws_close_after_closes_every_connection_with_1001_going_away_and_ws_max_upgrades_refuses_the_next() {
    let mut options = options(Chain::Ethereum, 20);
    options.ws_close_after = Some(Duration::from_millis(100));
    options.ws_max_upgrades = Some(2);
    let server = start(options);
    for _ in 0..2 {
        let mut ws = connect(&server).await;
        call(&mut ws, r#"{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}"#).await;
        // Heads until the close frame: the node goes away on its own.
        let frame = loop {
            match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
                Ok(Some(Ok(Message::Close(frame)))) => break frame.expect("a close frame with a code"),
                Ok(Some(Ok(_))) => continue,
                other => panic!("expected a close frame: {other:?}"),
            }
        };
        assert_eq!(frame.code, CloseCode::Away);
        assert_eq!(frame.reason.as_str(), "going away");
    }
    assert_eq!(server.ws_stats().closed_on_schedule, 2);
    // Past two upgrades over the server's life, the next one gets 503.
    let tcp = TcpStream::connect(server.local_addr()).await.unwrap();
    match client_async(server.ws_url(), tcp).await {
        Err(WsError::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("expected a 503: {other:?}"),
    }
    assert_eq!(server.ws_stats().upgrades_refused, 1);
}
