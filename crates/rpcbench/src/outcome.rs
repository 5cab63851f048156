//! The one outcome taxonomy. Every call that was attempted gets exactly one [`Outcome`]; the
//! recorder counts them in [`OutcomeCounts`], and the live metrics, the reports and the results
//! files all read that one type (its serialized form is the `outcomes` object of the JSON
//! report and of results files). A new class is added here, once.
//!
//! What a hostile server sends cannot make the counts grow without bound: at most
//! [`MAX_RPC_CODES`] distinct JSON-RPC error codes are kept (the rest are counted exactly in
//! one `other` bucket), and the message kept for each is cut to [`MAX_MESSAGE_CHARS`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod tx_final;
mod tx_refusal;
mod wire_codes;

/// The class of one call's outcome. Every call that was attempted gets exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// HTTP 2xx with a JSON-RPC 2.0 response carrying a `result` (a `null` result included)
    /// and the id that was sent; for a plain HTTP call, any 2xx (with a JSON body when one is
    /// expected).
    Ok,
    /// HTTP 2xx with a JSON-RPC error object; the error's `code`.
    RpcError(i64),
    /// An HTTP status other than 2xx, whatever the body says.
    HttpStatus(u16),
    /// A response that is not a valid answer to the request.
    Invalid(InvalidKind),
    /// No complete response within the request timeout.
    Timeout,
    /// The connection could not be established (refused, unreachable, connect timeout, TLS).
    Connect,
    /// The connection was closed or reset before the response was complete.
    Closed,
    /// Sent, but the run ended (its time was up, or it was stopped) before the response came.
    Unfinished,
    /// HTTP/2: the request was on a stream above the last one a GOAWAY from the server said it
    /// would process (the request was lost with the connection).
    GoAway,
    /// HTTP/2: the server reset the stream with REFUSED_STREAM (it did not process the request).
    RefusedStream,
    /// HTTP/2: the server reset the stream with another error code (RST_STREAM), by code.
    StreamReset(u32),
    /// WebSocket: the socket closed before the answer came, by close code (1006: it went away
    /// without a close frame).
    WsClosed(u16),
    /// WebSocket: the server broke the protocol (a bad frame, text that is not UTF-8).
    WsProtocol,
    /// The server refused the call for its rate limit: HTTP 429, or a JSON-RPC error the
    /// rate-limit rules recognise (`crate::ratelimit::signs`), one by one inside batches.
    RateLimited(RateLimitSign),
    /// gRPC: the call ended with a `grpc-status` other than OK (0), by status code (the codes
    /// gRPC does not define are counted as [`UNKNOWN_GRPC_STATUS`]).
    GrpcStatus(u32),
    /// A transaction send (`eth_sendRawTransaction`, Solana's `sendTransaction`) the node
    /// refused, by its reason. The reasons with a row of their own in [`CLASSES`] are counted
    /// here; a refusal for the rate limit is [`Outcome::RateLimited`] and one of no known reason
    /// [`Outcome::RpcError`] by code ([`TxRefusal::outcome`] says which).
    TxRefused(TxRefusal),
}

pub use tx_final::tx_finals_of;
pub use tx_final::{
    drop_cause_label, drop_causes_of, DropCause, DropCauseSpec, TxFinalCounts, TxFinalOutcome, TxFinalSpec,
    DROP_CAUSES, REORGED_OUT_KEY, TX_FINALS,
};
pub use tx_refusal::TxRefusal;

/// How a server said that a call went over its rate limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RateLimitSign {
    /// An HTTP status (429 Too Many Requests).
    Http(u16),
    /// A JSON-RPC error code (with a message the rules recognise, or a code they list).
    Rpc(i64),
    /// Signs past the first [`MAX_RATE_LIMIT_SIGNS`], counted together.
    Other,
}

impl RateLimitSign {
    /// The sign as reports and files key it: `http_429`, `rpc_-32029`, `other`.
    pub fn text(self) -> String {
        match self {
            RateLimitSign::Http(status) => format!("http_{status}"),
            RateLimitSign::Rpc(code) => format!("rpc_{code}"),
            RateLimitSign::Other => OTHER_CODE.to_string(),
        }
    }

    /// Reads [`RateLimitSign::text`]'s form back.
    pub fn parse(text: &str) -> Option<Self> {
        if text == OTHER_CODE {
            return Some(RateLimitSign::Other);
        }
        if let Some(status) = text.strip_prefix("http_") {
            return status.parse().ok().map(RateLimitSign::Http);
        }
        text.strip_prefix("rpc_")?.parse().ok().map(RateLimitSign::Rpc)
    }

    /// How reports name it: `HTTP 429`, `JSON-RPC -32029`.
    pub fn label(self) -> String {
        match self {
            RateLimitSign::Http(status) => format!("HTTP {status}"),
            RateLimitSign::Rpc(code) => format!("JSON-RPC {code}"),
            RateLimitSign::Other => "other signs".to_string(),
        }
    }
}

/// The most distinct rate-limit signs counted one by one; the rest count as
/// [`RateLimitSign::Other`].
pub const MAX_RATE_LIMIT_SIGNS: usize = 32;

impl Outcome {
    /// Whether this outcome is a success.
    pub fn is_ok(self) -> bool {
        matches!(self, Outcome::Ok)
    }

    /// The class of this outcome, without its code.
    pub fn outcome_class(self) -> OutcomeClass {
        match self {
            Outcome::Ok => OutcomeClass::Ok,
            Outcome::RpcError(_) => OutcomeClass::RpcError,
            Outcome::HttpStatus(_) => OutcomeClass::HttpError,
            Outcome::Invalid(_) => OutcomeClass::Invalid,
            Outcome::Timeout => OutcomeClass::Timeout,
            Outcome::Connect => OutcomeClass::Connect,
            Outcome::Closed => OutcomeClass::Closed,
            Outcome::Unfinished => OutcomeClass::Unfinished,
            Outcome::GoAway => OutcomeClass::GoAway,
            Outcome::RefusedStream => OutcomeClass::RefusedStream,
            Outcome::StreamReset(_) => OutcomeClass::StreamReset,
            Outcome::WsClosed(_) => OutcomeClass::WsClosed,
            Outcome::WsProtocol => OutcomeClass::WsProtocol,
            Outcome::RateLimited(_) => OutcomeClass::RateLimited,
            Outcome::GrpcStatus(_) => OutcomeClass::GrpcStatus,
            Outcome::TxRefused(reason) => reason.class(),
        }
    }

