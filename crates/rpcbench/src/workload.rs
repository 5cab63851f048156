//! What each request calls: a weighted mix of calls whose params are templates with generator
//! slots (integer ranges, choices from a list, random hex or base58). A call is a JSON-RPC
//! call, or a plain HTTP request ([`HttpRequestSpec`]: a REST endpoint, a line of a vegeta
//! targets file) whose path and body may hold generated values too. A [`Workload`] is built
//! once per run; on the hot path a worker picks a call by weight (or in turn, for targets
//! files) and writes its body straight into the request buffer: literal bytes copied,
//! generated values formatted in place.

use std::fmt;

use rand::rngs::SmallRng;
use rand::Rng;
use serde_json::Value;

use crate::jsonrpc::RequestTemplate;
use crate::transport::{HttpMethod, Outgoing};

/// A workload that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadError(pub String);

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WorkloadError {}

/// Produces one JSON value per request.
#[derive(Debug, Clone, PartialEq)]
pub enum Generator {
    /// A uniformly drawn integer in `low..=high`, written as a JSON number.
    IntRange {
        /// Smallest value.
        low: u64,
        /// Largest value.
        high: u64,
    },
    /// An integer in `low..=high` written as a `0x` hex quantity string (Ethereum blocks).
    HexQuantityRange {
        /// Smallest value.
        low: u64,
        /// Largest value.
        high: u64,
    },
    /// One of these JSON values, uniformly.
    Choice(Vec<Value>),
    /// A random `0x`-prefixed hex string of this many bytes (addresses: 20, hashes: 32).
    RandomHex(usize),
    /// A random base58 string of this many bytes (Solana keys: 32, signatures: 64).
    RandomBase58(usize),
}

impl Generator {
    /// A short description, for names of HTTP calls (`GET /block/{range}`).
    pub fn short_name(&self) -> &'static str {
        match self {
            Generator::IntRange { .. } => "range",
            Generator::HexQuantityRange { .. } => "hex_range",
            Generator::Choice(_) => "choice",
            Generator::RandomHex(_) => "random_hex",
            Generator::RandomBase58(_) => "random_base58",
        }
    }

    fn check(&self) -> Result<(), WorkloadError> {
        match self {
            Generator::IntRange { low, high } | Generator::HexQuantityRange { low, high } if low > high => {
                Err(WorkloadError(format!("the range {low}..{high} is empty")))
            }
            Generator::Choice(values) if values.is_empty() => {
                Err(WorkloadError("a choice needs at least one value".into()))
            }
            Generator::RandomHex(0) | Generator::RandomBase58(0) => {
                Err(WorkloadError("random values need at least one byte".into()))
            }
            _ => Ok(()),
        }
    }
}

/// A piece of a request body.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(Vec<u8>),
    /// A generator; choices are kept pre-serialized.
    Generated(Compiled),
}

#[derive(Debug, Clone, PartialEq)]
enum Compiled {
    IntRange { low: u64, high: u64 },
    HexQuantityRange { low: u64, high: u64 },
    Choice(Vec<Vec<u8>>),
    RandomHex(usize),
    RandomBase58(usize),
}

/// Params: a JSON value in which some positions are generated per request.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// A fixed JSON value.
    Fixed(Value),
    /// A generated value.
    Generated(Generator),
    /// An array whose elements may be generated.
    Array(Vec<ParamValue>),
    /// An object whose members may be generated (keys in the given order).
    Object(Vec<(String, ParamValue)>),
}

/// One call of the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    name: String,
    method: String,
    weight: u32,
    /// Everything after the id: `,"method":…,"params":…}` (empty for an HTTP call).
    parts: Vec<Part>,
    /// A plain HTTP request instead of a JSON-RPC call: its variants (one, unless the call
    /// groups several lines of a targets file under one name).
    http: Vec<HttpShape>,
}

