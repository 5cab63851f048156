//! JSON-RPC 2.0 on the hot path: request bodies built from a template with a fresh id per
//! request, and the classification of every response into exactly one [`Outcome`].
//!
//! Classification does not build a JSON tree. [`scan_response`] walks the top level of the
//! response object, reads `jsonrpc`, `id`, and the `code` of an `error`, and skips over
//! `result` without looking inside it. For large results that come before the `id` (Solana
//! puts `id` last) it reads the trailing members backwards from the end of the body instead
//! of skipping tens of kilobytes. [`CheckMode::Full`] adds a complete JSON validation for
//! users who want every byte checked.

use std::fmt;

use serde_json::Value;

pub(crate) use crate::outcome::{InvalidKind, Outcome};

/// How much of each response body is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CheckMode {
    /// The scanning parse: top-level members only, `result` skipped.
    #[default]
    Scan,
    /// The scanning parse plus a full JSON validation of the whole body.
    Full,
}

/// Classifies one HTTP response to a request sent with id `sent_id`.
///
/// The HTTP status wins over the body: a 429 with a JSON-RPC error inside is `HttpStatus(429)`.
pub(crate) fn classify(status: u16, body: &[u8], sent_id: u64, check: CheckMode) -> Outcome {
    if !(200..300).contains(&status) {
        return Outcome::HttpStatus(status);
    }
    if check == CheckMode::Full && !is_valid_json(body) {
        return Outcome::Invalid(InvalidKind::NotJson);
    }
    match scan_response(body) {
        Ok(scanned) => classify_scanned(&scanned, |id| id == sent_id),
        // A batch's array in answer to a single call is JSON-RPC's shape, not this request's.
        Err(InvalidKind::NotJson) if is_json_array(body) => Outcome::Invalid(InvalidKind::NotJsonRpc),
        Err(kind) => Outcome::Invalid(kind),
    }
}

/// The outcome of a scanned response object whose id `expected` accepts.
pub(crate) fn classify_scanned(scanned: &ScannedResponse, expected: impl Fn(u64) -> bool) -> Outcome {
    if !scanned.version_ok {
        return Outcome::Invalid(InvalidKind::NotJsonRpc);
    }
    match (scanned.has_result, scanned.error_code) {
        (true, None) => match scanned.id {
            ScannedId::Number(id) if expected(id) => Outcome::Ok,
            ScannedId::Missing => Outcome::Invalid(InvalidKind::NotJsonRpc),
            _ => Outcome::Invalid(InvalidKind::IdMismatch),
        },
        (false, Some(code)) => match scanned.id {
            // A server that could not read the request answers with a null id.
            ScannedId::Null => Outcome::RpcError(code),
            ScannedId::Number(id) if expected(id) => Outcome::RpcError(code),
            ScannedId::Missing => Outcome::Invalid(InvalidKind::NotJsonRpc),
            _ => Outcome::Invalid(InvalidKind::IdMismatch),
        },
        _ => Outcome::Invalid(InvalidKind::NotJsonRpc),
    }
}

/// Whether `body` is one JSON array (delimited by the scanner, not validated inside).
fn is_json_array(body: &[u8]) -> bool {
    let mut s = Scanner { bytes: body, pos: 0 };
    s.skip_ws();
    s.peek() == Some(b'[') && s.skip_value().is_ok() && s.finish().is_ok()
}

/// Walks a JSON array (a batch reply), giving `visit` the byte range of each element in turn;
/// nothing is kept, so a reply of millions of small items costs no memory here. `NotJson` when
/// the body is not an array or an element cannot be delimited (possibly after some elements
/// were visited).
pub(crate) fn each_array_item(body: &[u8], mut visit: impl FnMut(usize, usize)) -> Result<(), InvalidKind> {
    let mut s = Scanner { bytes: body, pos: 0 };
    s.skip_ws();
    s.expect(b'[')?;
    s.skip_ws();
    if s.peek() == Some(b']') {
        s.pos += 1;
        return s.finish();
    }
    loop {
        s.skip_ws();
        let start = s.pos;
        s.skip_value()?;
        visit(start, s.pos);
        s.skip_ws();
        match s.next() {
            Some(b',') => continue,
            Some(b']') => break,
            _ => return Err(InvalidKind::NotJson),
        }
    }
    s.finish()
}

/// The first non-space byte of a body.
pub(crate) fn first_byte(body: &[u8]) -> Option<u8> {
    body.iter().copied().find(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
}

/// Whether the body is one complete JSON text (`--check full`). JSON is UTF-8: serde_json skips the contents of
/// strings it ignores without checking them, so the encoding is checked first.
pub(crate) fn is_valid_json(body: &[u8]) -> bool {
    std::str::from_utf8(body).is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok())
}

/// The `id` member of a response, as far as classification cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScannedId {
    /// No `id` member.
    Missing,
    /// `"id": null`.
    Null,
    /// A non-negative integer id.
    Number(u64),
    /// Anything else: a string, a fraction, a negative number.
    Other,
}

/// What the scanning parse found at the top level of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScannedResponse {
    /// `"jsonrpc": "2.0"` was present.
    pub version_ok: bool,
    /// The id.
    pub id: ScannedId,
    /// A `result` member was present.
    pub has_result: bool,
    /// The integer `code` of an `error` member, if there was a well-formed one.
    pub error_code: Option<i64>,
}

/// Scans the top level of a JSON-RPC response body. Returns `NotJson` when the top-level
/// structure is not a JSON object, and `NotJsonRpc` for an `error` without an integer code.
pub(crate) fn scan_response(body: &[u8]) -> Result<ScannedResponse, InvalidKind> {
    scan_response_with(body, TAIL_SCAN_THRESHOLD)
}

/// [`scan_response`] with the size above which a result's tail is read instead of skipped.
///
/// A well-formed answer names each member once, and this scan reads it with no more than a
/// "seen" flag per envelope member. The rule for a repeated `id`, `jsonrpc` or `result` (see
/// [`EnvelopeRead`]) costs a second scan, from the start, in [`scan_with_repeats`]: taken when
/// the first repeat is met, so a common answer never pays for it.
fn scan_response_with(body: &[u8], tail_threshold: usize) -> Result<ScannedResponse, InvalidKind> {
    scan_members::<false>(body, tail_threshold)
}

/// The scan of a response that repeats an envelope member, with the whole duplicate-member
/// rule applied to every member (off the common path).
#[cold]
#[inline(never)]
fn scan_with_repeats(body: &[u8], tail_threshold: usize) -> Result<ScannedResponse, InvalidKind> {
    scan_members::<true>(body, tail_threshold)
}

