//! The mock nodes' HTTP/1.1 handler, served by the crate's connection loop
//! (`http_server.rs`), which does the framing, pipelining and refusals.
//!
//! What the mock adds, as pinned by the tests in `tests/mock_nodes.rs`:
//! - a method other than POST gets 405 with `Allow: POST` (HEAD: the same head, no body),
//!   except GET on the Ethereum node, which serves its REST API (`rest.rs`); a non-POST with
//!   a body over the limit gets that 405 rather than 413;
//! - the fault knobs apply per request: 429 from the rate limiter, stalls and latency as
//!   asynchronous sleeps (answers already computed are sent first), blocking latency as a
//!   sleep of the worker thread;
//! - a GET with `Upgrade: websocket` (only GET heads are searched for it) is answered
//!   `101 Switching Protocols` and the connection, with any bytes read past the head, goes to
//!   `ws.rs`; a malformed upgrade gets 400 and one past `ws_max_connections` gets 503.

use std::future::Future;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use super::dispatch::{cap_answer, gate, respond, Gate, Node, Shared};
use super::faults::RateLimitStyle;
use super::rpc::INVALID_REQUEST;
use super::ws::ConnectionSlot;
use crate::server::http1::{
    self as http_server, write_head, write_json, Arrival, DateCache, Handler, Limits, Method, Next, Request,
    Upgrade, JSON,
};

pub(crate) use crate::server::http1::{error_body, too_large_message};

/// Serves one connection until the client closes it, an error, or shutdown while idle.
/// `live` is held for as long as the connection is served.
pub(crate) async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    live: Arc<()>,
) {
    let limits = Limits { max_body: shared.max_body_bytes, head_timeout: shared.idle_timeout, timed: false };
    let handler = MockHttp { shared, ws_shutdown: shutdown.clone(), live, body_out: Vec::with_capacity(256) };
    http_server::serve_connection(stream, handler, shutdown, limits).await;
}

/// One connection's handler.
struct MockHttp {
    shared: Arc<Shared>,
    ws_shutdown: watch::Receiver<bool>,
    live: Arc<()>,
    /// The body of the answer being written (reused).
    body_out: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Handler<S> for MockHttp {
    type TakeOver = ConnectionSlot;

    // Written out to state the Send bound the trait asks for.
    #[allow(clippy::manual_async_fn)]
    fn answer<'a>(
        &'a mut self,
        stream: &'a mut S,
        out: &'a mut Vec<u8>,
        request: &'a Request,
        bytes: &'a [u8],
        _arrival: Option<Arrival>,
        date: &'a mut DateCache,
    ) -> impl Future<Output = Next<ConnectionSlot>> + Send + 'a {
        async move {
            let close = request.closes();
            let body_out = &mut self.body_out;
            if request.upgrade != Upgrade::No {
                // A bad upgrade gets 400, one past the connection limit 503; either closes.
                let bad = match request.upgrade {
                    Upgrade::Bad(why) => Some(format!("bad WebSocket upgrade: {why}")),
                    _ => None,
                };
                let opened = if bad.is_none() { super::ws::open_connection(&self.shared) } else { None };
                let (Some(slot), Upgrade::WebSocket { key }) = (opened, request.upgrade) else {
                    let (status, message): (&[u8], String) = match bad {
                        Some(message) => (b"400 Bad Request", message),
                        None => (b"503 Service Unavailable", "too many WebSocket connections".into()),
                    };
                    error_body(body_out, INVALID_REQUEST, &message);
                    write_json(out, status, b"", body_out, Some(request), true, &date.text);
                    return Next::Close;
                };
                let key = &bytes[key.0..key.0 + key.1];
                out.extend_from_slice(
                    b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ",
                );
                out.extend_from_slice(derive_accept_key(key).as_bytes());
                out.extend_from_slice(b"\r\n\r\n");
                return Next::TakeOver(slot);
            }
            if request.method == Method::Get {
                match (&self.shared.node, std::str::from_utf8(request.path(bytes))) {
                    (Node::Ethereum(node), Ok(path)) => {
                        let (status, body) = super::rest::answer(node, path);
                        write_json(out, status, b"", &body, Some(request), close, &date.text);
                    }
                    _ => method_not_allowed(out, body_out, request, close, &date.text),
                }
            } else if request.method != Method::Post {
                method_not_allowed(out, body_out, request, close, &date.text);
            } else {
                answer_post(&self.shared, stream, out, body_out, request.body(bytes), request, close, date)
                    .await;
            }
            Next::Continue
        }
    }

    fn take_over(
        &mut self,
        stream: S,
        leftover: Vec<u8>,
        slot: ConnectionSlot,
    ) -> impl Future<Output = ()> + Send {
        super::ws::serve(
            stream,
            leftover,
            self.shared.clone(),
            self.ws_shutdown.clone(),
            self.live.clone(),
            slot,
        )
    }

    fn refuse_too_large(&mut self, out: &mut Vec<u8>, request: &Request, limit: usize, date: &[u8; 29]) {
        if request.method == Method::Post {
            error_body(&mut self.body_out, INVALID_REQUEST, &too_large_message(limit));
            write_json(out, b"413 Payload Too Large", b"", &self.body_out, Some(request), true, date);
        } else {
            method_not_allowed(out, &mut self.body_out, request, true, date);
        }
    }
}

