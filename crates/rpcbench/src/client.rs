//! One-off JSON-RPC calls outside a load run: asking a node for its head before a run, or
//! choosing parameters from what it really has. Uses the transport the one wire selection
//! (`engine::select`) chooses for the run (HTTP/1.1, HTTP/2 or WebSocket, the same
//! connection code and request framing), one connection per call. The errors of a call
//! have the endpoint's secrets scrubbed out: a node's error message may quote the key or the
//! credentials it was sent.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::engine::config::{HttpVersion, RunConfig};
use crate::engine::select::{UseTransport, Wire, WireSettings};
use crate::engine::StopHandle;
use crate::jsonrpc::{self, CheckMode, RequestTemplate};
use crate::outcome::Outcome;
use crate::settings::{Target, TlsOptions};
use crate::transport::grpc::XToken;
use crate::transport::{Lane, Outgoing, Transport};
use crate::util::redact::Secrets;

pub mod batches;

/// Why a call failed.
#[derive(Debug)]
pub enum CallError {
    /// The endpoint cannot be set up from what was given (its URL, its TLS settings): said
    /// before any request.
    Setup(String),
    /// Connecting, sending or reading failed.
    Transport(String),
    /// The node answered with an HTTP status other than 2xx.
    Status(u16),
    /// The node answered with a JSON-RPC error.
    Rpc {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// The answer was not a JSON-RPC response.
    Invalid(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Setup(message) => f.write_str(message),
            CallError::Transport(message) => write!(f, "request failed: {message}"),
            CallError::Status(status) => write!(f, "request failed: HTTP status {status}"),
            CallError::Rpc { code, message } => write!(f, "JSON-RPC error {code}: {message}"),
            CallError::Invalid(message) => write!(f, "invalid response: {message}"),
        }
    }
}

impl std::error::Error for CallError {}

/// A node to call outside a load run: the URL, the headers sent with every call (an API key),
/// TLS settings, and the time allowed per call. Built once; each call opens a connection.
/// The URL's user name and password are sent as Basic credentials, as in a run.
#[derive(Debug, Clone)]
pub struct Endpoint {
    target: Target,
    headers: Vec<(String, String)>,
    tls: TlsOptions,
    max_body: u64,
    http: HttpVersion,
    /// The `x-token` of a `grpc://` endpoint (a secret: in `secrets` too).
    x_token: Option<XToken>,
    wire: Wire,
    timeout: Duration,
    secrets: Secrets,
}

impl Endpoint {
    /// An endpoint with the target, headers and TLS settings of a run.
    pub fn from_config(config: &RunConfig, timeout: Duration) -> Result<Self, CallError> {
        Self::new(
            config.target.clone(),
            config.headers.clone(),
            config.tls.clone(),
            config.max_body,
            config.http,
            config.x_token.clone(),
            timeout,
        )
    }

    /// A plain endpoint: no extra headers, default TLS settings.
    pub fn parse(url: &str, timeout: Duration) -> Result<Self, CallError> {
        let target = Target::parse(url).map_err(|err| CallError::Setup(err.to_string()))?;
        Self::new(
            target,
            Vec::new(),
            TlsOptions::default(),
            64 * 1024 * 1024,
            HttpVersion::Http1,
            None,
            timeout,
        )
    }

    fn new(
        target: Target,
        headers: Vec<(String, String)>,
        tls: TlsOptions,
        max_body: u64,
        http: HttpVersion,
        x_token: Option<XToken>,
        timeout: Duration,
    ) -> Result<Self, CallError> {
        let settings = WireSettings {
            target: &target,
            headers: &headers,
            tls: &tls,
            connect_timeout: timeout,
            http,
            keepalive: true,
            streams: 1,
            in_flight: 1,
            max_body,
        };
        let wire = Wire::select_with_token(&settings, false, x_token.as_ref())
            .map_err(|err| CallError::Setup(err.to_string()))?;
        let mut secrets = target.secrets();
        for (name, value) in &headers {
            secrets.add_header(name, value);
        }
        if let Some(token) = &x_token {
            secrets.add_header("x-token", token.expose());
        }
        Ok(Self { target, headers, tls, max_body, http, x_token, wire, timeout, secrets })
    }

