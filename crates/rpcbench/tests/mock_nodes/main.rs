//! Integration tests of the mock nodes over real HTTP: every chain is started with
//! `MockServer::start` on 127.0.0.1:0 and driven by a tiny blocking HTTP/1.1 client.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rpcbench::mock::{Chain, Faults, Latency, MockOptions, MockServer, Stall};
use serde_json::{json, Value};

mod ethereum;
mod faults;
mod http;
mod solana;

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
