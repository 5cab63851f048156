//! Small HTTP/1.1 servers for tests, each started on 127.0.0.1:0 on its own thread, whose
//! answers are chosen per request by a closure; and helpers to build run configurations and
//! transactions.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcbench::engine::config::{Length, Load, RunConfig, Target};
use rpcbench::tx::keys::Address;
use rpcbench::tx::sign::{Fees, UnsignedTx};
use rpcbench::RequestTemplate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the test server does with one request.
#[allow(dead_code)]
pub enum Reply {
    /// Writes these bytes and keeps the connection.
    Raw(Vec<u8>),
    /// Writes these bytes and closes the connection.
    RawThenClose(Vec<u8>),
    /// Closes the connection without answering.
    Close,
    /// Waits, then replies.
    After(Duration, Box<Reply>),
    /// Writes these bytes, then resets the connection (SO_LINGER 0: an RST, not a FIN).
    Reset(Vec<u8>),
    /// Writes `head`, then `piece` `count` times, each as one chunk when `chunked` (then the
    /// last chunk), and keeps the connection. Nothing large is ever held in memory.
    Stream { head: Vec<u8>, piece: Vec<u8>, count: usize, chunked: bool },
    /// Writes these bytes one at a time, `pause` apart (slow loris), then keeps the connection.
    Trickle(Vec<u8>, Duration),
}

/// An HTTP 200 response with a JSON body.
pub fn json_200(body: &str) -> Reply {
    Reply::Raw(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

/// A response with any status and body.
pub fn status(code: u16, body: &str) -> Reply {
    Reply::Raw(format!("HTTP/1.1 {code} X\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes())
}

/// The request as the handler sees it.
pub struct Request {
    /// The JSON-RPC id in the body.
    pub id: u64,
    /// The JSON-RPC method.
    pub method: String,
    /// The params, as sent.
    pub params: serde_json::Value,
    /// The request's index across all connections, from 0.
    pub index: u64,
    /// The request line and headers, as received.
    pub head: String,
    /// The whole body, parsed (an array for a batch; null when it is not JSON).
    pub body: serde_json::Value,
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A test server on its own thread. [`TestServer::stop`] (or dropping it) closes the listener
/// and every connection at once, like a killed process.
pub struct TestServer {
    pub addr: SocketAddr,
    /// Requests read so far.
    pub requests: Arc<AtomicU64>,
    /// Connections accepted so far.
    pub connections: Arc<AtomicU64>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        Self::start_on("127.0.0.1:0".parse().unwrap(), handler)
    }

    /// Starts on a given address (a port used before: std sets SO_REUSEADDR).
    pub fn start_on(addr: SocketAddr, handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let handler: Arc<Handler> = Arc::new(handler);
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let std_listener = std::net::TcpListener::bind(addr).unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let counter = requests.clone();
        let accepted = connections.clone();
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = TcpListener::from_std(std_listener).unwrap();
                let accept_loop = async {
                    loop {
                        let Ok((socket, _)) = listener.accept().await else {
                            continue;
                        };
                        accepted.fetch_add(1, Ordering::SeqCst);
                        tokio::spawn(serve_connection(socket, handler.clone(), counter.clone()));
                    }
                };
                tokio::select! {
                    _ = accept_loop => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime drops every connection task and so closes every socket.
            drop(runtime);
        });
        Self { addr, requests, connections, shutdown: Some(shutdown), thread: Some(thread) }
    }

    /// Closes the listener and every connection, and waits until they are closed.
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            shutdown.send(()).ok();
        }
        if let Some(thread) = self.thread.take() {
            thread.join().ok();
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

async fn serve_connection(mut socket: TcpStream, handler: Arc<Handler>, counter: Arc<AtomicU64>) {
    let mut buf = Vec::with_capacity(4096);
    loop {
        // Read one request: head, then Content-Length bytes.
        let (head_len, body_len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut request = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(head_len)) = request.parse(&buf) {
                let body_len = request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
                    .unwrap_or(0);
                break (head_len, body_len);
            }
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        while buf.len() < head_len + body_len {
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let head = String::from_utf8_lossy(&buf[..head_len]).into_owned();
        let body: serde_json::Value =
            serde_json::from_slice(&buf[head_len..head_len + body_len]).unwrap_or_default();
        buf.drain(..head_len + body_len);
        let id = body.get("id").and_then(|id| id.as_u64()).unwrap_or(0);
        let index = counter.fetch_add(1, Ordering::SeqCst);
        let method = body.get("method").and_then(|m| m.as_str()).unwrap_or_default().to_string();
        let params = body.get("params").cloned().unwrap_or_default();
        let mut reply = handler(&Request { id, method, params, index, head, body });
        loop {
            match reply {
                Reply::After(delay, next) => {
                    tokio::time::sleep(delay).await;
                    reply = *next;
                }
                Reply::Raw(bytes) => {
                    if socket.write_all(&bytes).await.is_err() {
                        return;
                    }
                    break;
                }
                Reply::RawThenClose(bytes) => {
                    socket.write_all(&bytes).await.ok();
                    return;
                }
                Reply::Close => return,
                Reply::Reset(bytes) => {
                    socket.write_all(&bytes).await.ok();
                    socket.set_zero_linger().ok();
                    return;
                }
                Reply::Stream { head, piece, count, chunked } => {
                    if write_stream(&mut socket, &head, &piece, count, chunked).await.is_err() {
                        return;
                    }
                    break;
                }
                Reply::Trickle(bytes, pause) => {
                    for byte in bytes {
                        if socket.write_all(&[byte]).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(pause).await;
                    }
                    break;
                }
            }
        }
    }
}

async fn write_stream(
    socket: &mut TcpStream,
    head: &[u8],
    piece: &[u8],
    count: usize,
    chunked: bool,
) -> std::io::Result<()> {
    socket.write_all(head).await?;
    let size_line = format!("{:x}\r\n", piece.len());
    for _ in 0..count {
        if chunked {
            socket.write_all(size_line.as_bytes()).await?;
        }
        socket.write_all(piece).await?;
        if chunked {
            socket.write_all(b"\r\n").await?;
        }
    }
    if chunked {
        socket.write_all(b"0\r\n\r\n").await?;
    }
    Ok(())
}

/// A closed-loop configuration against `url` calling getSlot.
pub fn closed_loop(url: &str, connections: usize, length: Length) -> RunConfig {
    let mut config =
        RunConfig::new(Target::parse(url).unwrap(), RequestTemplate::from_method("getSlot", None).unwrap());
    config.load = Load::Closed { connections };
    config.length = length;
    config
}

pub fn requests(n: u64) -> Length {
    Length { duration: None, requests: Some(n) }
}

pub fn seconds(secs: f64) -> Length {
    Length { duration: Some(Duration::from_secs_f64(secs)), requests: None }
}

/// A 1-wei transfer to 0x3535…35 on chain 31337 (the mock node's) paying `fees`: nonce 0,
/// 21,000 gas, no data.
pub fn transfer_template(fees: Fees) -> UnsignedTx {
    UnsignedTx {
        chain_id: 31337,
        nonce: 0,
        fees,
        gas_limit: 21_000,
        to: Address::parse("0x3535353535353535353535353535353535353535"),
        value: 1,
        data: Vec::new(),
    }
}
