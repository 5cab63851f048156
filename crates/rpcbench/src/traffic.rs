//! Recorded traffic files: what `rpcbench proxy --record` (and `rpcbench record`) writes and
//! `rpcbench replay` reads. A file is JSON lines: a [`TrafficHeader`] first, then one
//! [`TrafficEntry`] per relayed request, in the order the requests arrived. Each line is
//! written whole with one `write` and no buffering in user space, so a recorder killed at any
//! moment leaves every complete line behind and at most one cut last line, which the reader
//! recognises as such. Nothing secret goes in: the upstream URL is redacted, headers are not
//! recorded at all, and the request body is the JSON-RPC body only.
//!
//! A response is kept as a digest ([`response_digest`]): the 128-bit xxh3 of its canonical JSON
//! (keys sorted, hex lower-cased, as `compare --equal` normalises it) with the header's ignored
//! fields removed, or of its bytes when it is not JSON. Replay compares digests to count
//! responses that changed.

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::util::json_path::{normalize, FieldPath, FieldPathError};

/// The row of the methods past [`MAX_METHOD_KEYS`] (and of names over 128 bytes) in the
/// per-method tables of the proxy and of replay.
pub const OTHER_METHODS_KEY: &str = "other methods";
/// The most rows a per-method table keeps: a client or a file with ever new method names
/// cannot grow it.
pub const MAX_METHOD_KEYS: usize = 256;

/// The `format` of a traffic file's header line.
pub const TRAFFIC_FORMAT: &str = "rpcbench-traffic";
/// The version this build writes and reads.
pub const TRAFFIC_VERSION: u32 = 1;

/// The first line of a traffic file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficHeader {
    /// Always [`TRAFFIC_FORMAT`].
    pub format: String,
    /// [`TRAFFIC_VERSION`] when written by this build.
    pub version: u32,
    /// When the recording started (RFC 3339, UTC).
    pub started_at: String,
    /// The upstream the requests went to, redacted.
    pub upstream: String,
    /// Field paths left out of every response digest (as `--ignore-field` gives them).
    #[serde(default)]
    pub ignored_fields: Vec<String>,
}

impl TrafficHeader {
    /// A header for a recording of `upstream` (redacted here) starting now.
    pub fn new(upstream: &str, ignored_fields: &[FieldPath]) -> Self {
        TrafficHeader {
            format: TRAFFIC_FORMAT.into(),
            version: TRAFFIC_VERSION,
            started_at: crate::util::units::rfc3339(std::time::SystemTime::now()),
            upstream: crate::util::redact::url(upstream),
            ignored_fields: ignored_fields.iter().map(|p| p.as_str().to_string()).collect(),
        }
    }

    /// The ignored fields as paths.
    pub fn ignored_paths(&self) -> Result<Vec<FieldPath>, FieldPathError> {
        self.ignored_fields.iter().map(|text| FieldPath::parse(text)).collect()
    }
}

/// One relayed request and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficEntry {
    /// When the request arrived, in microseconds from the start of the recording.
    pub offset_us: u64,
    /// The JSON-RPC method of each call in the body (one for a single call, one per item for a
    /// batch, in order); empty when the body is not JSON-RPC.
    pub methods: Vec<String>,
    /// The request body, exactly as received (UTF-8; see [`TrafficEntry::body_base64`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The request body in standard base64, when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// The HTTP status sent back to the client (502 when the upstream could not be reached, 0
    /// when the connection was closed without an answer).
    pub status: u16,
    /// The response body's size in bytes.
    pub response_bytes: u64,
    /// [`response_digest`] of the response body.
    pub response_hash: String,
    /// Time waiting for the upstream, in microseconds.
    pub upstream_us: u64,
}

