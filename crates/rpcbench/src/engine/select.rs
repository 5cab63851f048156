//! The one wire selection: where a target and its connection settings become a transport.
//! Load runs, one-off calls (suite sampling, `compare --equal`), the proxy's upstream and the
//! probes all get their transport here, so a `ws://` target is spoken to over WebSocket and an
//! `--http2` one over HTTP/2 wherever rpcbench talks to it.
//!
//! A new wire is a new module in `transport/` plus one variant of [`Wire`] and one arm in
//! [`Wire::select`] and [`Wire::with`]. Code that works over any wire implements
//! [`UseTransport`]: [`Wire::with`] hands it the chosen transport as a concrete type, so the
//! request loop is monomorphised per wire and nothing is dispatched dynamically per request.

use std::fmt;
use std::time::Duration;

use super::config::HttpVersion;
use crate::settings::{Target, TlsOptions};
use crate::transport::connect::{Alpn, Connector, SetupError};
use crate::transport::feed::FeedOpener;
use crate::transport::grpc::{GeyserOpener, XToken};
use crate::transport::grpc_unary::GrpcUnary;
use crate::transport::http1::Http1;
use crate::transport::http2::Http2;
use crate::transport::websocket::{Upgrade, WebSocket};
use crate::transport::Transport;

/// Everything the wire selection needs to know about one target.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WireSettings<'a> {
    /// Where to connect (its scheme says plain HTTP, TLS or WebSocket).
    pub target: &'a Target,
    /// Headers sent with every request (or the WebSocket upgrade).
    pub headers: &'a [(String, String)],
    /// TLS settings for `https://` and `wss://`.
    pub tls: &'a TlsOptions,
    /// The longest connect (TLS handshake included).
    pub connect_timeout: Duration,
    /// The HTTP version asked for (ignored for WebSocket targets).
    pub http: HttpVersion,
    /// HTTP/1.1: whether connections are kept alive between requests.
    pub keepalive: bool,
    /// HTTP/2: streams per connection.
    pub streams: usize,
    /// WebSocket: requests in flight per socket.
    pub in_flight: usize,
    /// The largest reply body accepted.
    pub max_body: u64,
}

/// The transport chosen for a target, one variant per wire.
#[derive(Debug, Clone)]
pub(crate) enum Wire {
    /// HTTP/1.1 (plain or TLS).
    Http1(Http1),
    /// HTTP/2 (h2c or over TLS with ALPN `h2`).
    Http2(Http2),
    /// JSON-RPC over WebSocket.
    WebSocket(WebSocket),
    /// Unary gRPC calls over HTTP/2 (`grpc://`, `grpcs://`: Yellowstone Geyser's `GetSlot`...).
    Grpc(GrpcUnary),
}

/// What [`Wire::select`] refused.
#[derive(Debug)]
pub(crate) enum SelectError {
    /// The target could not be resolved or TLS could not be prepared.
    Setup(SetupError),
    /// The server answered the probe, but not in the wire asked for (an HTTP/1.1 server behind
    /// `--http2`, an HTTP status instead of a WebSocket upgrade).
    Refused {
        /// The setting that chose the wire: [`ChosenBy::Http2`], [`ChosenBy::H2c`] or the URL.
        chosen_by: ChosenBy,
        /// What the server did.
        reason: String,
    },
    /// A setting that chose or shapes the wire is not usable (a gRPC feed's x-token).
    Setting(crate::field::SettingError),
    /// The HTTP/2 settings (headers) cannot be sent on that wire.
    Headers(std::io::Error),
    /// The probe's runtime could not be started.
    Runtime(std::io::Error),
}

/// The setting that chose the wire a probe refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChosenBy {
    /// The URL's scheme (`ws://`, `wss://`).
    Url,
    /// HTTP/2 over TLS.
    Http2,
    /// HTTP/2 in cleartext.
    H2c,
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectError::Setup(err) => err.fmt(f),
            SelectError::Refused { reason, .. } => f.write_str(reason),
            SelectError::Setting(err) => err.fmt(f),
            SelectError::Headers(err) => write!(f, "{err}"),
            SelectError::Runtime(err) => write!(f, "cannot start a runtime: {err}"),
        }
    }
}

impl std::error::Error for SelectError {}

