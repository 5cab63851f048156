//! The settings the engine and the transports share: the target URL taken apart
//! ([`Target`]), TLS options, and [`SettingError`], the error that names the setting at fault
//! (a [`Field`], which the CLI shows as a flag and a scenario as a key's place).

use std::fmt;
use std::path::PathBuf;

use crate::util::redact;

pub use crate::field::{Field, SettingError};

/// HTTP or HTTPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP/1.1.
    Http,
    /// HTTP/1.1 over TLS (rustls).
    Https,
}

/// Where requests go. Its `Debug` form shows the URL redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given (contains secrets; never print it, use [`Target::redacted`]).
    url: String,
    /// HTTP or HTTPS.
    pub scheme: Scheme,
    /// Host name or address, without brackets.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path and query sent in the request line.
    pub path_and_query: String,
    /// Value of the Host header.
    pub host_header: String,
    /// A `ws://` or `wss://` URL: JSON-RPC over WebSocket (`scheme` says whether over TLS).
    pub websocket: bool,
    /// A `grpc://` or `grpcs://` URL: a Solana Yellowstone Geyser feed (`scheme` says whether
    /// over TLS).
    pub grpc: bool,
    /// `Basic` credentials from the URL's user name and password, as an Authorization value
    /// (never printed: the `Debug` form leaves it out).
    authorization: Option<String>,
}

impl Target {
    /// Parses and checks an `http://`, `https://`, `ws://` or `wss://` URL. One without a
    /// scheme (`127.0.0.1:8545`) is refused with "add http:// or https://".
    pub fn parse(url: &str) -> Result<Self, SettingError> {
        Self::parse_suggesting(url, "http:// or https://")
    }

    /// As [`Target::parse`], for a WebSocket endpoint: a URL without a scheme is refused with
    /// "add ws:// or wss://".
    pub fn parse_websocket(url: &str) -> Result<Self, SettingError> {
        Self::parse_suggesting(url, "ws:// or wss://")
    }

    fn parse_suggesting(url: &str, schemes: &str) -> Result<Self, SettingError> {
        let setting = Field::Url;
        if let Some(message) = missing_scheme(url, schemes) {
            return Err(SettingError::new(setting, message));
        }
        let parsed = url::Url::parse(url).map_err(|err| {
            SettingError::new(setting, format!("'{}' is not a valid URL: {err}", redact::url(url)))
        })?;
        let grpc = matches!(parsed.scheme(), "grpc" | "grpcs");
        let (scheme, websocket) = match parsed.scheme() {
            "http" | "grpc" => (Scheme::Http, false),
            "https" | "grpcs" => (Scheme::Https, false),
            "ws" => (Scheme::Http, true),
            "wss" => (Scheme::Https, true),
            other => {
                return Err(SettingError::new(
                    setting,
                    format!("scheme '{other}' is not supported (use http://, https://, ws:// or wss://)"),
                ))
            }
        };
        let host = match parsed.host() {
            Some(url::Host::Domain(domain)) => domain.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(SettingError::new(setting, "the URL has no host")),
        };
        let port = match parsed.scheme() {
            "grpcs" => parsed.port().unwrap_or(443),
            _ => parsed.port_or_known_default().unwrap_or(80),
        };
        let mut path_and_query = parsed.path().to_string();
        if let Some(query) = parsed.query() {
            path_and_query.push('?');
            path_and_query.push_str(query);
        }
        let host_header = match parsed.port() {
            Some(port) => format!("{}:{port}", parsed.host_str().unwrap_or(&host)),
            None => parsed.host_str().unwrap_or(&host).to_string(),
        };
        let authorization = basic_authorization(&parsed);
        Ok(Self {
            url: url.to_string(),
            scheme,
            host,
            port,
            path_and_query,
            host_header,
            websocket,
            grpc,
            authorization,
        })
    }

    /// The Authorization value the URL's user name and password ask for (`Basic` and their
    /// percent-decoded `user:password` in base64, as curl sends it), when the URL has them.
    /// A secret: never print it.
    pub fn basic_authorization(&self) -> Option<&str> {
        self.authorization.as_deref()
    }

    /// Every secret the URL holds (user name, password and their Basic credentials, the key in
    /// the path, query values), to scrub out of what a server sends back.
    pub fn secrets(&self) -> redact::Secrets {
        let mut secrets = redact::Secrets::new();
        secrets.add_url(&self.url);
        if let Some(authorization) = &self.authorization {
            secrets.add_header("Authorization", authorization);
        }
        secrets
    }

