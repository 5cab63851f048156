//! The proxy in-process: batches pass through byte for byte with ids echoed, an upstream that
//! is down gets 502s counted by cause and the proxy serves again once it is back, the fault
//! knobs' counts are exact for a seed, and the live metrics show the phases.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

use rpcbench::mock::{Chain, MockOptions, MockServer};
use rpcbench::proxy::{Proxy, ProxyOptions, UpstreamFailure, BATCH_KEY};
use rpcbench::Target;

fn options(upstream: &str) -> ProxyOptions {
    ProxyOptions::new("127.0.0.1:0".parse().unwrap(), Target::parse(upstream).unwrap())
}

/// One response read off `reader`: status and body (Content-Length framing); `None` when the
/// connection closed first.
fn read_response(reader: &mut BufReader<TcpStream>) -> Option<(u16, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let status: u16 = line.split(' ').nth(1)?.parse().ok()?;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some((status, body))
}

fn post(stream: &mut TcpStream, body: &[u8], extra: &str) {
    try_post(stream, body, extra).unwrap();
}

fn try_post(stream: &mut TcpStream, body: &[u8], extra: &str) -> std::io::Result<()> {
    let head = format!("POST / HTTP/1.1\r\nHost: x\r\n{extra}Content-Length: {}\r\n\r\n", body.len());
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)
}

fn connect(addr: SocketAddr) -> (TcpStream, BufReader<TcpStream>) {
    let stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let reader = BufReader::new(stream.try_clone().unwrap());
    (stream, reader)
}

/// An upstream that answers one request with `answer` and sends the raw request it got.
fn raw_upstream(answer: &'static [u8]) -> (SocketAddr, mpsc::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&got).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|line| {
                        line.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if got.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            answer.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(answer).unwrap();
        sender.send(got).unwrap();
    });
    (addr, received)
}

#[test]
fn batches_pass_through_byte_for_byte_with_ids_echoed() {
    let answer: &'static [u8] =
        b"[ {\"jsonrpc\":\"2.0\",\"id\":\"b\",\"result\":1},{\"id\" : 7 ,\"jsonrpc\":\"2.0\",\"result\":\"0xAb\"} ]";
    let (upstream, received) = raw_upstream(answer);
    let proxy = Proxy::start(options(&format!("http://{upstream}/rpc/path?x=1"))).unwrap();
    let batch = br#"[ {"jsonrpc":"2.0","id":"b","method":"getSlot"} , {"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":[]}]"#;
    let (mut stream, mut reader) = connect(proxy.local_addr());
    post(&mut stream, batch, "Authorization: Bearer t0ken\r\n");
    let (status, body) = read_response(&mut reader).unwrap();
    assert_eq!(status, 200);
    assert_eq!(body, answer, "the upstream's body comes back unchanged");
    let got = received.recv_timeout(Duration::from_secs(10)).unwrap();
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("POST /rpc/path?x=1 HTTP/1.1\r\n"), "{text}");
    assert!(text.contains("Authorization: Bearer t0ken\r\n"), "{text}");
    assert!(got.ends_with(batch), "the batch went upstream byte for byte: {text}");
    let stats = proxy.stop();
    assert_eq!(stats.methods[BATCH_KEY].count(), 1);
    assert_eq!(stats.requests, 1);
}

#[test]
fn static_mock_answers_come_back_with_ids_echoed() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let proxy = Proxy::start(options(&node.url())).unwrap();
    let (mut stream, mut reader) = connect(proxy.local_addr());
    // Pipelined: both requests in one write, answered in order.
    let mut both = Vec::new();
    for id in ["\"x-1\"", "42"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot"}}"#);
        both.extend_from_slice(
            format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes(),
        );
    }
    stream.write_all(&both).unwrap();
    for id in ["\"x-1\"", "42"] {
        let (status, body) = read_response(&mut reader).unwrap();
        assert_eq!(status, 200);
        let text = String::from_utf8(body).unwrap();
        assert!(text.contains(&format!("\"id\":{id}")), "{text}");
    }
    let stats = proxy.stop();
    assert_eq!(stats.methods["getSlot"].count(), 2);
}

#[test]
fn an_upstream_that_is_down_gets_502_counted_and_the_proxy_serves_again_once_it_is_back() {
    // A free port: bound, then released.
    let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let proxy = Proxy::start(options(&format!("http://{addr}/"))).unwrap();
    let (mut stream, mut reader) = connect(proxy.local_addr());
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#;
    for _ in 0..3 {
        post(&mut stream, body, "");
        let (status, answer) = read_response(&mut reader).unwrap();
        assert_eq!(status, 502);
        let value: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(value["error"]["code"], -32603, "a JSON-RPC-shaped error");
    }
    assert_eq!(proxy.stats().upstream_failures.get(&UpstreamFailure::Connect), Some(&3));
    let mut node_options = MockOptions::new(Chain::Static);
    node_options.listen = addr;
    let node = MockServer::start(node_options).unwrap();
    post(&mut stream, body, "");
    let (status, _) = read_response(&mut reader).unwrap();
    assert_eq!(status, 200, "the same client connection is served once the upstream is back");
    let stats = proxy.stop();
    assert_eq!(stats.requests, 4);
    assert_eq!(stats.upstream_failures.values().sum::<u64>(), 3);
    node.stop();
}