impl TrafficEntry {
    /// An entry for `body`, with the body stored as text when it is UTF-8 and in base64
    /// otherwise, and the methods read from it.
    pub fn for_request(offset_us: u64, body: &[u8]) -> Self {
        let (text, base64) = match std::str::from_utf8(body) {
            Ok(text) => (Some(text.to_string()), None),
            Err(_) => {
                use base64::Engine;
                (None, Some(base64::engine::general_purpose::STANDARD.encode(body)))
            }
        };
        TrafficEntry {
            offset_us,
            methods: methods_of(body),
            body: text,
            body_base64: base64,
            status: 0,
            response_bytes: 0,
            response_hash: String::new(),
            upstream_us: 0,
        }
    }

    /// The request body's bytes.
    pub fn body_bytes(&self) -> Result<Vec<u8>, BodyError> {
        match (&self.body, &self.body_base64) {
            (Some(text), None) => Ok(text.as_bytes().to_vec()),
            (None, Some(encoded)) => {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(encoded).map_err(BodyError::NotBase64)
            }
            (Some(_), Some(_)) => Err(BodyError::Both),
            (None, None) => Err(BodyError::Missing),
        }
    }
}

/// Why a traffic entry's request body cannot be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyError {
    /// `body_base64` is not base64.
    NotBase64(base64::DecodeError),
    /// Both `body` and `body_base64` are given.
    Both,
    /// Neither is.
    Missing,
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BodyError::NotBase64(error) => write!(f, "body_base64 is not base64: {error}"),
            BodyError::Both => f.write_str("both body and body_base64 are given"),
            BodyError::Missing => f.write_str("the entry has no body (body or body_base64)"),
        }
    }
}

impl std::error::Error for BodyError {}

/// The JSON-RPC method names in a request body, in order; empty when it is not JSON-RPC.
pub fn methods_of(body: &[u8]) -> Vec<String> {
    #[derive(Deserialize)]
    struct Envelope {
        method: Option<String>,
    }
    let Ok(raw) = serde_json::from_slice::<&RawValue>(body) else { return Vec::new() };
    let text = raw.get().trim_start();
    if text.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(text).unwrap_or_default();
        items
            .iter()
            .filter_map(|item| serde_json::from_str::<Envelope>(item.get()).ok().and_then(|e| e.method))
            .collect()
    } else {
        serde_json::from_str::<Envelope>(text).ok().and_then(|e| e.method).into_iter().collect()
    }
}

/// The digest of a response body: 32 hex digits of the xxh3-128 of its canonical JSON with
/// `ignore` removed, or of its raw bytes (prefixed `raw:`) when it is not JSON.
pub fn response_digest(body: &[u8], ignore: &[FieldPath]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut value) => {
            normalize(&mut value, ignore);
            let canonical = serde_json::to_vec(&value).unwrap_or_default();
            format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&canonical))
        }
        Err(_) => format!("raw:{:032x}", xxhash_rust::xxh3::xxh3_128(body)),
    }
}

/// Appends lines to a traffic file, each with one `write` of the whole line.
#[derive(Debug)]
pub struct TrafficWriter {
    file: File,
    line: Vec<u8>,
}

impl TrafficWriter {
    /// Creates (or truncates) `path` and writes the header line.
    pub fn create(path: &Path, header: &TrafficHeader) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let mut writer = TrafficWriter { file, line: Vec::with_capacity(1024) };
        writer.write_line(header)?;
        Ok(writer)
    }

    /// Appends one entry.
    pub fn append(&mut self, entry: &TrafficEntry) -> std::io::Result<()> {
        self.write_line(entry)
    }

    fn write_line<T: Serialize>(&mut self, value: &T) -> std::io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, value).map_err(std::io::Error::other)?;
        self.line.push(b'\n');
        self.file.write_all(&self.line)
    }
}

/// What to do with a line that does not parse in the middle of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BadLines {
    /// Refuse the file, naming the line (the default).
    #[default]
    Refuse,
    /// Skip the line and keep the rest; the skipped lines are listed in [`TrafficFile::skipped`].
    Skip,
}