/// A piece of a template (a path, a text body): literal text or a generated value.
#[derive(Debug, Clone, PartialEq)]
pub enum TemplatePiece {
    /// Text as it is.
    Text(String),
    /// A generated value, written without JSON quotes (`/block/1234`, `/tx/0xab…`).
    Generated(Generator),
}

/// The body of an HTTP call.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpBody {
    /// No body.
    Empty,
    /// Bytes as they are (a targets file's `@file`).
    Raw(Vec<u8>),
    /// Text with generated values in it.
    Text(Vec<TemplatePiece>),
    /// A JSON value whose positions may be generated, like params.
    Json(ParamValue),
}

/// A plain HTTP request: what a REST call or a vegeta target sends.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequestSpec {
    /// The method.
    pub method: HttpMethod,
    /// Path and query, starting with `/`, with generated pieces.
    pub path: Vec<TemplatePiece>,
    /// Headers of this call (added to the run's).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: HttpBody,
    /// Whether a 2xx answer must have a JSON body (else it counts as `not_json`).
    pub expect_json: bool,
}

/// An HTTP call compiled for the hot path.
#[derive(Debug, Clone, PartialEq)]
struct HttpShape {
    method: HttpMethod,
    /// Path pieces; generated values written raw.
    path: Vec<Part>,
    /// `Name: value\r\n` lines.
    headers: Vec<u8>,
    /// Body pieces: JSON compiled like params, or text with raw generated values.
    body: Vec<Part>,
    /// Generated values in the body are written raw (a text body) rather than as JSON.
    raw_body: bool,
    expect_json: bool,
}

impl Call {
    /// A call of `method` with optional params; `name` labels it in reports (several calls may
    /// share a method with different params).
    pub fn new(
        name: impl Into<String>,
        method: &str,
        params: Option<&ParamValue>,
        weight: u32,
    ) -> Result<Self, WorkloadError> {
        if method.is_empty() {
            return Err(WorkloadError("the method name is empty".into()));
        }
        if weight == 0 {
            return Err(WorkloadError(format!("the weight of {method} must be at least 1")));
        }
        let mut parts = Vec::new();
        let mut literal = format!(",\"method\":{}", Value::String(method.to_string())).into_bytes();
        if let Some(params) = params {
            if !matches!(params, ParamValue::Array(_) | ParamValue::Object(_))
                && !matches!(params, ParamValue::Fixed(Value::Array(_) | Value::Object(_)))
            {
                return Err(WorkloadError(format!("the params of {method} must be an array or an object")));
            }
            literal.extend_from_slice(b",\"params\":");
            compile(params, &mut literal, &mut parts)?;
        }
        literal.push(b'}');
        parts.push(Part::Literal(literal));
        Ok(Self { name: name.into(), method: method.to_string(), weight, parts, http: Vec::new() })
    }

    /// A plain HTTP call; `name` labels it in reports (by default the method and the path
    /// template, `GET /block/{block}`, which [`Call::method`] returns).
    pub fn http(name: Option<String>, spec: &HttpRequestSpec, weight: u32) -> Result<Self, WorkloadError> {
        let template = format!("{} {}", spec.method, template_text(&spec.path));
        if weight == 0 {
            return Err(WorkloadError(format!("the weight of {template} must be at least 1")));
        }
        let shape = HttpShape::compile(spec, &template)?;
        Ok(Self {
            name: name.unwrap_or_else(|| template.clone()),
            method: template,
            weight,
            parts: Vec::new(),
            http: vec![shape],
        })
    }

    /// One call named `name` made of several HTTP requests (the lines of a targets file that
    /// share an endpoint), sent in the order a workload in file order says.
    pub fn http_variants(name: String, specs: &[HttpRequestSpec]) -> Result<Self, WorkloadError> {
        if specs.is_empty() {
            return Err(WorkloadError(format!("{name}: no request")));
        }
        let http = specs.iter().map(|spec| HttpShape::compile(spec, &name)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { method: name.clone(), name, weight: 1, parts: Vec::new(), http })
    }

