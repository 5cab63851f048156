//! JSON-RPC over WebSocket through the whole engine (`ws://`), against the mock nodes' WebSocket
//! server and against hand-made servers on 127.0.0.1 that misbehave on purpose: answers out of
//! order, a socket closed mid-run, garbage between answers, an upgrade refused.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use rpcbench::engine::config::{Field, HttpVersion, Load, RunConfig};
use rpcbench::engine::{EngineError, Run};
use rpcbench::mock::{Chain, Faults, Latency, MockOptions, MockServer};
use rpcbench::report::{render_text, RunReport};

use crate::util::{closed_loop, requests, seconds};

fn ws_url(server: &MockServer) -> String {
    format!("ws://{}/", server.local_addr())
}

fn ws(url: &str, sockets: usize, in_flight: usize, n: u64) -> RunConfig {
    let mut config = closed_loop(url, sockets, requests(n));
    config.in_flight = in_flight;
    config.threads = 1;
    config
}

#[test]
fn requests_over_websocket_are_answered_and_reported_as_websocket() {
    let server = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let config = ws(&ws_url(&server), 2, 4, 1000);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 1000, "{:?}", record.totals.counts);
    assert_eq!(record.wire.connections_opened, 2, "two sockets carry the 8 lanes");
    let report = RunReport::new(&config, &record);
    crate::report::assert_valid(&report);
    assert_eq!(report.protocol, "websocket");
    let websocket = report.websocket.as_ref().expect("WebSocket figures");
    assert_eq!(websocket.in_flight_per_socket, 4);
    assert_eq!(websocket.sockets_opened, 2);
    assert!(report.http_status.is_empty(), "a WebSocket answer has no HTTP status: {:?}", report.http_status);
    let text = render_text(&report);
    assert!(text.contains("protocol websocket: 4 request(s) in flight per socket"), "{text}");
    assert!(text.contains("Answers: 1000, none - 0"), "{text}");
}

#[test]
fn answers_out_of_order_are_matched_by_id() {
    // Latency with jitter: the mock answers each message after its own delay, so the answers
    // to one socket's 8 requests come back in another order than they were sent.
    let mut options = MockOptions::new(Chain::Static);
    options.faults = Faults {
        latency: Some(Latency { base: Duration::from_millis(2), jitter: Duration::from_millis(2) }),
        ..Faults::default()
    };
    let server = MockServer::start(options).unwrap();
    let config = ws(&ws_url(&server), 1, 8, 400);
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.ok, 400, "{counts:?}");
    assert_eq!(record.wire.stray_unknown_id, 0);
}

#[test]
fn open_loop_over_websocket_paces_on_free_request_slots() {
    let server = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let mut config = ws(&ws_url(&server), 1, 4, 0);
    config.load = Load::Open { rate: 400.0, arrivals: Default::default(), max_connections: 2 };
    config.length = seconds(1.0);
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.errors(), 0, "{counts:?}");
    assert_eq!(counts.total() + record.totals.unsent, 400, "{counts:?}");
}

#[test]
fn rate_with_held_connections_opens_them_all_before_the_start() {
    // `--rate R -c N`: every connection is open before the first ticket, as wrk2 -c N -R R
    // holds them; the elastic mode (`--max-connections`) opens one and more only as needed.
    let server = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let mut config = ws(&ws_url(&server), 1, 1, 0);
    config.load = Load::Open { rate: 100.0, arrivals: Default::default(), max_connections: 6 };
    config.hold_connections = true;
    config.threads = 2;
    config.length = seconds(0.5);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.errors(), 0, "{:?}", record.totals.counts);
    assert_eq!(record.wire.connections_opened, 6);
    let report = RunReport::new(&config, &record);
    assert!(report.load.held_connections);
    assert!(render_text(&report).contains("over 6 connection(s) held open"), "{}", render_text(&report));
}

