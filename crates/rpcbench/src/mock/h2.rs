//! The mock nodes' HTTP/2 server: one connection (h2c with prior knowledge, or TLS with ALPN
//! `h2`) over any byte stream, on hyperium's `h2` crate.
//!
//! Each stream is answered by a task of its own, so the streams of one connection are served
//! concurrently, and exactly as the HTTP/1.1 loop in `http.rs` answers a request: the body
//! goes to `server::respond` (200 with `content-type: application/json`, 204 when only
//! notifications were sent), a body over `max_body_bytes` gets 413, a method other than POST
//! gets 405 except GET on the Ethereum node (its REST API, `rest.rs`), and the fault knobs
//! come from the same `server::gate`.
//!
//! HTTP/2-only knobs: `max_streams` is advertised as SETTINGS_MAX_CONCURRENT_STREAMS;
//! `refuse_rate` answers that share of streams with RST_STREAM REFUSED_STREAM; with
//! `goaway_after` N, the Nth accepted stream starts the `h2` crate's graceful shutdown (GOAWAY,
//! a PING round trip, the final GOAWAY), the N streams are answered and the connection closes.
//! Streams the client opened after the Nth fail either with a GOAWAY error (those above the
//! final GOAWAY's last-stream-id) or, when the server had already read them, with RST_STREAM
//! REFUSED_STREAM: both mean "not processed, safe to retry". (nginx's `http2_max_requests`
//! sets the last-stream-id to the Nth stream itself; `h2` sets it to the last stream it has
//! read and offers no way to choose it, hence the resets.)

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::dispatch::{cap_answer, gate, respond, Gate, Node, Shared};
use super::faults::RateLimitStyle;
use super::http::{error_body, not_post_message, too_large_message};
use super::rpc::INVALID_REQUEST;

/// Longest wait for the client's preface and SETTINGS.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one HTTP/2 connection until the client closes it, an error, `goaway_after`, or
/// shutdown (GOAWAY: at once when idle, else graceful, letting the streams in flight finish).
/// `_live` is held for as long as the connection is served.
pub(crate) async fn serve_connection<S>(
    stream: S,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    _live: Arc<()>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut builder = h2::server::Builder::new();
    if let Some(max) = shared.max_streams {
        builder.max_concurrent_streams(max);
    }
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, builder.handshake::<_, Bytes>(stream));
    let mut connection = tokio::select! {
        handshake = handshake => match handshake {
            Ok(Ok(connection)) => connection,
            _ => return,
        },
        _ = shutdown.wait_for(|stop| *stop) => return,
    };
    let mut streams = JoinSet::new();
    let mut accepted = 0u64;
    let mut stopping = false;
    loop {
        tokio::select! {
            next = connection.accept() => match next {
                Some(Ok((_, mut respond))) if shared.goaway_after.is_some_and(|limit| accepted >= limit) => {
                    // Read before the final GOAWAY went out: not processed, safe to retry.
                    respond.send_reset(Reason::REFUSED_STREAM);
                }
                Some(Ok((request, respond))) => {
                    accepted += 1;
                    streams.spawn(answer_stream(shared.clone(), request, respond));
                    if shared.goaway_after == Some(accepted) {
                        // GOAWAY, then (after a PING round trip) the final GOAWAY; the streams
                        // accepted are answered before the connection closes.
                        connection.graceful_shutdown();
                    }
                }
                // Closed by the client, a connection error, or the end of a graceful shutdown.
                Some(Err(_)) | None => return,
            },
            Some(_) = streams.join_next(), if !streams.is_empty() => {}
            _ = shutdown.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                while streams.try_join_next().is_some() {}
                if streams.is_empty() {
                    // Idle: close at once, as the HTTP/1.1 loop does, without waiting a round trip.
                    connection.abrupt_shutdown(Reason::NO_ERROR);
                } else {
                    connection.graceful_shutdown();
                }
            }
        }
    }
}