    /// Whether this is a plain HTTP call rather than a JSON-RPC call.
    pub fn is_http(&self) -> bool {
        !self.http.is_empty()
    }

    /// For an HTTP call: whether a 2xx answer must carry JSON.
    pub fn expects_json(&self) -> bool {
        self.http.first().is_some_and(|shape| shape.expect_json)
    }

    /// A call with a fixed body, from a request template.
    pub fn from_template(template: &RequestTemplate) -> Self {
        Self {
            name: template.method().to_string(),
            method: template.method().to_string(),
            weight: 1,
            parts: vec![Part::Literal(template.suffix().to_vec())],
            http: Vec::new(),
        }
    }

    /// The label of this call in reports.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The JSON-RPC method; for an HTTP call, its method and path template.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The weight of this call in the mix.
    pub fn weight(&self) -> u32 {
        self.weight
    }
}

/// Appends the serialization of `value` to `literal`, flushing literal runs into `parts`
/// around generated values.
fn compile(value: &ParamValue, literal: &mut Vec<u8>, parts: &mut Vec<Part>) -> Result<(), WorkloadError> {
    match value {
        ParamValue::Fixed(value) => literal.extend_from_slice(value.to_string().as_bytes()),
        ParamValue::Generated(generator) => {
            generator.check()?;
            parts.push(Part::Literal(std::mem::take(literal)));
            parts.push(Part::Generated(match generator {
                Generator::IntRange { low, high } => Compiled::IntRange { low: *low, high: *high },
                Generator::HexQuantityRange { low, high } => {
                    Compiled::HexQuantityRange { low: *low, high: *high }
                }
                Generator::Choice(values) => {
                    Compiled::Choice(values.iter().map(|v| v.to_string().into_bytes()).collect())
                }
                Generator::RandomHex(bytes) => Compiled::RandomHex(*bytes),
                Generator::RandomBase58(bytes) => Compiled::RandomBase58(*bytes),
            }));
        }
        ParamValue::Array(items) => {
            literal.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    literal.push(b',');
                }
                compile(item, literal, parts)?;
            }
            literal.push(b']');
        }
        ParamValue::Object(members) => {
            literal.push(b'{');
            for (index, (key, item)) in members.iter().enumerate() {
                if index > 0 {
                    literal.push(b',');
                }
                literal.extend_from_slice(Value::String(key.clone()).to_string().as_bytes());
                literal.push(b':');
                compile(item, literal, parts)?;
            }
            literal.push(b'}');
        }
    }
    Ok(())
}