/// Code that runs over whichever transport was chosen: [`Wire::with`] calls
/// [`UseTransport::use_transport`] with the concrete transport.
pub(crate) trait UseTransport {
    /// What the code returns.
    type Output;

    /// Runs over `transport`.
    fn use_transport<T: Transport + Send + 'static>(self, transport: T) -> Self::Output;
}

impl Wire {
    /// Chooses and builds the transport for `settings`. With `probe`, a server that answers
    /// but not in the wire asked for is refused now, before any load, with the reason; a
    /// server that cannot be reached at all is not refused here (the caller counts that).
    pub(crate) fn select(settings: &WireSettings<'_>, probe: bool) -> Result<Wire, SelectError> {
        Self::select_with_token(settings, probe, None)
    }

    /// [`Wire::select`], with the `x-token` a `grpc://` target's calls carry.
    pub(crate) fn select_with_token(
        settings: &WireSettings<'_>,
        probe: bool,
        x_token: Option<&XToken>,
    ) -> Result<Wire, SelectError> {
        let target = settings.target;
        if target.grpc {
            let connector = Connector::with_alpn(target, settings.tls, settings.connect_timeout, Alpn::Http2)
                .map_err(SelectError::Setup)?;
            let grpc = GrpcUnary::new(connector, target, settings.headers, x_token, settings.streams)
                .map_err(SelectError::Headers)?;
            if probe {
                block_on(grpc.check_server())?
                    .map_err(|reason| SelectError::Refused { chosen_by: ChosenBy::Url, reason })?;
            }
            return Ok(Wire::Grpc(grpc));
        }
        if target.websocket {
            let connector =
                Connector::new(target, settings.tls, settings.connect_timeout).map_err(SelectError::Setup)?;
            let websocket =
                WebSocket::new(connector, target, settings.headers, settings.in_flight, settings.max_body);
            if probe {
                block_on(websocket.check_server())?
                    .map_err(|reason| SelectError::Refused { chosen_by: ChosenBy::Url, reason })?;
            }
            return Ok(Wire::WebSocket(websocket));
        }
        match settings.http {
            HttpVersion::Http1 => {
                let connector = Connector::new(target, settings.tls, settings.connect_timeout)
                    .map_err(SelectError::Setup)?;
                Ok(Wire::Http1(Http1::new(connector, target, settings.headers, settings.keepalive)))
            }
            HttpVersion::H2c | HttpVersion::Http2 => {
                let connector =
                    Connector::with_alpn(target, settings.tls, settings.connect_timeout, Alpn::Http2)
                        .map_err(SelectError::Setup)?;
                let http2 = Http2::new(connector, target, settings.headers, settings.streams)
                    .map_err(SelectError::Headers)?;
                if probe {
                    let chosen_by =
                        if settings.http == HttpVersion::H2c { ChosenBy::H2c } else { ChosenBy::Http2 };
                    block_on(http2.check_server())?
                        .map_err(|reason| SelectError::Refused { chosen_by, reason })?;
                }
                Ok(Wire::Http2(http2))
            }
        }
    }

    /// Runs `code` over the chosen transport.
    pub(crate) fn with<U: UseTransport>(&self, code: U) -> U::Output {
        match self {
            Wire::Http1(http1) => code.use_transport(http1.clone()),
            Wire::Http2(http2) => code.use_transport(http2.clone()),
            Wire::WebSocket(websocket) => code.use_transport(websocket.clone()),
            Wire::Grpc(grpc) => code.use_transport(grpc.clone()),
        }
    }

    /// The wire's name, for messages.
    #[cfg(test)]
    fn name(&self) -> &'static str {
        match self {
            Wire::Http1(_) => "HTTP/1.1",
            Wire::Http2(_) => "HTTP/2",
            Wire::WebSocket(_) => "WebSocket",
            Wire::Grpc(_) => "gRPC",
        }
    }
}

/// The wire of a feed of pushed items (subscriptions), one variant per stream wire: a new
/// stream wire (a gRPC Geyser stream) is a variant here and an arm in [`FeedWire::select`] and
/// [`FeedWire::with`].
#[derive(Debug)]
pub(crate) enum FeedWire {
    /// JSON-RPC subscriptions over WebSocket (`ws://`, `wss://`).
    WebSocket(Upgrade),
    /// Solana Yellowstone Geyser streams over gRPC (`grpc://`, `grpcs://`).
    Geyser(GeyserOpener),
}