/// The forward scan of [`scan_response_with`]. With `REPEATS` false it reads each member as the
/// only one of its name and hands the body to [`scan_with_repeats`] when an `id`, `jsonrpc` or
/// `result` comes a second time; up to that point both modes read the same, so the answer is
/// the same as if the rule had been applied all along.
#[inline(always)]
fn scan_members<const REPEATS: bool>(
    body: &[u8],
    tail_threshold: usize,
) -> Result<ScannedResponse, InvalidKind> {
    let mut scanned =
        ScannedResponse { version_ok: false, id: ScannedId::Missing, has_result: false, error_code: None };
    let mut error_seen = false;
    // Which envelope members were read, and (with `REPEATS`) which are final: what was read
    // when the first result starts is final, and a member only after it counts by its last
    // occurrence (see [`EnvelopeRead`]).
    let mut read = EnvelopeRead::default();
    let mut s = Scanner { bytes: body, pos: 0 };
    if body.starts_with(VERSION_FIRST) {
        // Where the loop below would be after reading this first member and its comma.
        scanned.version_ok = true;
        read.version_seen = true;
        s.pos = VERSION_FIRST.len();
    } else {
        s.skip_ws();
        s.expect(b'{')?;
        s.skip_ws();
        if s.peek() == Some(b'}') {
            s.pos += 1;
            return s.finish().map(|()| scanned);
        }
    }
    loop {
        s.skip_ws();
        let key = s.string()?;
        s.skip_ws();
        s.expect(b':')?;
        s.skip_ws();
        match key {
            b"jsonrpc" => {
                let value = s.value_span()?;
                if !REPEATS && read.version_seen {
                    return scan_with_repeats(body, tail_threshold);
                }
                if !read.version_final {
                    scanned.version_ok = value == b"\"2.0\"";
                    read.version_seen = true;
                }
            }
            b"id" => {
                let value = s.value_span()?;
                if !REPEATS && read.id_seen {
                    return scan_with_repeats(body, tail_threshold);
                }
                if !read.id_final {
                    scanned.id = parse_id(value);
                    read.id_seen = true;
                }
            }
            b"result" => {
                if !REPEATS && scanned.has_result {
                    return scan_with_repeats(body, tail_threshold);
                }
                if REPEATS && !read.result_read {
                    read = read.at_first_result();
                }
                scanned.has_result = true;
                // Without repeats this is the first result, and the scan keeps no finals.
                let settled = if REPEATS { read } else { read.at_first_result() };
                let start = s.pos;
                let remaining = body.len() - start;
                // The tail scan stops at the first container that closes, taking it for the
                // result's end; members between the result and that container go unseen. Only
                // an `error` there would change the class, so the tail is not used when one
                // might hide there (a fast substring search, far cheaper than skipping).
                // Searched once, and only when the tail is about to be used.
                let container = matches!(s.peek(), Some(b'{' | b'['));
                let mut no_error_key = None;
                let mut tail_shape = || {
                    container && *no_error_key.get_or_insert_with(|| ERROR_KEY.find(&body[start..]).is_none())
                };
                if remaining > tail_threshold && tail_shape() {
                    if let Some(verdict) = verdict_from_tail(body, start, &scanned, error_seen, settled) {
                        return verdict;
                    }
                }
                // Skipped forward, the result is delimited by its brackets. When they do not
                // balance, the tail decides as it does for a large result: scan mode's verdict
                // on a result's inside does not depend on its size (`--check full` checks it).
                let skipped = s.skip_value().is_ok() && {
                    let mut after = Scanner { bytes: body, pos: s.pos };
                    after.skip_ws();
                    matches!(after.peek(), Some(b',' | b'}'))
                };
                if !skipped {
                    if tail_shape() {
                        if let Some(verdict) = verdict_from_tail(body, start, &scanned, error_seen, settled) {
                            return verdict;
                        }
                    }
                    return Err(InvalidKind::NotJson);
                }
            }
            b"error" => {
                error_seen = true;
                scanned.error_code = s.error_object()?;
            }
            _ => s.skip_value()?,
        }
        s.skip_ws();
        match s.next() {
            Some(b',') => continue,
            Some(b'}') => break,
            _ => return Err(InvalidKind::NotJson),
        }
    }
    s.finish()?;
    if error_seen && scanned.error_code.is_none() {
        return Err(InvalidKind::NotJsonRpc);
    }
    Ok(scanned)
}

/// The verdict of a response read from its tail, the result starting at `start`: `None` when
/// the tail does not settle both the id and the version (something else follows the result).
fn verdict_from_tail(
    body: &[u8],
    start: usize,
    scanned: &ScannedResponse,
    error_seen: bool,
    read: EnvelopeRead,
) -> Option<Result<ScannedResponse, InvalidKind>> {
    let tail = scan_tail(body, start)?;
    let mut from_tail = scanned.clone();
    // The tail's members come last first: the first of each name read here is its last
    // occurrence, which counts unless the member was final before the result. A member that is
    // not final is settled by the tail alone (the part between an earlier result and this one
    // may hold a later occurrence than the one the forward part read).
    let (mut version_final, mut id_final) = (read.version_final, read.id_final);
    if !version_final {
        from_tail.version_ok = false;
    }
    if !id_final {
        from_tail.id = ScannedId::Missing;
    }
    for &(key, value) in &tail {
        match key {
            b"jsonrpc" if !version_final => {
                from_tail.version_ok = value == b"\"2.0\"";
                version_final = true;
            }
            b"id" if !id_final => {
                from_tail.id = parse_id(value);
                id_final = true;
            }
            b"error" => return Some(Err(InvalidKind::NotJsonRpc)),
            _ => {}
        }
    }
    if from_tail.id == ScannedId::Missing || !from_tail.version_ok {
        return None;
    }
    // The same end checks as after a forward scan.
    if error_seen && from_tail.error_code.is_none() {
        return Some(Err(InvalidKind::NotJsonRpc));
    }
    Some(Ok(from_tail))
}

/// Which envelope members a scan has settled. JSON leaves duplicate names to the reader; here
/// the `id` and `jsonrpc` members read when the (first) result starts are final (before it the
/// last occurrence counts, as JSON parsers read objects), and a member that only follows the
/// result counts by its last occurrence. Both scans then agree at any result size without
/// another pass: the forward part of a large answer is read as a small one is, and the tail's
/// members are the last ones; a member between a large result and a later container, which
/// the tail does not see, never decides (a duplicate of a final member is passed over; a first
/// occurrence leaves the tail unsettled and the result is skipped forward).
#[derive(Debug, Clone, Copy, Default)]
struct EnvelopeRead {
    result_read: bool,
    id_seen: bool,
    version_seen: bool,
    id_final: bool,
    version_final: bool,
}

impl EnvelopeRead {
    /// What is settled once the first result starts: the members read so far are final.
    fn at_first_result(self) -> Self {
        Self { result_read: true, id_final: self.id_seen, version_final: self.version_seen, ..self }
    }
}

/// How most servers open a response (geth, nginx's fixed answer, Solana, our mocks): compared
/// as one slice, it saves the byte-by-byte read of the first key and value on every response.
const VERSION_FIRST: &[u8] = br#"{"jsonrpc":"2.0","#;

/// Results longer than this are not skipped byte by byte when the tail can be read instead.
const TAIL_SCAN_THRESHOLD: usize = 512;