impl HttpShape {
    /// Checks and compiles one HTTP request; `label` names it in errors.
    fn compile(spec: &HttpRequestSpec, label: &str) -> Result<Self, WorkloadError> {
        if !matches!(spec.path.first(), Some(TemplatePiece::Text(text)) if text.starts_with('/')) {
            return Err(WorkloadError(format!("the path of {label} must start with '/'")));
        }
        let path = compile_pieces(&spec.path)?;
        let bad_byte =
            |bytes: &Vec<u8>| bytes.iter().any(|b| b.is_ascii_whitespace() || b.is_ascii_control());
        if path.iter().any(|part| matches!(part, Part::Literal(bytes) if bad_byte(bytes))) {
            return Err(WorkloadError(format!("the path of {label} has a space or a control character")));
        }
        let mut headers = Vec::new();
        for (name, value) in &spec.headers {
            match crate::settings::header_problem(name, value) {
                None => {}
                Some(crate::settings::HeaderProblem::SetByRpcbench) => {
                    return Err(WorkloadError(format!("{label}: '{name}' is set by rpcbench")))
                }
                Some(_) => {
                    return Err(WorkloadError(format!("{label}: the header '{name}' is not a valid header")))
                }
            }
            headers.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        let (body, raw_body) = match &spec.body {
            HttpBody::Empty => (Vec::new(), false),
            HttpBody::Raw(bytes) => (vec![Part::Literal(bytes.clone())], true),
            HttpBody::Text(pieces) => (compile_pieces(pieces)?, true),
            HttpBody::Json(value) => {
                let mut literal = Vec::new();
                let mut parts = Vec::new();
                compile(value, &mut literal, &mut parts)?;
                parts.push(Part::Literal(literal));
                (parts, false)
            }
        };
        Ok(Self { method: spec.method, path, headers, body, raw_body, expect_json: spec.expect_json })
    }
}

/// Compiles template pieces: text literal, generated values kept for raw writing.
fn compile_pieces(pieces: &[TemplatePiece]) -> Result<Vec<Part>, WorkloadError> {
    let mut parts = Vec::new();
    let mut literal = Vec::new();
    for piece in pieces {
        match piece {
            TemplatePiece::Text(text) => literal.extend_from_slice(text.as_bytes()),
            TemplatePiece::Generated(generator) => {
                let mut ignored = Vec::new();
                parts.push(Part::Literal(std::mem::take(&mut literal)));
                compile(&ParamValue::Generated(generator.clone()), &mut ignored, &mut parts)?;
                // `compile` flushed an empty literal before the generated part: drop it.
                let generated = parts.pop();
                parts.pop();
                parts.extend(generated);
            }
        }
    }
    parts.push(Part::Literal(literal));
    parts.retain(|part| !matches!(part, Part::Literal(bytes) if bytes.is_empty()));
    Ok(parts)
}

/// The text of a template as written, generated values shown as `{…}`.
fn template_text(pieces: &[TemplatePiece]) -> String {
    pieces
        .iter()
        .map(|piece| match piece {
            TemplatePiece::Text(text) => text.clone(),
            TemplatePiece::Generated(generator) => format!("{{{}}}", generator.short_name()),
        })
        .collect()
}

/// Writes parts, generated values without their JSON quotes (for paths and text bodies).
fn write_raw(parts: &[Part], rng: &mut SmallRng, out: &mut Vec<u8>) {
    for part in parts {
        match part {
            Part::Literal(bytes) => out.extend_from_slice(bytes),
            Part::Generated(generator) => {
                let start = out.len();
                write_generated(generator, rng, out);
                if out.len() - start >= 2 && out[start] == b'"' && out[out.len() - 1] == b'"' {
                    out.pop();
                    out.remove(start);
                }
            }
        }
    }
}

const BASE58: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_generated(generator: &Compiled, rng: &mut SmallRng, out: &mut Vec<u8>) {
    match generator {
        Compiled::IntRange { low, high } => {
            out.extend_from_slice(itoa::Buffer::new().format(rng.gen_range(*low..=*high)).as_bytes());
        }
        Compiled::HexQuantityRange { low, high } => {
            let value = rng.gen_range(*low..=*high);
            out.extend_from_slice(b"\"0x");
            let digits = if value == 0 { 1 } else { (64 - value.leading_zeros()).div_ceil(4) };
            for shift in (0..digits).rev() {
                out.push(HEX[((value >> (shift * 4)) & 0xf) as usize]);
            }
            out.push(b'"');
        }
        Compiled::Choice(values) => out.extend_from_slice(&values[rng.gen_range(0..values.len())]),
        Compiled::RandomHex(bytes) => {
            out.extend_from_slice(b"\"0x");
            for _ in 0..*bytes {
                let byte: u8 = rng.gen();
                out.push(HEX[(byte >> 4) as usize]);
                out.push(HEX[(byte & 0xf) as usize]);
            }
            out.push(b'"');
        }
        Compiled::RandomBase58(bytes) => {
            // Random bytes in base58: the digits of a big number, most significant first.
            let mut number: Vec<u8> = (0..*bytes).map(|_| rng.gen()).collect();
            // Each leading zero byte is a leading '1'; count them before the division.
            let leading_zeros = number.iter().take_while(|&&b| b == 0).count();
            let mut digits = Vec::with_capacity(bytes * 138 / 100 + 1);
            while number.iter().any(|&b| b != 0) {
                let mut remainder = 0u32;
                for byte in number.iter_mut() {
                    let value = (remainder << 8) | u32::from(*byte);
                    *byte = (value / 58) as u8;
                    remainder = value % 58;
                }
                digits.push(BASE58[remainder as usize]);
            }
            out.push(b'"');
            out.extend(std::iter::repeat_n(b'1', leading_zeros));
            out.extend(digits.iter().rev());
            out.push(b'"');
        }
    }
}

/// A weighted mix of calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    calls: Vec<Call>,
    /// Running sums of the weights, for picking by weight.
    cumulative: Vec<u64>,
    /// Calls taken in this order, round robin (a vegeta targets file: each line's call and
    /// which of its variants), not by weight; empty for a weighted mix.
    order: Vec<(usize, usize)>,
}