    /// The class name, as the live metrics' `class` label and the text report show it.
    pub fn class(self) -> &'static str {
        self.outcome_class().spec().name
    }

    /// The code within the class, for the classes that have one (the metrics' `code` label).
    pub fn code(self) -> Option<String> {
        match self {
            Outcome::RpcError(code) => Some(code.to_string()),
            Outcome::HttpStatus(status) => Some(status.to_string()),
            Outcome::Invalid(kind) => Some(kind.name().to_string()),
            Outcome::StreamReset(code) => Some(reset_code_name(code).to_string()),
            Outcome::WsClosed(code) => Some(code.to_string()),
            Outcome::RateLimited(sign) => Some(sign.text()),
            Outcome::GrpcStatus(code) => Some(grpc_status_name(code).to_string()),
            _ => None,
        }
    }
}

/// Why a response was classified as invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InvalidKind {
    /// The body is not JSON.
    NotJson,
    /// JSON, but not a JSON-RPC 2.0 response (no `"jsonrpc":"2.0"`, neither or both of
    /// `result` and `error`, a malformed error object, no `id`, an array for a single call).
    NotJsonRpc,
    /// A JSON-RPC response whose id is not the one that was sent (in a batch: an id that was
    /// not sent, or one answered twice).
    IdMismatch,
    /// The body was larger than the configured limit.
    BodyTooLarge,
    /// The bytes received are not a valid HTTP/1.x response.
    BadHttp,
    /// A batch reply that has no item for this call.
    Missing,
    /// The response was followed by bytes nobody asked for (a response sent twice, trailing
    /// garbage): the connection is closed and the fault counted once, on this response.
    ExtraBytes,
    /// A replay with response checks: the answer's digest is not the recorded one (the node
    /// answered the recorded request differently).
    ChangedResponse,
    /// gRPC: a reply that is not one well-framed message of the method's type (a length
    /// prefix that does not match the bytes, a compressed message nobody asked for, no
    /// `grpc-status`, a message that is not the method's protobuf).
    BadGrpc,
}

impl InvalidKind {
    /// All kinds, in report order.
    pub const ALL: [InvalidKind; 9] = [
        InvalidKind::NotJson,
        InvalidKind::NotJsonRpc,
        InvalidKind::IdMismatch,
        InvalidKind::BodyTooLarge,
        InvalidKind::BadHttp,
        InvalidKind::Missing,
        InvalidKind::ExtraBytes,
        InvalidKind::ChangedResponse,
        InvalidKind::BadGrpc,
    ];

    /// The stable name used in reports and JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            InvalidKind::NotJson => "not_json",
            InvalidKind::NotJsonRpc => "not_jsonrpc",
            InvalidKind::IdMismatch => "id_mismatch",
            InvalidKind::BodyTooLarge => "body_too_large",
            InvalidKind::BadHttp => "bad_http",
            InvalidKind::Missing => "missing",
            InvalidKind::ExtraBytes => "extra_bytes",
            InvalidKind::ChangedResponse => "changed_response",
            InvalidKind::BadGrpc => "bad_grpc",
        }
    }

    /// The kind with this name.
    pub fn from_name(name: &str) -> Option<InvalidKind> {
        InvalidKind::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

impl fmt::Display for InvalidKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub use wire_codes::{
    close_code_text, grpc_status_bucket, grpc_status_name, reset_code_bucket, reset_code_name,
    MAX_CLOSE_CODES, OTHER_CLOSE_CODE, UNKNOWN_GRPC_STATUS, UNKNOWN_RESET_CODE,
};
use wire_codes::{GRPC_STATUSES, RESET_CODES};

/// The most distinct JSON-RPC error codes counted one by one; further codes are counted in
/// [`OutcomeCounts::rpc_errors_other`].
pub const MAX_RPC_CODES: usize = 100;

/// The longest error message kept per code, in characters (longer ones are cut, marked with
/// [`CUT_MARK`]).
pub const MAX_MESSAGE_CHARS: usize = 512;

/// The end of a message that was cut short.
pub const CUT_MARK: &str = "…";

/// One JSON-RPC error code's count and the first message seen with it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RpcErrorCount {
    /// How many responses carried this code.
    pub count: u64,
    /// The message of the first response seen with this code (at most
    /// [`MAX_MESSAGE_CHARS`]).
    #[serde(rename = "message")]
    pub first_message: Option<String>,
}

/// A count per outcome class. Serialized as the `outcomes` object of reports and results
/// files: maps keyed by code, status and kind name (in the order of those strings), and the
/// newer classes only when they counted something, so older files read the same.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutcomeCounts {
    /// Successful calls.
    pub ok: u64,
    /// JSON-RPC errors inside HTTP 2xx, by code (at most [`MAX_RPC_CODES`] codes).
    #[serde(serialize_with = "by_key_text", deserialize_with = "parse_keys")]
    pub rpc_errors: BTreeMap<i64, RpcErrorCount>,
    /// JSON-RPC errors whose code came after [`MAX_RPC_CODES`] others.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rpc_errors_other: u64,
    /// Responses with a non-2xx HTTP status, by status.
    #[serde(serialize_with = "by_key_text", deserialize_with = "parse_keys")]
    pub http_errors: BTreeMap<u16, u64>,
    /// Invalid responses, by kind.
    #[serde(serialize_with = "by_key_text", deserialize_with = "parse_keys")]
    pub invalid: BTreeMap<InvalidKind, u64>,
    /// Calls that timed out.
    pub timeout: u64,
    /// Connection attempts that failed.
    pub connect: u64,
    /// Connections closed or reset before the response was complete.
    pub closed: u64,
    /// Calls sent whose response had not come when the run ended.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unfinished: u64,
    /// HTTP/2: requests lost to a GOAWAY (on a stream above the server's last processed one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub goaway: u64,
    /// HTTP/2: streams the server refused (RST_STREAM REFUSED_STREAM).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_stream: u64,
    /// HTTP/2: streams the server reset with another code, by code name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "by_key_text",
        deserialize_with = "parse_keys"
    )]
    pub stream_reset: BTreeMap<ResetCode, u64>,
    /// WebSocket: requests whose socket closed before the answer, by close code (at most
    /// [`MAX_CLOSE_CODES`]; the rest under `0`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "by_key_text",
        deserialize_with = "parse_keys"
    )]
    pub ws_closed: BTreeMap<u16, u64>,
    /// WebSocket: requests lost to a server that broke the protocol.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ws_protocol: u64,
    /// Calls the server refused for its rate limit, by sign (at most
    /// [`MAX_RATE_LIMIT_SIGNS`]; the rest under `other`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "by_key_text",
        deserialize_with = "parse_keys"
    )]
    pub rate_limited: BTreeMap<RateLimitSign, u64>,
    /// gRPC: calls that ended with a status other than OK, by status name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "by_key_text",
        deserialize_with = "parse_keys"
    )]
    pub grpc_status: BTreeMap<GrpcStatusCode, u64>,
    /// Transaction sends the node refused, by the reasons that have a row of their own in
    /// [`CLASSES`] (at most [`TxRefusal::WITH_OWN_ROW`]'s ten keys).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        serialize_with = "by_key_text",
        deserialize_with = "parse_tx_refusals"
    )]
    pub tx_refused: BTreeMap<TxRefusal, u64>,
}

