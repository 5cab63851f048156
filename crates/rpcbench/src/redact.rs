//! Keeps secrets out of every report, results file, log and error message: API keys in URL
//! paths (`…/v3/KEY`) and query strings (`?apikey=`), passwords in URLs, and the values of
//! authentication headers.

/// Replacement text for a secret.
pub const MASK: &str = "***";

/// Query parameters whose values are secrets (compared case-insensitively, `-` and `_` ignored).
const SECRET_PARAMS: [&str; 8] =
    ["apikey", "key", "token", "accesstoken", "auth", "secret", "password", "signature"];

/// The URL with secrets replaced by `***`. Works on text that is not a valid URL too.
pub fn url(text: &str) -> String {
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
    let mut out = String::with_capacity(text.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            match userinfo.split_once(':') {
                Some((user, _password)) => {
                    out.push_str(user);
                    out.push(':');
                    out.push_str(MASK);
                }
                None => out.push_str(MASK),
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    let segments: Vec<&str> = path.split('/').collect();
    for (index, segment) in segments.iter().enumerate() {
        if index > 0 {
            out.push('/');
        }
        if looks_like_key(segment) {
            out.push_str(MASK);
        } else {
            out.push_str(segment);
        }
    }
    if let Some(query) = query {
        out.push('?');
        for (index, pair) in query.split('&').enumerate() {
            if index > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((name, value)) if is_secret_param(name) || looks_like_key(value) => {
                    out.push_str(name);
                    out.push('=');
                    out.push_str(MASK);
                }
                _ => out.push_str(pair),
            }
        }
    }
    if let Some(fragment) = fragment {
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
        if word.contains("://") || word.contains('?') || word.contains('@') {
            out.push_str(&url(word));
        } else if looks_like_key(trimmed) {
            out.push_str(MASK);
            out.push_str(&word[trimmed.len()..]);
        } else {
            match word.split_once('=') {
                Some((name, _)) if is_secret_param(name) => {
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

fn is_secret_param(name: &str) -> bool {
    let normalized: String =
        name.chars().filter(|c| *c != '-' && *c != '_').flat_map(char::to_lowercase).collect();
    SECRET_PARAMS.iter().any(|secret| normalized == *secret || normalized.ends_with(secret))
}

/// A path segment or value that looks like a generated key: long, made of key characters, and
/// mixing letters and digits (Infura, Alchemy, QuickNode and the like).
fn looks_like_key(segment: &str) -> bool {
    segment.len() >= 16
        && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && segment.bytes().any(|b| b.is_ascii_digit())
        && segment.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Whether a header's value is a secret.
pub fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "authorization"
        || lower == "proxy-authorization"
        || lower == "cookie"
        || lower.contains("key")
        || lower.contains("token")
        || lower.contains("secret")
        || lower.contains("auth")
        || lower.contains("password")
}

/// A header's value as it may be shown.
pub fn header_value<'a>(name: &str, value: &'a str) -> &'a str {
    if is_secret_header(name) {
        MASK
    } else {
        value
    }
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
            ("https://rpc.example.com/?apikey=s3cr3t&chain=1", "https://rpc.example.com/?apikey=***&chain=1"),
            ("https://rpc.example.com/?api-key=abc", "https://rpc.example.com/?api-key=***"),
            (
                "https://rpc.example.com/?api_key=abc&x-access-token=t",
                "https://rpc.example.com/?api_key=***&x-access-token=***",
            ),
            ("https://user:hunter2@rpc.example.com/", "https://user:***@rpc.example.com/"),
            ("http://127.0.0.1:8899/", "http://127.0.0.1:8899/"),
            ("http://127.0.0.1:8545/rpc/getBalance", "http://127.0.0.1:8545/rpc/getBalance"),
            ("not a url /v3/9aa3d95b3bc440fa88ea12eaa4456161", "not a url /v3/***"),
        ];
        for (input, expected) in cases {
            assert_eq!(url(input), expected, "{input}");
        }
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
}
