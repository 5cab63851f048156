//! Keeps secrets out of every report, results file, log and error message, in two ways.
//!
//! - What the user typed is shown with its secret parts masked: a URL's user name and password,
//!   every query value, the path segments after a provider-style prefix (`/v3/KEY`,
//!   `/v1/lb/ID`, `/key/KEY`) or that look like generated keys, and the value of every request
//!   header that is not known to be harmless ([`url`], [`text`], [`header_value`]).
//! - Text a server sent back may quote those secrets (a JSON-RPC error message repeating the
//!   Authorization header or the key in the URL). [`Secrets`] holds every secret string a run
//!   knows, from its URL, its headers and the Basic credentials of the URL, and scrubs them out
//!   of such text. Scrubbing happens when a report or a results file is made (and on the
//!   errors of one-off calls), never per request.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use serde_json::Value;

use crate::outcome::OutcomeCounts;

/// Replacement text for a secret.
pub(crate) const MASK: &str = "***";

/// Words that make a name secret: a query parameter, a `name=value` word, or a path segment
/// after which the rest of the path is secret (`/key/…`, `/token/…`). Compared
/// case-insensitively with `-` and `_` ignored, anywhere in the name: `api_key`, `dkey`,
/// `x-access-token`, `jwt`, `sig`, `password`, `sessionId` are all secret names.
const SECRET_WORDS: [&str; 11] =
    ["key", "token", "auth", "secret", "pass", "pwd", "sig", "jwt", "session", "credential", "cookie"];

/// Request headers whose values are not secret (lowercase). Every other header's value is
/// treated as a secret: `X-JWT`, `X-Pass`, `X-Session` and names nobody has thought of yet.
const HARMLESS_HEADERS: [&str; 20] = [
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "connection",
    "content-encoding",
    "content-language",
    "content-type",
    "host",
    "keep-alive",
    "origin",
    "pragma",
    "referer",
    "te",
    "traceparent",
    "tracestate",
    "user-agent",
    "x-correlation-id",
    "x-request-id",
];

/// Authentication schemes that open an Authorization value (`Bearer TOKEN`): the scheme is not
/// the secret, the rest is.
const AUTH_SCHEMES: [&str; 6] = ["basic", "bearer", "digest", "token", "apikey", "negotiate"];

/// Whether a word opens an Authorization value as its scheme (`Bearer`), case-insensitively.
pub(crate) fn is_auth_scheme(word: &str) -> bool {
    AUTH_SCHEMES.iter().any(|scheme| word.eq_ignore_ascii_case(scheme))
}

/// Secrets shorter than this are not scrubbed out of server text: a query value such as `1`
/// would mask every digit of a message.
const SHORTEST_SCRUBBED: usize = 4;

/// Secrets shorter than this are scrubbed out of server text only where they stand as a word of
/// their own (not inside a longer word); longer ones wherever they appear.
const SCRUBBED_INSIDE_WORDS: usize = 8;

/// A URL (or text shaped like one) cut into its parts, without decoding anything.
struct UrlParts<'a> {
    scheme: Option<&'a str>,
    /// `user` or `user:password`, without the `@`.
    userinfo: Option<&'a str>,
    host: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

impl<'a> UrlParts<'a> {
    fn split(text: &'a str) -> Self {
        let (base, fragment) = match text.split_once('#') {
            Some((base, fragment)) => (base, Some(fragment)),
            None => (text, None),
        };
        let (before_query, query) = match base.split_once('?') {
            Some((before, query)) => (before, Some(query)),
            None => (base, None),
        };
        let (scheme, rest) = match before_query.split_once("://") {
            Some((scheme, rest)) => (Some(scheme), rest),
            None => (None, before_query),
        };
        let (authority, path) = match rest.find('/') {
            Some(index) if scheme.is_some() => (&rest[..index], &rest[index..]),
            _ if scheme.is_some() => (rest, ""),
            _ => ("", rest),
        };
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => (Some(userinfo), host),
            None => (None, authority),
        };
        Self { scheme, userinfo, host, path, query, fragment }
    }
}