/// An RST_STREAM error code as counted: one the RFC defines, or [`UNKNOWN_RESET_CODE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResetCode(pub u32);

/// A gRPC status code as counted: one gRPC defines, or [`UNKNOWN_GRPC_STATUS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrpcStatusCode(pub u32);

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// Keys as reports show them: the text of a code, status or kind name.
trait KeyText: Sized {
    fn text(&self) -> String;
    fn parse(text: &str) -> Option<Self>;
}

impl KeyText for i64 {
    fn text(&self) -> String {
        self.to_string()
    }
    fn parse(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

impl KeyText for u16 {
    fn text(&self) -> String {
        self.to_string()
    }
    fn parse(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

impl KeyText for ResetCode {
    fn text(&self) -> String {
        reset_code_name(self.0).to_string()
    }
    fn parse(text: &str) -> Option<Self> {
        if text == "unknown" {
            return Some(ResetCode(UNKNOWN_RESET_CODE));
        }
        RESET_CODES.iter().position(|name| *name == text).map(|code| ResetCode(code as u32))
    }
}

impl KeyText for GrpcStatusCode {
    fn text(&self) -> String {
        grpc_status_name(self.0).to_string()
    }
    fn parse(text: &str) -> Option<Self> {
        if text == "unknown" {
            return Some(GrpcStatusCode(UNKNOWN_GRPC_STATUS));
        }
        GRPC_STATUSES.iter().position(|name| *name == text).map(|code| GrpcStatusCode(code as u32))
    }
}

impl KeyText for RateLimitSign {
    fn text(&self) -> String {
        RateLimitSign::text(*self)
    }
    fn parse(text: &str) -> Option<Self> {
        RateLimitSign::parse(text)
    }
}

/// Reads `tx_refused`: only the reasons that have a row of their own are its keys.
fn parse_tx_refusals<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<TxRefusal, u64>, D::Error> {
    let map: BTreeMap<TxRefusal, u64> = parse_keys(deserializer)?;
    match map.keys().find(|reason| !TxRefusal::WITH_OWN_ROW.contains(reason)) {
        Some(reason) => Err(D::Error::custom(format!("'{reason}' is not counted under tx_refused"))),
        None => Ok(map),
    }
}

impl KeyText for TxRefusal {
    fn text(&self) -> String {
        self.name()
    }
    fn parse(text: &str) -> Option<Self> {
        TxRefusal::from_name(text)
    }
}

impl KeyText for InvalidKind {
    fn text(&self) -> String {
        self.name().to_string()
    }
    fn parse(text: &str) -> Option<Self> {
        InvalidKind::from_name(text)
    }
}

/// Serializes a map in the order of its keys' text (the order results files have always had).
fn by_key_text<K: KeyText, V: Serialize, S: Serializer>(
    map: &BTreeMap<K, V>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let texts: BTreeMap<String, &V> = map.iter().map(|(key, value)| (key.text(), value)).collect();
    texts.serialize(serializer)
}

fn parse_keys<'de, K: KeyText + Ord, V: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<K, V>, D::Error> {
    let texts = BTreeMap::<String, V>::deserialize(deserializer)?;
    texts
        .into_iter()
        .map(|(text, value)| {
            K::parse(&text)
                .map(|key| (key, value))
                .ok_or_else(|| D::Error::custom(format!("unknown outcome key '{text}'")))
        })
        .collect()
}

/// Cuts a server's error message to [`MAX_MESSAGE_CHARS`] characters.
pub fn bounded_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => message,
        Some((cut, _)) => {
            let mut short = message[..cut].to_string();
            short.push_str(CUT_MARK);
            short
        }
    }
}

/// Counts that do not fit a `u64` (a results file that claims more than there can be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountOverflow;

impl fmt::Display for CountOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the outcome counts add up to more than 2^64")
    }
}

impl std::error::Error for CountOverflow {}

impl OutcomeCounts {
    /// Counts one outcome. A JSON-RPC error code seen for the first time asks `message` for its
    /// message (the cold path parses the body).
    pub fn add(&mut self, outcome: Outcome, message: impl FnOnce() -> Option<String>) {
        self.add_many(outcome, 1, message);
    }

    /// Counts `count` calls of one outcome.
    #[inline]
    pub fn add_many(&mut self, outcome: Outcome, count: u64, message: impl FnOnce() -> Option<String>) {
        let outcome = match outcome {
            // The refusals counted in another row are counted there.
            Outcome::TxRefused(TxRefusal::Other(code)) => Outcome::RpcError(code),
            Outcome::TxRefused(TxRefusal::RateLimited) => Outcome::RateLimited(RateLimitSign::Other),
            outcome => outcome,
        };
        match outcome {
            Outcome::Ok => self.ok += count,
            Outcome::RpcError(code) => {
                if let Some(entry) = self.rpc_errors.get_mut(&code) {
                    entry.count += count;
                } else if self.rpc_errors.len() < MAX_RPC_CODES {
                    let first_message = message().map(bounded_message);
                    self.rpc_errors.insert(code, RpcErrorCount { count, first_message });
                } else {
                    self.rpc_errors_other += count;
                }
            }
            outcome => *self.slot(outcome) += count,
        }
    }