#[test]
fn an_upstream_that_breaks_mid_response_is_a_bad_response() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..2 {
            let Ok((mut stream, _)) = listener.accept() else { return };
            let mut chunk = [0u8; 4096];
            let _ = stream.read(&mut chunk);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"");
        }
    });
    let proxy = Proxy::start(options(&format!("http://{addr}/"))).unwrap();
    let (mut stream, mut reader) = connect(proxy.local_addr());
    post(&mut stream, br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#, "");
    let (status, _) = read_response(&mut reader).unwrap();
    assert_eq!(status, 502);
    let stats = proxy.stop();
    assert_eq!(stats.upstream_failures.get(&UpstreamFailure::BadResponse), Some(&1));
}

/// Sends `n` requests one at a time (reconnecting after a drop); returns the answers that
/// were injected errors and the requests that got no answer.
fn run_faults(options: ProxyOptions, n: usize) -> (u64, u64, rpcbench::proxy::ProxyStats) {
    let proxy = Proxy::start(options).unwrap();
    let (mut injected, mut dropped) = (0, 0);
    let (mut stream, mut reader) = connect(proxy.local_addr());
    for id in 0..n {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot"}}"#);
        post(&mut stream, body.as_bytes(), "");
        match read_response(&mut reader) {
            Some((status, answer)) => {
                assert_eq!(status, 200);
                let value: serde_json::Value = serde_json::from_slice(&answer).unwrap();
                assert_eq!(value["id"], id, "the request's id is echoed");
                if value["error"]["code"] == -32603 {
                    injected += 1;
                }
            }
            None => {
                dropped += 1;
                (stream, reader) = connect(proxy.local_addr());
            }
        }
    }
    (injected, dropped, proxy.stop())
}

#[test]
fn fault_knobs_give_exact_counts_for_a_seed() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let mut faults = options(&node.url());
    faults.error_rate = 0.25;
    faults.drop_rate = 0.1;
    faults.seed = 11;
    let (injected, dropped, stats) = run_faults(faults.clone(), 200);
    assert!(injected > 20 && dropped > 5, "{injected} injected, {dropped} dropped");
    assert_eq!(stats.injected_errors, injected, "the proxy counts what the client saw");
    assert_eq!(stats.dropped, dropped);
    assert_eq!(stats.requests, 200);
    let again = run_faults(faults.clone(), 200);
    assert_eq!((again.0, again.1), (injected, dropped), "the same seed, the same faults");
    faults.seed = 12;
    let other = run_faults(faults, 200);
    assert_ne!((other.0, other.1), (injected, dropped), "another seed, other draws");
}

#[test]
fn the_metrics_endpoint_publishes_phases_by_method() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let proxy =
        Proxy::start_with_metrics(options(&node.url()), Some("127.0.0.1:0".parse().unwrap())).unwrap();
    let (mut stream, mut reader) = connect(proxy.local_addr());
    post(&mut stream, br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#, "");
    read_response(&mut reader).unwrap();
    // The proxy records a request's phases after it has written the answer (the write is one
    // of them), so the answer alone does not say they are recorded: a scrape right after it
    // saw none while the proxy's thread waited for a core. The next request on the same
    // connection is answered only after the first one's phases are in.
    post(&mut stream, br#"{"jsonrpc":"2.0","id":2,"method":"getBalance"}"#, "");
    read_response(&mut reader).unwrap();
    let metrics = proxy.metrics_url().unwrap();
    let addr = metrics.trim_start_matches("http://").trim_end_matches("/metrics").to_string();
    let mut scrape = TcpStream::connect(addr).unwrap();
    scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    scrape.read_to_string(&mut text).unwrap();
    for phase in ["read", "upstream", "write", "overhead"] {
        assert!(
            text.contains(&format!(
                "rpcbench_proxy_phase_seconds_count{{phase=\"{phase}\",method=\"getSlot\"}} 1"
            )),
            "{text}"
        );
    }
    // Counted before each answer is written: both requests.
    assert!(text.contains("rpcbench_proxy_relayed_requests_total 2"), "{text}");
    proxy.stop();
}

/// Whether the proxy closed `stream` without answering anything (end of stream or a reset;
/// the read timeout is not a close).
fn closed_without_answer(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(err) => !matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

/// A request answered with 200 on a new connection, retried while a freed place is still
/// being given back (the proxy learns of a client's close when it reads it).
fn served_on_a_new_connection(addr: SocketAddr) -> bool {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#;
    (0..200).any(|_| {
        let (mut stream, mut reader) = connect(addr);
        // A connection past the cap is closed at once: the request may meet the reset while
        // it is written (a panic here before), as well as when the answer is read.
        let answer = try_post(&mut stream, body, "").ok().and_then(|()| read_response(&mut reader));
        match answer {
            Some((status, _)) => status == 200,
            None => {
                std::thread::sleep(Duration::from_millis(10));
                false
            }
        }
    })
}

#[test]
fn idle_clients_past_the_connection_cap_are_closed_at_once_and_their_places_come_back() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let mut options = options(&node.url());
    options.max_connections = Some(2);
    // Never reached here: every close below is the cap's.
    options.idle_timeout = Some(Duration::from_secs(3600));
    let proxy = Proxy::start(options).unwrap();
    let (idle_a, _) = connect(proxy.local_addr());
    let (idle_b, _) = connect(proxy.local_addr());
    // The two idle clients hold both places (accepted in order on one task).
    let (mut extra, _) = connect(proxy.local_addr());
    assert!(closed_without_answer(&mut extra), "a connection past the cap is closed");
    drop(idle_a);
    assert!(served_on_a_new_connection(proxy.local_addr()), "a closed client gives its place back");
    drop(idle_b);
    proxy.stop();
    node.stop();
}

#[test]
fn an_idle_or_trickling_client_is_closed_after_the_idle_timeout_freeing_its_place() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let mut options = options(&node.url());
    options.max_connections = Some(1);
    options.idle_timeout = Some(Duration::from_millis(100));
    let proxy = Proxy::start(options).unwrap();
    // A head that never completes, then nothing.
    let (mut slow, _) = connect(proxy.local_addr());
    slow.write_all(b"POST / HTTP/1.1\r\nContent-Le").unwrap();
    assert!(closed_without_answer(&mut slow), "the idle timeout closes it");
    assert!(served_on_a_new_connection(proxy.local_addr()));
    proxy.stop();
    node.stop();
}