/// The segments of a path, each with whether it is secret: every segment after a
/// provider-style prefix (a version such as `v3`, or a secret name such as `key`), and any
/// segment that looks like a generated key.
///
/// A segment is judged on its percent-decoded form too: `/%55PSTREAMKEY…` is the key
/// `UPSTREAMKEY…` to the server, and `/%763/` its `/v3/`.
fn path_segments(path: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut after_prefix = false;
    path.split('/').map(move |segment| {
        let decoded = decoded(segment);
        let secret =
            !segment.is_empty() && (after_prefix || looks_like_key(segment) || looks_like_key(&decoded));
        if is_provider_prefix(segment) || is_provider_prefix(&decoded) {
            after_prefix = true;
        }
        (segment, secret)
    })
}

/// The percent-decoded form of text, borrowed when there is nothing to decode.
fn decoded(text: &str) -> Cow<'_, str> {
    if text.contains('%') {
        Cow::Owned(String::from_utf8_lossy(&percent_decode(text)).into_owned())
    } else {
        Cow::Borrowed(text)
    }
}

/// `v1`, `v2`, `v3`… (Infura `/v3/KEY`, Alchemy `/v2/KEY`, Pocket `/v1/lb/ID`), or a segment
/// that names a secret (`/key/KEY`, `/token/TOKEN`).
fn is_provider_prefix(segment: &str) -> bool {
    let version = segment.len() >= 2
        && segment.as_bytes()[0].eq_ignore_ascii_case(&b'v')
        && segment.bytes().skip(1).all(|b| b.is_ascii_digit());
    version || is_secret_name(segment)
}

/// The URL with secrets replaced by `***`: the user name and password, every query value, and
/// the secret path segments. Works on text that is not a valid URL too.
pub fn url(text: &str) -> String {
    let parts = UrlParts::split(text);
    let mut out = String::with_capacity(text.len());
    if let Some(scheme) = parts.scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    if let Some(userinfo) = parts.userinfo {
        out.push_str(MASK);
        if userinfo.contains(':') {
            out.push(':');
            out.push_str(MASK);
        }
        out.push('@');
    }
    out.push_str(parts.host);
    for (index, (segment, secret)) in path_segments(parts.path).enumerate() {
        if index > 0 {
            out.push('/');
        }
        out.push_str(if secret { MASK } else { segment });
    }
    if let Some(query) = parts.query {
        out.push('?');
        for (index, pair) in query.split('&').enumerate() {
            if index > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((name, value)) => {
                    out.push_str(name);
                    out.push('=');
                    if !value.is_empty() {
                        out.push_str(MASK);
                    }
                }
                None if pair.is_empty() => {}
                None => out.push_str(MASK),
            }
        }
    }
    if let Some(fragment) = parts.fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Free text that may quote what the user typed (a command-line parser's error): every word
/// that is a URL is redacted as one, a `name=value` word with a secret name has its value
/// masked, and a word that looks like a generated key is masked.
pub fn text(text: &str) -> String {
    let is_delimiter = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>');
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        // Punctuation that ends a sentence is not part of the word.
        let trimmed = word.trim_end_matches([',', '.', ';', ':', ')', '!']);
        // A path (a request target in a log line) is judged segment by segment, as a URL's.
        if word.contains("://") || word.contains('?') || word.contains('@') || word.starts_with('/') {
            out.push_str(&url(word));
        } else if looks_like_key(trimmed) || looks_like_key(&decoded(trimmed)) {
            out.push_str(MASK);
            out.push_str(&word[trimmed.len()..]);
        } else {
            match word.split_once('=') {
                Some((name, _)) if is_secret_name(name) || is_secret_name(&decoded(name)) => {
                    out.push_str(name);
                    out.push('=');
                    out.push_str(MASK);
                }
                _ => out.push_str(word),
            }
        }
        word.clear();
    };
    for c in text.chars() {
        if is_delimiter(c) {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Whether a name (query parameter, `name=value` word, path segment) names a secret.
fn is_secret_name(name: &str) -> bool {
    let normalized: String =
        name.chars().filter(|c| *c != '-' && *c != '_').flat_map(char::to_lowercase).collect();
    SECRET_WORDS.iter().any(|secret| normalized.contains(secret))
}

/// A path segment or value that looks like a generated key: at least 16 key characters
/// (letters, digits, `-`, `_`) that mix letters with digits (Infura, QuickNode, a UUID) or
/// upper with lower case in about equal measure (an Alchemy key of letters only; a method name
/// such as `getTransactionCount` has a few capitals, not a quarter of its letters).
fn looks_like_key(segment: &str) -> bool {
    let bytes = segment.as_bytes();
    if bytes.len() < 16 || !bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_') {
        return false;
    }
    let digits = bytes.iter().any(u8::is_ascii_digit);
    let letters = bytes.iter().any(u8::is_ascii_alphabetic);
    let upper = bytes.iter().filter(|b| b.is_ascii_uppercase()).count();
    let lower = bytes.iter().filter(|b| b.is_ascii_lowercase()).count();
    (digits && letters) || (upper * 4 >= bytes.len() && lower * 4 >= bytes.len())
}

/// Whether a header's value is a secret: unless the header is known to be harmless
/// (`Content-Type`, `Accept`, `User-Agent`…), it is.
pub(crate) fn is_secret_header(name: &str) -> bool {
    let lower = name.trim().to_ascii_lowercase();
    !HARMLESS_HEADERS.contains(&lower.as_str())
}

/// A header's value as it may be shown.
pub(crate) fn header_value<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret_header(name) {
        MASK
    } else {
        value
    }
}

/// The bytes of percent-encoded text (`%41` is `A`); a `%` not followed by two hex digits is
/// kept as it is.
pub(crate) fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (
            bytes[index],
            bytes.get(index + 1).copied().and_then(hex),
            bytes.get(index + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                index += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    out
}

/// Every secret string one run knows (the key in its URL, its query values, its user name and
/// password, the values of its secret headers and their parts), to be scrubbed out of text a
/// server sent back. Its `Debug` form shows how many, never which.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Longest first, so that a secret containing another is replaced whole.
    strings: Vec<String>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} strings)", self.strings.len())
    }
}