/// Code that runs over whichever feed wire was chosen ([`FeedWire::with`]).
pub(crate) trait UseFeed {
    /// What the code returns.
    type Output;

    /// Runs over feeds that `opener` opens.
    fn use_feed<O: FeedOpener + Clone + 'static>(self, opener: &O) -> Self::Output;
}

impl FeedWire {
    /// Chooses the feed wire for `settings`' target (its URL's scheme). `max_body` bounds a
    /// message.
    pub(crate) fn select(
        settings: &WireSettings<'_>,
        x_token: Option<&XToken>,
    ) -> Result<FeedWire, SelectError> {
        let target = settings.target;
        if target.grpc {
            let connector = Connector::with_alpn(target, settings.tls, settings.connect_timeout, Alpn::Http2)
                .map_err(SelectError::Setup)?;
            let tls = target.scheme == crate::settings::Scheme::Https;
            let opener = GeyserOpener::new(
                connector,
                tls,
                &target.host,
                target.port,
                x_token,
                settings.max_body as usize,
            )
            .map_err(|err| SelectError::Setting(err.as_setting()))?;
            return Ok(FeedWire::Geyser(opener));
        }
        if !target.websocket {
            return Err(SelectError::Refused {
                chosen_by: ChosenBy::Url,
                reason: "subscriptions are pushed over WebSocket or gRPC: give a ws://, wss://, grpc:// or grpcs:// URL"
                    .into(),
            });
        }
        let connector =
            Connector::new(target, settings.tls, settings.connect_timeout).map_err(SelectError::Setup)?;
        Ok(FeedWire::WebSocket(Upgrade::new(connector, target, settings.headers, settings.max_body)))
    }

    /// Runs `code` over the chosen feed wire.
    pub(crate) fn with<U: UseFeed>(&self, code: U) -> U::Output {
        match self {
            FeedWire::WebSocket(upgrade) => code.use_feed(upgrade),
            FeedWire::Geyser(opener) => code.use_feed(opener),
        }
    }
}

/// Runs a probe on a runtime of its own.
fn block_on<F: std::future::Future>(future: F) -> Result<F::Output, SelectError> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(SelectError::Runtime)?;
    Ok(runtime.block_on(future))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings<'a>(target: &'a Target, tls: &'a TlsOptions, http: HttpVersion) -> WireSettings<'a> {
        WireSettings {
            target,
            headers: &[],
            tls,
            connect_timeout: Duration::from_secs(1),
            http,
            keepalive: true,
            streams: 4,
            in_flight: 2,
            max_body: 1 << 20,
        }
    }

    struct Name;
    impl UseTransport for Name {
        type Output = &'static str;
        fn use_transport<T: Transport + Send + 'static>(self, _transport: T) -> &'static str {
            std::any::type_name::<T>()
        }
    }

    #[test]
    fn the_url_and_the_http_version_choose_the_wire() {
        let tls = TlsOptions::default();
        for (url, http, wire, transport) in [
            ("http://127.0.0.1:1/", HttpVersion::Http1, "HTTP/1.1", "::Http1"),
            ("https://127.0.0.1:1/", HttpVersion::Http1, "HTTP/1.1", "::Http1"),
            ("http://127.0.0.1:1/", HttpVersion::H2c, "HTTP/2", "::Http2"),
            ("https://127.0.0.1:1/", HttpVersion::Http2, "HTTP/2", "::Http2"),
            ("ws://127.0.0.1:1/", HttpVersion::Http1, "WebSocket", "::WebSocket"),
            ("wss://127.0.0.1:1/", HttpVersion::Http2, "WebSocket", "::WebSocket"),
            ("grpc://127.0.0.1:1", HttpVersion::Http1, "gRPC", "::GrpcUnary"),
            ("grpcs://127.0.0.1:1", HttpVersion::Http1, "gRPC", "::GrpcUnary"),
        ] {
            let target = Target::parse(url).unwrap();
            let chosen = Wire::select(&settings(&target, &tls, http), false).unwrap();
            assert_eq!(chosen.name(), wire, "{url} {http:?}");
            assert!(chosen.with(Name).ends_with(transport), "{url} {http:?}: {}", chosen.with(Name));
        }
    }
}
