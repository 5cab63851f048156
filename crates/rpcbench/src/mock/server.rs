//! The server of every mock node: the accept loop and what each connection is handed to. The
//! JSON-RPC dispatch it serves is `dispatch.rs`; the chains answer through `rpc.rs`.
//!
//! [`MockServer`] runs the accept loop on a tokio runtime of its own (a current-thread runtime
//! for one thread, a multi-thread one otherwise) and hands each connection to the HTTP/1.1
//! loop in `http.rs`, or to the HTTP/2 server in `h2.rs` when it opens with the h2c preface
//! (one peek per connection) or negotiates ALPN `h2` over TLS (`tls.rs`); a GET asking for
//! WebSocket is upgraded by the HTTP/1.1 loop and served by `ws.rs`, whose subscribe methods
//! reach [`respond_with`] through an [`Extension`]. Request bodies are parsed with borrowed [`RawValue`]s only (no JSON
//! tree for the envelope) and each call is handed to the chain's [`Node`], which appends its
//! result to the response buffer; the static node without injected errors first tries the
//! single-pass scan of `static_chain.rs`. Single requests, batches and notifications follow
//! the JSON-RPC 2.0 specification; the id is echoed byte for byte.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use super::dispatch::Shared;
use super::ws_state::WsStats;
use super::{h2, http, tls, ws, Chain, MockError, MockOptions};
use crate::server::http1::{connection_cap, OpenConnections, ServerThread, StartError};

/// A running mock node. Stops (gracefully, joining its threads) on [`MockServer::stop`] or drop.
#[derive(Debug)]
pub struct MockServer {
    chain: Chain,
    /// Where the self-signed certificate was written, when serving HTTPS.
    certificate: Option<PathBuf>,
    server: ServerThread,
    shared: Arc<Shared>,
}