    /// The count of close code `code`, or of [`OTHER_CLOSE_CODE`] once [`MAX_CLOSE_CODES`]
    /// codes are counted.
    fn ws_closed_entry(&mut self, code: u16) -> &mut u64 {
        let key = if self.ws_closed.contains_key(&code) || self.ws_closed.len() < MAX_CLOSE_CODES {
            code
        } else {
            OTHER_CLOSE_CODE
        };
        self.ws_closed.entry(key).or_default()
    }

    /// The JSON-RPC error codes in report order (by their text, as files have them).
    pub fn rpc_errors_by_text(&self) -> Vec<(String, &RpcErrorCount)> {
        let mut codes: Vec<(String, &RpcErrorCount)> =
            self.rpc_errors.iter().map(|(code, error)| (code.to_string(), error)).collect();
        codes.sort_by(|a, b| a.0.cmp(&b.0));
        codes
    }

    /// The invalid-response kinds in report order (by name).
    pub fn invalid_by_name(&self) -> Vec<(InvalidKind, u64)> {
        let mut kinds: Vec<(InvalidKind, u64)> =
            self.invalid.iter().map(|(kind, count)| (*kind, *count)).collect();
        kinds.sort_by_key(|(kind, _)| kind.name());
        kinds
    }

    /// Every outcome counted.
    pub fn total(&self) -> u64 {
        CLASSES.iter().map(|spec| self.class_total(spec.class)).sum()
    }

    /// Every outcome that is not a success.
    pub fn errors(&self) -> u64 {
        CLASSES
            .iter()
            .filter(|spec| spec.class != OutcomeClass::Ok)
            .map(|spec| self.class_total(spec.class))
            .sum()
    }

    /// Requests that got no answer at all: timeouts, connect failures, closed or cut-off
    /// connections, streams lost to GOAWAY, refused or reset, sockets closed.
    pub fn unanswered(&self) -> u64 {
        CLASSES.iter().filter(|spec| !spec.answered).map(|spec| self.class_total(spec.class)).sum()
    }

    /// Requests that failed on the wire rather than in their answer: every class of
    /// [`ClassSpec::wire_failure`] (the text report's "others").
    pub fn wire_failures(&self) -> u64 {
        CLASSES.iter().filter(|spec| spec.wire_failure).map(|spec| self.class_total(spec.class)).sum()
    }

    /// The count of one class, over all its codes.
    pub fn class_total(&self, class: OutcomeClass) -> u64 {
        let mut total = 0u64;
        self.each_count(class, &mut |_, _, count| total += count);
        total
    }

    /// Calls `visit` with every bucket counted in `class` (counted or not): the outcome it
    /// stands for, whether it is the bucket of the codes past [`MAX_RPC_CODES`], and its count.
    /// The one place that knows where each class keeps its counts.
    fn each_count(&self, class: OutcomeClass, visit: &mut dyn FnMut(Outcome, bool, u64)) {
        match class {
            OutcomeClass::Ok => visit(Outcome::Ok, false, self.ok),
            OutcomeClass::RpcError => {
                for (code, error) in &self.rpc_errors {
                    visit(Outcome::RpcError(*code), false, error.count);
                }
                visit(Outcome::RpcError(0), true, self.rpc_errors_other);
            }
            OutcomeClass::HttpError => {
                for (status, count) in &self.http_errors {
                    visit(Outcome::HttpStatus(*status), false, *count);
                }
            }
            OutcomeClass::Invalid => {
                for (kind, count) in &self.invalid {
                    visit(Outcome::Invalid(*kind), false, *count);
                }
            }
            OutcomeClass::Timeout => visit(Outcome::Timeout, false, self.timeout),
            OutcomeClass::Connect => visit(Outcome::Connect, false, self.connect),
            OutcomeClass::Closed => visit(Outcome::Closed, false, self.closed),
            OutcomeClass::Unfinished => visit(Outcome::Unfinished, false, self.unfinished),
            OutcomeClass::GoAway => visit(Outcome::GoAway, false, self.goaway),
            OutcomeClass::RefusedStream => visit(Outcome::RefusedStream, false, self.refused_stream),
            OutcomeClass::StreamReset => {
                for (code, count) in &self.stream_reset {
                    visit(Outcome::StreamReset(code.0), false, *count);
                }
            }
            OutcomeClass::WsClosed => {
                for (code, count) in &self.ws_closed {
                    visit(Outcome::WsClosed(*code), false, *count);
                }
            }
            OutcomeClass::WsProtocol => visit(Outcome::WsProtocol, false, self.ws_protocol),
            OutcomeClass::RateLimited => {
                for (sign, count) in &self.rate_limited {
                    visit(Outcome::RateLimited(*sign), false, *count);
                }
            }
            OutcomeClass::GrpcStatus => {
                for (code, count) in &self.grpc_status {
                    visit(Outcome::GrpcStatus(code.0), false, *count);
                }
            }
            OutcomeClass::TxNonceTooLow
            | OutcomeClass::TxNonceGap
            | OutcomeClass::TxReplacementUnderpriced
            | OutcomeClass::TxAlreadyKnown
            | OutcomeClass::TxInsufficientFunds
            | OutcomeClass::TxUnderpriced
            | OutcomeClass::TxPoolFull
            | OutcomeClass::TxGas
            | OutcomeClass::TxBlockhashNotFound
            | OutcomeClass::TxAlreadyProcessed => {
                for (reason, count) in self.tx_refused.iter().filter(|(reason, _)| reason.class() == class) {
                    visit(Outcome::TxRefused(*reason), false, *count);
                }
            }
        }
    }

    /// Every failure with its count, one entry per class and code, in a stable order (the
    /// codes past [`MAX_RPC_CODES`] as one `RpcError` entry named by [`OTHER_CODE`]).
    pub fn failures(&self) -> Vec<(Outcome, Option<String>, u64)> {
        let mut all = Vec::new();
        for spec in FAILURE_ORDER.iter().map(|class| class.spec()) {
            self.each_count(spec.class, &mut |outcome, other, count| {
                if count > 0 {
                    let code = if other { Some(OTHER_CODE.to_string()) } else { outcome.code() };
                    all.push((outcome, code, count));
                }
            });
        }
        all
    }

