//! gRPC unary calls as request and reply (`run grpc://HOST:PORT --method GetSlot`): the HTTP/2
//! transport (`super::http2`, its connections, streams, GOAWAY handling and TLS with ALPN `h2`
//! for `grpcs://`) carrying gRPC's headers (`content-type: application/grpc`, `te: trailers`,
//! the `x-token` when there is one), with each reply checked as gRPC says: the call's
//! `grpc-status` (in the trailers, or in the head of a reply without a body) decides, a status
//! other than OK fails the call as [`WireError::GrpcStatus`], and an OK reply must be exactly
//! one uncompressed message behind its 5-byte prefix, else [`WireError::BadGrpc`]. The lane's
//! body is that message alone; the protocol (`crate::protocol::geyser_unary`) decodes it.
//!
//! The request's message comes from the protocol already behind its prefix (it is encoded
//! once per workload call, not per request).

use std::io;
use std::ops::Range;
use std::time::Duration;

use super::connect::Connector;
use super::grpc::XToken;
use super::http2::{Http2, StreamSlot};
use super::{Lane, Outgoing, Reply, Transport, WireError, WireStats};
use crate::settings::Target;

/// gRPC's message prefix: a compressed flag and a 4-byte big-endian length.
const PREFIX: usize = 5;

/// gRPC unary calls to one target over HTTP/2.
#[derive(Clone)]
pub(crate) struct GrpcUnary {
    http2: Http2,
    /// Whether an `x-token` goes with every call (the token itself is never shown).
    has_x_token: bool,
}

impl std::fmt::Debug for GrpcUnary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The HTTP/2 transport's headers hold the token: only whether there is one.
        f.debug_struct("GrpcUnary").field("x_token", &self.has_x_token).finish_non_exhaustive()
    }
}

impl GrpcUnary {
    /// A transport to `target` with `streams` lanes per connection, sending the run's
    /// `headers`, gRPC's own and `x_token`. The connector must offer ALPN `h2` for TLS.
    pub(crate) fn new(
        connector: Connector,
        target: &Target,
        headers: &[(String, String)],
        x_token: Option<&XToken>,
        streams: usize,
    ) -> io::Result<Self> {
        let mut all: Vec<(String, String)> = headers
            .iter()
            .filter(|(name, _)| {
                !(name.eq_ignore_ascii_case("content-type")
                    || name.eq_ignore_ascii_case("te")
                    || (x_token.is_some() && name.eq_ignore_ascii_case("x-token")))
            })
            .cloned()
            .collect();
        all.push(("content-type".into(), "application/grpc".into()));
        all.push(("te".into(), "trailers".into()));
        if let Some(token) = x_token {
            all.push(("x-token".into(), token.expose().to_string()));
        }
        let http2 = Http2::new(connector, target, &all, streams)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a header gRPC cannot carry"))?
            .keeping_grpc_status();
        Ok(Self { http2, has_x_token: x_token.is_some() })
    }

    /// Checks that the server speaks HTTP/2 (as [`Http2::check_server`]).
    pub(crate) async fn check_server(&self) -> Result<(), String> {
        self.http2.check_server().await
    }
}

impl Transport for GrpcUnary {
    type Lane = GrpcCall;

    fn for_worker(&self) -> Self {
        Self { http2: self.http2.for_worker(), has_x_token: self.has_x_token }
    }

    async fn open(&self, index: usize) -> io::Result<GrpcCall> {
        Ok(GrpcCall { slot: self.http2.open(index).await?, message: 0..0 })
    }

    fn stats(&self) -> WireStats {
        self.http2.stats()
    }
}

/// One HTTP/2 stream slot carrying one gRPC call at a time.
#[derive(Debug)]
pub(crate) struct GrpcCall {
    slot: StreamSlot,
    /// Where the last reply's message is in the slot's body.
    message: Range<usize>,
}

impl Lane for GrpcCall {
    async fn exchange(&mut self, request: &Outgoing, max_body: u64) -> Result<Reply, WireError> {
        self.message = 0..0;
        let reply = self.slot.exchange(request, max_body).await?;
        let body = self.slot.body();
        if reply.status != 200 {
            // Not a gRPC answer at all (a proxy's error page): the protocol counts its status.
            self.message = 0..body.len();
            return Ok(reply);
        }
        match self.slot.grpc_status().map(|value| parse_status(value.as_bytes())) {
            None | Some(None) => return Err(WireError::BadGrpc),
            Some(Some(0)) => {}
            Some(Some(code)) => return Err(WireError::GrpcStatus(code)),
        }
        self.message = one_message(body)?;
        Ok(reply)
    }

    fn body(&self) -> &[u8] {
        &self.slot.body()[self.message.clone()]
    }

    const MEASURES_CONNECT: bool = true;

    fn take_connect_time(&mut self) -> Option<Duration> {
        self.slot.take_connect_time()
    }
}

/// A `grpc-status` value: a decimal number (at most 10 digits, so a hostile value cannot
/// overflow).
fn parse_status(value: &[u8]) -> Option<u32> {
    if value.is_empty() || value.len() > 10 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Where the one message of a unary reply is: an uncompressed message whose prefix says
/// exactly the bytes that follow (none missing, none after it).
fn one_message(body: &[u8]) -> Result<Range<usize>, WireError> {
    let [compressed, a, b, c, d, ..] = *body else { return Err(WireError::BadGrpc) };
    let length = u32::from_be_bytes([a, b, c, d]) as usize;
    if compressed != 0 || body.len() - PREFIX != length {
        return Err(WireError::BadGrpc);
    }
    Ok(PREFIX..body.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unary_reply_is_exactly_one_uncompressed_message() {
        assert_eq!(one_message(&[0, 0, 0, 0, 2, 8, 7]), Ok(5..7));
        assert_eq!(one_message(&[0, 0, 0, 0, 0]), Ok(5..5), "an empty message (all defaults)");
        for malformed in [
            &[][..],
            &[0, 0, 0, 0],            // a prefix cut short
            &[0, 0, 0, 0, 3, 8, 7],   // shorter than its prefix says
            &[0, 0, 0, 0, 1, 8, 7],   // bytes after the message (a second one)
            &[1, 0, 0, 0, 2, 8, 7],   // compressed, though no encoding was offered
            &[0, 255, 255, 255, 255], // a length far past what came
        ] {
            assert_eq!(one_message(malformed), Err(WireError::BadGrpc), "{malformed:?}");
        }
    }

    #[test]
    fn a_grpc_status_is_a_short_decimal_number() {
        assert_eq!(parse_status(b"0"), Some(0));
        assert_eq!(parse_status(b"16"), Some(16));
        assert_eq!(parse_status(b"4294967295"), Some(u32::MAX));
        for bad in [&b""[..], b"-1", b"OK", b" 1", b"4294967296", b"99999999999"] {
            assert_eq!(parse_status(bad), None, "{bad:?}");
        }
    }
}
