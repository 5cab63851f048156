//! One-off JSON-RPC calls outside a load run: asking a node for its head before a run, or
//! choosing parameters from what it really has. Uses the engine's own connection code. The
//! errors of a call have the endpoint's secrets scrubbed out: a node's error message may quote
//! the key or the credentials it was sent.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::engine::config::{RunConfig, Target};
use crate::engine::connect::Connector;
use crate::engine::http::Connection;
use crate::jsonrpc::RequestTemplate;
use crate::redact::Secrets;

/// Why a call failed.
#[derive(Debug)]
pub enum CallError {
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
    config: RunConfig,
    connector: Connector,
    timeout: Duration,
    secrets: Secrets,
}

impl Endpoint {
    /// An endpoint with the target, headers and TLS settings of a run.
    pub fn from_config(config: &RunConfig, timeout: Duration) -> Result<Self, CallError> {
        let request = RequestTemplate::from_method("rpcbench_endpoint", None)
            .map_err(|err| CallError::Transport(err.0))?;
        let mut own = RunConfig::new(config.target.clone(), &request);
        own.headers = config.headers.clone();
        own.tls = config.tls.clone();
        own.max_body = config.max_body;
        own.connect_timeout = timeout;
        let connector = Connector::new(&own).map_err(|err| CallError::Transport(err.to_string()))?;
        let secrets = Secrets::of_run(&own);
        Ok(Self { config: own, connector, timeout, secrets })
    }

    /// A plain endpoint: no extra headers, default TLS settings.
    pub fn parse(url: &str, timeout: Duration) -> Result<Self, CallError> {
        let target = Target::parse(url).map_err(|err| CallError::Transport(err.to_string()))?;
        let request = RequestTemplate::from_method("rpcbench_endpoint", None)
            .map_err(|err| CallError::Transport(err.0))?;
        Self::from_config(&RunConfig::new(target, &request), timeout)
    }

    /// The same node with another time allowed per call.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.config.connect_timeout = timeout;
        self
    }

    /// The URL with secrets hidden, for messages.
    pub fn redacted(&self) -> String {
        self.config.target.redacted()
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
        self.call_unscrubbed(method, params).map_err(|err| match err {
            CallError::Transport(message) => CallError::Transport(self.scrub(&message).into_owned()),
            CallError::Rpc { code, message } => {
                CallError::Rpc { code, message: self.scrub(&message).into_owned() }
            }
            CallError::Invalid(message) => CallError::Invalid(self.scrub(&message).into_owned()),
            status @ CallError::Status(_) => status,
        })
    }

    fn call_unscrubbed(&self, method: &str, params: Option<&Value>) -> Result<Value, CallError> {
        let request =
            RequestTemplate::from_method(method, params).map_err(|err| CallError::Transport(err.0))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|err| CallError::Transport(err.to_string()))?;
        let config = &self.config;
        runtime.block_on(async {
            let exchange = async {
                let stream =
                    self.connector.connect().await.map_err(|err| CallError::Transport(err.to_string()))?;
                let mut connection = Connection::new(stream);
                let mut bytes = config.request_head();
                bytes.extend_from_slice(request.body_len(1).to_string().as_bytes());
                bytes.extend_from_slice(b"\r\n\r\n");
                request.write_body(1, &mut bytes);
                connection.send(&bytes).await.map_err(|err| CallError::Transport(err.to_string()))?;
                let meta = connection
                    .read_response(config.max_body)
                    .await
                    .map_err(|err| CallError::Transport(format!("{err:?}")))?;
                if !(200..300).contains(&meta.status) {
                    return Err(CallError::Status(meta.status));
                }
                let value: Value = serde_json::from_slice(connection.body())
                    .map_err(|err| CallError::Invalid(err.to_string()))?;
                Ok(value)
            };
            let mut value = tokio::time::timeout(self.timeout, exchange)
                .await
                .map_err(|_| CallError::Transport("timeout".into()))??;
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
        })
    }
}

/// Calls `method` with `params` on the node at `url` and returns the `result`. Blocking.
pub fn call(url: &str, method: &str, params: Option<&Value>, timeout: Duration) -> Result<Value, CallError> {
    Endpoint::parse(url, timeout)?.call(method, params)
}