impl Secrets {
    /// No secrets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one secret, and its percent-decoded form when that differs. Secrets shorter than
    /// four characters are left out.
    pub fn add(&mut self, secret: &str) {
        self.insert(secret);
        if secret.contains('%') {
            let decoded = percent_decode(secret);
            self.insert(&String::from_utf8_lossy(&decoded));
        }
    }

    fn insert(&mut self, secret: &str) {
        if secret.len() < SHORTEST_SCRUBBED || secret == MASK || self.strings.iter().any(|s| s == secret) {
            return;
        }
        self.strings.push(secret.to_string());
        self.strings.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    }

    /// Adds the secrets of a URL: user name and password, secret path segments, every query
    /// value.
    pub fn add_url(&mut self, url: &str) {
        let parts = UrlParts::split(url);
        if let Some(userinfo) = parts.userinfo {
            self.add(userinfo);
            if let Some((user, password)) = userinfo.split_once(':') {
                self.add(user);
                self.add(password);
            }
        }
        for (segment, secret) in path_segments(parts.path) {
            if secret {
                self.add(segment);
            }
        }
        for pair in parts.query.into_iter().flat_map(|query| query.split('&')) {
            match pair.split_once('=') {
                Some((_, value)) => self.add(value),
                None => self.add(pair),
            }
        }
    }