    /// Adds another set of counts into this one. Codes beyond [`MAX_RPC_CODES`] go to the
    /// `other` bucket here too.
    pub fn merge(&mut self, other: &OutcomeCounts) {
        let wrapping: &mut dyn FnMut(&mut u64, u64) -> Result<(), CountOverflow> = &mut |ours, theirs| {
            *ours = ours.wrapping_add(theirs);
            Ok(())
        };
        // Wrapping addition never fails.
        let _ = self.merge_with(other, wrapping);
    }

    /// [`OutcomeCounts::merge`] for counts read from files: fails instead of wrapping when a
    /// sum does not fit.
    pub fn checked_merge(&mut self, other: &OutcomeCounts) -> Result<(), CountOverflow> {
        let mut merged = self.clone();
        merged.merge_with(other, &mut |ours, theirs| {
            *ours = ours.checked_add(theirs).ok_or(CountOverflow)?;
            Ok(())
        })?;
        merged.checked_total()?;
        *self = merged;
        Ok(())
    }

    /// Adds `other` into `self` class by class with `add`: each outcome bucket of `other` goes
    /// where [`OutcomeCounts::add_many`] would have counted it (the bounded tables stay bounded).
    fn merge_with(
        &mut self,
        other: &OutcomeCounts,
        add: &mut dyn FnMut(&mut u64, u64) -> Result<(), CountOverflow>,
    ) -> Result<(), CountOverflow> {
        let mut result = Ok(());
        for spec in &CLASSES {
            other.each_count(spec.class, &mut |outcome, past_the_cap, count| {
                if result.is_err() {
                    return;
                }
                let slot = match outcome {
                    Outcome::RpcError(_) if past_the_cap => &mut self.rpc_errors_other,
                    Outcome::RpcError(code) => {
                        if !self.rpc_errors.contains_key(&code) && self.rpc_errors.len() >= MAX_RPC_CODES {
                            &mut self.rpc_errors_other
                        } else {
                            let ours = self.rpc_errors.entry(code).or_default();
                            if ours.first_message.is_none() {
                                ours.first_message.clone_from(&other.rpc_errors[&code].first_message);
                            }
                            &mut ours.count
                        }
                    }
                    Outcome::WsClosed(code) => self.ws_closed_entry(code),
                    outcome => self.slot(outcome),
                };
                result = add(slot, count);
            });
        }
        result
    }

    /// The counter `outcome` is counted in (JSON-RPC codes and close codes, whose tables are
    /// bounded, are handled by their callers).
    #[inline]
    fn slot(&mut self, outcome: Outcome) -> &mut u64 {
        match outcome {
            Outcome::Ok => &mut self.ok,
            Outcome::RpcError(_) => &mut self.rpc_errors_other,
            Outcome::HttpStatus(status) => self.http_errors.entry(status).or_default(),
            Outcome::Invalid(kind) => self.invalid.entry(kind).or_default(),
            Outcome::Timeout => &mut self.timeout,
            Outcome::Connect => &mut self.connect,
            Outcome::Closed => &mut self.closed,
            Outcome::Unfinished => &mut self.unfinished,
            Outcome::GoAway => &mut self.goaway,
            Outcome::RefusedStream => &mut self.refused_stream,
            Outcome::StreamReset(code) => {
                self.stream_reset.entry(ResetCode(reset_code_bucket(code))).or_default()
            }
            Outcome::WsClosed(code) => self.ws_closed_entry(code),
            Outcome::WsProtocol => &mut self.ws_protocol,
            Outcome::RateLimited(sign) => {
                let key = if self.rate_limited.contains_key(&sign)
                    || self.rate_limited.len() < MAX_RATE_LIMIT_SIGNS
                {
                    sign
                } else {
                    RateLimitSign::Other
                };
                self.rate_limited.entry(key).or_default()
            }
            Outcome::GrpcStatus(code) => {
                self.grpc_status.entry(GrpcStatusCode(grpc_status_bucket(code))).or_default()
            }
            Outcome::TxRefused(reason) => self.tx_refused.entry(reason).or_default(),
        }
    }

    /// [`OutcomeCounts::total`], failing instead of wrapping.
    pub fn checked_total(&self) -> Result<u64, CountOverflow> {
        let mut total = Some(0u64);
        for spec in &CLASSES {
            self.each_count(spec.class, &mut |_, _, count| total = total.and_then(|t| t.checked_add(count)));
        }
        total.ok_or(CountOverflow)
    }
}

/// An outcome's class without its code: the rows of [`CLASSES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutcomeClass {
    /// [`Outcome::Ok`].
    Ok,
    /// [`Outcome::RpcError`].
    RpcError,
    /// [`Outcome::HttpStatus`].
    HttpError,
    /// [`Outcome::Invalid`].
    Invalid,
    /// [`Outcome::Timeout`].
    Timeout,
    /// [`Outcome::Connect`].
    Connect,
    /// [`Outcome::Closed`].
    Closed,
    /// [`Outcome::Unfinished`].
    Unfinished,
    /// [`Outcome::GoAway`].
    GoAway,
    /// [`Outcome::RefusedStream`].
    RefusedStream,
    /// [`Outcome::StreamReset`].
    StreamReset,
    /// [`Outcome::WsClosed`].
    WsClosed,
    /// [`Outcome::WsProtocol`].
    WsProtocol,
    /// [`Outcome::RateLimited`].
    RateLimited,
    /// [`Outcome::GrpcStatus`].
    GrpcStatus,
    /// [`Outcome::TxRefused`] for [`TxRefusal::NonceTooLow`].
    TxNonceTooLow,
    /// [`Outcome::TxRefused`] for [`TxRefusal::NonceGap`].
    TxNonceGap,
    /// [`Outcome::TxRefused`] for [`TxRefusal::ReplacementUnderpriced`].
    TxReplacementUnderpriced,
    /// [`Outcome::TxRefused`] for [`TxRefusal::AlreadyKnown`].
    TxAlreadyKnown,
    /// [`Outcome::TxRefused`] for [`TxRefusal::InsufficientFunds`].
    TxInsufficientFunds,
    /// [`Outcome::TxRefused`] for [`TxRefusal::Underpriced`].
    TxUnderpriced,
    /// [`Outcome::TxRefused`] for [`TxRefusal::PoolFull`].
    TxPoolFull,
    /// [`Outcome::TxRefused`] for [`TxRefusal::Gas`].
    TxGas,
    /// [`Outcome::TxRefused`] for [`TxRefusal::BlockhashNotFound`].
    TxBlockhashNotFound,
    /// [`Outcome::TxRefused`] for [`TxRefusal::AlreadyProcessed`].
    TxAlreadyProcessed,
}