    /// The same node sending `headers` with every call too (an API key: its values join the
    /// secrets scrubbed from messages).
    pub fn with_headers(self, headers: Vec<(String, String)>) -> Result<Self, CallError> {
        Self::new(self.target, headers, self.tls, self.max_body, self.http, self.x_token, self.timeout)
    }

    /// The extra headers every call sends (secrets: never print their values).
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The same node with another time allowed per call (to connect, too).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        match Self::new(
            self.target.clone(),
            self.headers.clone(),
            self.tls.clone(),
            self.max_body,
            self.http,
            self.x_token.clone(),
            timeout,
        ) {
            Ok(rebuilt) => rebuilt,
            Err(_) => {
                self.timeout = timeout;
                self
            }
        }
    }

    /// The URL with secrets hidden, for messages.
    pub fn redacted(&self) -> String {
        self.target.redacted()
    }

    /// Every secret this endpoint sends (URL key, query values, credentials, header values).
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The text with this endpoint's secrets replaced by `***`.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.secrets.scrub(text)
    }

    /// Calls `method` with `params` and returns the `result`, or an error with this endpoint's
    /// secrets scrubbed out of its text. Blocking.
    pub fn call(&self, method: &str, params: Option<&Value>) -> Result<Value, CallError> {
        self.call_unscrubbed(method, params).map_err(|err| self.scrub_error(err))
    }

    /// Whether the endpoint is a Geyser endpoint (`grpc://`, `grpcs://`): it answers unary
    /// Geyser calls ([`Endpoint::geyser_slot`]), not JSON-RPC.
    pub fn is_grpc(&self) -> bool {
        self.target.grpc
    }

    /// The slot a Geyser endpoint (`grpc://`, `grpcs://`) is at, from its unary `GetSlot`
    /// call, with the endpoint's `x-token`. Blocking.
    pub fn geyser_slot(&self) -> Result<u64, CallError> {
        let (path, framed) = crate::protocol::geyser_unary::get_slot_call();
        let answer = self.exchange_whole(&path, &framed).map_err(|err| self.scrub_error(err))?;
        if answer.status != 200 {
            return Err(CallError::Status(answer.status));
        }
        crate::protocol::geyser_unary::slot_of(&answer.body)
            .ok_or_else(|| CallError::Invalid("not a GetSlotResponse".into()))
    }

    /// Sends `body` as it is (a batch, an oversized request) on a connection of its own and
    /// returns the status and body, whatever they are: for probes that look at refusals.
    /// Transport errors have this endpoint's secrets scrubbed out. Blocking.
    pub fn post(&self, body: &[u8]) -> Result<RawAnswer, CallError> {
        self.post_unscrubbed(body).map_err(|err| self.scrub_error(err))
    }

    /// [`Endpoint::post`], abandoned as soon as `stop` is stopped (an interrupt): `None` then,
    /// at once, not at the end of the timeout. Blocking.
    pub fn post_unless_stopped(
        &self,
        body: &[u8],
        stop: &StopHandle,
    ) -> Option<Result<RawAnswer, CallError>> {
        self.exchange(b"", body, Some(stop)).map(|posted| posted.map_err(|err| self.scrub_error(err)))
    }

    fn scrub_error(&self, err: CallError) -> CallError {
        match err {
            CallError::Setup(message) => CallError::Setup(self.scrub(&message).into_owned()),
            CallError::Transport(message) => CallError::Transport(self.scrub(&message).into_owned()),
            CallError::Rpc { code, message } => {
                CallError::Rpc { code, message: self.scrub(&message).into_owned() }
            }
            CallError::Invalid(message) => CallError::Invalid(self.scrub(&message).into_owned()),
            status @ CallError::Status(_) => status,
        }
    }

    fn call_unscrubbed(&self, method: &str, params: Option<&Value>) -> Result<Value, CallError> {
        let template =
            RequestTemplate::from_method(method, params).map_err(|err| CallError::Transport(err.0))?;
        let mut body = Vec::new();
        template.write_body(1, &mut body);
        let answer = self.post_unscrubbed(&body)?;
        if !(200..300).contains(&answer.status) {
            return Err(CallError::Status(answer.status));
        }
        // What a run would count as invalid (another id, no "jsonrpc":"2.0", ...) is invalid
        // here too: one-off calls and `compare --equal` judge as runs do.
        if let Outcome::Invalid(kind) = jsonrpc::classify(answer.status, &answer.body, 1, CheckMode::Full) {
            return Err(CallError::Invalid(format!("{kind}: not a JSON-RPC 2.0 answer to the request")));
        }
        let mut value: Value =
            serde_json::from_slice(&answer.body).map_err(|err| CallError::Invalid(err.to_string()))?;
        if let Some(error) = value.get("error") {
            return Err(CallError::Rpc {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
            });
        }
        value
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| CallError::Invalid("no result and no error".into()))
    }

    /// Each exchange runs on a runtime of its own, as a worker does: connections shared within
    /// a worker (HTTP/2, WebSocket) are never carried over from a runtime that is gone.
    fn post_unscrubbed(&self, body: &[u8]) -> Result<RawAnswer, CallError> {
        self.exchange_whole(b"", body)
    }

    /// Sends `body` to `path` (empty: the URL's own) and returns the answer.
    fn exchange_whole(&self, path: &[u8], body: &[u8]) -> Result<RawAnswer, CallError> {
        self.exchange(path, body, None).unwrap_or_else(|| Err(CallError::Transport("stopped".into())))
    }

    /// Sends `body` to `path` and returns the answer; `None` when `stop` was stopped first.
    fn exchange(
        &self,
        path: &[u8],
        body: &[u8],
        stop: Option<&StopHandle>,
    ) -> Option<Result<RawAnswer, CallError>> {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(err) => return Some(Err(CallError::Transport(err.to_string()))),
        };
        self.wire.with(OnePost {
            runtime: &runtime,
            path,
            body,
            max_body: self.max_body,
            timeout: self.timeout,
            stop,
        })
    }
}