    /// Adds the value of a request header, unless the header is harmless: the whole value and
    /// each of its words but an authentication scheme (`Bearer`), the value of each
    /// `name=value` word (a cookie), and the decoded user name and password of `Basic`
    /// credentials.
    pub fn add_header(&mut self, name: &str, value: &str) {
        if !is_secret_header(name) {
            return;
        }
        let value = value.trim();
        self.add(value);
        let words: Vec<&str> = value
            .split(|c: char| c.is_whitespace() || c == ',' || c == ';')
            .filter(|w| !w.is_empty())
            .collect();
        for (index, word) in words.iter().enumerate() {
            if index == 0 && words.len() > 1 && is_auth_scheme(word) {
                continue;
            }
            self.add(word);
            if let Some((_, part)) = word.split_once('=') {
                self.add(part);
            }
        }
        if let [scheme, encoded] = words.as_slice() {
            if scheme.eq_ignore_ascii_case("basic") {
                if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded) {
                    let decoded = String::from_utf8_lossy(&decoded).into_owned();
                    self.add(&decoded);
                    if let Some((user, password)) = decoded.split_once(':') {
                        self.add(user);
                        self.add(password);
                    }
                }
            }
        }
    }

    /// Adds every secret of another set (the secrets of several targets, for text that may
    /// come from any of them).
    pub fn extend(&mut self, other: &Secrets) {
        for secret in &other.strings {
            self.insert(secret);
        }
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// The text with every secret replaced by `***`. A secret shorter than eight characters is
    /// replaced only where it stands as a word of its own. Text without secrets comes back
    /// borrowed.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.strings {
            if !out.contains(secret.as_str()) {
                continue;
            }
            let replaced = if secret.len() >= SCRUBBED_INSIDE_WORDS {
                out.replace(secret.as_str(), MASK)
            } else {
                replace_whole_words(&out, secret)
            };
            out = Cow::Owned(replaced);
        }
        out
    }

    /// Scrubs every string (and object key) of a JSON value.
    pub fn scrub_json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(text) => {
                if let Cow::Owned(scrubbed) = self.scrub(text) {
                    *text = scrubbed;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.scrub_json(item)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    self.scrub_json(&mut item);
                    map.insert(self.scrub(&key).into_owned(), item);
                }
            }
            _ => {}
        }
    }

    /// Scrubs the JSON-RPC error messages of a report's outcomes.
    pub fn scrub_outcomes(&self, outcomes: &mut OutcomeCounts) {
        if self.is_empty() {
            return;
        }
        for error in outcomes.rpc_errors.values_mut() {
            if let Some(message) = &mut error.first_message {
                if let Cow::Owned(scrubbed) = self.scrub(message) {
                    *message = scrubbed;
                }
                self.scrub_cut_tail(message);
            }
        }
    }

    /// A message cut short (ending in `…`, see `outcome::bounded_message`) may end in the
    /// first characters of a secret, which [`Secrets::scrub`] cannot recognise: such a tail
    /// (four characters or more of a secret) is masked too.
    fn scrub_cut_tail(&self, message: &mut String) {
        let Some(kept) = message.strip_suffix(crate::outcome::CUT_MARK) else { return };
        for secret in &self.strings {
            let longest = (1..secret.len())
                .rev()
                .filter(|&len| len >= 4 && secret.is_char_boundary(len))
                .find(|&len| kept.ends_with(&secret[..len]));
            if let Some(len) = longest {
                let keep = kept.len() - len;
                message.truncate(keep);
                message.push_str(MASK);
                message.push_str(crate::outcome::CUT_MARK);
                return;
            }
        }
    }
}