impl OutcomeClass {
    /// This class's row of [`CLASSES`].
    pub fn spec(self) -> &'static ClassSpec {
        // CLASSES lists the classes in the enum's order (a test checks it).
        &CLASSES[self as usize]
    }
}

/// What every part of rpcbench knows about one outcome class: its names, and whether the
/// server answered. Sums, labels, merges and the live metrics' label read this table.
#[derive(Debug)]
pub struct ClassSpec {
    /// The class.
    pub class: OutcomeClass,
    /// The live metrics' `class` label and the text report's name.
    pub name: &'static str,
    /// How reports name the class's one count, for the classes that have no codes (`None`
    /// for the classes counted by code, which reports name code by code).
    pub label: Option<&'static str>,
    /// Whether a request of this class got an answer from the server (a success, or a
    /// failure the server sent). The others are [`OutcomeCounts::unanswered`].
    pub answered: bool,
    /// Whether the class is a failure of the wire rather than of an answer's content: no
    /// HTTP status came with it (the text report's "others").
    pub wire_failure: bool,
}

/// The one table of outcome classes, in [`OutcomeClass`]'s order.
pub const CLASSES: [ClassSpec; 25] = [
    ClassSpec { class: OutcomeClass::Ok, name: "ok", label: None, answered: true, wire_failure: false },
    ClassSpec {
        class: OutcomeClass::RpcError,
        name: "rpc_error",
        label: None,
        answered: true,
        wire_failure: false,
    },
    ClassSpec {
        class: OutcomeClass::HttpError,
        name: "http_error",
        label: None,
        answered: true,
        wire_failure: false,
    },
    ClassSpec {
        class: OutcomeClass::Invalid,
        name: "invalid",
        label: None,
        answered: true,
        wire_failure: false,
    },
    ClassSpec {
        class: OutcomeClass::Timeout,
        name: "timeout",
        label: Some("timeout"),
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::Connect,
        name: "connect",
        label: Some("connect error"),
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::Closed,
        name: "closed",
        label: Some("connection closed"),
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::Unfinished,
        name: "unfinished",
        label: Some("unfinished at the end"),
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::GoAway,
        name: "goaway",
        label: Some("lost to a GOAWAY"),
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::RefusedStream,
        name: "refused_stream",
        label: Some("stream refused"),
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::StreamReset,
        name: "stream_reset",
        label: None,
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::WsClosed,
        name: "ws_closed",
        label: None,
        answered: false,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::WsProtocol,
        name: "ws_protocol",
        label: Some("websocket protocol error"),
        answered: true,
        wire_failure: true,
    },
    ClassSpec {
        class: OutcomeClass::RateLimited,
        name: "rate_limited",
        label: None,
        answered: true,
        wire_failure: false,
    },
    ClassSpec {
        class: OutcomeClass::GrpcStatus,
        name: "grpc_status",
        label: None,
        answered: true,
        wire_failure: false,
    },
    tx_refusal(OutcomeClass::TxNonceTooLow, "nonce_too_low", "tx refused: nonce too low"),
    tx_refusal(OutcomeClass::TxNonceGap, "nonce_gap", "tx refused: nonce gap"),
    tx_refusal(
        OutcomeClass::TxReplacementUnderpriced,
        "replacement_underpriced",
        "tx refused: replacement underpriced",
    ),
    tx_refusal(OutcomeClass::TxAlreadyKnown, "already_known", "tx refused: already known"),
    tx_refusal(OutcomeClass::TxInsufficientFunds, "insufficient_funds", "tx refused: insufficient funds"),
    tx_refusal(OutcomeClass::TxUnderpriced, "underpriced", "tx refused: underpriced"),
    tx_refusal(OutcomeClass::TxPoolFull, "pool_full", "tx refused: pool full"),
    tx_refusal(OutcomeClass::TxGas, "gas", "tx refused: gas limit"),
    tx_refusal(OutcomeClass::TxBlockhashNotFound, "blockhash_not_found", "tx refused: blockhash not found"),
    tx_refusal(OutcomeClass::TxAlreadyProcessed, "already_processed", "tx refused: already processed"),
];

/// The row of a transaction refusal: answered by the node, one count.
const fn tx_refusal(class: OutcomeClass, name: &'static str, label: &'static str) -> ClassSpec {
    ClassSpec { class, name, label: Some(label), answered: true, wire_failure: false }
}

/// The order in which [`OutcomeCounts::failures`] lists the failure classes (the order the
/// live metrics have always had).
const FAILURE_ORDER: [OutcomeClass; 24] = [
    OutcomeClass::RpcError,
    OutcomeClass::HttpError,
    OutcomeClass::Invalid,
    OutcomeClass::Timeout,
    OutcomeClass::Connect,
    OutcomeClass::Closed,
    OutcomeClass::Unfinished,
    OutcomeClass::GoAway,
    OutcomeClass::RefusedStream,
    OutcomeClass::WsProtocol,
    OutcomeClass::StreamReset,
    OutcomeClass::WsClosed,
    OutcomeClass::RateLimited,
    OutcomeClass::GrpcStatus,
    OutcomeClass::TxNonceTooLow,
    OutcomeClass::TxNonceGap,
    OutcomeClass::TxReplacementUnderpriced,
    OutcomeClass::TxAlreadyKnown,
    OutcomeClass::TxInsufficientFunds,
    OutcomeClass::TxUnderpriced,
    OutcomeClass::TxPoolFull,
    OutcomeClass::TxGas,
    OutcomeClass::TxBlockhashNotFound,
    OutcomeClass::TxAlreadyProcessed,
];

/// The classes with one count and a report label, in report order, with their labels: the
/// rows reports print after the classes counted by code.
pub fn labelled_classes() -> impl Iterator<Item = (OutcomeClass, &'static str)> {
    REPORT_ORDER.iter().filter_map(|class| class.spec().label.map(|label| (*class, label)))
}