    /// The URL with API keys and passwords replaced by `***`, safe for reports and logs.
    pub fn redacted(&self) -> String {
        redact::url(&self.url)
    }
}

/// The message for a URL given without its scheme (`127.0.0.1:8545`, `localhost:8545/path`,
/// `rpc.example.com`), which the URL parser reads as a relative URL or as a scheme named
/// `localhost`; `None` when the URL has a scheme.
fn missing_scheme(url: &str, schemes: &str) -> Option<String> {
    let text = url.trim();
    if text.contains("://") || text.is_empty() {
        return None;
    }
    // `host:port...`, `[v6]:port...` or a bare host: a host name or address, then maybe a port
    // (digits after a ':').
    let host_end = match text.strip_prefix('[') {
        Some(rest) => rest.find(']').map(|end| end + 2)?,
        None => text.find([':', '/', '?']).unwrap_or(text.len()),
    };
    let host = &text[..host_end];
    let looks_like_host = host.starts_with('[')
        || !host.is_empty()
            && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_');
    let port_ok = match text[host_end..].strip_prefix(':') {
        Some(rest) => rest.chars().next().is_some_and(|c| c.is_ascii_digit()),
        None => true,
    };
    if !(looks_like_host && port_ok) {
        return None;
    }
    let first = schemes.split(' ').next().unwrap_or("http://");
    let shown = redact::url(&format!("{first}{text}"));
    Some(format!("'{}' has no scheme: add {schemes} (for example {shown})", redact::url(text)))
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.redacted())
            .field("scheme", &self.scheme)
            .field("host", &self.host)
            .field("port", &self.port)
            .field("path_and_query", &redact::url(&self.path_and_query))
            .field("host_header", &self.host_header)
            .finish()
    }
}

/// `Basic` credentials for a URL with a user name or a password.
fn basic_authorization(parsed: &url::Url) -> Option<String> {
    use base64::Engine as _;
    if parsed.username().is_empty() && parsed.password().is_none() {
        return None;
    }
    let mut credentials = redact::percent_decode(parsed.username());
    credentials.push(b':');
    credentials.extend(redact::percent_decode(parsed.password().unwrap_or("")));
    Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials)))
}

/// What is wrong with a request header a user gave (`-H`, a scenario, a targets file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderProblem {
    /// The name is empty or has a character other than visible ASCII without ':' (not to be
    /// echoed: a name with spaces in it may be a whole `Authorization Bearer …`).
    BadName,
    /// The value has a line break (it would end the header).
    LineBreak,
    /// Content-Length or Transfer-Encoding: rpcbench frames the body itself.
    SetByRpcbench,
}

/// The one check of a user's header, shared by every place headers come from.
pub(crate) fn header_problem(name: &str, value: &str) -> Option<HeaderProblem> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
        Some(HeaderProblem::BadName)
    } else if value.bytes().any(|b| b == b'\r' || b == b'\n') {
        Some(HeaderProblem::LineBreak)
    } else if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding") {
        Some(HeaderProblem::SetByRpcbench)
    } else {
        None
    }
}

/// TLS settings for https targets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsOptions {
    /// Accept any server certificate.
    pub insecure: bool,
    /// Trust these PEM certificates in addition to the system roots.
    pub ca_file: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_without_a_scheme_says_to_add_one() {
        for url in
            ["127.0.0.1:8545", "localhost:8545", "localhost:8545/v3/KEY", "rpc.example.com", "[::1]:8545"]
        {
            let err = Target::parse(url).unwrap_err();
            assert_eq!(err.field, Field::Url);
            assert!(err.message().contains("add http:// or https://"), "{url}: {err}");
            assert!(!err.message().contains("relative URL"), "{url}: {err}");
            let err = Target::parse_websocket(url).unwrap_err();
            assert!(err.message().contains("add ws:// or wss://"), "{url}: {err}");
        }
        let err = Target::parse("localhost:8545/v3/0123456789abcdef0123456789abcdef").unwrap_err();
        assert!(!err.message().contains("0123456789abcdef0123456789abcdef"), "the key is shown: {err}");
        assert!(Target::parse("http://127.0.0.1:8545").is_ok());
        assert!(Target::parse_websocket("ws://localhost:8545/").is_ok());
        assert!(Target::parse("ftp://x/").unwrap_err().message().contains("scheme 'ftp'"));
    }
}