impl Workload {
    /// A mix of calls. Names must be unique.
    pub fn new(calls: Vec<Call>) -> Result<Self, WorkloadError> {
        if calls.is_empty() {
            return Err(WorkloadError("a workload needs at least one call".into()));
        }
        for (index, call) in calls.iter().enumerate() {
            if calls[..index].iter().any(|other| other.name == call.name) {
                return Err(WorkloadError(format!("two calls are named '{}'", call.name)));
            }
        }
        let mut total = 0u64;
        let cumulative = calls
            .iter()
            .map(|call| {
                total += u64::from(call.weight);
                total
            })
            .collect();
        Ok(Self { calls, cumulative, order: Vec::new() })
    }

    /// A workload of one fixed request.
    pub fn single(template: &RequestTemplate) -> Self {
        Self { calls: vec![Call::from_template(template)], cumulative: vec![1], order: Vec::new() }
    }

    /// The same calls taken round robin in `order` (each entry a call and one of its HTTP
    /// variants), as vegeta takes a targets file's lines.
    pub fn in_file_order(mut self, order: Vec<(usize, usize)>) -> Result<Self, WorkloadError> {
        let valid = |&(call, variant): &(usize, usize)| {
            self.calls.get(call).is_some_and(|c| variant < c.http.len().max(1))
        };
        if order.is_empty() || !order.iter().all(valid) {
            return Err(WorkloadError("the order names a call or variant that does not exist".into()));
        }
        self.order = order;
        Ok(self)
    }

    /// Whether any call is a plain HTTP call.
    pub fn has_http_calls(&self) -> bool {
        self.calls.iter().any(Call::is_http)
    }

    /// Whether every call is a JSON-RPC call.
    pub fn is_jsonrpc_only(&self) -> bool {
        !self.has_http_calls()
    }

    /// The calls, in the order given.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// A label for the whole workload: the method of a single call, or the names joined.
    pub fn label(&self) -> String {
        match self.calls.as_slice() {
            [only] => only.name.clone(),
            calls => calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join("+"),
        }
    }

    /// Picks the index of the next call by weight, or the call whose turn it is (`turn` counts
    /// the picks so far) for a workload taken in turn.
    #[inline]
    pub fn pick(&self, rng: &mut SmallRng, turn: u64) -> usize {
        if self.calls.len() == 1 {
            return 0;
        }
        if !self.order.is_empty() {
            return self.order[(turn % self.order.len() as u64) as usize].0;
        }
        let total = *self.cumulative.last().unwrap_or(&1);
        let point = rng.gen_range(0..total);
        self.cumulative.partition_point(|&running| running <= point)
    }