/// The classes of one count that are not a transaction refusal, in the order reports list them.
const TRANSPORT_ORDER: [OutcomeClass; 7] = [
    OutcomeClass::Timeout,
    OutcomeClass::Connect,
    OutcomeClass::Closed,
    OutcomeClass::Unfinished,
    OutcomeClass::GoAway,
    OutcomeClass::RefusedStream,
    OutcomeClass::WsProtocol,
];

/// The order in which reports list the classes that have one count: the transport's, then the
/// transaction refusals with a row of their own as [`TxRefusal::WITH_OWN_ROW`] orders them
/// (derived, so a new reason is listed once).
const REPORT_ORDER: [OutcomeClass; TRANSPORT_ORDER.len() + TxRefusal::WITH_OWN_ROW.len()] = {
    let mut order = [OutcomeClass::Timeout; TRANSPORT_ORDER.len() + TxRefusal::WITH_OWN_ROW.len()];
    let mut at = 0;
    while at < TRANSPORT_ORDER.len() {
        order[at] = TRANSPORT_ORDER[at];
        at += 1;
    }
    let mut reason = 0;
    while reason < TxRefusal::WITH_OWN_ROW.len() {
        order[at + reason] = TxRefusal::WITH_OWN_ROW[reason].class();
        reason += 1;
    }
    order
};