impl MockServer {
    /// Binds `options.listen` and starts serving on a thread of its own with a tokio runtime of
    /// `options.threads` workers (one thread: a current-thread runtime on the server's own
    /// thread). Returns once the socket is listening.
    pub fn start(options: MockOptions) -> Result<MockServer, MockError> {
        options.validate()?;
        let prepared = options.tls.as_ref().map(|tls| tls::prepare(tls, options.http2)).transpose()?;
        let (acceptor, certificate) = match prepared {
            Some(prepared) => (Some(prepared.acceptor), Some(prepared.certificate)),
            None => (None, None),
        };
        let shared = Arc::new(Shared::new(&options, Instant::now()));
        let server_shared = shared.clone();
        let max_connections = options.max_connections;
        let server = ServerThread::start(
            options.listen,
            options.threads,
            &format!("rpcbench-mock-{}", options.chain),
            Duration::from_secs(1),
            move |listener, shutdown_rx| async move {
                tokio::spawn(ws::produce(shared.clone(), shutdown_rx.clone()));
                let open = OpenConnections::new(connection_cap(max_connections, 64));
                let _ = tokio::spawn(accept_loop(listener, shared, acceptor, open, shutdown_rx)).await;
            },
        )
        .map_err(|error| match error {
            StartError::Bind { addr, source } => MockError::Bind { addr, source },
            StartError::Runtime(source) => MockError::Runtime(source),
        })?;
        Ok(MockServer { chain: options.chain, certificate, server, shared: server_shared })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The server's URL, e.g. `http://127.0.0.1:8899/` (`https://` when serving TLS).
    pub fn url(&self) -> String {
        let scheme = if self.certificate.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/", self.local_addr())
    }

    /// The PEM file of the self-signed certificate when serving TLS, for clients to trust.
    pub fn certificate_path(&self) -> Option<&Path> {
        self.certificate.as_deref()
    }

    /// The chain the server answers for.
    pub fn chain(&self) -> Chain {
        self.chain
    }

    /// The WebSocket URL of the same port, e.g. `ws://127.0.0.1:8899/` (`wss://` with TLS).
    pub fn ws_url(&self) -> String {
        let scheme = if self.certificate.is_some() { "wss" } else { "ws" };
        format!("{scheme}://{}/", self.local_addr())
    }

    /// The WebSocket counters so far: notifications sent, dropped and duplicated by the
    /// fault knobs, subscriptions opened and connections closed for being slow.
    pub fn ws_stats(&self) -> WsStats {
        self.shared.ws.stats()
    }

    /// What the rate limiter ([`crate::mock::Faults::rate_limit`]) decided so far, on the
    /// mock's clock: the truth a measured sustained rate is held to. `None` without a limit.
    pub fn limiter_log(&self) -> Option<crate::mock::LimiterLog> {
        self.shared.faults.limiter_log()
    }

    /// When the mock read its last requests, on its own clock, when it serves slowly (a
    /// latency, blocking latency or serial service time is set): the truth that tells a test
    /// whether the mock was kept from reading during a step. `None` otherwise.
    pub fn read_log(&self) -> Option<crate::mock::ReadLog> {
        self.shared.faults.read_log()
    }

    /// Stops accepting connections, lets requests in flight finish (for up to two seconds)
    /// and joins the server's threads.
    pub fn stop(self) {
        self.server.stop();
    }
}

const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    tls: Option<TlsAcceptor>,
    open: OpenConnections,
    mut shutdown: watch::Receiver<bool>,
) {
    let live = Arc::new(());
    loop {
        let accepted = tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(_) => {
                // Out of file descriptors or a connection reset before accept: back off briefly.
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        // Past the cap a connection is closed at once: idle clients cannot lock others out.
        let Some(slot) = open.admit() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let token = live.clone();
        let (shared, shutdown) = (shared.clone(), shutdown.clone());
        match &tls {
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    serve_tls(stream, acceptor, shared, shutdown, token).await;
                    drop(slot);
                });
            }
            None if shared.http2 => {
                tokio::spawn(async move {
                    serve_plain(stream, shared, shutdown, token).await;
                    drop(slot);
                });
            }
            None => {
                tokio::spawn(async move {
                    http::serve_connection(stream, shared, shutdown, token).await;
                    drop(slot);
                });
            }
        }
    }
    drop(listener);
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    while Arc::strong_count(&live) > 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The client preface that opens an HTTP/2 connection with prior knowledge (h2c).
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Longest wait for a client's first bytes to tell HTTP/2 from HTTP/1.1 once they started
/// like the preface, and for a TLS handshake.
const DETECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A plain connection with HTTP/2 on: the h2 server if it opens with the h2c preface, else
/// the HTTP/1.1 loop. The check peeks (nothing is consumed), once per connection.
async fn serve_plain(stream: TcpStream, shared: Arc<Shared>, shutdown: watch::Receiver<bool>, live: Arc<()>) {
    let mut stop = shutdown.clone();
    let is_h2 = tokio::select! {
        is_h2 = starts_with_preface(&stream) => is_h2,
        _ = stop.wait_for(|stop| *stop) => return,
    };
    if is_h2 {
        // Boxed: the per-connection future stays the HTTP/1.1 loop's size.
        Box::pin(h2::serve_connection(stream, shared, shutdown, live)).await;
    } else {
        http::serve_connection(stream, shared, shutdown, live).await;
    }
}

/// Whether the first bytes are the HTTP/2 preface. A client that sent part of the preface and
/// waits is polled every few milliseconds, and handed to HTTP/1.1 after [`DETECT_TIMEOUT`].
async fn starts_with_preface(stream: &TcpStream) -> bool {
    let mut first = [0u8; H2_PREFACE.len()];
    let deadline = Instant::now() + DETECT_TIMEOUT;
    loop {
        let seen = match stream.peek(&mut first).await {
            Ok(0) | Err(_) => return false,
            Ok(seen) => seen,
        };
        if first[..seen] != H2_PREFACE[..seen] {
            return false;
        }
        if seen == H2_PREFACE.len() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        // Part of the preface: peeking again at once would spin on the same bytes.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A TLS connection: after the handshake, ALPN `h2` goes to the h2 server, anything else to the
/// HTTP/1.1 loop.
async fn serve_tls(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    live: Arc<()>,
) {
    let mut stop = shutdown.clone();
    let accepted = tokio::select! {
        accepted = tokio::time::timeout(DETECT_TIMEOUT, acceptor.accept(stream)) => accepted,
        _ = stop.wait_for(|stop| *stop) => return,
    };
    let Ok(Ok(stream)) = accepted else { return };
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        h2::serve_connection(stream, shared, shutdown, live).await;
    } else {
        http::serve_connection(stream, shared, shutdown, live).await;
    }
}
