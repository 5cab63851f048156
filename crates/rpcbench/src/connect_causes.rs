//! Why connections could not be opened: each failure counted by its kind (refused, timed out,
//! a certificate not trusted, another TLS failure, a refused WebSocket handshake, other) with
//! the first message of each kind kept as its example, so that "connect errors" comes with a
//! cause and a hint (`--cacert`/`--insecure`). Bounded by the number of kinds, whatever the run.

use std::fmt::Write;

/// The longest example message kept, in bytes.
const MAX_EXAMPLE: usize = 240;

/// A kind of connect failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConnectFailureKind {
    /// Nothing listens there (connection refused).
    Refused,
    /// No connection within the connect timeout.
    TimedOut,
    /// The server's certificate is not trusted (unknown issuer, expired, wrong name).
    Certificate,
    /// Another TLS failure (a handshake the server refused, no protocol in common).
    Tls,
    /// The WebSocket upgrade was refused or answered wrongly (a bad `Sec-WebSocket-Accept`).
    WebSocket,
    /// Anything else (reset, unreachable, name resolution).
    Other,
}

impl ConnectFailureKind {
    /// The kind of a connect error, by its kind and its message.
    pub fn of(err: &std::io::Error) -> Self {
        let text = err.to_string().to_ascii_lowercase();
        match err.kind() {
            std::io::ErrorKind::ConnectionRefused => return ConnectFailureKind::Refused,
            std::io::ErrorKind::TimedOut => return ConnectFailureKind::TimedOut,
            _ => {}
        }
        if text.contains("certificate") || text.contains("unknownissuer") || text.contains("notvalidforname")
        {
            ConnectFailureKind::Certificate
        } else if text.contains("websocket") || text.contains("sec-websocket") || text.contains("upgrade") {
            ConnectFailureKind::WebSocket
        } else if text.contains("tls") || text.contains("handshake") || text.contains("alert") {
            ConnectFailureKind::Tls
        } else if text.contains("timed out") {
            ConnectFailureKind::TimedOut
        } else {
            ConnectFailureKind::Other
        }
    }

    /// A name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectFailureKind::Refused => "connection refused",
            ConnectFailureKind::TimedOut => "connect timeout",
            ConnectFailureKind::Certificate => "certificate not trusted",
            ConnectFailureKind::Tls => "TLS handshake failed",
            ConnectFailureKind::WebSocket => "WebSocket handshake failed",
            ConnectFailureKind::Other => "other",
        }
    }

    /// What to try, where something helps.
    pub fn hint(self) -> Option<&'static str> {
        match self {
            ConnectFailureKind::Refused => Some("is the server listening on that port?"),
            ConnectFailureKind::TimedOut => {
                Some("raise --connect-timeout, or check the address and firewalls")
            }
            ConnectFailureKind::Certificate => Some(
                "trust the server's certificate with --cacert FILE (PEM), or skip the check with --insecure",
            ),
            ConnectFailureKind::Tls => Some("does the server speak TLS on that port (https:// vs http://)?"),
            ConnectFailureKind::WebSocket => Some("is the URL the server's WebSocket endpoint (port, path)?"),
            ConnectFailureKind::Other => None,
        }
    }
}

/// Connect failures by kind: a count and the first message of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConnectCauses {
    /// In kind order; one entry per kind seen.
    kinds: Vec<(ConnectFailureKind, u64, String)>,
}

impl ConnectCauses {
    /// Counts one failure; its message is kept if it is the first of its kind.
    pub fn note(&mut self, err: &std::io::Error) {
        let kind = ConnectFailureKind::of(err);
        match self.kinds.binary_search_by_key(&kind, |(k, _, _)| *k) {
            Ok(at) => self.kinds[at].1 += 1,
            Err(at) => self.kinds.insert(at, (kind, 1, example(&err.to_string()))),
        }
    }

    /// Adds another worker's failures (its examples only for kinds not seen here).
    pub fn merge(&mut self, other: &ConnectCauses) {
        for (kind, count, message) in &other.kinds {
            match self.kinds.binary_search_by_key(kind, |(k, _, _)| *k) {
                Ok(at) => self.kinds[at].1 += count,
                Err(at) => self.kinds.insert(at, (*kind, *count, message.clone())),
            }
        }
    }

    /// Whether no connection failed.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Each kind seen: its count and first message.
    pub fn kinds(&self) -> impl Iterator<Item = (ConnectFailureKind, u64, &str)> {
        self.kinds.iter().map(|(kind, count, message)| (*kind, *count, message.as_str()))
    }

    /// One line per kind: `connect errors, certificate not trusted (12): invalid peer
    /// certificate: UnknownIssuer; hint: ...`.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (kind, count, message) in self.kinds() {
            let _ = write!(out, "connect errors, {} ({count}): {message}", kind.as_str());
            if let Some(hint) = kind.hint() {
                let _ = write!(out, "; hint: {hint}");
            }
            out.push('\n');
        }
        out
    }
}

/// A message as an example: one line, controls escaped, keys masked, at most
/// [`MAX_EXAMPLE`] bytes.
fn example(message: &str) -> String {
    let line = crate::util::printable::one_line(message);
    let mut shown = crate::util::redact::text(&line);
    if shown.len() > MAX_EXAMPLE {
        let mut cut = MAX_EXAMPLE;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn each_kind_keeps_its_count_and_first_message_only() {
        let mut causes = ConnectCauses::default();
        for _ in 0..1000 {
            causes.note(&Error::new(ErrorKind::ConnectionRefused, "connection refused"));
        }
        causes.note(&Error::new(ErrorKind::InvalidData, "invalid peer certificate: UnknownIssuer"));
        causes.note(&Error::new(ErrorKind::InvalidData, "invalid peer certificate: Expired"));
        let mut other = ConnectCauses::default();
        other.note(&Error::other("websocket: bad Sec-WebSocket-Accept"));
        other.note(&Error::new(ErrorKind::ConnectionRefused, "refused again"));
        causes.merge(&other);
        let kinds: Vec<_> = causes.kinds().collect();
        assert_eq!(
            kinds,
            [
                (ConnectFailureKind::Refused, 1001, "connection refused"),
                (ConnectFailureKind::Certificate, 2, "invalid peer certificate: UnknownIssuer"),
                (ConnectFailureKind::WebSocket, 1, "websocket: bad Sec-WebSocket-Accept"),
            ]
        );
        let text = causes.describe();
        assert!(text
            .contains("certificate not trusted (2): invalid peer certificate: UnknownIssuer; hint: trust"));
        assert!(text.contains("--cacert FILE") && text.contains("--insecure"), "{text}");
    }

    #[test]
    fn an_example_is_one_bounded_line_without_secrets() {
        let mut causes = ConnectCauses::default();
        let long =
            format!("handshake failed\nforged line https://x/v3/0123456789abcdef0123 {}", "x".repeat(1000));
        causes.note(&Error::other(long));
        let (_, _, message) = causes.kinds().next().unwrap();
        assert!(!message.contains('\n') && message.len() <= MAX_EXAMPLE + '…'.len_utf8(), "{message}");
        assert!(message.contains("/v3/***") && !message.contains("0123456789abcdef0123"), "{message}");
    }
}