/// The `code` label of the JSON-RPC errors counted past [`MAX_RPC_CODES`].
pub const OTHER_CODE: &str = "other";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_order_lists_each_refusal_with_a_row_once_after_the_transport_classes() {
        assert_eq!(REPORT_ORDER[..TRANSPORT_ORDER.len()], TRANSPORT_ORDER);
        for reason in TxRefusal::WITH_OWN_ROW {
            assert_eq!(REPORT_ORDER.iter().filter(|class| **class == reason.class()).count(), 1, "{reason}");
        }
        assert_eq!(REPORT_ORDER.len(), TRANSPORT_ORDER.len() + TxRefusal::WITH_OWN_ROW.len());
    }

    #[test]
    fn distinct_error_codes_are_bounded_and_the_rest_counted_exactly() {
        let mut counts = OutcomeCounts::default();
        let long = "x".repeat(1000);
        for code in 0..10_000i64 {
            counts.add(Outcome::RpcError(-code), || Some(long.clone()));
        }
        counts.add(Outcome::RpcError(0), || None);
        assert_eq!(counts.rpc_errors.len(), MAX_RPC_CODES);
        assert_eq!(counts.rpc_errors_other, 10_000 - MAX_RPC_CODES as u64);
        assert_eq!(counts.errors(), 10_001);
        let message = counts.rpc_errors[&0].first_message.as_deref().unwrap();
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS + 1);
        let mut merged = OutcomeCounts::default();
        merged.merge(&counts);
        merged.merge(&counts);
        assert_eq!(merged.rpc_errors.len(), MAX_RPC_CODES);
        assert_eq!(merged.errors(), 20_002);
    }

    #[test]
    fn the_serialized_form_is_the_one_results_files_have() {
        let mut counts = OutcomeCounts::default();
        counts.add(Outcome::Ok, || None);
        counts.add(Outcome::RpcError(-32005), || Some("behind".into()));
        counts.add(Outcome::RpcError(-32600), || None);
        counts.add(Outcome::HttpStatus(503), || None);
        counts.add(Outcome::Invalid(InvalidKind::NotJson), || None);
        counts.add(Outcome::Invalid(InvalidKind::BadHttp), || None);
        let text = serde_json::to_string(&counts).unwrap();
        assert_eq!(
            text,
            r#"{"ok":1,"rpc_errors":{"-32005":{"count":1,"message":"behind"},"-32600":{"count":1,"message":null}},"http_errors":{"503":1},"invalid":{"bad_http":1,"not_json":1},"timeout":0,"connect":0,"closed":0}"#
        );
        let back: OutcomeCounts = serde_json::from_str(&text).unwrap();
        assert_eq!(back, counts);
        counts.add(Outcome::Unfinished, || None);
        let text = serde_json::to_string(&counts).unwrap();
        assert!(text.ends_with(r#""closed":0,"unfinished":1}"#), "{text}");
        assert!(serde_json::from_str::<OutcomeCounts>(&text.replace("bad_http", "nonsense")).is_err());
    }

    #[test]
    fn http2_resets_are_counted_by_code_with_unknown_codes_in_one_bucket() {
        let mut counts = OutcomeCounts::default();
        counts.add(Outcome::GoAway, || None);
        counts.add(Outcome::RefusedStream, || None);
        counts.add(Outcome::StreamReset(8), || None);
        for code in 14..1000 {
            counts.add(Outcome::StreamReset(code), || None);
        }
        assert_eq!(counts.stream_reset.len(), 2, "CANCEL and one unknown bucket");
        assert_eq!(counts.errors(), 2 + 1 + 986);
        assert_eq!(counts.checked_total(), Ok(989));
        let text = serde_json::to_string(&counts).unwrap();
        assert!(
            text.ends_with(r#""goaway":1,"refused_stream":1,"stream_reset":{"CANCEL":1,"unknown":986}}"#),
            "{text}"
        );
        let back: OutcomeCounts = serde_json::from_str(&text).unwrap();
        assert_eq!(back, counts);
        let mut merged = OutcomeCounts::default();
        merged.checked_merge(&counts).unwrap();
        merged.merge(&counts);
        assert_eq!(merged.stream_reset[&ResetCode(8)], 2);
        assert_eq!(merged.failures().len(), 4);
        assert_eq!(Outcome::StreamReset(8).code().as_deref(), Some("CANCEL"));
    }

    #[test]
    fn the_class_table_lists_every_class_once_in_order() {
        for (index, spec) in CLASSES.iter().enumerate() {
            assert_eq!(spec.class as usize, index, "{}", spec.name);
            assert_eq!(spec.class.spec().name, spec.name);
        }
        let outcomes = [
            Outcome::Ok,
            Outcome::RpcError(-1),
            Outcome::HttpStatus(500),
            Outcome::Invalid(InvalidKind::NotJson),
            Outcome::Timeout,
            Outcome::Connect,
            Outcome::Closed,
            Outcome::Unfinished,
            Outcome::GoAway,
            Outcome::RefusedStream,
            Outcome::StreamReset(8),
            Outcome::WsClosed(1006),
            Outcome::WsProtocol,
            Outcome::RateLimited(RateLimitSign::Http(429)),
        ];
        let mut counts = OutcomeCounts::default();
        for (index, outcome) in outcomes.into_iter().enumerate() {
            assert_eq!(outcome.outcome_class() as usize, index);
            counts.add_many(outcome, index as u64 + 1, || None);
        }
        // Every class is summed: 1 + 2 + ... + 14.
        assert_eq!(counts.total(), 105);
        assert_eq!(counts.checked_total(), Ok(105));
        assert_eq!(counts.errors(), 104);
        assert_eq!(counts.unanswered(), 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12);
        assert_eq!(counts.wire_failures(), counts.unanswered() + 13);
        assert_eq!(counts.failures().len(), 13);
        let mut merged = OutcomeCounts::default();
        merged.checked_merge(&counts).unwrap();
        merged.merge(&counts);
        assert_eq!(merged.total(), 210);
        for spec in &CLASSES {
            assert_eq!(merged.class_total(spec.class), 2 * counts.class_total(spec.class), "{}", spec.name);
        }
    }

    #[test]
    fn every_tx_refusal_reason_is_a_row_of_the_one_outcome_table() {
        let report_schema = include_str!("../../../schema/report.schema.json");
        let tx_schema = include_str!("../../../schema/tx.schema.json");
        for reason in TxRefusal::WITH_OWN_ROW {
            let spec = reason.class().spec();
            assert_eq!(reason.name(), spec.name);
            assert_eq!(TxRefusal::from_name(spec.name), Some(reason));
            assert_eq!(Outcome::TxRefused(reason).class(), spec.name);
            assert_eq!(reason.outcome(-32000), Outcome::TxRefused(reason));
            assert!(labelled_classes().any(|(class, _)| class == spec.class), "{}", spec.name);
            assert!(
                report_schema.contains(&format!("\"{}\"", spec.name)),
                "{} in report.schema.json",
                spec.name
            );
            assert!(tx_schema.contains(spec.name), "{} in tx.schema.json", spec.name);
        }
        // The two reasons counted in rows the calls of every run have: the rate limit, and the
        // JSON-RPC error by code (which the engine's rate-limit rules judge).
        assert_eq!(TxRefusal::RateLimited.name(), OutcomeClass::RateLimited.spec().name);
        assert_eq!(TxRefusal::RateLimited.outcome(-32005), Outcome::RpcError(-32005));
        assert_eq!(TxRefusal::Other(-32602).class(), OutcomeClass::RpcError);
        assert_eq!(TxRefusal::from_name("rpc_-32602"), Some(TxRefusal::Other(-32602)));
        assert_eq!(TxRefusal::from_name("rate_limited"), Some(TxRefusal::RateLimited));
        // Counted, summed, merged, listed and read back like every class.
        let mut counts = OutcomeCounts::default();
        counts.add_many(Outcome::TxRefused(TxRefusal::NonceTooLow), 3, || None);
        counts.add(Outcome::TxRefused(TxRefusal::PoolFull), || None);
        counts.add(Outcome::TxRefused(TxRefusal::Other(-32602)), || None);
        assert_eq!(counts.total(), 5);
        assert_eq!(counts.errors(), 5);
        assert_eq!(counts.unanswered(), 0, "the node answered");
        assert_eq!(counts.class_total(OutcomeClass::TxNonceTooLow), 3);
        assert_eq!(counts.class_total(OutcomeClass::RpcError), 1);
        let failures: Vec<&str> = counts.failures().iter().map(|(outcome, _, _)| outcome.class()).collect();
        assert_eq!(failures, ["rpc_error", "nonce_too_low", "pool_full"]);
        let text = serde_json::to_string(&counts).unwrap();
        assert!(text.ends_with(r#""tx_refused":{"nonce_too_low":3,"pool_full":1}}"#), "{text}");
        let back: OutcomeCounts = serde_json::from_str(&text).unwrap();
        assert_eq!(back, counts);
        assert!(serde_json::from_str::<OutcomeCounts>(&text.replace("pool_full", "rate_limited")).is_err());
        let mut merged = OutcomeCounts::default();
        merged.checked_merge(&counts).unwrap();
        merged.merge(&counts);
        assert_eq!(merged.class_total(OutcomeClass::TxNonceTooLow), 6);
        assert_eq!(merged.total(), 10);
    }

    #[test]
    fn checked_merge_refuses_counts_that_overflow() {
        let mut big = OutcomeCounts { ok: u64::MAX, ..OutcomeCounts::default() };
        let one = OutcomeCounts { timeout: 1, ..OutcomeCounts::default() };
        assert_eq!(big.clone().checked_merge(&one), Err(CountOverflow));
        assert_eq!(big.checked_total(), Ok(u64::MAX));
        let before = big.clone();
        assert!(big.checked_merge(&one).is_err());
        assert_eq!(big, before, "a failed merge changes nothing");
    }

    #[test]
    fn rate_limit_signs_are_counted_apart_bounded_and_read_back() {
        let mut counts = OutcomeCounts::default();
        counts.add(Outcome::RateLimited(RateLimitSign::Http(429)), || None);
        for code in 0..100 {
            counts.add(Outcome::RateLimited(RateLimitSign::Rpc(-code)), || None);
        }
        assert_eq!(counts.rate_limited.len(), MAX_RATE_LIMIT_SIGNS + 1, "32 signs and the other bucket");
        assert_eq!(counts.rate_limited[&RateLimitSign::Other], 101 - MAX_RATE_LIMIT_SIGNS as u64);
        assert_eq!(counts.class_total(OutcomeClass::RateLimited), 101);
        assert_eq!(counts.errors(), 101);
        assert_eq!(counts.unanswered(), 0, "the server answered");
        let text = serde_json::to_string(&counts).unwrap();
        assert!(text.contains(r#""rate_limited":{"#) && text.contains(r#""http_429":1"#), "{text}");
        let back: OutcomeCounts = serde_json::from_str(&text).unwrap();
        assert_eq!(back, counts);
        assert_eq!(Outcome::RateLimited(RateLimitSign::Rpc(-32029)).class(), "rate_limited");
        assert_eq!(Outcome::RateLimited(RateLimitSign::Rpc(-32029)).code().as_deref(), Some("rpc_-32029"));
    }
}