/// The search for an `"error"` member after a large result, built once: building a searcher
/// per response cost ~400 instructions, 2% of a 40 KB response (callgrind). Its byte ranks are
/// JSON's ([`JsonByteRank`]), not memchr's defaults.
static ERROR_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> = std::sync::LazyLock::new(|| {
    memchr::memmem::FinderBuilder::new().build_forward_with_ranker(JsonByteRank, b"\"error\"")
});

/// How common a byte is in a JSON-RPC result, for choosing the two bytes of `"error"` the
/// substring search looks for first (memchr's packed pair: two vector compares per 32 bytes,
/// and a check of the whole needle wherever both bytes sit at their offsets).
///
/// memchr's default ranks describe general text, where `"` is uncommon, so it pairs the quote
/// at offset 0 with the `o` at offset 4. In JSON every key and string has two quotes, and
/// `"`..`o` four bytes apart is common: 127 candidates in a 58 KB Solana getBlock answer. With
/// JSON's punctuation and the hex digits ranked as the most common bytes the pair becomes the
/// `r` at offset 2 and the `o` at offset 4, with 2 candidates in the same answer: the search
/// went from 29,200 to 27,300 instructions per answer (callgrind), what remains being the
/// vector loop itself (~15 instructions per 32 bytes). Only the cost changes: every candidate
/// is checked in full, so what is found is the same.
struct JsonByteRank;

impl memchr::arch::all::packedpair::HeuristicFrequencyRank for JsonByteRank {
    fn rank(&self, byte: u8) -> u8 {
        match byte {
            b'"' | b',' | b':' | b'{' | b'}' | b'[' | b']' => 255,
            // Numbers and hex strings (hashes, addresses, quantities).
            b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' | b'x' => 254,
            // Words: keys, base58 (Solana keys and signatures), log text.
            b'a'..=b'z' | b'A'..=b'Z' | b' ' => 200,
            _ => 100,
        }
    }
}

/// Extracts the `error.message` of a response body, for the first response seen with a code.
/// This is the cold path: it parses the body fully.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let message = value.get("error")?.get("message")?;
    Some(match message {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

fn parse_id(raw: &[u8]) -> ScannedId {
    if raw == b"null" {
        return ScannedId::Null;
    }
    if raw.is_empty() || raw.len() > 20 || !raw.iter().all(u8::is_ascii_digit) {
        return ScannedId::Other;
    }
    let mut value: u64 = 0;
    for &digit in raw {
        value = match value.checked_mul(10).and_then(|v| v.checked_add(u64::from(digit - b'0'))) {
            Some(v) => v,
            None => return ScannedId::Other,
        };
    }
    ScannedId::Number(value)
}

/// A forward scanner over the top level of a JSON document.
struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Result<(), InvalidKind> {
        if self.next() == Some(byte) {
            Ok(())
        } else {
            Err(InvalidKind::NotJson)
        }
    }

    fn finish(&mut self) -> Result<(), InvalidKind> {
        self.skip_ws();
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(InvalidKind::NotJson)
        }
    }

    /// Reads a string and returns its raw contents (escapes left as they are).
    fn string(&mut self) -> Result<&'a [u8], InvalidKind> {
        self.expect(b'"')?;
        let start = self.pos;
        self.skip_string_body()?;
        Ok(&self.bytes[start..self.pos - 1])
    }

    /// Skips to just after the closing quote of a string whose opening quote was consumed.
    /// Short strings (keys, ids, hex quantities) are stepped over byte by byte; long ones with
    /// `memchr`, whose setup costs more than a short loop.
    fn skip_string_body(&mut self) -> Result<(), InvalidKind> {
        let short_end = (self.pos + 32).min(self.bytes.len());
        while self.pos < short_end {
            match self.bytes[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => self.pos += 2,
                _ => self.pos += 1,
            }
        }
        loop {
            let rest = self.bytes.get(self.pos..).ok_or(InvalidKind::NotJson)?;
            let offset = memchr::memchr2(b'"', b'\\', rest).ok_or(InvalidKind::NotJson)?;
            if rest[offset] == b'"' {
                self.pos += offset + 1;
                return Ok(());
            }
            self.pos += offset + 2;
        }
    }

    /// Skips one value and returns the bytes it spans.
    fn value_span(&mut self) -> Result<&'a [u8], InvalidKind> {
        let start = self.pos;
        self.skip_value()?;
        Ok(&self.bytes[start..self.pos])
    }

    fn skip_value(&mut self) -> Result<(), InvalidKind> {
        match self.peek().ok_or(InvalidKind::NotJson)? {
            b'"' => {
                self.pos += 1;
                self.skip_string_body()
            }
            b'{' | b'[' => self.skip_container(),
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                let start = self.pos;
                while let Some(byte) = self.peek() {
                    if matches!(byte, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    self.pos += 1;
                }
                let scalar = &self.bytes[start..self.pos];
                let valid = match scalar[0] {
                    b't' => scalar == b"true",
                    b'f' => scalar == b"false",
                    b'n' => scalar == b"null",
                    _ => scalar.iter().all(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')),
                };
                if valid {
                    Ok(())
                } else {
                    Err(InvalidKind::NotJson)
                }
            }
            _ => Err(InvalidKind::NotJson),
        }
    }

    /// Skips an object or array, tracking depth and stepping over strings.
    fn skip_container(&mut self) -> Result<(), InvalidKind> {
        let mut depth = 0usize;
        while let Some(byte) = self.next() {
            match byte {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                b'"' => self.skip_string_body()?,
                _ => {}
            }
        }
        Err(InvalidKind::NotJson)
    }

    /// Reads an error object and returns its integer `code`, if it has one.
    fn error_object(&mut self) -> Result<Option<i64>, InvalidKind> {
        if self.peek() != Some(b'{') {
            self.skip_value()?;
            return Ok(None);
        }
        self.pos += 1;
        let mut code = None;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(None);
        }
        loop {
            self.skip_ws();
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            let value = self.value_span()?;
            if key == b"code" {
                code = std::str::from_utf8(value).ok().and_then(|text| text.parse::<i64>().ok());
            }
            self.skip_ws();
            match self.next() {
                Some(b',') => continue,
                Some(b'}') => return Ok(code),
                _ => return Err(InvalidKind::NotJson),
            }
        }
    }
}

/// The scalar members (key, raw value) found after a large value, read backwards.
type Tail<'a> = Vec<(&'a [u8], &'a [u8])>;