/// Answers one stream.
async fn answer_stream(shared: Arc<Shared>, request: Request<RecvStream>, mut reply: SendResponse<Bytes>) {
    if shared.refuse_stream() {
        reply.send_reset(Reason::REFUSED_STREAM);
        return;
    }
    let mut out = Vec::with_capacity(256);
    if request.method() == Method::GET {
        if let Node::Ethereum(node) = &shared.node {
            let path = request.uri().path_and_query().map_or("/", |path| path.as_str());
            let (status, body) = super::rest::answer(node, path);
            send(&mut reply, status_code(status), Vec::new(), body);
            return;
        }
    }
    if request.method() != Method::POST {
        error_body(&mut out, INVALID_REQUEST, &not_post_message());
        let allow = ("allow", HeaderValue::from_static("POST"));
        let body = if request.method() == Method::HEAD { Vec::new() } else { out };
        send(&mut reply, StatusCode::METHOD_NOT_ALLOWED, vec![allow], body);
        return;
    }
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.trim().parse::<u64>().ok());
    let Some(body) = read_body(request.into_body(), declared, shared.max_body_bytes).await else {
        error_body(&mut out, INVALID_REQUEST, &too_large_message(shared.max_body_bytes));
        send(&mut reply, StatusCode::PAYLOAD_TOO_LARGE, Vec::new(), out);
        return;
    };
    let gated = gate(&shared, &body, &mut out);
    let mut extra: Vec<(&'static str, HeaderValue)> = match shared.faults.announcement() {
        Some(announced) => {
            announced.headers().iter().map(|&(name, value)| (name, HeaderValue::from(value))).collect()
        }
        None => Vec::new(),
    };
    match gated {
        Gate::Limited { style: RateLimitStyle::JsonRpc, .. } => {
            send(&mut reply, StatusCode::OK, extra, out);
            return;
        }
        Gate::Limited { retry_after_secs, .. } => {
            extra.push(("retry-after", HeaderValue::from(retry_after_secs)));
            send(&mut reply, StatusCode::TOO_MANY_REQUESTS, extra, out);
            return;
        }
        Gate::Pass(delays) if !delays.is_none() => delays.wait(&shared.faults).await,
        Gate::Pass(_) => {}
    }
    out.clear();
    respond(&shared, &body, &mut out);
    cap_answer(&shared, &mut out);
    if out.is_empty() {
        send(&mut reply, StatusCode::NO_CONTENT, extra, out);
    } else {
        send(&mut reply, StatusCode::OK, extra, out);
    }
}

/// The whole request body, releasing flow-control capacity as data arrives; `None` when it
/// is (or is declared) larger than `limit` (the rest is not read: the stream is answered and
/// reset by the library).
async fn read_body(mut body: RecvStream, declared: Option<u64>, limit: usize) -> Option<Vec<u8>> {
    if declared.is_some_and(|len| len > limit as u64) {
        return None;
    }
    let mut data = Vec::with_capacity(declared.map_or(0, |len| len as usize));
    while let Some(chunk) = body.data().await {
        // A stream reset by the client: what arrived is answered (and the answer dropped).
        let Ok(chunk) = chunk else { break };
        let _ = body.flow_control().release_capacity(chunk.len());
        if data.len() + chunk.len() > limit {
            return None;
        }
        data.extend_from_slice(&chunk);
    }
    Some(data)
}

/// Sends a complete answer: JSON unless 204, with one extra header if any. A stream the
/// client has reset meanwhile is simply dropped.
fn send(
    respond: &mut SendResponse<Bytes>,
    status: StatusCode,
    extra: Vec<(&'static str, HeaderValue)>,
    body: Vec<u8>,
) {
    let mut response = Response::builder().status(status);
    if status != StatusCode::NO_CONTENT {
        response = response
            .header(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header(http::header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    }
    for (name, value) in extra {
        response = response.header(name, value);
    }
    let Ok(response) = response.body(()) else { return };
    let empty = body.is_empty();
    let Ok(mut stream) = respond.send_response(response, empty) else { return };
    if !empty {
        let _ = stream.send_data(Bytes::from(body), true);
    }
}

/// The status of an HTTP/1.1 status line such as `404 Not Found`.
fn status_code(line: &[u8]) -> StatusCode {
    line.get(..3).and_then(|digits| StatusCode::from_bytes(digits).ok()).unwrap_or(StatusCode::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_give_their_codes() {
        assert_eq!(status_code(b"404 Not Found"), StatusCode::NOT_FOUND);
        assert_eq!(status_code(b"200 OK"), StatusCode::OK);
    }
}
