//! JSON-RPC 2.0 errors as the mock nodes answer them: the error type, the standard codes and
//! the helpers every chain uses (an unknown method, positional params), and writing an error
//! answer with the request's id echoed byte for byte.

use serde_json::value::RawValue;
use serde_json::Value;

/// A JSON-RPC error returned by a node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    /// -32602 with the given message.
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(INVALID_PARAMS, message)
    }
}

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
pub(crate) const INVALID_PARAMS: i64 = -32602;
pub(crate) const INTERNAL_ERROR: i64 = -32603;
pub(crate) const LIMIT_EXCEEDED: i64 = -32005;
/// The generic server error, as erigon refuses a batch over its limit.
pub(crate) const SERVER_ERROR: i64 = -32000;

/// The error for an unknown method.
pub(crate) fn method_not_found(method: &str) -> RpcError {
    RpcError::new(METHOD_NOT_FOUND, format!("the method {method} does not exist/is not available"))
}

/// Positional params as JSON values: absent params are an empty list; by-name params are
/// refused since neither Solana nor Ethereum nodes accept them.
pub(crate) fn positional_params(params: Option<&RawValue>) -> Result<Vec<Value>, RpcError> {
    let Some(raw) = params else {
        return Ok(Vec::new());
    };
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(Value::Null) => Ok(Vec::new()),
        Ok(_) => Err(RpcError::invalid_params("Invalid params: expected an array of positional params")),
        Err(err) => Err(RpcError::invalid_params(format!("Invalid params: {err}"))),
    }
}

pub(crate) fn write_error(out: &mut Vec<u8>, id: &[u8], error: &RpcError) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(b",\"error\":{\"code\":");
    out.extend_from_slice(itoa::Buffer::new().format(error.code).as_bytes());
    out.extend_from_slice(b",\"message\":");
    // Serializing a string or a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &error.message);
    if let Some(data) = &error.data {
        out.extend_from_slice(b",\"data\":");
        let _ = serde_json::to_writer(&mut *out, data);
    }
    out.extend_from_slice(b"}}");
}
