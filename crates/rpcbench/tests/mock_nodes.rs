//! Integration tests of the mock nodes over real HTTP: every chain is started with
//! `MockServer::start` on 127.0.0.1:0 and driven by a tiny blocking HTTP/1.1 client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rpcbench::mock::{Chain, Faults, Latency, MockOptions, MockServer, Stall};
use serde_json::{json, Value};

/// One HTTP response.
#[derive(Debug)]
struct Reply {
    status: u16,
    content_type: Option<String>,
    /// Every header, names in lowercase.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, value)| value.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// A keep-alive HTTP/1.1 connection.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.set_nodelay(true).unwrap();
        Client { reader: BufReader::new(stream) }
    }

    fn post(&mut self, body: &[u8]) -> Reply {
        let head = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        self.reader.get_mut().write_all(&request).unwrap();
        self.read_reply()
    }

    fn read_reply(&mut self) -> Reply {
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status: u16 = line.split_whitespace().nth(1).expect("status").parse().unwrap();
        let mut content_length = 0usize;
        let mut content_type = None;
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => content_length = value.trim().parse().unwrap(),
                "content-type" => content_type = Some(value.trim().to_string()),
                _ => {}
            }
            headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
        }
        let mut body = vec![0; content_length];
        self.reader.read_exact(&mut body).unwrap();
        Reply { status, content_type, headers, body }
    }

    /// Reads the answer to a HEAD request: a head only, whatever its Content-Length says.
    fn read_head_only(&mut self) -> Reply {
        let mut reply = self.read_reply_with_body(false);
        reply.body.clear();
        reply
    }

    fn read_reply_with_body(&mut self, with_body: bool) -> Reply {
        if with_body {
            return self.read_reply();
        }
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status: u16 = line.split_whitespace().nth(1).expect("status").parse().unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
        }
        let content_type = headers.iter().find(|(n, _)| n == "content-type").map(|(_, v)| v.clone());
        Reply { status, content_type, headers, body: Vec::new() }
    }

    /// Sends raw bytes as they are.
    fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).unwrap();
    }

    /// Whether the server has closed the connection (reads EOF, or a reset).
    fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(self.reader.read(&mut byte), Ok(0) | Err(_))
    }
}

fn post(addr: SocketAddr, body: &str) -> Reply {
    Client::connect(addr).post(body.as_bytes())
}

/// Calls `method` and returns the whole response object.
fn rpc(addr: SocketAddr, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let reply = post(addr, &body);
    assert_eq!(reply.status, 200, "{method}");
    reply.json()
}

/// Calls `method` and returns its result, failing on an error.
fn result(addr: SocketAddr, method: &str, params: Value) -> Value {
    let response = rpc(addr, method, params);
    assert!(response.get("error").is_none(), "{method}: {response}");
    response["result"].clone()
}

/// Calls `method` and returns its error (code, message).
fn error(addr: SocketAddr, method: &str, params: Value) -> (i64, String) {
    let response = rpc(addr, method, params);
    let error = &response["error"];
    assert!(error.is_object(), "{method} should fail: {response}");
    (error["code"].as_i64().unwrap(), error["message"].as_str().unwrap().to_string())
}

fn start(options: MockOptions) -> MockServer {
    MockServer::start(options).expect("mock server starts")
}

fn start_chain(chain: Chain) -> MockServer {
    start(MockOptions::new(chain))
}

fn is_quantity(value: &Value) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let Some(digits) = text.strip_prefix("0x") else {
        return false;
    };
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && (digits == "0" || !digits.starts_with('0'))
}

fn is_data(value: &Value, bytes: usize) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let Some(digits) = text.strip_prefix("0x") else {
        return false;
    };
    digits.len() == bytes * 2 && digits.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn quantity(value: &Value) -> u64 {
    assert!(is_quantity(value), "not a quantity: {value}");
    u64::from_str_radix(&value.as_str().unwrap()[2..], 16).unwrap()
}

// ---------------------------------------------------------------- envelope and static

#[test]
fn static_answers_any_method_and_echoes_ids() {
    let server = start_chain(Chain::Static);
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert!(server.url().ends_with('/'));
    let mut client = Client::connect(server.local_addr());
    for (id, method) in [("1", "eth_blockNumber"), ("\"abc\"", "getSlot"), ("null", "whatever"), ("-17", "x")]
    {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":[]}}"#);
        // The same connection is reused: keep-alive works.
        let reply = client.post(body.as_bytes());
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type.as_deref(), Some("application/json"));
        assert_eq!(
            String::from_utf8(reply.body).unwrap(),
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#)
        );
    }
    server.stop();
}

