//! The mock's HTTP/1.1 server: envelopes, batches, pipelining, hostile bytes, limits and caps.

use super::*;

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