/// A WebSocket server written by hand (no crate on this side, so it can break the rules):
/// `answer` turns each request's id into the frames written back.
pub(crate) fn raw_ws_server(answer: impl Fn(u64, &mut Vec<u8>) + Send + Sync + Clone + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read_exact(&mut byte).is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head).to_string();
                let Some(key) = text.lines().find_map(|line| {
                    line.strip_prefix("Sec-WebSocket-Key: ").or(line.strip_prefix("sec-websocket-key: "))
                }) else {
                    return;
                };
                let accept =
                    tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.trim().as_bytes());
                let reply = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                );
                if stream.write_all(reply.as_bytes()).is_err() {
                    return;
                }
                loop {
                    // A masked client frame: two head bytes, a 16-bit length when 126, the mask.
                    let mut fixed = [0u8; 2];
                    if stream.read_exact(&mut fixed).is_err() {
                        return;
                    }
                    let mut length = usize::from(fixed[1] & 0x7f);
                    if length == 126 {
                        let mut extended = [0u8; 2];
                        if stream.read_exact(&mut extended).is_err() {
                            return;
                        }
                        length = usize::from(u16::from_be_bytes(extended));
                    }
                    let mut mask = [0u8; 4];
                    let mut payload = vec![0u8; length];
                    if stream.read_exact(&mut mask).is_err() || stream.read_exact(&mut payload).is_err() {
                        return;
                    }
                    for (index, byte) in payload.iter_mut().enumerate() {
                        *byte ^= mask[index % 4];
                    }
                    let body = String::from_utf8_lossy(&payload);
                    let id = body
                        .split("\"id\":")
                        .nth(1)
                        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                        .and_then(|digits| digits.parse().ok())
                        .unwrap_or(0);
                    let mut out = Vec::new();
                    answer(id, &mut out);
                    if out.is_empty() || stream.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("ws://{addr}/")
}

/// A server-to-client text frame (unmasked).
pub(crate) fn text_frame(text: &str, out: &mut Vec<u8>) {
    out.push(0x81);
    assert!(text.len() < 126);
    out.push(text.len() as u8);
    out.extend_from_slice(text.as_bytes());
}

#[test]
fn garbage_and_stray_answers_are_counted_and_never_charged_to_a_request() {
    let url = raw_ws_server(|id, out| {
        text_frame("this is not json", out);
        text_frame(r#"{"jsonrpc":"2.0","id":999999999,"result":1}"#, out);
        text_frame(r#"{"jsonrpc":"2.0","method":"slotNotification","params":{}}"#, out);
        text_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":1}}"#), out);
    });
    let config = ws(&url, 1, 1, 50);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 50, "{:?}", record.totals.counts);
    assert_eq!(record.wire.stray_not_json, 50);
    assert_eq!(record.wire.stray_unknown_id, 50);
    assert_eq!(record.wire.stray_notifications, 50);
    let report = RunReport::new(&config, &record);
    crate::report::assert_valid(&report);
}

#[test]
fn a_socket_closed_by_the_server_ends_its_requests_by_close_code_and_is_reopened() {
    // Every third request gets a close frame (code 1011) instead of an answer.
    let url = raw_ws_server(|id, out| {
        if id % 3 == 0 {
            out.extend_from_slice(&[0x88, 2, 0x03, 0xf3]);
        } else {
            text_frame(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":1}}"#), out);
        }
    });
    let config = ws(&url, 1, 1, 90);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.total(), 90, "{counts:?}");
    assert_eq!(counts.ok + counts.ws_closed.get(&1011).copied().unwrap_or(0), 90, "{counts:?}");
    assert!(counts.ws_closed[&1011] > 0);
    assert!(record.wire.connections_opened > 1, "{:?}", record.wire);
    let report = RunReport::new(&config, &record);
    crate::report::assert_valid(&report);
    assert!(render_text(&report).contains("websocket closed: 1011"), "{}", render_text(&report));
}

#[test]
fn a_refused_upgrade_is_reported_with_its_status() {
    // A server that does not speak WebSocket at all: its answer to the upgrade is refused.
    let plain = crate::util::TestServer::start(|_| crate::util::status(404, "no"));
    let config = ws(&plain.url().replace("http://", "ws://"), 1, 1, 5);
    match Run::new(config) {
        Err(EngineError::Config(err)) => {
            assert_eq!(err.field, Field::Url);
            assert!(
                err.message().contains("refused the WebSocket upgrade with HTTP 404"),
                "{}",
                err.message()
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn websocket_settings_are_checked_naming_the_flag() {
    let mut config = ws("ws://127.0.0.1:1/", 1, 1, 1);
    config.http = HttpVersion::H2c;
    assert_eq!(config.validate().unwrap_err().field, Field::H2c);
    config.http = HttpVersion::Http1;
    config.batch = 5;
    assert_eq!(config.validate().unwrap_err().field, Field::Batch);
    config.batch = 1;
    config.in_flight = 0;
    assert_eq!(config.validate().unwrap_err().field, Field::InFlight);
    config.in_flight = 4;
    config.fixed_id = Some(1);
    assert_eq!(config.validate().unwrap_err().field, Field::InFlight);
    let mut http = closed_loop("http://127.0.0.1:1/", 1, requests(1));
    http.in_flight = 2;
    assert_eq!(http.validate().unwrap_err().field, Field::InFlight);
}

#[test]
fn wss_goes_through_the_same_tls_setup_as_https() {
    let mut options = MockOptions::new(Chain::Static);
    options.tls = Some(rpcbench::mock::MockTls::default());
    let server = MockServer::start(options).unwrap();
    let certificate = server.certificate_path().unwrap().to_path_buf();
    let mut config = ws(&format!("wss://{}/", server.local_addr()), 2, 2, 200);
    config.tls = rpcbench::engine::config::TlsOptions { insecure: false, ca_file: Some(certificate) };
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 200, "{:?}", record.totals.counts);
    assert_eq!(RunReport::new(&config, &record).protocol, "websocket");
    // Without the certificate the handshake fails: connect errors, not a hang.
    config.tls = rpcbench::engine::config::TlsOptions::default();
    config.length = requests(10);
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.connect, 10, "{:?}", record.totals.counts);
}

/// A WebSocket server that upgrades every connection, then sends PINGs (125-byte payloads) in
/// a loop and never reads, until it has sent `cap` bytes or the client went away. Each
/// connection's count of bytes sent comes on the receiver when it stops.
pub(crate) fn ping_flood_server(cap: usize) -> (String, std::sync::mpsc::Receiver<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let sent_tx = sent_tx.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read_exact(&mut byte).is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head).to_string();
                let Some(key) = text.lines().find_map(|line| {
                    line.strip_prefix("Sec-WebSocket-Key: ").or(line.strip_prefix("sec-websocket-key: "))
                }) else {
                    return;
                };
                let accept =
                    tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.trim().as_bytes());
                let reply = format!(
                    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
                );
                if stream.write_all(reply.as_bytes()).is_err() {
                    return;
                }
                // 512 PINGs of 125 bytes per write.
                let mut batch = Vec::with_capacity(512 * 127);
                for _ in 0..512 {
                    batch.extend_from_slice(&[0x89, 125]);
                    batch.extend_from_slice(&[b'p'; 125]);
                }
                let mut sent = 0;
                while sent < cap && stream.write_all(&batch).is_ok() {
                    sent += batch.len();
                }
                let _ = sent_tx.send(sent);
            });
        }
    });
    (format!("ws://{addr}/"), sent_rx)
}