#[test]
fn envelope_errors_have_the_standard_codes() {
    let server = start_chain(Chain::Static);
    let addr = server.local_addr();
    let code = |body: &str| {
        let reply = post(addr, body);
        assert_eq!(reply.status, 200, "{body}");
        let response = reply.json();
        assert_eq!(response["jsonrpc"], "2.0");
        (response["error"]["code"].as_i64().unwrap(), response["id"].clone())
    };
    assert_eq!(code("{\"jsonrpc\":\"2.0\",\"id\":1,"), (-32700, Value::Null));
    assert_eq!(code("\u{1}garbage"), (-32700, Value::Null));
    assert_eq!(code("[]"), (-32600, Value::Null));
    assert_eq!(code(r#"{"jsonrpc":"1.0","id":4,"method":"x"}"#), (-32600, json!(4)));
    assert_eq!(code(r#"{"jsonrpc":"2.0","id":"m","params":[]}"#), (-32600, json!("m")));
    assert_eq!(code(r#""just a string""#), (-32600, Value::Null));

    // Invalid UTF-8 is a parse error, not a crash.
    let reply = Client::connect(addr).post(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}");
    assert_eq!(reply.json()["error"]["code"], -32700);
    // Deep nesting too.
    let deep = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}}}"#, "[".repeat(50_000));
    assert_eq!(post(addr, &deep).json()["error"]["code"], -32700);
    // Huge numbers as ids are echoed verbatim.
    let reply = post(addr, r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#);
    assert!(String::from_utf8(reply.body).unwrap().contains(r#""id":123456789012345678901234567890,"#));
}

#[test]
fn notifications_get_no_content() {
    let server = start_chain(Chain::Static);
    let mut client = Client::connect(server.local_addr());
    let reply = client.post(br#"{"jsonrpc":"2.0","method":"getSlot"}"#);
    assert_eq!(reply.status, 204);
    assert!(reply.body.is_empty());
    let reply =
        client.post(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b","params":[]}]"#);
    assert_eq!(reply.status, 204);
    // The connection is still usable afterwards.
    assert_eq!(client.post(br#"{"jsonrpc":"2.0","id":2,"method":"a"}"#).json()["result"], "0x1");
}

#[test]
fn batches_answer_each_request_in_order() {
    let server = start_chain(Chain::Ethereum);
    let body = r#"[
        {"jsonrpc":"2.0","id":1,"method":"eth_chainId"},
        {"jsonrpc":"2.0","method":"eth_blockNumber"},
        {"jsonrpc":"2.0","id":"two","method":"no_such_method"},
        42,
        {"jsonrpc":"2.0","id":3,"method":"eth_getBalance","params":["0x12"]},
        {"jsonrpc":"2.0","id":null,"method":"net_version"}
    ]"#;
    let reply = post(server.local_addr(), body);
    assert_eq!(reply.status, 200);
    let responses = reply.json();
    let responses = responses.as_array().expect("a batch answers an array");
    assert_eq!(responses.len(), 5, "the notification is omitted: {responses:?}");
    assert_eq!(responses[0]["id"], 1);
    assert_eq!(responses[0]["result"], "0x539");
    assert_eq!(responses[1]["id"], "two");
    assert_eq!(responses[1]["error"]["code"], -32601);
    assert!(responses[1]["error"]["message"].as_str().unwrap().contains("no_such_method"));
    assert_eq!(responses[2]["id"], Value::Null);
    assert_eq!(responses[2]["error"]["code"], -32600);
    assert_eq!(responses[3]["id"], 3);
    assert_eq!(responses[3]["error"]["code"], -32602);
    assert_eq!(responses[4]["id"], Value::Null);
    assert_eq!(responses[4]["result"], "1337");
}

#[test]
fn limits_on_body_size_and_batch_length() {
    let mut options = MockOptions::new(Chain::Static);
    options.max_body_bytes = 1000;
    options.max_batch_len = 5;
    let server = start(options);
    let addr = server.local_addr();

    let padding = "x".repeat(2000);
    let reply = post(addr, &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"a","params":["{padding}"]}}"#));
    assert_eq!(reply.status, 413);
    let response = reply.json();
    assert_eq!(response["error"]["code"], -32600);
    assert!(response["error"]["message"].as_str().unwrap().contains("1000"), "{response}");

    let call = r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#;
    let batch = |n: usize| format!("[{}]", vec![call; n].join(","));
    assert_eq!(post(addr, &batch(5)).json().as_array().unwrap().len(), 5);
    let response = post(addr, &batch(6)).json();
    assert_eq!(response.as_array().map(Vec::len), Some(1), "geth's one-item array: {response}");
    assert_eq!(response[0]["id"], 1, "the first call's id");
    assert_eq!(response[0]["error"]["code"], -32600);
    assert_eq!(response[0]["error"]["message"], "batch too large", "{response}");
}

#[test]
fn start_reports_bind_errors_and_bad_options() {
    let server = start_chain(Chain::Static);
    let mut options = MockOptions::new(Chain::Static);
    options.listen = server.local_addr();
    let err = MockServer::start(options).unwrap_err();
    assert!(err.to_string().contains(&server.local_addr().to_string()), "{err}");
    let mut options = MockOptions::new(Chain::Static);
    options.faults.stall = Some(Stall { pause: Duration::from_secs(2), every: Duration::from_secs(1) });
    assert!(MockServer::start(options).unwrap_err().to_string().contains("stall"));
    // Dropping stops the server: the port no longer accepts.
    let addr = server.local_addr();
    drop(server);
    assert!(TcpStream::connect(addr).is_err());
}

// ---------------------------------------------------------------- HTTP handling

fn request_bytes(head_extra: &str, body: &str) -> Vec<u8> {
    format!("POST / HTTP/1.1\r\nHost: x\r\n{head_extra}Content-Length: {}\r\n\r\n{body}", body.len())
        .into_bytes()
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    for chain in [Chain::Static, Chain::Solana] {
        let server = start_chain(chain);
        let mut client = Client::connect(server.local_addr());
        let ids = ["1", "\"two\"", "null", "-4.5e2", "\"\\u00e9\""];
        let mut bytes = Vec::new();
        for id in ids {
            bytes.extend(request_bytes("", &format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot"}}"#)));
        }
        bytes.extend(request_bytes("", r#"{"jsonrpc":"2.0","method":"getSlot"}"#));
        bytes.extend(request_bytes(
            "",
            r#"[{"jsonrpc":"2.0","id":7,"method":"getSlot"},{"jsonrpc":"2.0","id":8,"method":"getSlot"}]"#,
        ));
        client.send(&bytes);
        for id in ids {
            let reply = client.read_reply();
            assert_eq!(reply.status, 200);
            let text = String::from_utf8(reply.body).unwrap();
            assert!(
                text.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#)),
                "{chain}: {text}"
            );
        }
        assert_eq!(client.read_reply().status, 204);
        let batch = client.read_reply().json();
        assert_eq!((batch[0]["id"].clone(), batch[1]["id"].clone()), (json!(7), json!(8)));
        // Still open.
        assert_eq!(client.post(br#"{"jsonrpc":"2.0","id":9,"method":"getSlot"}"#).json()["id"], 9);
    }
}

#[test]
fn a_request_split_into_single_bytes_is_answered() {
    let server = start_chain(Chain::Static);
    let mut client = Client::connect(server.local_addr());
    let bytes = request_bytes(
        "Content-Type: application/json\r\n",
        r#"{"jsonrpc":"2.0","id":"slow","method":"x","params":[1,2]}"#,
    );
    for _ in 0..2 {
        for byte in &bytes {
            client.send(std::slice::from_ref(byte));
        }
        let reply = client.read_reply();
        assert_eq!(String::from_utf8(reply.body).unwrap(), r#"{"jsonrpc":"2.0","id":"slow","result":"0x1"}"#);
    }
}

#[test]
fn connection_close_and_http_1_0() {
    let server = start_chain(Chain::Static);
    let addr = server.local_addr();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#;

    let mut client = Client::connect(addr);
    client.send(&request_bytes("Connection: close\r\n", body));
    let reply = client.read_reply();
    assert_eq!((reply.status, reply.header("connection")), (200, Some("close")));
    assert!(client.is_closed());

    let mut client = Client::connect(addr);
    client.send(format!("POST / HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    let reply = client.read_reply();
    assert_eq!(reply.json()["result"], "0x1");
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(client.is_closed());

    let mut client = Client::connect(addr);
    for _ in 0..2 {
        client.send(
            format!(
                "POST / HTTP/1.0\r\nConnection: Keep-Alive\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        let reply = client.read_reply();
        assert_eq!(reply.json()["result"], "0x1");
        assert_eq!(reply.header("connection"), Some("keep-alive"));
    }
}

#[test]
fn other_methods_get_405() {
    let server = start_chain(Chain::Static);
    let mut client = Client::connect(server.local_addr());
    client.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let reply = client.read_reply();
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("POST"));
    assert_eq!(reply.json()["error"]["code"], -32600);
    let length: usize = reply.header("content-length").unwrap().parse().unwrap();
    // HEAD: the same head, no body; the connection stays in step.
    client.send(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n");
    let reply = client.read_head_only();
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("content-length").unwrap().parse::<usize>().unwrap(), length);
    // A body sent with another method is skipped.
    client.send(b"PUT / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(client.read_reply().status, 405);
    assert_eq!(client.post(br#"{"jsonrpc":"2.0","id":3,"method":"x"}"#).json()["id"], 3);
}

#[test]
fn bad_heads_and_lengths_are_refused_and_close() {
    let mut options = MockOptions::new(Chain::Static);
    options.max_body_bytes = 1000;
    let server = start(options);
    let addr = server.local_addr();
    let refused = |bytes: &[u8]| {
        let mut client = Client::connect(addr);
        client.send(bytes);
        let reply = client.read_reply();
        assert_eq!(reply.header("connection"), Some("close"), "{}", String::from_utf8_lossy(bytes));
        assert_eq!(reply.json()["error"]["code"], -32600);
        assert!(client.is_closed());
        reply.status
    };
    assert_eq!(refused(b"\x01\x02 garbage\r\n\r\n"), 400);
    assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n"), 400);
    assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"), 400);
    assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999999\r\n\r\n"), 413);
    // Refused from the declared length alone, before any body byte is sent.
    assert_eq!(refused(b"POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n"), 413);
    assert_eq!(refused(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), 411);
    let huge_head = format!("POST / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(70 * 1024));
    assert_eq!(refused(huge_head.as_bytes()), 431);
    // A body of exactly the limit is fine.
    let padding = "x".repeat(1000 - r#"{"jsonrpc":"2.0","id":1,"method":"a","params":[""]}"#.len());
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"a","params":["{padding}"]}}"#);
    assert_eq!(body.len(), 1000);
    assert_eq!(post(addr, &body).json()["result"], "0x1");
}

#[test]
fn expect_100_continue_gets_an_interim_answer() {
    let server = start_chain(Chain::Static);
    let mut client = Client::connect(server.local_addr());
    let body = r#"{"jsonrpc":"2.0","id":5,"method":"x"}"#;
    client.send(
        format!("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n", body.len())
            .as_bytes(),
    );
    assert_eq!(client.read_reply().status, 100);
    client.send(body.as_bytes());
    assert_eq!(client.read_reply().json()["id"], 5);
}

#[test]
fn large_bodies_grow_the_buffer() {
    let server = start_chain(Chain::Ethereum);
    let mut client = Client::connect(server.local_addr());
    let calls: Vec<String> = (0..100)
        .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_chainId","params":[]}}"#))
        .collect();
    let body = format!("[{}]", calls.join(","));
    assert!(body.len() > 5000);
    for _ in 0..3 {
        let reply = client.post(format!("{body}{}", " ".repeat(20_000)).as_bytes());
        assert_eq!(reply.json().as_array().unwrap().len(), 100);
    }
}

#[test]
fn hostile_bytes_never_break_the_server() {
    use rand::{Rng, SeedableRng};
    let mut options = MockOptions::new(Chain::Static);
    options.max_body_bytes = 4096;
    let server = start(options);
    let addr = server.local_addr();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
    let fragments: [&[u8]; 12] = [
        b"POST / HTTP/1.1\r\n",
        b"GET / HTTP/1.0\r\n",
        b"Content-Length: ",
        b"Content-Length: 18446744073709551616\r\n",
        b"Transfer-Encoding: chunked\r\n",
        b"Connection: close\r\n",
        b"Expect: 100-continue\r\n",
        b"\r\n",
        b"12",
        br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
        b"\xff\x00",
        b": ",
    ];
    for _ in 0..60 {
        let mut bytes = Vec::new();
        for _ in 0..rng.gen_range(1..16) {
            if rng.gen_bool(0.2) {
                bytes.push(rng.gen());
            } else {
                bytes.extend_from_slice(fragments[rng.gen_range(0..fragments.len())]);
            }
        }
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
        let _ = stream.write_all(&bytes);
        let _ = stream.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink);
        if !sink.is_empty() {
            assert!(sink.starts_with(b"HTTP/1.1 "), "{}", String::from_utf8_lossy(&sink));
        }
    }
    // Still serving.
    assert_eq!(post(addr, r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#).json()["result"], "0x1");
}

#[test]
fn several_threads_serve_too() {
    let mut options = MockOptions::new(Chain::Static);
    options.threads = 3;
    let server = start(options);
    let addr = server.local_addr();
    let handles: Vec<_> = (0..6)
        .map(|n| {
            std::thread::spawn(move || {
                let mut client = Client::connect(addr);
                (0..50).all(|i| {
                    let body = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"x"}}"#, n * 1000 + i);
                    client.post(body.as_bytes()).json()["id"] == n * 1000 + i
                })
            })
        })
        .collect();
    assert!(handles.into_iter().all(|h| h.join().unwrap()));
    server.stop();
}

// ---------------------------------------------------------------- fault knobs

#[test]
fn latency_delays_every_answer() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.latency =
        Some(Latency { base: Duration::from_millis(150), jitter: Duration::from_millis(20) });
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    for _ in 0..3 {
        let sent = Instant::now();
        let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
        assert_eq!(reply.json()["result"], "0x1");
        assert!(sent.elapsed() >= Duration::from_millis(130), "{:?}", sent.elapsed());
    }
}

#[test]
fn blocking_latency_serializes_requests_on_one_thread() {
    let mut options = MockOptions::new(Chain::Static);
    options.threads = 1;
    options.faults.blocking_latency = Some(Duration::from_millis(150));
    let server = start(options);
    let addr = server.local_addr();
    // Connect everything first so the requests really are concurrent.
    let clients: Vec<Client> = (0..4).map(|_| Client::connect(addr)).collect();
    let sent = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            std::thread::spawn(move || client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#))
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().json()["result"], "0x1");
    }
    assert!(sent.elapsed() >= Duration::from_millis(600), "4 x 150ms took only {:?}", sent.elapsed());
}

#[test]
fn async_latency_does_not_serialize_requests() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.latency = Some(Latency::fixed(Duration::from_millis(500)));
    let server = start(options);
    let addr = server.local_addr();
    let clients: Vec<Client> = (0..5).map(|_| Client::connect(addr)).collect();
    let sent = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            std::thread::spawn(move || client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#))
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().status, 200);
    }
    let elapsed = sent.elapsed();
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    // Serialized, 5 x 500ms would take 2.5 s.
    assert!(elapsed < Duration::from_millis(2000), "sleeps should overlap, took {elapsed:?}");
}

#[test]
fn error_rate_one_fails_everything() {
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.error_rate = 1.0;
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    for id in 0..50 {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot"}}"#);
        let reply = client.post(body.as_bytes());
        assert_eq!(reply.status, 200);
        let response = reply.json();
        assert_eq!(response["id"], id);
        assert_eq!(response["error"]["code"], -32603);
        assert_eq!(response["error"]["message"], "Internal error (injected)");
    }
}

#[test]
fn error_rate_half_fails_about_half() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.error_rate = 0.5;
    options.seed = 99;
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    let mut errors = 0;
    for _ in 0..400 {
        let response = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#).json();
        if response.get("error").is_some() {
            assert_eq!(response["error"]["code"], -32603);
            errors += 1;
        } else {
            assert_eq!(response["result"], "0x1");
        }
    }
    assert!((120..=280).contains(&errors), "{errors} errors out of 400");
}

#[test]
fn rate_limit_rejects_the_excess_with_429() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.rate_limit = Some(20.0);
    let server = start(options);
    let addr = server.local_addr();
    let clients: Vec<Client> = (0..10).map(|_| Client::connect(addr)).collect();
    let sent = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            std::thread::spawn(move || {
                (0..10).map(|_| client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#)).collect::<Vec<_>>()
            })
        })
        .collect();
    let replies: Vec<Reply> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let elapsed = sent.elapsed();
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    assert_eq!(ok + limited.len(), 100);
    assert!(ok >= 1, "the burst goes through");
    let allowed = 2.0 + 20.0 * elapsed.as_secs_f64() + 1.0;
    assert!(ok as f64 <= allowed, "{ok} answered in {elapsed:?}, at most {allowed} allowed");
    assert!(!limited.is_empty());
    let response = limited[0].json();
    assert_eq!(response["error"]["code"], -32005);
    assert_eq!(response["error"]["message"], "rate limit exceeded");
    assert_eq!(response["error"]["data"]["allowed_rps"], 20.0);
    // Tokens come back with time.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(post(addr, r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#).status, 200);
}

#[test]
fn stall_holds_requests_until_the_pause_ends() {
    let before_start = Instant::now();
    let mut options = MockOptions::new(Chain::Static);
    // Paused from 0.9 s to 1.5 s after start, then 2.4 s to 3.0 s, ...
    options.faults.stall =
        Some(Stall { pause: Duration::from_millis(600), every: Duration::from_millis(1500) });
    let server = start(options);
    let after_start = Instant::now();
    let mut client = Client::connect(server.local_addr());
    let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
    assert_eq!(reply.status, 200);
    // The server started between `before_start` and `after_start`, so 1 s after
    // `after_start` is inside the first pause, which ends 1.5 s after start at the earliest.
    std::thread::sleep((after_start + Duration::from_millis(1000)).saturating_duration_since(Instant::now()));
    let sent = Instant::now();
    assert!(
        sent < before_start + Duration::from_millis(1400),
        "the machine is too slow for this test: the request missed the pause"
    );
    let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
    assert_eq!(reply.json()["result"], "0x1");
    assert!(
        before_start.elapsed() >= Duration::from_millis(1500),
        "answered during the pause, after {:?}",
        sent.elapsed()
    );
    assert!(sent.elapsed() >= Duration::from_millis(100), "{:?}", sent.elapsed());
}

#[test]
fn faults_parse_from_text() {
    assert_eq!("5ms:2ms".parse::<Latency>().unwrap().jitter, Duration::from_millis(2));
    assert_eq!("2s/10s".parse::<Stall>().unwrap().every, Duration::from_secs(10));
    assert_eq!(rpcbench::mock::parse_rate_limit("50/s").unwrap(), 50.0);
    let faults = Faults { error_rate: 2.0, ..Faults::default() };
    let mut options = MockOptions::new(Chain::Static);
    options.faults = faults;
    assert!(MockServer::start(options).is_err());
}

// ---------------------------------------------------------------- solana

const SEED_ACCOUNT: &str = "4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ";

fn is_base58(value: &Value, bytes: usize) -> bool {
    value
        .as_str()
        .and_then(|text| bs58::decode(text).into_vec().ok())
        .is_some_and(|decoded| decoded.len() == bytes)
}

/// A non-skipped slot in the past, found with getBlocks.
fn some_solana_block(addr: SocketAddr) -> u64 {
    let blocks = result(addr, "getBlocks", json!([900, 960]));
    let blocks = blocks.as_array().unwrap();
    assert!(blocks.len() >= 50 && blocks.len() < 61, "~5% skipped: {}", blocks.len());
    blocks[10].as_u64().unwrap()
}

#[test]
fn solana_slots_heights_and_node_info() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let slot = result(addr, "getSlot", json!([])).as_u64().unwrap();
    assert!((1000..1100).contains(&slot), "{slot}");
    let height = result(addr, "getBlockHeight", json!([{"commitment": "finalized"}])).as_u64().unwrap();
    assert!(height < slot && height > slot * 9 / 10, "{height} vs {slot}");
    assert_eq!(result(addr, "getHealth", json!([])), "ok");
    let version = result(addr, "getVersion", json!([]));
    assert!(version["solana-core"].is_string() && version["feature-set"].is_u64(), "{version}");
    let epoch = result(addr, "getEpochInfo", json!([]));
    for key in ["absoluteSlot", "blockHeight", "epoch", "slotIndex", "slotsInEpoch", "transactionCount"] {
        assert!(epoch[key].is_u64(), "{key}: {epoch}");
    }
    let latest = result(addr, "getLatestBlockhash", json!([]));
    assert!(latest["context"]["slot"].is_u64() && latest["context"]["apiVersion"].is_string());
    assert!(is_base58(&latest["value"]["blockhash"], 32), "{latest}");
    assert!(latest["value"]["lastValidBlockHeight"].as_u64().unwrap() > height);
    let (code, message) = error(addr, "getSlot", json!([{"commitment": "final"}]));
    assert_eq!(code, -32602);
    assert!(message.contains("unknown variant `final`"), "{message}");
    let (code, message) = error(addr, "getSlots", json!([]));
    assert_eq!(code, -32601);
    assert!(message.contains("getSlots"), "{message}");
}

#[test]
fn solana_slots_advance_with_slot_time() {
    let mut options = MockOptions::new(Chain::Solana);
    options.slot_time = Duration::from_millis(50);
    let server = start(options);
    let first = result(server.local_addr(), "getSlot", json!([])).as_u64().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let later = result(server.local_addr(), "getSlot", json!([])).as_u64().unwrap();
    assert!(later >= first + 4, "{first} -> {later}");
}

#[test]
fn solana_accounts() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let balance = result(addr, "getBalance", json!([SEED_ACCOUNT]));
    assert!(balance["context"]["slot"].is_u64());
    assert!(balance["value"].as_u64().unwrap() > 0, "{balance}");

    let info = result(addr, "getAccountInfo", json!([SEED_ACCOUNT, {"encoding": "base64"}]));
    let value = &info["value"];
    assert_eq!(value["lamports"], balance["value"]);
    assert_eq!(value["owner"], "11111111111111111111111111111111");
    assert_eq!(value["executable"], false);
    assert_eq!(value["data"], json!(["", "base64"]));
    assert!(value["rentEpoch"].is_u64() && value["space"].is_u64());

    let unknown = bs58::encode([9u8; 32]).into_string();
    assert_eq!(result(addr, "getAccountInfo", json!([unknown]))["value"], Value::Null);
    assert_eq!(result(addr, "getBalance", json!([unknown]))["value"], 0);
    let many = result(addr, "getMultipleAccounts", json!([[SEED_ACCOUNT, unknown], {"encoding": "base64"}]));
    assert_eq!(many["value"][0]["lamports"], balance["value"]);
    assert_eq!(many["value"][1], Value::Null);

    assert_eq!(
        error(addr, "getBalance", json!(["0OIl-not-base58"])),
        (-32602, "Invalid param: Invalid".into())
    );
    assert_eq!(error(addr, "getBalance", json!(["abc"])), (-32602, "Invalid param: WrongSize".into()));
    let (code, message) = error(addr, "getBalance", json!([]));
    assert_eq!(code, -32602);
    assert!(message.contains("missing"), "{message}");
    let (code, message) = error(addr, "getBalance", json!([42]));
    assert_eq!(code, -32602);
    assert!(message.contains("invalid type"), "{message}");
}

#[test]
fn solana_blocks_and_their_errors() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let slot = some_solana_block(addr);
    let block =
        result(addr, "getBlock", json!([slot, {"encoding": "json", "maxSupportedTransactionVersion": 0}]));
    assert!(is_base58(&block["blockhash"], 32) && is_base58(&block["previousBlockhash"], 32), "{block}");
    assert!(block["blockTime"].is_u64() && block["blockHeight"].is_u64());
    let parent = block["parentSlot"].as_u64().unwrap();
    assert!(parent < slot);
    let parent_block =
        result(addr, "getBlock", json!([parent, {"transactionDetails": "none", "rewards": false}]));
    assert_eq!(parent_block["blockhash"], block["previousBlockhash"]);
    assert!(parent_block.get("transactions").is_none() && parent_block.get("rewards").is_none());

    let transactions = block["transactions"].as_array().unwrap();
    assert!((10..=60).contains(&transactions.len()), "{}", transactions.len());
    let tx = &transactions[0];
    assert_eq!(tx["version"], "legacy");
    assert!(is_base58(&tx["transaction"]["signatures"][0], 64));
    let message = &tx["transaction"]["message"];
    assert!(message["accountKeys"].as_array().unwrap().iter().all(|k| is_base58(k, 32)));
    assert_eq!(message["header"]["numRequiredSignatures"], 1);
    assert!(message["instructions"][0]["programIdIndex"].is_u64());
    assert!(is_base58(&message["recentBlockhash"], 32));
    let meta = &tx["meta"];
    assert_eq!(meta["status"], json!({"Ok": null}));
    assert_eq!(meta["err"], Value::Null);
    assert!(meta["fee"].is_u64());
    let (pre, post) = (meta["preBalances"].as_array().unwrap(), meta["postBalances"].as_array().unwrap());
    assert_eq!(pre.len(), post.len());
    assert!(post[0].as_u64().unwrap() < pre[0].as_u64().unwrap());
    assert!(meta["logMessages"].as_array().unwrap().iter().all(Value::is_string));
    assert!(block["rewards"].is_array());

    // Same block, other encodings and details.
    let base64 = result(addr, "getBlock", json!([slot, {"encoding": "base64"}]));
    let encoded = &base64["transactions"][0]["transaction"];
    assert_eq!(encoded[1], "base64");
    use base64::Engine as _;
    let wire = base64::engine::general_purpose::STANDARD.decode(encoded[0].as_str().unwrap()).unwrap();
    let signature = bs58::decode(tx["transaction"]["signatures"][0].as_str().unwrap()).into_vec().unwrap();
    assert_eq!(&wire[1..65], &signature[..], "the wire format starts with the signature");
    let signatures = result(addr, "getBlock", json!([slot, {"transactionDetails": "signatures"}]));
    assert_eq!(signatures["signatures"].as_array().unwrap().len(), transactions.len());
    assert_eq!(signatures["signatures"][0], tx["transaction"]["signatures"][0]);
    assert_eq!(
        result(addr, "getBlock", json!([slot, "base58"]))["transactions"][0]["transaction"][1],
        "base58"
    );

    // A skipped slot, a future slot, bad params.
    let blocks = result(addr, "getBlocks", json!([900, 960]));
    let produced: Vec<u64> = blocks.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let skipped = (900..=960).find(|s| !produced.contains(s)).unwrap();
    let (code, message) = error(addr, "getBlock", json!([skipped]));
    assert_eq!(code, -32007);
    assert_eq!(
        message,
        format!("Slot {skipped} was skipped, or missing due to ledger jump to recent snapshot")
    );
    let (code, message) = error(addr, "getBlock", json!([1_000_000]));
    assert_eq!((code, message.as_str()), (-32004, "Block not available for slot 1000000"));
    let (code, message) = error(addr, "getBlock", json!([slot, {"transactionDetails": "most"}]));
    assert_eq!(code, -32602);
    assert!(message.contains("`most`"), "{message}");
    assert_eq!(error(addr, "getBlock", json!(["ten"])).0, -32602);
}

#[test]
fn solana_block_lists_and_range_limit() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let blocks = result(addr, "getBlocks", json!([990]));
    let blocks: Vec<u64> = blocks.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert!(blocks.windows(2).all(|w| w[0] < w[1]));
    assert!(blocks.first().is_some_and(|s| *s >= 990) && blocks.len() >= 9);
    let limited = result(addr, "getBlocksWithLimit", json!([100, 25]));
    assert_eq!(limited.as_array().unwrap().len(), 25);
    assert_eq!(result(addr, "getBlocks", json!([100, 50])), json!([]));
    let (code, message) = error(addr, "getBlocks", json!([0, 500_001]));
    assert_eq!((code, message.as_str()), (-32602, "Slot range too large; max 500000"));
    assert_eq!(error(addr, "getBlocksWithLimit", json!([0, 500_001])).0, -32602);
}

#[test]
fn solana_transactions_and_signatures_for_address() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let slot = some_solana_block(addr);
    let block = result(addr, "getBlock", json!([slot]));
    let tx = &block["transactions"][2];
    let signature = tx["transaction"]["signatures"][0].as_str().unwrap();
    let found = result(addr, "getTransaction", json!([signature, {"encoding": "json"}]));
    assert_eq!(found["slot"], slot);
    assert_eq!(found["transaction"], tx["transaction"]);
    assert_eq!(found["meta"], tx["meta"]);
    assert_eq!(found["blockTime"], block["blockTime"]);
    let unknown = bs58::encode([7u8; 64]).into_string();
    assert_eq!(result(addr, "getTransaction", json!([unknown])), Value::Null);
    assert_eq!(error(addr, "getTransaction", json!(["xyz0"])).0, -32602);

    let payer = tx["transaction"]["message"]["accountKeys"][0].as_str().unwrap();
    let history = result(addr, "getSignaturesForAddress", json!([payer, {"limit": 5}]));
    let history = history.as_array().unwrap();
    assert_eq!(history.len(), 5);
    let slots: Vec<u64> = history.iter().map(|h| h["slot"].as_u64().unwrap()).collect();
    assert!(slots.windows(2).all(|w| w[0] >= w[1]), "newest first: {slots:?}");
    for entry in history {
        assert!(is_base58(&entry["signature"], 64));
        assert_eq!(entry["err"], Value::Null);
        assert_eq!(entry["confirmationStatus"], "finalized");
        let tx = result(addr, "getTransaction", json!([entry["signature"]]));
        let keys = &tx["transaction"]["message"]["accountKeys"];
        assert!(keys[0] == payer || keys[1] == payer, "{keys}");
    }
    let older = result(
        addr,
        "getSignaturesForAddress",
        json!([payer, {"limit": 3, "before": history[1]["signature"]}]),
    );
    assert_eq!(older[0]["signature"], history[2]["signature"]);
    let until = result(addr, "getSignaturesForAddress", json!([payer, {"until": history[3]["signature"]}]));
    assert_eq!(until.as_array().unwrap().len(), 3);
    let (code, message) = error(addr, "getSignaturesForAddress", json!([payer, {"limit": 5000}]));
    assert_eq!(code, -32602);
    assert!(message.contains("1000"), "{message}");
}

// ---------------------------------------------------------------- ethereum

/// A recent block with at least 4 transactions, as a full block object.
fn busy_eth_block(addr: SocketAddr) -> Value {
    for number in (900..1000u64).rev() {
        let block = result(addr, "eth_getBlockByNumber", json!([format!("{number:#x}"), true]));
        if block["transactions"].as_array().unwrap().len() >= 4 {
            return block;
        }
    }
    panic!("no block with 4 transactions between 900 and 1000");
}

#[test]
fn ethereum_node_info() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    assert_eq!(result(addr, "eth_chainId", json!([])), "0x539");
    assert_eq!(result(addr, "net_version", json!([])), "1337");
    assert!(result(addr, "web3_clientVersion", json!([])).as_str().unwrap().contains("rpcbench"));
    let number = quantity(&result(addr, "eth_blockNumber", json!([])));
    assert!((1000..1050).contains(&number), "{number}");
    assert!(quantity(&result(addr, "eth_gasPrice", json!([]))) > 1_000_000_000);
    let (code, message) = error(addr, "eth_sendBananas", json!([]));
    assert_eq!(code, -32601);
    assert!(message.contains("eth_sendBananas"), "{message}");
}

#[test]
fn ethereum_blocks() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let latest = result(addr, "eth_getBlockByNumber", json!(["latest", false]));
    for key in ["number", "timestamp", "gasLimit", "gasUsed", "baseFeePerGas", "size", "difficulty"] {
        assert!(is_quantity(&latest[key]), "{key}: {}", latest[key]);
    }
    for key in
        ["hash", "parentHash", "stateRoot", "transactionsRoot", "receiptsRoot", "sha3Uncles", "mixHash"]
    {
        assert!(is_data(&latest[key], 32), "{key}: {}", latest[key]);
    }
    assert!(is_data(&latest["miner"], 20));
    assert!(is_data(&latest["logsBloom"], 256));
    assert!(is_data(&latest["nonce"], 8));
    assert!(latest["transactions"].as_array().unwrap().iter().all(|h| is_data(h, 32)));

    let number = quantity(&latest["number"]);
    let parent = result(addr, "eth_getBlockByNumber", json!([format!("{:#x}", number - 1), false]));
    assert_eq!(parent["hash"], latest["parentHash"]);
    assert!(quantity(&parent["timestamp"]) <= quantity(&latest["timestamp"]));
    let by_hash = result(addr, "eth_getBlockByHash", json!([latest["hash"], false]));
    assert_eq!(by_hash, latest);
    assert_eq!(result(addr, "eth_getBlockByNumber", json!(["earliest", false]))["number"], "0x0");
    for tag in ["pending", "safe", "finalized"] {
        assert!(result(addr, "eth_getBlockByNumber", json!([tag, false]))["hash"].is_string(), "{tag}");
    }
    assert_eq!(result(addr, "eth_getBlockByNumber", json!(["0xffffff", false])), Value::Null);
    assert_eq!(
        result(addr, "eth_getBlockByHash", json!([format!("0x{}", "ab".repeat(32)), false])),
        Value::Null
    );

    let full = busy_eth_block(addr);
    let tx = &full["transactions"][1];
    for key in
        ["blockNumber", "gas", "gasPrice", "nonce", "transactionIndex", "value", "type", "chainId", "v"]
    {
        assert!(is_quantity(&tx[key]), "{key}: {}", tx[key]);
    }
    assert!(is_data(&tx["hash"], 32) && is_data(&tx["blockHash"], 32));
    assert!(is_data(&tx["from"], 20) && is_data(&tx["to"], 20));
    assert_eq!(tx["blockHash"], full["hash"]);
    assert!(tx["input"].as_str().unwrap().starts_with("0x"));

    let (code, message) = error(addr, "eth_getBlockByNumber", json!(["latest"]));
    assert_eq!(code, -32602);
    assert!(message.contains("argument 1"), "{message}");
    let (code, message) = error(addr, "eth_getBlockByNumber", json!(["newest", false]));
    assert_eq!(code, -32602);
    assert!(message.contains("argument 0"), "{message}");
    assert_eq!(error(addr, "eth_getBlockByHash", json!(["0x1234", false])).0, -32602);
}

#[test]
fn ethereum_transactions_and_receipts() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let block = busy_eth_block(addr);
    for tx in block["transactions"].as_array().unwrap().iter().take(4) {
        let found = result(addr, "eth_getTransactionByHash", json!([tx["hash"]]));
        assert_eq!(&found, tx);
        let receipt = result(addr, "eth_getTransactionReceipt", json!([tx["hash"]]));
        assert_eq!(receipt["transactionHash"], tx["hash"]);
        assert_eq!(receipt["blockHash"], block["hash"]);
        assert_eq!(receipt["status"], "0x1");
        assert!(is_quantity(&receipt["gasUsed"]) && is_quantity(&receipt["cumulativeGasUsed"]));
        assert!(quantity(&receipt["cumulativeGasUsed"]) >= quantity(&receipt["gasUsed"]));
        assert!(is_quantity(&receipt["effectiveGasPrice"]));
        for log in receipt["logs"].as_array().unwrap() {
            assert_eq!(log["transactionHash"], tx["hash"]);
            assert!(is_data(&log["address"], 20) && is_data(&log["data"], 32));
            assert_eq!(log["topics"].as_array().unwrap().len(), 3);
        }
    }
    let unknown = format!("0x{}", "11".repeat(32));
    assert_eq!(result(addr, "eth_getTransactionByHash", json!([unknown])), Value::Null);
    assert_eq!(result(addr, "eth_getTransactionReceipt", json!([unknown])), Value::Null);
}

#[test]
fn ethereum_state_calls() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let block = busy_eth_block(addr);
    let sender = &block["transactions"][0]["from"];
    let token = &block["transactions"][0]["to"];
    assert!(quantity(&result(addr, "eth_getBalance", json!([sender, "latest"]))) > 0);
    assert_eq!(result(addr, "eth_getBalance", json!([format!("0x{}", "00".repeat(20)), "latest"])), "0x0");
    assert!(is_quantity(&result(addr, "eth_getTransactionCount", json!([sender, "latest"]))));
    let code = result(addr, "eth_getCode", json!([token, "latest"]));
    assert!(code.as_str().unwrap().len() > 10, "token contracts have code: {code}");
    assert_eq!(result(addr, "eth_getCode", json!([sender, "latest"])), "0x");
    let call = json!({"to": token, "data": "0x70a08231000000000000000000000000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"});
    let first = result(addr, "eth_call", json!([call, "latest"]));
    assert!(is_data(&first, 32), "{first}");
    assert_eq!(result(addr, "eth_call", json!([call, "latest"])), first, "deterministic");
    let other = json!({"to": token, "data": "0x18160ddd"});
    assert_ne!(result(addr, "eth_call", json!([other, "latest"])), first);
    assert_eq!(result(addr, "eth_estimateGas", json!([{"to": token}])), "0x5208");
    assert!(quantity(&result(addr, "eth_estimateGas", json!([call]))) > 21_000);

    let (code, message) = error(addr, "eth_getBalance", json!(["0x1234", "latest"]));
    assert_eq!(code, -32602);
    assert!(message.contains("common.Address"), "{message}");
    let (code, message) = error(addr, "eth_getBalance", json!(["1234", "latest"]));
    assert_eq!(code, -32602);
    assert!(message.contains("0x prefix"), "{message}");
    assert_eq!(
        error(addr, "eth_getBalance", json!([sender, "0xffffff"])),
        (-32000, "header not found".into())
    );
    assert_eq!(error(addr, "eth_call", json!(["nope", "latest"])).0, -32602);
}

#[test]
fn ethereum_logs_and_range_limit() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let logs = result(addr, "eth_getLogs", json!([{"fromBlock": "0x352", "toBlock": "0x3e8"}]));
    let logs = logs.as_array().unwrap();
    assert!(logs.len() > 50, "{}", logs.len());
    for log in logs {
        let number = quantity(&log["blockNumber"]);
        assert!((0x352..=0x3e8).contains(&number));
        assert!(is_data(&log["transactionHash"], 32) && is_quantity(&log["logIndex"]));
    }
    // Filtering by address and by topic.
    let token = logs[0]["address"].clone();
    let by_address =
        result(addr, "eth_getLogs", json!([{"fromBlock": "0x352", "toBlock": "0x3e8", "address": token}]));
    let by_address = by_address.as_array().unwrap();
    assert!(!by_address.is_empty() && by_address.len() < logs.len());
    assert!(by_address.iter().all(|log| log["address"] == token));
    let sender_topic = logs[0]["topics"][1].clone();
    let filter = json!({"fromBlock": "0x352", "toBlock": "0x3e8", "topics": [null, [sender_topic]]});
    let by_topic = result(addr, "eth_getLogs", json!([filter]));
    assert!(by_topic.as_array().unwrap().iter().all(|log| log["topics"][1] == sender_topic));
    assert!(by_topic.as_array().unwrap().contains(&logs[0]));
    let by_hash = result(addr, "eth_getLogs", json!([{"blockHash": logs[0]["blockHash"]}]));
    assert!(by_hash.as_array().unwrap().contains(&logs[0]));

    let (code, message) = error(addr, "eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "0x2711"}]));
    assert_eq!(code, -32005);
    assert_eq!(message, "exceed maximum block range: 10000");
    assert!(result(addr, "eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "0x270f"}])).is_array());
    assert_eq!(error(addr, "eth_getLogs", json!([{"address": "0x12"}])).0, -32602);
    assert_eq!(error(addr, "eth_getLogs", json!([{"fromBlock": "0x10", "toBlock": "0x5"}])).0, -32000);
}

#[test]
fn the_ethereum_node_serves_seed_002s_rest_api_over_http() {
    let server = start_chain(Chain::Ethereum);
    let mut client = Client::connect(server.local_addr());
    client.send(b"GET /block/last HTTP/1.1\r\nHost: x\r\n\r\n");
    let last = client.read_reply();
    assert_eq!(last.status, 200);
    let hash = last.json()["hash"].as_str().unwrap().to_string();
    client.send(format!("GET /log/{hash} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    let logs = client.read_reply();
    assert_eq!(logs.status, 200);
    assert!(logs.json()["logs"].is_array());
    client.send(b"GET /gasprice HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(client.read_reply().status, 200);
    // Unknown blocks are 404, and the connection stays in step for JSON-RPC after them.
    client.send(b"GET /block/999999999 HTTP/1.1\r\nHost: x\r\n\r\n");
    let missing = client.read_reply();
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "unknown block");
    assert_eq!(client.post(br#"{"jsonrpc":"2.0","id":4,"method":"eth_blockNumber"}"#).json()["id"], 4);
    // The other nodes have no REST API.
    let solana = start_chain(Chain::Solana);
    let mut client = Client::connect(solana.local_addr());
    client.send(b"GET /gasprice HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(client.read_reply().status, 405);
}

#[test]
fn serve_closes_connections_past_its_cap_and_idle_ones_after_the_idle_timeout() {
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#;
    // The cap: one idle client holds the only place, the next is closed at once.
    let mut options = MockOptions::new(Chain::Static);
    options.max_connections = Some(1);
    options.idle_timeout = Some(Duration::from_secs(3600));
    let server = start(options);
    let idle = Client::connect(server.local_addr());
    let mut extra = Client::connect(server.local_addr());
    let mut byte = [0u8; 1];
    let closed = match extra.reader.read(&mut byte) {
        Ok(n) => n == 0,
        // A reset; the read timeout is not a close.
        Err(err) => !matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    };
    assert!(closed, "past the cap");
    drop(idle);
    // The place comes back once the server has read the close.
    let served = (0..200).any(|_| {
        let mut client = Client::connect(server.local_addr());
        client.send(format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n{call}", call.len()).as_bytes());
        let mut first = [0u8; 12];
        let answered = client.reader.read_exact(&mut first).is_ok() && first.starts_with(b"HTTP/1.1 200");
        if !answered {
            std::thread::sleep(Duration::from_millis(10));
        }
        answered
    });
    assert!(served, "a closed client gives its place back");
    server.stop();

    // The idle timeout: a head that never completes is closed.
    let mut options = MockOptions::new(Chain::Static);
    options.idle_timeout = Some(Duration::from_millis(100));
    options.http2 = false;
    let server = start(options);
    let mut slow = Client::connect(server.local_addr());
    slow.send(b"POST / HTTP/1.1\r\nContent-Le");
    let closed = match slow.reader.read(&mut byte) {
        Ok(n) => n == 0,
        Err(err) => !matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    };
    assert!(closed, "closed by the idle timeout");
    assert_eq!(post(server.local_addr(), call).status, 200);
    server.stop();
}