/// The message of a 405 (both HTTP loops).
pub(crate) fn not_post_message() -> String {
    "only POST requests with a JSON-RPC body are served".to_string()
}

fn method_not_allowed(
    out: &mut Vec<u8>,
    body_out: &mut Vec<u8>,
    request: &Request,
    close: bool,
    date: &[u8; 29],
) {
    error_body(body_out, INVALID_REQUEST, &not_post_message());
    write_json(out, b"405 Method Not Allowed", b"allow: POST\r\n", body_out, Some(request), close, date);
}

/// Answers one POST request, applying the fault knobs.
#[allow(clippy::too_many_arguments)]
async fn answer_post<S: AsyncWrite + Unpin>(
    shared: &Shared,
    stream: &mut S,
    out: &mut Vec<u8>,
    body_out: &mut Vec<u8>,
    body: &[u8],
    request: &Request,
    close: bool,
    date: &mut DateCache,
) {
    let gated = gate(shared, body, body_out);
    let mut extra = Vec::new();
    if let Some(announced) = shared.faults.announcement() {
        announced.header_lines(&mut extra);
    }
    match gated {
        Gate::Limited { style: RateLimitStyle::JsonRpc, .. } => {
            write_json(out, b"200 OK", &extra, body_out, Some(request), close, &date.text);
            return;
        }
        Gate::Limited { retry_after_secs, .. } => {
            extra.extend_from_slice(b"retry-after: ");
            extra.extend_from_slice(itoa::Buffer::new().format(retry_after_secs).as_bytes());
            extra.extend_from_slice(b"\r\n");
            write_json(out, b"429 Too Many Requests", &extra, body_out, Some(request), close, &date.text);
            return;
        }
        Gate::Pass(delays) if !delays.is_none() => {
            // Answers already computed are not held back by this request's delay.
            if !out.is_empty() {
                if stream.write_all(out).await.is_err() {
                    // The connection is gone; the caller's next read or write ends it.
                    out.clear();
                    return;
                }
                out.clear();
            }
            delays.wait(&shared.faults).await;
            date.refresh();
        }
        Gate::Pass(_) => {}
    }
    body_out.clear();
    respond(shared, body, body_out);
    cap_answer(shared, body_out);
    if body_out.is_empty() {
        write_head(out, b"204 No Content", JSON, None, &extra, Some(request), close, &date.text);
    } else {
        write_json(out, b"200 OK", &extra, body_out, Some(request), close, &date.text);
    }
}