/// A traffic file that cannot be read.
#[derive(Debug)]
pub enum TrafficError {
    /// The file could not be read.
    Io(PathBuf, std::io::Error),
    /// A line is not what it should be: `path:line:column: message`.
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for TrafficError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrafficError::Io(path, error) => write!(f, "{}: {error}", path.display()),
            TrafficError::Line { path, line, column, message } => {
                write!(f, "{}:{line}:{column}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for TrafficError {}

/// A line left out of a traffic file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: usize,
    /// Why.
    pub reason: String,
}

/// A traffic file read whole.
#[derive(Debug, Clone)]
pub struct TrafficFile {
    /// The header line.
    pub header: TrafficHeader,
    /// Every entry, in file order.
    pub entries: Vec<TrafficEntry>,
    /// Lines left out with [`BadLines::Skip`].
    pub skipped: Vec<SkippedLine>,
    /// The line number of a cut last line (no newline, not JSON: a recorder stopped while
    /// writing it), which is always left out.
    pub cut_last_line: Option<usize>,
}

impl TrafficFile {
    /// Reads `path`.
    pub fn read(path: &Path, bad_lines: BadLines) -> Result<Self, TrafficError> {
        let bytes = crate::util::files::read_limited(path, crate::util::files::MAX_TRAFFIC)
            .map_err(|error| TrafficError::Io(path.to_path_buf(), error))?;
        Self::parse(&bytes, path, bad_lines)
    }

    /// Parses a file's bytes; `path` is for messages.
    pub fn parse(bytes: &[u8], path: &Path, bad_lines: BadLines) -> Result<Self, TrafficError> {
        let line_error = |line: usize, column: usize, message: String| TrafficError::Line {
            path: path.to_path_buf(),
            line,
            column,
            message,
        };
        let ends_with_newline = bytes.last() == Some(&b'\n');
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        if ends_with_newline || bytes.is_empty() {
            lines.pop();
        }
        let last = lines.len();
        let Some(first) = lines.first() else {
            return Err(line_error(
                1,
                1,
                "the file is empty: a traffic file starts with its header line".into(),
            ));
        };
        let header: TrafficHeader = serde_json::from_slice(first).map_err(|error| {
            line_error(1, error.column().max(1), format!("not a traffic file header: {error}"))
        })?;
        if header.format != TRAFFIC_FORMAT {
            return Err(line_error(
                1,
                1,
                format!("the format is {:?}, not {TRAFFIC_FORMAT:?}", header.format),
            ));
        }
        if header.version != TRAFFIC_VERSION {
            return Err(line_error(
                1,
                1,
                format!("version {} is not one this build reads ({TRAFFIC_VERSION})", header.version),
            ));
        }
        header.ignored_paths().map_err(|error| line_error(1, 1, format!("ignored_fields: {error}")))?;
        let mut file = TrafficFile { header, entries: Vec::new(), skipped: Vec::new(), cut_last_line: None };
        for (index, line) in lines.iter().enumerate().skip(1) {
            let number = index + 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let parsed = serde_json::from_slice::<TrafficEntry>(line)
                .map_err(|error| (error.column().max(1), error.to_string()))
                .and_then(|entry| entry.body_bytes().map(|_| entry).map_err(|error| (1, error.to_string())));
            match parsed {
                Ok(entry) => file.entries.push(entry),
                Err(_) if number == last && !ends_with_newline => file.cut_last_line = Some(number),
                Err((column, message)) => match bad_lines {
                    BadLines::Refuse => return Err(line_error(number, column, message)),
                    BadLines::Skip => file.skipped.push(SkippedLine { line: number, reason: message }),
                },
            }
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> TrafficHeader {
        TrafficHeader::new("http://127.0.0.1:8545/?api-key=SECRET", &[])
    }

    fn entry(offset_us: u64, body: &str) -> TrafficEntry {
        let mut entry = TrafficEntry::for_request(offset_us, body.as_bytes());
        entry.status = 200;
        entry.response_hash = response_digest(br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#, &[]);
        entry
    }

    fn file_text(entries: &[TrafficEntry]) -> String {
        let mut text = serde_json::to_string(&header()).unwrap() + "\n";
        for entry in entries {
            text += &(serde_json::to_string(entry).unwrap() + "\n");
        }
        text
    }

    #[test]
    fn the_header_keeps_no_api_key() {
        assert!(!serde_json::to_string(&header()).unwrap().contains("SECRET"));
    }

    #[test]
    fn methods_of_single_calls_batches_and_other_bodies() {
        assert_eq!(methods_of(br#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#), ["getSlot"]);
        assert_eq!(methods_of(br#" [{"id":1,"method":"a"},{"id":2,"method":"b"},{"id":3}] "#), ["a", "b"]);
        assert!(methods_of(b"not json").is_empty());
        assert!(methods_of(b"{}").is_empty());
    }

    #[test]
    fn digests_ignore_key_order_and_the_ignored_fields() {
        let a = br#"{"id":1,"result":{"a":1,"slot":5}}"#;
        let b = br#"{"result":{"slot":6,"a":1},"id":1}"#;
        assert_ne!(response_digest(a, &[]), response_digest(b, &[]));
        let ignore = [FieldPath::parse("result.slot").unwrap()];
        assert_eq!(response_digest(a, &ignore), response_digest(b, &ignore));
        assert!(response_digest(b"<html>", &[]).starts_with("raw:"));
    }

    #[test]
    fn a_written_file_reads_back_line_for_line() {
        let dir = std::env::temp_dir().join(format!("rpcbench-traffic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.jsonl");
        let mut writer = TrafficWriter::create(&path, &header()).unwrap();
        let entries = [entry(0, r#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#), {
            let mut binary = TrafficEntry::for_request(10, &[0xff, 0x00, b'\n']);
            binary.status = 502;
            binary
        }];
        for entry in &entries {
            writer.append(entry).unwrap();
        }
        drop(writer);
        let read = TrafficFile::read(&path, BadLines::Refuse).unwrap();
        assert_eq!(read.entries, entries);
        assert_eq!(read.entries[1].body_bytes().unwrap(), [0xff, 0x00, b'\n']);
        let mut entry = read.entries[1].clone();
        entry.body = Some("x".into());
        assert_eq!(entry.body_bytes(), Err(BodyError::Both));
        entry.body = None;
        entry.body_base64 = None;
        assert_eq!(
            entry.body_bytes().unwrap_err().to_string(),
            "the entry has no body (body or body_base64)"
        );
        assert_eq!(read.cut_last_line, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cut_last_line_is_left_out_and_named() {
        let text = file_text(&[entry(0, "{}"), entry(5, "{}")]);
        let cut = &text[..text.len() - 10];
        let read = TrafficFile::parse(cut.as_bytes(), Path::new("t.jsonl"), BadLines::Refuse).unwrap();
        assert_eq!(read.entries.len(), 1);
        assert_eq!(read.cut_last_line, Some(3));
    }

    #[test]
    fn an_edited_line_is_refused_with_its_place_or_skipped() {
        let mut text = file_text(&[entry(0, "{}"), entry(5, "{}"), entry(9, "{}")]);
        text = text.replacen("\"offset_us\":5", "\"offset_us\":\"five\"", 1);
        let error = TrafficFile::parse(text.as_bytes(), Path::new("t.jsonl"), BadLines::Refuse).unwrap_err();
        assert!(error.to_string().starts_with("t.jsonl:3:"), "{error}");
        let read = TrafficFile::parse(text.as_bytes(), Path::new("t.jsonl"), BadLines::Skip).unwrap();
        assert_eq!(read.entries.len(), 2);
        assert_eq!(read.skipped.len(), 1);
        assert_eq!(read.skipped[0].line, 3);
    }

    #[test]
    fn not_a_traffic_file() {
        for (text, expected) in [
            ("", "t.jsonl:1:1: the file is empty"),
            (
                "{\"format\":\"other\",\"version\":1,\"started_at\":\"\",\"upstream\":\"\"}\n",
                "t.jsonl:1:1: the format",
            ),
            ("[1,2]\n", "t.jsonl:1:"),
        ] {
            let error =
                TrafficFile::parse(text.as_bytes(), Path::new("t.jsonl"), BadLines::Refuse).unwrap_err();
            assert!(error.to_string().starts_with(expected), "{error}");
        }
    }
}