/// Reads the scalar members that follow the container starting at `value_start`, backwards
/// from the end of the body, up to the first container that closes. Returns `None` (the caller
/// then skips forward) when the tail is anything else.
fn scan_tail(body: &[u8], value_start: usize) -> Option<Tail<'_>> {
    let mut end = body.len();
    let skip_ws_back = |end: &mut usize| {
        while *end > value_start && matches!(body[*end - 1], b' ' | b'\n' | b'\r' | b'\t') {
            *end -= 1;
        }
    };
    skip_ws_back(&mut end);
    if end <= value_start || body[end - 1] != b'}' {
        return None;
    }
    end -= 1;
    let mut members = Vec::with_capacity(2);
    loop {
        skip_ws_back(&mut end);
        if end <= value_start {
            return None;
        }
        let last = body[end - 1];
        if matches!(last, b'}' | b']') {
            // A container closes here: the large value, or another member the caller will
            // notice it has not settled.
            let opener = body[value_start];
            let matches_opener = (opener == b'{' && last == b'}') || (opener == b'[' && last == b']');
            return matches_opener.then_some(members);
        }
        // A scalar value.
        let value_end = end;
        if last == b'"' {
            let open = find_string_open(body, value_start, end - 1)?;
            end = open;
        } else {
            while end > value_start
                && (body[end - 1].is_ascii_alphanumeric() || matches!(body[end - 1], b'-' | b'+' | b'.'))
            {
                end -= 1;
            }
        }
        let value = &body[end..value_end];
        skip_ws_back(&mut end);
        if end <= value_start || body[end - 1] != b':' {
            return None;
        }
        end -= 1;
        skip_ws_back(&mut end);
        if end <= value_start || body[end - 1] != b'"' {
            return None;
        }
        let key_close = end - 1;
        let key_open = find_string_open(body, value_start, key_close)?;
        let key = &body[key_open + 1..key_close];
        members.push((key, value));
        end = key_open;
        skip_ws_back(&mut end);
        if end <= value_start || body[end - 1] != b',' {
            return None;
        }
        end -= 1;
        if members.len() > 8 {
            return None;
        }
    }
}

/// Given the index of a closing quote, finds the index of the matching opening quote, going
/// backwards and skipping escaped quotes. Never looks at or before `floor`.
fn find_string_open(body: &[u8], floor: usize, close: usize) -> Option<usize> {
    let mut index = close;
    loop {
        let found = memchr::memrchr(b'"', &body[floor + 1..index])? + floor + 1;
        let backslashes = body[floor + 1..found].iter().rev().take_while(|&&b| b == b'\\').count();
        if backslashes % 2 == 0 {
            return Some(found);
        }
        index = found;
    }
}

/// A request body with a placeholder for the id: `prefix` + id + `suffix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    method: String,
}

/// A request body that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError(pub String);

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BodyError {}

impl RequestTemplate {
    /// A request for `method` with optional `params` (an array or an object).
    pub fn from_method(method: &str, params: Option<&Value>) -> Result<Self, BodyError> {
        if method.is_empty() {
            return Err(BodyError("the method name is empty".into()));
        }
        if let Some(params) = params {
            if !params.is_array() && !params.is_object() {
                return Err(BodyError(format!(
                    "params must be a JSON array or object, not {}",
                    json_kind(params)
                )));
            }
        }
        let method_json = Value::String(method.to_string()).to_string();
        let mut suffix = format!(",\"method\":{method_json}");
        if let Some(params) = params {
            suffix.push_str(",\"params\":");
            suffix.push_str(&params.to_string());
        }
        suffix.push('}');
        Ok(Self {
            prefix: b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec(),
            suffix: suffix.into_bytes(),
            method: method.to_string(),
        })
    }

    /// A request from a whole JSON-RPC request object given by the user. Its `id`, if any, is
    /// replaced by rpcbench's own so that every response can be matched to its request.
    pub fn from_body(body: &str) -> Result<Self, BodyError> {
        let value: Value = serde_json::from_str(body)
            .map_err(|err| BodyError(format!("the body is not valid JSON: {err}")))?;
        let Value::Object(object) = value else {
            return Err(BodyError(format!(
                "the body must be one JSON-RPC request object, not {} (batches are not supported by `run`)",
                json_kind(&value)
            )));
        };
        let method = match object.get("method") {
            Some(Value::String(method)) => method.clone(),
            Some(_) => return Err(BodyError("the body's \"method\" must be a string".into())),
            None => return Err(BodyError("the body has no \"method\"".into())),
        };
        if let Some(version) = object.get("jsonrpc") {
            if version != "2.0" {
                return Err(BodyError(format!("the body's \"jsonrpc\" is {version}, not \"2.0\"")));
            }
        }
        let mut suffix = String::new();
        for (key, value) in &object {
            if key == "id" || key == "jsonrpc" {
                continue;
            }
            suffix.push(',');
            suffix.push_str(&Value::String(key.clone()).to_string());
            suffix.push(':');
            suffix.push_str(&value.to_string());
        }
        suffix.push('}');
        Ok(Self { prefix: b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec(), suffix: suffix.into_bytes(), method })
    }

    /// Everything after the id: `,"method":…}`.
    pub fn suffix(&self) -> &[u8] {
        &self.suffix
    }

    /// The JSON-RPC method this template calls.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The length of the body for a given id.
    pub fn body_len(&self, id: u64) -> usize {
        self.prefix.len() + itoa::Buffer::new().format(id).len() + self.suffix.len()
    }

    /// Appends the body for `id` to `out`.
    pub fn write_body(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        out.extend_from_slice(&self.suffix);
    }