/// `text` with each occurrence of `word` that is not part of a longer word (no letter or digit
/// right before or after it) replaced by `***`.
fn replace_whole_words(text: &str, word: &str) -> String {
    let inside = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (index, _) in text.match_indices(word) {
        let end = index + word.len();
        if inside(text[..index].chars().next_back()) || inside(text[end..].chars().next()) {
            continue;
        }
        out.push_str(&text[copied..index]);
        out.push_str(MASK);
        copied = end;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_paths_queries_and_userinfo_are_masked() {
        let cases = [
            (
                "https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161",
                "https://mainnet.infura.io/v3/***",
            ),
            (
                "https://eth-mainnet.g.alchemy.com/v2/AbCdEf0123456789xyz_-Q",
                "https://eth-mainnet.g.alchemy.com/v2/***",
            ),
            (
                "https://rpc.example.com/?apikey=s3cr3t&chain=1",
                "https://rpc.example.com/?apikey=***&chain=***",
            ),
            ("https://rpc.example.com/?api-key=abc", "https://rpc.example.com/?api-key=***"),
            (
                "https://rpc.example.com/?api_key=abc&x-access-token=t",
                "https://rpc.example.com/?api_key=***&x-access-token=***",
            ),
            ("https://user:hunter2@rpc.example.com/", "https://***:***@rpc.example.com/"),
            ("https://user@rpc.example.com/", "https://***@rpc.example.com/"),
            ("http://127.0.0.1:8899/", "http://127.0.0.1:8899/"),
            ("http://127.0.0.1:8545/rpc/getBalance", "http://127.0.0.1:8545/rpc/getBalance"),
            ("not a url /v3/9aa3d95b3bc440fa88ea12eaa4456161", "not a url /v3/***"),
        ];
        for (input, expected) in cases {
            assert_eq!(url(input), expected, "{input}");
        }
    }

    #[test]
    fn a_percent_encoded_key_is_masked_as_its_decoded_form_would_be() {
        // `%55` is `U`: the server sees `/UPSTREAMKEY0123456789abcdef`, a key.
        let cases = [
            ("https://rpc.example.com/%55PSTREAMKEY0123456789abcdef", "https://rpc.example.com/***"),
            ("https://rpc.example.com/%55%50STREAMKEY%30123456789", "https://rpc.example.com/***"),
            ("https://rpc.example.com/%763/shortkey", "https://rpc.example.com/%763/***"),
            ("https://rpc.example.com/%6Bey/abc", "https://rpc.example.com/%6Bey/***"),
            ("http://127.0.0.1:8545/rpc%2Fx", "http://127.0.0.1:8545/rpc%2Fx"),
        ];
        for (input, expected) in cases {
            assert_eq!(url(input), expected, "{input}");
        }
        assert_eq!(text("upstream /%55PSTREAMKEY0123456789abcdef failed"), "upstream /*** failed");
        assert_eq!(text("key %55PSTREAMKEY0123456789abcdef."), "key ***.");
        assert_eq!(text("api%5Fkey=hunter2"), "api%5Fkey=***");
        assert_eq!(text("saved to /tmp/run-1.json"), "saved to /tmp/run-1.json");
        let mut secrets = Secrets::new();
        secrets.add_url("https://rpc.example.com/%55PSTREAMKEY0123456789abcdef");
        assert_eq!(secrets.scrub("bad key UPSTREAMKEY0123456789abcdef"), "bad key ***");
        assert_eq!(secrets.scrub("bad key %55PSTREAMKEY0123456789abcdef"), "bad key ***");
    }

    #[test]
    fn urls_and_keys_in_free_text_are_masked() {
        let message =
            "error: unexpected argument 'https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161' \
                       found\n  tip: apikey=hunter2 and 0123456789abcdef0123456789abcdef, not 'getSlot'";
        let shown = text(message);
        assert_eq!(
            shown,
            "error: unexpected argument 'https://mainnet.infura.io/v3/***' found\n  tip: apikey=*** and ***, \
             not 'getSlot'"
        );
        assert_eq!(text("plain words stay: --connections 5"), "plain words stay: --connections 5");
    }

    #[test]
    fn auth_headers_are_masked() {
        assert_eq!(header_value("Authorization", "Bearer abc"), MASK);
        assert_eq!(header_value("x-api-key", "abc"), MASK);
        assert_eq!(header_value("X-Auth-Token", "abc"), MASK);
        assert_eq!(header_value("Content-Type", "application/json"), "application/json");
    }

    #[test]
    fn secrets_of_every_common_shape_are_masked_in_urls() {
        let cases = [
            // A key of letters only, and a short one, after a provider-style prefix.
            (
                "https://eth-mainnet.g.alchemy.com/v2/AbCdEfGhIjKlMnOpQr",
                "https://eth-mainnet.g.alchemy.com/v2/***",
            ),
            ("https://rpc.example.com/v3/shortkey", "https://rpc.example.com/v3/***"),
            ("https://eth.example.network/v1/lb/0a1b2c", "https://eth.example.network/v1/***/***"),
            ("https://rpc.example.com/key/abc/", "https://rpc.example.com/key/***/"),
            ("https://rpc.example.com/token/abc", "https://rpc.example.com/token/***"),
            // A letters-only key without a prefix: upper and lower case mixed like random text.
            ("https://rpc.example.com/AbCdEfGhIjKlMnOpQrSt", "https://rpc.example.com/***"),
            // Every query value, whatever its name; a bare item too.
            (
                "https://rpc.example.com/?jwt=eyJhbGciOi.x.y&sig=abcd&chain=1&empty=",
                "https://rpc.example.com/?jwt=***&sig=***&chain=***&empty=",
            ),
            ("https://rpc.example.com/?abcdef", "https://rpc.example.com/?***"),
            // What is not a key stays.
            (
                "http://127.0.0.1:8545/rpc/getTransactionCount",
                "http://127.0.0.1:8545/rpc/getTransactionCount",
            ),
            (
                "http://127.0.0.1:8545/eth_getTransactionByBlockNumberAndIndex",
                "http://127.0.0.1:8545/eth_getTransactionByBlockNumberAndIndex",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(url(input), expected, "{input}");
        }
    }

    #[test]
    fn secrets_in_every_header_but_the_harmless_ones_are_masked() {
        for name in ["X-JWT", "X-Pass", "X-Session", "x-goog-api-key", "Cookie", "X-Anything"] {
            assert_eq!(header_value(name, "value"), MASK, "{name}");
        }
        for name in ["Content-Type", "accept", "User-Agent", "Accept-Encoding"] {
            assert_eq!(header_value(name, "value"), "value", "{name}");
        }
    }

    #[test]
    fn secrets_a_run_knows_are_scrubbed_out_of_server_text() {
        let mut secrets = Secrets::new();
        secrets.add_url("https://ux%40y:p%2Fass@rpc.example.com/v2/AlchemyKey?dkey=drpc-key-1&chain=1");
        secrets.add_header("Authorization", "Bearer eyJ.token.sig");
        secrets.add_header("X-Session", "sess=cookie-value; theme=dark");
        secrets.add_header("Content-Type", "application/json");
        let message = "bad auth 'Bearer eyJ.token.sig' for AlchemyKey (dkey=drpc-key-1), user ux@y, \
                       password p/ass, session cookie-value, chain 1, type application/json";
        assert_eq!(
            secrets.scrub(message),
            "bad auth '***' for *** (dkey=***), user ***, password ***, session ***, chain 1, \
             type application/json"
        );
        assert_eq!(secrets.scrub("the token eyJ.token.sig alone"), "the token *** alone");
        // A short secret is masked as a word, not inside other words.
        let mut short = Secrets::new();
        short.add("dark");
        assert_eq!(short.scrub("dark, darkness"), "***, darkness");
        assert!(matches!(short.scrub("nothing here"), Cow::Borrowed(_)));
        assert_eq!(format!("{short:?}"), "Secrets(1 strings)");
    }

    #[test]
    fn secrets_of_basic_credentials_are_scrubbed_decoded_and_encoded() {
        let mut secrets = Secrets::new();
        // "alice:s3cret" in base64.
        secrets.add_header("Authorization", "Basic YWxpY2U6czNjcmV0");
        let scrubbed = secrets.scrub("got YWxpY2U6czNjcmV0 = alice:s3cret, user alice");
        assert_eq!(scrubbed, "got *** = ***, user ***");
        let mut value = serde_json::json!({"alice": ["s3cret", 1], "ok": "fine"});
        secrets.scrub_json(&mut value);
        assert_eq!(value, serde_json::json!({"***": ["***", 1], "ok": "fine"}));
    }
}