#[test]
fn a_request_waiting_past_the_queue_timeout_for_an_upstream_connection_gets_a_502_counted() {
    // An upstream whose first answer waits until the test releases it.
    let (release, released) = mpsc::channel::<()>();
    let released = std::sync::Mutex::new(released);
    let upstream = crate::util::TestServer::start(move |_| {
        let _ = released.lock().unwrap().recv_timeout(Duration::from_secs(60));
        crate::util::json_200(r#"{"jsonrpc":"2.0","id":1,"result":1}"#)
    });
    let mut options = options(&upstream.url());
    options.upstream_connections = 1;
    options.queue_timeout = Duration::from_millis(50);
    let proxy = Proxy::start(options).unwrap();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#;
    let (mut slow, mut slow_reader) = connect(proxy.local_addr());
    post(&mut slow, body, "");
    // Wait until the slow call holds the one upstream connection.
    while upstream.requests.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (mut other, mut other_reader) = connect(proxy.local_addr());
    post(&mut other, body, "");
    let (status, answer) = read_response(&mut other_reader).unwrap();
    assert_eq!(status, 502);
    assert!(String::from_utf8_lossy(&answer).contains("queue_timeout"));
    release.send(()).unwrap();
    assert_eq!(read_response(&mut slow_reader).unwrap().0, 200, "the slow call is still answered");
    let stats = proxy.stop();
    assert_eq!(stats.upstream_failures.get(&UpstreamFailure::QueueTimeout), Some(&1));
    upstream.stop();
}

#[test]
fn the_proxy_relays_to_an_http2_upstream_chosen_by_the_wire_selection() {
    // The mock node speaks h2c with prior knowledge on its port: over HTTP/2 every request
    // (pipelined from one client, and from several) comes back answered.
    let node = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let mut h2 = options(&node.url());
    h2.upstream_http = rpcbench::engine::config::HttpVersion::H2c;
    let proxy = Proxy::start(h2.clone()).unwrap();
    let clients: Vec<_> = (0..4)
        .map(|client| {
            let addr = proxy.local_addr();
            std::thread::spawn(move || {
                let (mut stream, mut reader) = connect(addr);
                for n in 0..10 {
                    let body = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"getSlot"}}"#, client * 100 + n);
                    post(&mut stream, body.as_bytes(), "");
                    let (status, answer) = read_response(&mut reader).unwrap();
                    assert_eq!(status, 200);
                    let text = String::from_utf8(answer).unwrap();
                    assert!(text.contains(&format!("\"id\":{}", client * 100 + n)), "{text}");
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let stats = proxy.stop();
    assert_eq!(stats.methods["getSlot"].count(), 40);
    assert!(stats.upstream_failures.is_empty(), "{:?}", stats.upstream_failures);
    // An upstream that speaks only HTTP/1.1 is not reached over HTTP/2: the same request fails
    // upstream (502), so the relay above really spoke HTTP/2.
    let (h1_only, _requests) = raw_upstream(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
    let mut to_h1 = options(&format!("http://{h1_only}/"));
    to_h1.upstream_http = rpcbench::engine::config::HttpVersion::H2c;
    to_h1.upstream_timeout = Duration::from_secs(2);
    let proxy = Proxy::start(to_h1).unwrap();
    let (mut stream, mut reader) = connect(proxy.local_addr());
    post(&mut stream, br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#, "");
    assert_eq!(read_response(&mut reader).map(|(status, _)| status), Some(502));
    drop(proxy);
}
