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
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!("not JSON ({err}): {}", String::from_utf8_lossy(&self.body))
        })
    }
}

/// A keep-alive HTTP/1.1 connection.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Client {
            reader: BufReader::new(stream),
        }
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
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .expect("status")
            .parse()
            .unwrap();
        let mut content_length = 0usize;
        let mut content_type = None;
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
        }
        let mut body = vec![0; content_length];
        self.reader.read_exact(&mut body).unwrap();
        Reply {
            status,
            content_type,
            body,
        }
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
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_string(),
    )
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
        && digits
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && (digits == "0" || !digits.starts_with('0'))
}

fn is_data(value: &Value, bytes: usize) -> bool {
    let Some(text) = value.as_str() else {
        return false;
    };
    let Some(digits) = text.strip_prefix("0x") else {
        return false;
    };
    digits.len() == bytes * 2
        && digits
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
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
    for (id, method) in [
        ("1", "eth_blockNumber"),
        ("\"abc\"", "getSlot"),
        ("null", "whatever"),
        ("-17", "x"),
    ] {
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
        (
            response["error"]["code"].as_i64().unwrap(),
            response["id"].clone(),
        )
    };
    assert_eq!(
        code("{\"jsonrpc\":\"2.0\",\"id\":1,"),
        (-32700, Value::Null)
    );
    assert_eq!(code("\u{1}garbage"), (-32700, Value::Null));
    assert_eq!(code("[]"), (-32600, Value::Null));
    assert_eq!(
        code(r#"{"jsonrpc":"1.0","id":4,"method":"x"}"#),
        (-32600, json!(4))
    );
    assert_eq!(
        code(r#"{"jsonrpc":"2.0","id":"m","params":[]}"#),
        (-32600, json!("m"))
    );
    assert_eq!(code(r#""just a string""#), (-32600, Value::Null));

    // Invalid UTF-8 is a parse error, not a crash.
    let reply =
        Client::connect(addr).post(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}");
    assert_eq!(reply.json()["error"]["code"], -32700);
    // Deep nesting too.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}}}"#,
        "[".repeat(50_000)
    );
    assert_eq!(post(addr, &deep).json()["error"]["code"], -32700);
    // Huge numbers as ids are echoed verbatim.
    let reply = post(
        addr,
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#,
    );
    assert!(String::from_utf8(reply.body)
        .unwrap()
        .contains(r#""id":123456789012345678901234567890,"#));
}

#[test]
fn notifications_get_no_content() {
    let server = start_chain(Chain::Static);
    let mut client = Client::connect(server.local_addr());
    let reply = client.post(br#"{"jsonrpc":"2.0","method":"getSlot"}"#);
    assert_eq!(reply.status, 204);
    assert!(reply.body.is_empty());
    let reply = client
        .post(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b","params":[]}]"#);
    assert_eq!(reply.status, 204);
    // The connection is still usable afterwards.
    assert_eq!(
        client
            .post(br#"{"jsonrpc":"2.0","id":2,"method":"a"}"#)
            .json()["result"],
        "0x1"
    );
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
    assert_eq!(
        responses.len(),
        5,
        "the notification is omitted: {responses:?}"
    );
    assert_eq!(responses[0]["id"], 1);
    assert_eq!(responses[0]["result"], "0x539");
    assert_eq!(responses[1]["id"], "two");
    assert_eq!(responses[1]["error"]["code"], -32601);
    assert!(responses[1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no_such_method"));
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
    let reply = post(
        addr,
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"a","params":["{padding}"]}}"#),
    );
    assert_eq!(reply.status, 413);
    let response = reply.json();
    assert_eq!(response["error"]["code"], -32600);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1000"),
        "{response}"
    );

    let call = r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#;
    let batch = |n: usize| format!("[{}]", vec![call; n].join(","));
    assert_eq!(post(addr, &batch(5)).json().as_array().unwrap().len(), 5);
    let response = post(addr, &batch(6)).json();
    assert_eq!(response["error"]["code"], -32600);
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 5"),
        "{response}"
    );
}

#[test]
fn start_reports_bind_errors_and_bad_options() {
    let server = start_chain(Chain::Static);
    let mut options = MockOptions::new(Chain::Static);
    options.listen = server.local_addr();
    let err = MockServer::start(options).unwrap_err();
    assert!(
        err.to_string().contains(&server.local_addr().to_string()),
        "{err}"
    );
    let mut options = MockOptions::new(Chain::Static);
    options.faults.stall = Some(Stall {
        pause: Duration::from_secs(2),
        every: Duration::from_secs(1),
    });
    assert!(MockServer::start(options)
        .unwrap_err()
        .to_string()
        .contains("stall"));
    // Dropping stops the server: the port no longer accepts.
    let addr = server.local_addr();
    drop(server);
    assert!(TcpStream::connect(addr).is_err());
}

// ---------------------------------------------------------------- fault knobs

#[test]
fn latency_delays_every_answer() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.latency = Some(Latency {
        base: Duration::from_millis(150),
        jitter: Duration::from_millis(20),
    });
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    for _ in 0..3 {
        let sent = Instant::now();
        let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
        assert_eq!(reply.json()["result"], "0x1");
        assert!(
            sent.elapsed() >= Duration::from_millis(130),
            "{:?}",
            sent.elapsed()
        );
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
    assert!(
        sent.elapsed() >= Duration::from_millis(600),
        "4 x 150ms took only {:?}",
        sent.elapsed()
    );
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
    assert!(
        elapsed < Duration::from_millis(2000),
        "sleeps should overlap, took {elapsed:?}"
    );
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
        let response = client
            .post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#)
            .json();
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
                (0..10)
                    .map(|_| client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let replies: Vec<Reply> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let elapsed = sent.elapsed();
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    assert_eq!(ok + limited.len(), 100);
    assert!(ok >= 1, "the burst goes through");
    let allowed = 2.0 + 20.0 * elapsed.as_secs_f64() + 1.0;
    assert!(
        ok as f64 <= allowed,
        "{ok} answered in {elapsed:?}, at most {allowed} allowed"
    );
    assert!(!limited.is_empty());
    let response = limited[0].json();
    assert_eq!(response["error"]["code"], -32005);
    assert_eq!(response["error"]["message"], "rate limit exceeded");
    assert_eq!(response["error"]["data"]["allowed_rps"], 20.0);
    // Tokens come back with time.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        post(addr, r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#).status,
        200
    );
}

#[test]
fn stall_holds_requests_until_the_pause_ends() {
    let before_start = Instant::now();
    let mut options = MockOptions::new(Chain::Static);
    // Paused from 0.9 s to 1.5 s after start, then 2.4 s to 3.0 s, ...
    options.faults.stall = Some(Stall {
        pause: Duration::from_millis(600),
        every: Duration::from_millis(1500),
    });
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
    assert_eq!(reply.status, 200);
    let resume = before_start + Duration::from_millis(1000);
    std::thread::sleep(resume.saturating_duration_since(Instant::now()));
    let sent = Instant::now();
    let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
    assert_eq!(reply.json()["result"], "0x1");
    assert!(
        before_start.elapsed() >= Duration::from_millis(1500),
        "answered during the pause"
    );
    assert!(
        sent.elapsed() >= Duration::from_millis(300),
        "{:?}",
        sent.elapsed()
    );
}

#[test]
fn faults_parse_from_text() {
    assert_eq!(
        "5ms:2ms".parse::<Latency>().unwrap().jitter,
        Duration::from_millis(2)
    );
    assert_eq!(
        "2s/10s".parse::<Stall>().unwrap().every,
        Duration::from_secs(10)
    );
    assert_eq!(rpcbench::mock::parse_rate_limit("50/s").unwrap(), 50.0);
    let faults = Faults {
        error_rate: 2.0,
        ..Faults::default()
    };
    let mut options = MockOptions::new(Chain::Static);
    options.faults = faults;
    assert!(MockServer::start(options).is_err());
}