#[test]
fn a_server_that_floods_pings_and_never_reads_ends_its_requests_classified_with_bounded_memory() {
    // Unbounded, every PING's PONG queued in the client (about 64 MiB of them here): bounded,
    // the socket is closed once 1 MiB of PONGs waits beyond what the kernel took.
    const CAP: usize = 64 * 1024 * 1024;
    let (url, sent) = ping_flood_server(CAP);
    let config = ws(&url, 1, 1, 3);
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.ws_closed.get(&1008).copied(), Some(3), "{counts:?}");
    for _ in 0..3 {
        let sent = sent.recv_timeout(Duration::from_secs(30)).expect("the flood ends when the client goes");
        assert!(sent < CAP / 2, "the client read {sent} bytes of PINGs before it closed");
    }
}

/// A server-to-client frame with the first byte `first` (FIN, reserved bits, opcode) and
/// `payload` unmasked, its length in the shortest form.
fn frame(first: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.push(first);
    match payload.len() {
        len @ 0..=125 => out.push(len as u8),
        len @ 126..=0xFFFF => {
            out.push(126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
}

#[test]
fn an_answer_in_fragments_with_a_ping_between_them_is_put_together_and_answered() {
    let url = raw_ws_server(|id, out| {
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1234"}}"#);
        let (first, rest) = text.as_bytes().split_at(9);
        let (middle, last) = rest.split_at(9);
        frame(0x01, first, out); // text, more to come
        frame(0x89, b"are you there", out); // a PING between the fragments
        frame(0x00, middle, out); // continuation
        frame(0x8A, b"", out); // an unasked PONG
        frame(0x80, last, out); // the last continuation
    });
    let record = Run::new(ws(&url, 1, 1, 30)).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 30, "{:?}", record.totals.counts);
    assert_eq!(record.wire.connections_opened, 1, "{:?}", record.wire);
}

#[test]
fn answers_in_all_three_length_forms_are_read_whole() {
    // 7-bit, 16-bit and 64-bit lengths, several answers of a socket in one write.
    let url = raw_ws_server(|id, out| {
        let padding = match id % 3 {
            0 => 10,
            1 => 300,
            _ => 70_000,
        };
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"{}"}}"#, "a".repeat(padding));
        frame(0x81, text.as_bytes(), out);
    });
    let record = Run::new(ws(&url, 1, 1, 30)).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 30, "{:?}", record.totals.counts);
}