    /// A representative request of call `index` (without `jsonrpc` and `id`): generated values
    /// drawn from a fixed seed, so the same call always describes itself the same way.
    pub fn sample_request(&self, index: usize) -> Value {
        use rand::SeedableRng;
        if self.calls[index].is_http() {
            return serde_json::json!({ "http": self.calls[index].method });
        }
        let mut out = Vec::new();
        self.write_body(index, 0, &mut SmallRng::seed_from_u64(0), &mut out);
        let mut value: Value =
            serde_json::from_slice(&out).unwrap_or_else(|_| Value::Object(Default::default()));
        if let Some(object) = value.as_object_mut() {
            object.remove("jsonrpc");
            object.remove("id");
        }
        value
    }

    /// Writes HTTP call `index` (method, path, headers, body) into `out`; `turn` is the pick
    /// it came from (for a call of several variants, it says which).
    pub fn write_http(&self, index: usize, turn: u64, rng: &mut SmallRng, out: &mut Outgoing) {
        let variants = &self.calls[index].http;
        let variant = match self.order.is_empty() {
            true => 0,
            false => self.order[(turn % self.order.len() as u64) as usize].1,
        };
        let Some(shape) = variants.get(variant).or(variants.first()) else { return };
        out.method = shape.method;
        write_raw(&shape.path, rng, &mut out.path);
        out.headers.extend_from_slice(&shape.headers);
        if shape.raw_body {
            write_raw(&shape.body, rng, &mut out.body);
        } else {
            for part in &shape.body {
                match part {
                    Part::Literal(bytes) => out.body.extend_from_slice(bytes),
                    Part::Generated(generator) => write_generated(generator, rng, &mut out.body),
                }
            }
        }
    }

    /// Appends the body of call `index` with `id` to `out`.
    pub fn write_body(&self, index: usize, id: u64, rng: &mut SmallRng, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        for part in &self.calls[index].parts {
            match part {
                Part::Literal(bytes) => out.extend_from_slice(bytes),
                Part::Generated(generator) => write_generated(generator, rng, out),
            }
        }
    }
}

impl From<RequestTemplate> for Workload {
    fn from(template: RequestTemplate) -> Self {
        Workload::single(&template)
    }
}