    /// The body for `id` as a string (for display and tests).
    pub fn body(&self, id: u64) -> String {
        let mut out = Vec::with_capacity(self.body_len(id));
        self.write_body(id, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(body: &str, sent: u64) -> Outcome {
        classify(200, body.as_bytes(), sent, CheckMode::Scan)
    }

    #[test]
    fn results_of_every_shape_are_ok() {
        for body in [
            r#"{"jsonrpc":"2.0","id":7,"result":"0x1"}"#,
            r#"{"jsonrpc":"2.0","result":null,"id":7}"#,
            r#" { "id" : 7 , "result" : {"a":[1,2,{"b":"}"}]} , "jsonrpc" : "2.0" } "#,
            r#"{"result":[],"jsonrpc":"2.0","id":7}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":"quote \" and backslash \\"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":false}"#,
        ] {
            assert_eq!(class(body, 7), Outcome::Ok, "{body}");
        }
    }

    #[test]
    fn scan_verdict_on_a_results_structure_does_not_depend_on_its_size() {
        // Unbalanced brackets inside the result: scan mode delimits the result, it does not
        // validate it (that is --check full), and says the same for a small and a large body.
        for filler in [0usize, 2_000] {
            let padding = "x".repeat(filler);
            let body = format!(r#"{{"jsonrpc":"2.0","result":{{"pad":"{padding}","a":[1}},"id":7}}"#);
            assert_eq!(classify(200, body.as_bytes(), 7, CheckMode::Scan), Outcome::Ok, "{filler}");
            assert_eq!(
                classify(200, body.as_bytes(), 7, CheckMode::Full),
                Outcome::Invalid(InvalidKind::NotJson),
                "{filler}"
            );
            // A body cut short is not JSON at any size: its tail settles nothing.
            let cut = &body[..body.len() - 8];
            assert_eq!(
                classify(200, cut.as_bytes(), 7, CheckMode::Scan),
                Outcome::Invalid(InvalidKind::NotJson)
            );
        }
    }

    #[test]
    fn errors_wrong_ids_and_garbage_are_classified() {
        let cases = [
            (r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#, Outcome::RpcError(-32601)),
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"message":"x","code":-32700}}"#,
                Outcome::RpcError(-32700),
            ),
            (r#"{"jsonrpc":"2.0","id":8,"result":1}"#, Outcome::Invalid(InvalidKind::IdMismatch)),
            (r#"{"jsonrpc":"2.0","id":"7","result":1}"#, Outcome::Invalid(InvalidKind::IdMismatch)),
            (
                r#"{"jsonrpc":"2.0","id":8,"error":{"code":1,"message":"x"}}"#,
                Outcome::Invalid(InvalidKind::IdMismatch),
            ),
            (r#"{"jsonrpc":"1.0","id":7,"result":1}"#, Outcome::Invalid(InvalidKind::NotJsonRpc)),
            (r#"{"id":7,"result":1}"#, Outcome::Invalid(InvalidKind::NotJsonRpc)),
            (r#"{"jsonrpc":"2.0","result":1}"#, Outcome::Invalid(InvalidKind::NotJsonRpc)),
            (r#"{"jsonrpc":"2.0","id":7}"#, Outcome::Invalid(InvalidKind::NotJsonRpc)),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":1,"error":{"code":1}}"#,
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
            (r#"{"jsonrpc":"2.0","id":7,"error":"bad"}"#, Outcome::Invalid(InvalidKind::NotJsonRpc)),
            // A batch's array in answer to a single call: JSON-RPC, but not this request's shape.
            (r#"[{"jsonrpc":"2.0","id":7,"result":1}]"#, Outcome::Invalid(InvalidKind::NotJsonRpc)),
            (r#"[{"jsonrpc":"2.0","id":7,"result":1}"#, Outcome::Invalid(InvalidKind::NotJson)),
            ("<html>502 Bad Gateway</html>", Outcome::Invalid(InvalidKind::NotJson)),
            ("", Outcome::Invalid(InvalidKind::NotJson)),
            (r#"{"jsonrpc":"2.0","id":7,"result":"unterminated}"#, Outcome::Invalid(InvalidKind::NotJson)),
            (r#"{"jsonrpc":"2.0","id":7,"result":1} trailing"#, Outcome::Invalid(InvalidKind::NotJson)),
            (r#"{"jsonrpc":"2.0","id":7,"result":tru}"#, Outcome::Invalid(InvalidKind::NotJson)),
        ];
        for (body, expected) in cases {
            assert_eq!(class(body, 7), expected, "{body}");
        }
    }

    #[test]
    fn http_status_wins_over_the_body() {
        let body = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32005,"message":"rate limited"}}"#;
        assert_eq!(classify(429, body, 7, CheckMode::Scan), Outcome::HttpStatus(429));
        assert_eq!(classify(503, b"", 7, CheckMode::Scan), Outcome::HttpStatus(503));
    }

    fn large_result(len: usize) -> String {
        let mut inner = String::from("{\"transactions\":[");
        while inner.len() < len {
            inner.push_str(r#"{"sig":"5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnb","logs":["a}","b]\""]},"#);
        }
        inner.push_str("{}]}");
        inner
    }

    #[test]
    fn large_results_are_read_from_the_tail() {
        let result = large_result(20_000);
        let solana_order = format!(r#"{{"jsonrpc":"2.0","result":{result},"id":42}}"#);
        assert_eq!(class(&solana_order, 42), Outcome::Ok);
        assert_eq!(class(&solana_order, 41), Outcome::Invalid(InvalidKind::IdMismatch));
        let spaced = format!("{{ \"result\" : {result} ,\n \"id\" : 42 , \"jsonrpc\" : \"2.0\" }}\n");
        assert_eq!(class(&spaced, 42), Outcome::Ok);
        let id_first = format!(r#"{{"jsonrpc":"2.0","id":42,"result":{result}}}"#);
        assert_eq!(class(&id_first, 42), Outcome::Ok);
        let string_id_after = format!(r#"{{"jsonrpc":"2.0","result":{result},"id":"42"}}"#);
        assert_eq!(class(&string_id_after, 42), Outcome::Invalid(InvalidKind::IdMismatch));
        let no_version = format!(r#"{{"result":{result},"id":42}}"#);
        assert_eq!(class(&no_version, 42), Outcome::Invalid(InvalidKind::NotJsonRpc));
        let array_result = format!(r#"{{"jsonrpc":"2.0","result":[{result}],"id":42}}"#);
        assert_eq!(class(&array_result, 42), Outcome::Ok);
    }

    #[test]
    fn tail_and_forward_scans_agree() {
        let result = large_result(2_000);
        for body in [
            format!(r#"{{"jsonrpc":"2.0","result":{result},"id":3}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{result},"extra":{{"x":1}},"id":3}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{result},"id":3,"extra":{{"x":1}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","result":{result},"id":3,"note":"a \"quoted\" ,\"id\":4"}}"#),
            format!(r#"{{"result":{result},"id":3,"jsonrpc":"2.0","error":5}}"#),
            format!(r#"{{"result":{result},"jsonrpc":"2.0"}}"#),
        ] {
            let with_tail = scan_response(body.as_bytes());
            let forward_only = scan_response_with(body.as_bytes(), usize::MAX);
            assert_eq!(with_tail, forward_only, "{body}");
        }
    }

    #[test]
    fn an_error_member_after_a_large_result_is_not_hidden_by_the_tail_scan() {
        // Found by the property test: the tail scan took the error object's closing brace for
        // the end of the result and never saw the error, so a response with both a result and
        // an error (or an error without a code) passed for a success or an id mismatch.
        let result = large_result(2_000);
        for (body, expected) in [
            (
                format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result},"error":{{"code":-32000}}}}"#),
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
            (
                format!(r#"{{"id":3,"result":{result},"error":{{"code":1}},"jsonrpc":"2.0"}}"#),
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
            (
                format!(r#"{{"jsonrpc":"2.0","id":null,"result":{result},"error":{{"code":1.5}},"x":1}}"#),
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
            (format!(r#"{{"jsonrpc":"2.0","result":{result},"extra":{{"a":1}},"id":3}}"#), Outcome::Ok),
        ] {
            assert_eq!(class(&body, 3), expected, "{body}");
            assert_eq!(scan_response(body.as_bytes()), scan_response_with(body.as_bytes(), usize::MAX));
        }
    }

    #[test]
    fn a_duplicate_id_or_version_reads_the_same_from_the_tail_as_from_the_forward_scan() {
        // Noticed in the large-body work: `"id":3` before a large result and `"id":4` between
        // it and a later container read as IdMismatch forward (the last id won) and as Ok from
        // the tail (which stops at that container and never sees the second id). Now what was
        // read when the result starts is final, and after the result the last one counts.
        for size in [2_000, 100] {
            let result = large_result(size);
            for (body, sent, expected) in [
                (format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result},"id":4,"x":{{}}}}"#), 3, Outcome::Ok),
                (format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result},"id":4}}"#), 3, Outcome::Ok),
                (
                    format!(r#"{{"jsonrpc":"2.0","id":3,"result":{result},"id":4,"x":{{}}}}"#),
                    4,
                    Outcome::Invalid(InvalidKind::IdMismatch),
                ),
                (
                    format!(r#"{{"jsonrpc":"2.0","result":{result},"id":41,"x":{{}},"id":42}}"#),
                    42,
                    Outcome::Ok,
                ),
                (
                    format!(r#"{{"jsonrpc":"2.0","result":{result},"id":41,"x":{{}},"id":42}}"#),
                    41,
                    Outcome::Invalid(InvalidKind::IdMismatch),
                ),
                (format!(r#"{{"jsonrpc":"2.0","result":{result},"id":41,"x":{{}}}}"#), 41, Outcome::Ok),
                (
                    format!(r#"{{"jsonrpc":"2.0","result":{result},"jsonrpc":"1.0","x":{{}},"id":3}}"#),
                    3,
                    Outcome::Ok,
                ),
                (
                    format!(r#"{{"jsonrpc":"1.0","result":{result},"jsonrpc":"2.0","id":3}}"#),
                    3,
                    Outcome::Invalid(InvalidKind::NotJsonRpc),
                ),
                (
                    format!(r#"{{"id":3,"result":{result},"jsonrpc":"1.0","x":{{}},"jsonrpc":"2.0"}}"#),
                    3,
                    Outcome::Ok,
                ),
                (
                    r#"{"id":3,"jsonrpc":"2.0","id":4,"result":1}"#.to_string(),
                    3,
                    Outcome::Invalid(InvalidKind::IdMismatch),
                ),
                (
                    format!(r#"{{"jsonrpc":"2.0","result":1,"id":3,"result":{result},"id":4,"x":{{}}}}"#),
                    4,
                    Outcome::Ok,
                ),
            ] {
                assert_eq!(class(&body, sent), expected, "{body}");
                assert_eq!(
                    scan_response(body.as_bytes()),
                    scan_response_with(body.as_bytes(), usize::MAX),
                    "{body}"
                );
                assert_eq!(scan_response(body.as_bytes()), scan_response_with(body.as_bytes(), 0), "{body}");
            }
        }
    }

    #[test]
    fn an_error_without_a_code_before_a_large_result_is_not_forgotten_by_the_tail_scan() {
        // Found by the property test: when the tail settled the response, the check that an
        // `error` member carries an integer code was skipped.
        let result = large_result(2_000);
        for body in [
            format!(r#"{{"jsonrpc":"2.0","error":{{"code":"-32000"}},"id":null,"result":{result}}}"#),
            format!(r#"{{"error":"bad","result":{result},"id":3,"jsonrpc":"2.0"}}"#),
        ] {
            assert_eq!(class(&body, 3), Outcome::Invalid(InvalidKind::NotJsonRpc), "{body}");
            assert_eq!(scan_response(body.as_bytes()), scan_response_with(body.as_bytes(), usize::MAX));
        }
    }

    #[test]
    fn an_error_key_inside_a_large_result_is_told_apart_from_an_error_member_after_it() {
        // The search that guards the tail scan looks for the bytes `"error"` wherever they are;
        // inside the result they only cost the forward skip, after it they are an error member.
        let result = large_result(2_000);
        let inner = &result[..result.len() - 2];
        for (body, expected) in [
            // Inside a string of the result, and as a key and a value inside it.
            (format!(r#"{{"jsonrpc":"2.0","result":{inner},{{"note":"an \"error\" here"}}]}},"id":3}}"#), Outcome::Ok),
            (format!(r#"{{"jsonrpc":"2.0","result":{inner},{{"error":{{"code":1}}}}]}},"id":3}}"#), Outcome::Ok),
            (format!(r#"{{"jsonrpc":"2.0","result":{inner},"error"]}},"id":3}}"#), Outcome::Ok),
            // After the result: spaced out, followed by another container, or before it.
            (
                format!("{{\"jsonrpc\":\"2.0\",\"result\":{result} ,\n  \"error\" :\n {{\"code\":-32000}},\"id\":3}}"),
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
            (
                format!(r#"{{"jsonrpc":"2.0","result":{result},"error":{{"code":-32000}},"more":[1],"id":3}}"#),
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
            (
                format!(r#"{{"jsonrpc":"2.0","error":{{"code":-32000}},"result":{result},"id":3}}"#),
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
        ] {
            assert_eq!(class(&body, 3), expected, "{body}");
            assert_eq!(scan_response(body.as_bytes()), scan_response_with(body.as_bytes(), usize::MAX), "{body}");
        }
    }

    #[test]
    fn the_error_key_search_finds_the_key_at_every_offset_whatever_bytes_it_tests_first() {
        // The searcher tests two of the key's bytes first (chosen by JSON's byte ranks); every
        // placement, in text made of the key's own bytes, must still be found, and near misses not.
        let filler = r#""erro" "rror" r"o "e"r"o"r" {"x":"0xdeadbeef"},"#.repeat(8);
        for at in 0..filler.len() {
            let mut text = filler.clone().into_bytes();
            assert_eq!(ERROR_KEY.find(&text), None);
            text.splice(at..at, br#""error""#.iter().copied());
            let expected = text.windows(7).position(|window| window == br#""error""#);
            assert_eq!(ERROR_KEY.find(&text), expected, "{at}");
        }
    }

    #[test]
    fn a_response_opening_with_the_version_reads_as_it_does_in_any_other_order() {
        for (body, expected) in [
            (r#"{"jsonrpc":"2.0","id":7,"result":"0x1"}"#, Outcome::Ok),
            (r#"{"jsonrpc":"2.0","id":7}"#, Outcome::Invalid(InvalidKind::NotJsonRpc)),
            (
                r#"{"jsonrpc":"2.0","jsonrpc":"1.0","id":7,"result":1}"#,
                Outcome::Invalid(InvalidKind::NotJsonRpc),
            ),
            (r#"{"jsonrpc":"2.0",}"#, Outcome::Invalid(InvalidKind::NotJson)),
            (r#"{"jsonrpc":"2.0","#, Outcome::Invalid(InvalidKind::NotJson)),
            (r#"{"jsonrpc":"2.0", "id":7,"result":1} x"#, Outcome::Invalid(InvalidKind::NotJson)),
            (r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000}}"#, Outcome::RpcError(-32000)),
        ] {
            assert_eq!(class(body, 7), expected, "{body}");
            // The same members with a space before the first key take the general path.
            let spaced = body.replacen('{', "{ ", 1);
            assert_eq!(class(&spaced, 7), expected, "{spaced}");
        }
    }

    #[test]
    fn full_check_catches_what_the_scan_skips() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,,2]}}"#;
        assert_eq!(classify(200, body, 1, CheckMode::Scan), Outcome::Ok);
        assert_eq!(classify(200, body, 1, CheckMode::Full), Outcome::Invalid(InvalidKind::NotJson));
    }

    #[test]
    fn full_check_rejects_invalid_utf8_inside_strings() {
        // serde_json's IgnoredAny accepts these: the full check used to let them through.
        for body in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xc3\x28\"}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"\xff\":1}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xed\xa0\x80\"}",
        ] {
            assert_eq!(classify(200, body, 1, CheckMode::Full), Outcome::Invalid(InvalidKind::NotJson));
            // The scan does not look inside the result.
            assert_eq!(classify(200, body, 1, CheckMode::Scan), Outcome::Ok);
        }
        let fine = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"h\u{e9}llo \u{1f600}\"}";
        assert_eq!(classify(200, fine.as_bytes(), 1, CheckMode::Full), Outcome::Ok);
    }

    #[test]
    fn templates_place_a_fresh_id() {
        let params = serde_json::json!(["4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ"]);
        let template = RequestTemplate::from_method("getBalance", Some(&params)).unwrap();
        let body = template.body(12);
        assert_eq!(
            body,
            r#"{"jsonrpc":"2.0","id":12,"method":"getBalance","params":["4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ"]}"#
        );
        assert_eq!(template.body_len(12), body.len());
        let from_body =
            RequestTemplate::from_body(r#"{"jsonrpc": "2.0","id": 1,"method": "getSlot"}"#).unwrap();
        assert_eq!(from_body.body(99), r#"{"jsonrpc":"2.0","id":99,"method":"getSlot"}"#);
        assert_eq!(from_body.method(), "getSlot");
    }

    #[test]
    fn bad_bodies_say_what_is_wrong() {
        let cases = [
            ("{", "not valid JSON"),
            ("[]", "batches are not supported"),
            (r#"{"id":1}"#, "no \"method\""),
            (r#"{"method":5}"#, "must be a string"),
            (r#"{"jsonrpc":"1.0","method":"x"}"#, "not \"2.0\""),
        ];
        for (body, message) in cases {
            let err = RequestTemplate::from_body(body).unwrap_err();
            assert!(err.0.contains(message), "{body}: {err}");
        }
        let err = RequestTemplate::from_method("x", Some(&serde_json::json!(5))).unwrap_err();
        assert!(err.0.contains("params must be"), "{err}");
    }

    #[test]
    fn error_messages_are_extracted_on_the_cold_path() {
        let body = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid param: bad"}}"#;
        assert_eq!(error_message(body).as_deref(), Some("Invalid param: bad"));
        assert_eq!(error_message(b"nope"), None);
    }
}

#[cfg(test)]
mod proptests {
    //! The classifier against a reference built on serde_json, on generated JSON-RPC-shaped
    //! responses: ids of every kind, result and/or error, any key order, any whitespace, and
    //! results large enough for the tail scan.

    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// What a response is made of, before rendering.
    #[derive(Debug, Clone)]
    struct Shape {
        version: Option<Value>,
        id: Option<Value>,
        result: Option<Value>,
        error: Option<Value>,
        extras: Vec<(String, Value)>,
        /// Where each member goes, as sort keys.
        order: Vec<u8>,
        /// Whitespace between tokens, cycled through.
        spaces: Vec<&'static str>,
        /// Pretty-print containers.
        pretty: bool,
    }

    const SENT: u64 = 4_242;

    fn tricky_string() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{0,12}",
            Just(r#"quote " and backslash \ "#.to_string()),
            Just(r#"},"id":1,"jsonrpc":"2.0"}"#.to_string()),
            Just("\\".to_string()),
            Just("ends with backslash \\".to_string()),
            Just("]} ,: \"error\"".to_string()),
            Just("é ü 😀 \u{7f} \u{1} \n \t".to_string()),
            any::<String>(),
        ]
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            (-1e9f64..1e9).prop_map(|f| json!(f)),
            tricky_string().prop_map(Value::String),
        ]
    }

    fn nested() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\{}]{0,6}", inner), 0..8)
                    .prop_map(|members| Value::Object(members.into_iter().collect())),
            ]
        })
    }

    /// A result well over the tail-scan threshold: many nested items.
    fn big() -> impl Strategy<Value = Value> {
        (prop::collection::vec(nested(), 20..60), any::<bool>()).prop_map(|(items, as_object)| {
            let mut items = items;
            items.push(json!({"padding": "x".repeat(600)}));
            if as_object {
                Value::Object(items.into_iter().enumerate().map(|(i, v)| (format!("k{i}"), v)).collect())
            } else {
                Value::Array(items)
            }
        })
    }

    fn id() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            3 => Just(Some(json!(SENT))),
            1 => Just(None),
            1 => Just(Some(Value::Null)),
            1 => any::<u64>().prop_map(|n| Some(json!(n))),
            1 => (i64::MIN..0).prop_map(|n| Some(json!(n))),
            1 => Just(Some(json!(SENT as f64 + 0.5))),
            1 => Just(Some(json!(SENT.to_string()))),
            1 => Just(Some(json!([SENT]))),
        ]
    }

    fn version() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            6 => Just(Some(json!("2.0"))),
            1 => Just(None),
            1 => Just(Some(json!("1.0"))),
            1 => Just(Some(json!(2.0))),
            1 => Just(Some(Value::Null)),
        ]
    }

    fn error() -> impl Strategy<Value = Value> {
        prop_oneof![
            4 => (any::<i64>(), tricky_string(), prop::option::of(nested()))
                .prop_map(|(code, message, data)| {
                    let mut error = json!({"code": code, "message": message});
                    if let Some(data) = data {
                        error["data"] = data;
                    }
                    error
                }),
            1 => tricky_string().prop_map(|message| json!({"message": message})),
            1 => Just(json!({"code": 1.5, "message": "fraction"})),
            1 => Just(json!({"code": "-32000"})),
            1 => Just(json!({})),
            1 => Just(json!("a string error")),
            1 => big().prop_map(|data| json!({"data": data, "code": -32000})),
        ]
    }

    fn shape() -> impl Strategy<Value = Shape> {
        let result = prop_oneof![
            2 => Just(None),
            3 => leaf().prop_map(Some),
            3 => nested().prop_map(Some),
            4 => big().prop_map(Some),
        ];
        let error = prop_oneof![3 => Just(None), 1 => error().prop_map(Some)];
        let extras = prop::collection::vec(
            (prop_oneof![Just("extra"), Just("context"), Just("x"), Just("ids"), Just("jsonrpcx")], nested()),
            0..3,
        );
        let spaces = prop::collection::vec(
            prop_oneof![Just(""), Just(" "), Just("\n  "), Just("\t"), Just("\r\n")],
            1..6,
        );
        (version(), id(), result, error, extras, prop::collection::vec(any::<u8>(), 8), spaces, any::<bool>())
            .prop_map(|(version, id, result, error, extras, order, spaces, pretty)| {
                let mut seen = std::collections::BTreeSet::new();
                let extras = extras
                    .into_iter()
                    .filter(|(key, _)| seen.insert(*key))
                    .map(|(key, value)| (key.to_string(), value))
                    .collect();
                Shape { version, id, result, error, extras, order, spaces, pretty }
            })
    }

    impl Shape {
        fn render(&self) -> String {
            let mut members: Vec<(String, &Value)> = Vec::new();
            for (key, value) in [
                ("jsonrpc", &self.version),
                ("id", &self.id),
                ("result", &self.result),
                ("error", &self.error),
            ] {
                if let Some(value) = value {
                    members.push((key.to_string(), value));
                }
            }
            for (key, value) in &self.extras {
                members.push((key.clone(), value));
            }
            let mut keyed: Vec<(u8, usize, (String, &Value))> = members
                .into_iter()
                .enumerate()
                .map(|(i, m)| (self.order[i % self.order.len()], i, m))
                .collect();
            keyed.sort_by_key(|(key, index, _)| (*key, *index));
            let mut spaces = self.spaces.iter().cycle();
            let mut out = String::new();
            out.push_str(spaces.next().unwrap());
            out.push('{');
            for (index, (_, _, (key, value))) in keyed.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(spaces.next().unwrap());
                out.push_str(&Value::String(key.clone()).to_string());
                out.push_str(spaces.next().unwrap());
                out.push(':');
                out.push_str(spaces.next().unwrap());
                let text = if self.pretty {
                    serde_json::to_string_pretty(value).unwrap()
                } else {
                    serde_json::to_string(value).unwrap()
                };
                out.push_str(&text);
                out.push_str(spaces.next().unwrap());
            }
            out.push('}');
            out.push_str(spaces.next().unwrap());
            out
        }
    }

    /// The classifier's rules, applied to a full serde_json parse.
    fn reference(status: u16, body: &[u8], sent: u64) -> Outcome {
        if !(200..300).contains(&status) {
            return Outcome::HttpStatus(status);
        }
        let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) else {
            return Outcome::Invalid(InvalidKind::NotJson);
        };
        let code = match object.get("error") {
            None => None,
            Some(Value::Object(error)) => match error.get("code").and_then(Value::as_i64) {
                Some(code) => Some(code),
                None => return Outcome::Invalid(InvalidKind::NotJsonRpc),
            },
            Some(_) => return Outcome::Invalid(InvalidKind::NotJsonRpc),
        };
        if object.get("jsonrpc") != Some(&json!("2.0")) {
            return Outcome::Invalid(InvalidKind::NotJsonRpc);
        }
        let id = object.get("id");
        let id_matches = id.and_then(Value::as_u64) == Some(sent) && id.is_some_and(|id| !id.is_f64());
        match (object.contains_key("result"), code) {
            (true, None) => match id {
                None => Outcome::Invalid(InvalidKind::NotJsonRpc),
                Some(_) if id_matches => Outcome::Ok,
                Some(_) => Outcome::Invalid(InvalidKind::IdMismatch),
            },
            (false, Some(code)) => match id {
                None => Outcome::Invalid(InvalidKind::NotJsonRpc),
                Some(Value::Null) => Outcome::RpcError(code),
                Some(_) if id_matches => Outcome::RpcError(code),
                Some(_) => Outcome::Invalid(InvalidKind::IdMismatch),
            },
            _ => Outcome::Invalid(InvalidKind::NotJsonRpc),
        }
    }

    /// 256 cases per property; `RPCBENCH_PROPTEST_CASES` asks for more in a longer hunt.
    fn cases() -> u32 {
        std::env::var("RPCBENCH_PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256)
    }

    /// Inserts, replaces or deletes one byte.
    fn mutate(body: &[u8], at: usize, byte: u8, how: u8) -> Vec<u8> {
        let mut out = body.to_vec();
        let at = if out.is_empty() { 0 } else { at % out.len() };
        match how % 3 {
            0 => out.insert(at, byte),
            1 if !out.is_empty() => out[at] = byte,
            _ if !out.is_empty() => {
                out.remove(at);
            }
            _ => out.push(byte),
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        #[test]
        fn the_classifier_never_panics_on_arbitrary_bytes(
            body in prop::collection::vec(any::<u8>(), 0..2048),
            status in 100u16..600,
            sent in any::<u64>(),
            threshold in 0usize..64,
        ) {
            let _ = classify(status, &body, sent, CheckMode::Scan);
            let _ = classify(status, &body, sent, CheckMode::Full);
            let _ = scan_response(&body);
            let _ = scan_response_with(&body, threshold);
            let _ = error_message(&body);
        }

        #[test]
        fn the_scan_agrees_with_serde_json_on_valid_responses(shape in shape(), status in prop_oneof![9 => Just(200u16), 1 => Just(429u16)]) {
            let body = shape.render();
            let expected = reference(status, body.as_bytes(), SENT);
            prop_assert_eq!(classify(status, body.as_bytes(), SENT, CheckMode::Scan), expected, "scan: {:?}", body);
            prop_assert_eq!(classify(status, body.as_bytes(), SENT, CheckMode::Full), expected, "full: {:?}", body);
            // The tail scan and the forward scan see the same response.
            prop_assert_eq!(scan_response(body.as_bytes()), scan_response_with(body.as_bytes(), usize::MAX), "{}", body);
        }

        #[test]
        fn broken_responses_never_panic_and_the_full_check_rejects_what_is_not_json(
            shape in shape(),
            at in any::<usize>(),
            byte in any::<u8>(),
            how in any::<u8>(),
            threshold in 0usize..64,
        ) {
            let body = mutate(shape.render().as_bytes(), at, byte, how);
            let scanned = classify(200, &body, SENT, CheckMode::Scan);
            let full = classify(200, &body, SENT, CheckMode::Full);
            let _ = scan_response_with(&body, threshold);
            // A number too large for an f64 is still JSON (its range is up to the reader).
            let not_json = serde_json::from_slice::<Value>(&body)
                .is_err_and(|err| !err.to_string().contains("number out of range"));
            if not_json {
                prop_assert_eq!(full, Outcome::Invalid(InvalidKind::NotJson), "{}", String::from_utf8_lossy(&body));
            } else if full != Outcome::Invalid(InvalidKind::NotJson) {
                // Still JSON: the full check adds nothing the scan did not see.
                prop_assert_eq!(full, scanned, "{}", String::from_utf8_lossy(&body));
            }
        }

        #[test]
        fn templates_from_any_body_never_panic(body in prop_oneof![
            any::<String>(),
            nested().prop_map(|value| value.to_string()),
            (nested(), tricky_string()).prop_map(|(params, method)| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()),
        ], id in any::<u64>()) {
            if let Ok(template) = RequestTemplate::from_body(&body) {
                // The body it builds is one JSON object carrying the id and the method.
                let built = template.body(id);
                prop_assert_eq!(built.len(), template.body_len(id));
                let value: Value = serde_json::from_str(&built).unwrap();
                prop_assert_eq!(&value["id"], &json!(id));
                prop_assert_eq!(&value["jsonrpc"], &json!("2.0"));
                prop_assert_eq!(value["method"].as_str(), Some(template.method()));
            }
        }

        #[test]
        fn templates_from_any_method_and_params_build_valid_json(method in any::<String>(), params in prop::option::of(nested()), id in any::<u64>()) {
            if let Ok(template) = RequestTemplate::from_method(&method, params.as_ref()) {
                let value: Value = serde_json::from_str(&template.body(id)).unwrap();
                prop_assert_eq!(&value["id"], &json!(id));
                prop_assert_eq!(value["method"].as_str(), Some(method.as_str()));
            }
        }
    }
}