/// A node's answer to a body sent as it is ([`Endpoint::post`]): its HTTP status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawAnswer {
    /// The HTTP status (101-style upgrades aside, what the transport reports).
    pub status: u16,
    /// The body, as received.
    pub body: Vec<u8>,
}

/// One body sent as it is over whichever transport the endpoint's wire is.
struct OnePost<'a> {
    runtime: &'a tokio::runtime::Runtime,
    /// Path and query; empty: the target URL's own.
    path: &'a [u8],
    body: &'a [u8],
    max_body: u64,
    timeout: Duration,
    /// What abandons the exchange at once (`None`: only the timeout does).
    stop: Option<&'a StopHandle>,
}

impl UseTransport for OnePost<'_> {
    /// `None`: abandoned at a stop.
    type Output = Option<Result<RawAnswer, CallError>>;

    fn use_transport<T: Transport + Send + 'static>(self, transport: T) -> Self::Output {
        let OnePost { runtime, path, body, max_body, timeout, stop } = self;
        let transport = transport.for_worker();
        runtime.block_on(async {
            let exchange = async {
                let mut lane =
                    transport.open(0).await.map_err(|err| CallError::Transport(err.to_string()))?;
                let mut request = Outgoing::default();
                request.path.extend_from_slice(path);
                request.body.extend_from_slice(body);
                let reply = lane
                    .exchange(&request, max_body)
                    .await
                    .map_err(|err| CallError::Transport(format!("{err:?}")))?;
                Ok(RawAnswer { status: reply.status, body: lane.body().to_vec() })
            };
            let bounded = async {
                tokio::time::timeout(timeout, exchange)
                    .await
                    .unwrap_or_else(|_| Err(CallError::Transport("timeout".into())))
            };
            match stop {
                None => Some(bounded.await),
                Some(stop) => tokio::select! {
                    answer = bounded => Some(answer),
                    () = stop.stopped() => None,
                },
            }
        })
    }
}

/// Calls `method` with `params` on the node at `url` and returns the `result`. Blocking.
pub fn call(url: &str, method: &str, params: Option<&Value>, timeout: Duration) -> Result<Value, CallError> {
    Endpoint::parse(url, timeout)?.call(method, params)
}