#[test]
fn frames_that_break_the_protocol_end_their_requests_as_protocol_errors() {
    type Shape = fn(&mut Vec<u8>);
    let shapes: [(&str, Shape); 10] = [
        ("a masked frame", |out| out.extend_from_slice(&[0x81, 0x82, 1, 2, 3, 4, b'{' ^ 1, b'}' ^ 2])),
        ("reserved bits", |out| frame(0xC1, b"{}", out)),
        ("an unknown data opcode", |out| frame(0x83, b"{}", out)),
        ("an unknown control opcode", |out| frame(0x8B, b"", out)),
        ("a continuation without a start", |out| frame(0x80, b"{}", out)),
        ("a new message inside a fragmented one", |out| {
            frame(0x01, b"{", out);
            frame(0x81, b"{}", out);
        }),
        ("text that is not UTF-8", |out| frame(0x81, b"{\"x\":\"\xff\xfe\"}", out)),
        ("a fragmented PING", |out| frame(0x09, b"", out)),
        ("a PING over 125 bytes", |out| frame(0x89, &[b'p'; 126], out)),
        ("a close frame of one byte", |out| frame(0x88, &[3], out)),
    ];
    for (name, shape) in shapes {
        let url = raw_ws_server(move |_, out| shape(out));
        let record = Run::new(ws(&url, 1, 1, 3)).unwrap().execute().unwrap();
        let counts = &record.totals.counts;
        assert_eq!(counts.ws_protocol, 3, "{name}: {counts:?}");
        assert_eq!(counts.total(), 3, "{name}: {counts:?}");
    }
}

#[test]
fn close_codes_no_endpoint_may_send_are_reported_as_protocol_closes() {
    // 1005 and 1006 only describe a close; 999 is below the range. A reason rides along.
    for (payload, reported) in
        [(&[0x03, 0xED][..], 1002), (&[0x03, 0xE7], 1002), (&[0x0F, 0xA1, b'b', b'y', b'e'], 4001)]
    {
        let url = raw_ws_server(move |_, out| frame(0x88, payload, out));
        let record = Run::new(ws(&url, 1, 1, 3)).unwrap().execute().unwrap();
        let counts = &record.totals.counts;
        assert_eq!(counts.ws_closed.get(&reported).copied(), Some(3), "{payload:?}: {counts:?}");
    }
}

#[test]
fn a_frame_declaring_more_than_the_body_limit_is_too_large_before_its_bytes_arrive() {
    // The head claims a terabyte and 16 bytes follow: nothing is allocated for the claim.
    let url = raw_ws_server(|_, out| {
        out.extend_from_slice(&[0x81, 127, 0, 0, 1, 0, 0, 0, 0, 0]);
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
    });
    let record = Run::new(ws(&url, 1, 1, 3)).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.invalid.get(&rpcbench::outcome::InvalidKind::BodyTooLarge), Some(&3), "{counts:?}");
}

#[test]
fn a_message_whose_fragments_add_up_past_the_body_limit_is_too_large() {
    let url = raw_ws_server(|id, out| {
        frame(0x01, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":""#).as_bytes(), out);
        for _ in 0..4 {
            frame(0x00, &[b'a'; 400], out);
        }
        frame(0x80, b"\"}", out);
    });
    let mut config = ws(&url, 1, 1, 3);
    config.max_body = 1000;
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.invalid.get(&rpcbench::outcome::InvalidKind::BodyTooLarge), Some(&3), "{counts:?}");
}

#[test]
fn a_second_answer_to_the_same_id_is_a_stray_and_never_a_second_outcome() {
    // Every request answered twice, the copy once right behind it and once with a large result
    // (read from its tail): the first answer settles the request, the copy finds no one waiting.
    let url = raw_ws_server(|id, out| {
        let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#);
        frame(0x81, answer.as_bytes(), out);
        let large = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"data":"{}"}}}}"#, "b".repeat(2000));
        frame(0x81, large.as_bytes(), out);
    });
    let config = ws(&url, 1, 1, 40);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!((counts.ok, counts.total()), (40, 40), "{counts:?}");
    // The last copy may still be on its way when the run ends.
    assert!((39..=40).contains(&record.wire.stray_unknown_id), "{:?}", record.wire);
    let report = RunReport::new(&config, &record);
    crate::report::assert_valid(&report);
}