impl From<&RequestTemplate> for Workload {
    fn from(template: &RequestTemplate) -> Self {
        Workload::single(template)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use serde_json::json;

    use super::*;

    fn body(workload: &Workload, index: usize, id: u64, rng: &mut SmallRng) -> Value {
        let mut out = Vec::new();
        workload.write_body(index, id, rng, &mut out);
        serde_json::from_slice(&out).unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&out)))
    }

    #[test]
    fn a_single_template_writes_the_same_body_as_the_template() {
        let template = RequestTemplate::from_method("getBalance", Some(&json!(["abc"]))).unwrap();
        let workload = Workload::single(&template);
        let mut out = Vec::new();
        workload.write_body(0, 42, &mut SmallRng::seed_from_u64(1), &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), template.body(42));
        assert_eq!(workload.label(), "getBalance");
    }

    #[test]
    fn generated_params_are_valid_json_in_range() {
        let params = ParamValue::Array(vec![
            ParamValue::Generated(Generator::IntRange { low: 900, high: 1000 }),
            ParamValue::Object(vec![
                ("encoding".into(), ParamValue::Fixed(json!("json"))),
                (
                    "pick".into(),
                    ParamValue::Generated(Generator::Choice(vec![json!("a"), json!({"b": [1]})])),
                ),
            ]),
            ParamValue::Generated(Generator::RandomHex(20)),
            ParamValue::Generated(Generator::RandomBase58(32)),
            ParamValue::Generated(Generator::HexQuantityRange { low: 0, high: 300 }),
        ]);
        let workload =
            Workload::new(vec![Call::new("getBlock", "getBlock", Some(&params), 1).unwrap()]).unwrap();
        let mut rng = SmallRng::seed_from_u64(7);
        for id in 0..500 {
            let value = body(&workload, 0, id, &mut rng);
            assert_eq!(value["jsonrpc"], "2.0");
            assert_eq!(value["id"], id);
            assert_eq!(value["method"], "getBlock");
            let slot = value["params"][0].as_u64().unwrap();
            assert!((900..=1000).contains(&slot));
            assert_eq!(value["params"][1]["encoding"], "json");
            assert!(
                value["params"][1]["pick"] == json!("a") || value["params"][1]["pick"] == json!({"b": [1]})
            );
            let hex = value["params"][2].as_str().unwrap();
            assert!(
                hex.starts_with("0x") && hex.len() == 42 && hex[2..].bytes().all(|b| b.is_ascii_hexdigit())
            );
            let key = value["params"][3].as_str().unwrap();
            assert!((32..=44).contains(&key.len()) && key.bytes().all(|b| BASE58.contains(&b)), "{key}");
            let quantity = value["params"][4].as_str().unwrap();
            let parsed = u64::from_str_radix(&quantity[2..], 16).unwrap();
            assert!(parsed <= 300 && (parsed == 0 || !quantity[2..].starts_with('0')), "{quantity}");
        }
    }

    #[test]
    fn base58_matches_a_known_encoding() {
        // Bytes chosen by a seeded generator: compare with the bs58 crate the mock node uses.
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..200 {
            let mut probe = rng.clone();
            let expected: Vec<u8> = (0..32).map(|_| probe.gen()).collect();
            let mut out = Vec::new();
            write_generated(&Compiled::RandomBase58(32), &mut rng, &mut out);
            let text = std::str::from_utf8(&out).unwrap().trim_matches('"');
            assert_eq!(bs58::decode(text).into_vec().unwrap(), expected, "{text}");
        }
    }

    #[test]
    fn weights_of_billions_keep_their_ratio() {
        // Two weights of 3,000,000,000 used to overflow a 32-bit running sum (a 690/310 split).
        let call = |name: &str| Call::new(name, "getSlot", None, 3_000_000_000).unwrap();
        let workload = Workload::new(vec![call("a"), call("b")]).unwrap();
        let mut rng = SmallRng::seed_from_u64(5);
        let mut counts = [0u32; 2];
        for _ in 0..100_000 {
            counts[workload.pick(&mut rng, 0)] += 1;
        }
        assert!((48_500..=51_500).contains(&counts[0]), "{counts:?}");
    }

    #[test]
    fn calls_are_picked_by_weight() {
        let call = |name: &str, weight| Call::new(name, "getSlot", None, weight).unwrap();
        let workload = Workload::new(vec![call("a", 1), call("b", 3), call("c", 6)]).unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts = [0u32; 3];
        for _ in 0..100_000 {
            counts[workload.pick(&mut rng, 0)] += 1;
        }
        for (count, expected) in counts.iter().zip([10_000, 30_000, 60_000]) {
            assert!((*count as i64 - expected).abs() < 1500, "{counts:?}");
        }
        assert_eq!(workload.label(), "a+b+c");
    }

    #[test]
    fn bad_workloads_say_what_is_wrong() {
        let empty_range =
            ParamValue::Array(vec![ParamValue::Generated(Generator::IntRange { low: 5, high: 1 })]);
        let cases = [
            (Call::new("x", "", None, 1).map(|_| ()), "method name is empty"),
            (Call::new("x", "m", None, 0).map(|_| ()), "weight"),
            (Call::new("x", "m", Some(&ParamValue::Fixed(json!(5))), 1).map(|_| ()), "array or an object"),
            (Call::new("x", "m", Some(&empty_range), 1).map(|_| ()), "is empty"),
        ];
        for (result, message) in cases {
            let err = result.unwrap_err();
            assert!(err.0.contains(message), "{err}");
        }
        let twice =
            Workload::new(vec![Call::new("a", "m", None, 1).unwrap(), Call::new("a", "n", None, 1).unwrap()]);
        assert!(twice.unwrap_err().0.contains("two calls are named 'a'"));
        assert!(Workload::new(vec![]).is_err());
    }
}
