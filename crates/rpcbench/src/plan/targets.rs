//! vegeta's HTTP targets files (`vegeta attack -targets=FILE`), so that a vegeta study runs
//! unchanged: targets separated by blank lines, each a `METHOD URL` line, then header lines
//! `Name: value`, then optionally `@path` naming a body file (relative to the targets file's
//! folder). Lines starting with `#` are comments. Errors name the file, line and column.
//!
//! [`workload`] turns the targets into a workload taken in turn (round robin in file order, as
//! vegeta does) whose calls are grouped by a name that keeps the per-call tables short: the
//! method and the path with its numbers, hex values and long identifiers replaced by
//! placeholders (`GET /block/{n}`, `GET /tx/{hex}`), query values by `{v}`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::settings::Target;
use crate::transport::HttpMethod;
use crate::workload::{Call, HttpBody, HttpRequestSpec, TemplatePiece, Workload};

/// The largest targets file read.
pub const MAX_TARGETS_FILE: u64 = crate::util::files::MAX_SCENARIO;
/// The largest body file read.
pub const MAX_BODY_FILE: u64 = crate::util::files::MAX_BODY;

/// One target: a whole HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpTarget {
    /// The method.
    pub method: HttpMethod,
    /// The absolute URL.
    pub url: String,
    /// Header lines.
    pub headers: Vec<(String, String)>,
    /// The body (empty without `@file`).
    pub body: Vec<u8>,
    /// The line it starts on (1-based), for messages.
    pub line: usize,
}

/// A targets file that cannot be used, with the place at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetsError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line (0 when the file as a whole is at fault).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TargetsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)
        }
    }
}

impl std::error::Error for TargetsError {}

/// Parses the text of a targets file found at `origin`; `read_body` reads an `@file` (its
/// path already made relative to the targets file's folder).
pub fn parse(
    text: &str,
    origin: &Path,
    mut read_body: impl FnMut(&Path) -> Result<Vec<u8>, String>,
) -> Result<Vec<HttpTarget>, TargetsError> {
    let error = |line: usize, column: usize, message: String| TargetsError {
        path: origin.to_path_buf(),
        line,
        column,
        message,
    };
    let folder = origin.parent().unwrap_or(Path::new("."));
    let mut targets: Vec<HttpTarget> = Vec::new();
    let mut current: Option<HttpTarget> = None;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim();
        if trimmed.starts_with('#') {
            continue;
        }
        if trimmed.is_empty() {
            targets.extend(current.take());
            continue;
        }
        let indent = line.len() - line.trim_start().len() + 1;
        // As vegeta reads it: a request line starts a target, after a blank line or not.
        let request_line = match &current {
            None => true,
            Some(_) => trimmed
                .split_once(char::is_whitespace)
                .is_some_and(|(method, rest)| HttpMethod::parse(method).is_some() && rest.contains("://")),
        };
        if request_line {
            targets.extend(current.take());
            let (method, url) = trimmed
                .split_once(char::is_whitespace)
                .ok_or_else(|| error(number, indent, format!("expected 'METHOD URL', found '{trimmed}'")))?;
            let method = HttpMethod::parse(method).ok_or_else(|| {
                let known: Vec<&str> = HttpMethod::ALL.iter().map(|m| m.as_str()).collect();
                error(number, indent, format!("'{method}' is not an HTTP method ({})", known.join(", ")))
            })?;
            let url = url.trim();
            let url_column = line.find(url).map_or(indent, |at| at + 1);
            Target::parse(url).map_err(|err| error(number, url_column, err.message()))?;
            current = Some(HttpTarget {
                method,
                url: url.to_string(),
                headers: Vec::new(),
                body: Vec::new(),
                line: number,
            });
            continue;
        }
        let Some(target) = current.as_mut() else { continue };
        if let Some(file) = trimmed.strip_prefix('@') {
            if !target.body.is_empty() {
                return Err(error(number, indent, "a target has one body file".into()));
            }
            let path = folder.join(file.trim());
            target.body = read_body(&path).map_err(|message| {
                error(number, indent, format!("body file {}: {message}", path.display()))
            })?;
        } else {
            let (name, value) = trimmed
                .split_once(':')
                .filter(|(name, _)| !name.trim().is_empty() && !name.trim().contains(char::is_whitespace))
                .ok_or_else(|| {
                    error(
                        number,
                        indent,
                        "expected a header 'Name: value', '@body-file' or a blank line".into(),
                    )
                })?;
            target.headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    targets.extend(current);
    if targets.is_empty() {
        return Err(error(
            0,
            0,
            "the file is empty (or only comments): no target to send; a targets file has a 'METHOD URL' line per request".into(),
        ));
    }
    Ok(targets)
}

/// Whether text looks like a vegeta targets file: its first line that is not blank or a
/// comment is `METHOD URL`. For a hint when such a file is given where another kind is read.
pub fn looks_like_targets(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        .and_then(|line| line.split_once(char::is_whitespace))
        .is_some_and(|(method, rest)| {
            HttpMethod::parse(method).is_some() && rest.trim_start().contains("://")
        })
}

/// Reads a targets file and its body files (at most [`MAX_TARGETS_FILE`] and
/// [`MAX_BODY_FILE`] bytes).
pub fn read(path: &Path) -> Result<Vec<HttpTarget>, TargetsError> {
    let whole = |message: String| TargetsError { path: path.to_path_buf(), line: 0, column: 0, message };
    let bytes =
        crate::util::files::read_limited(path, MAX_TARGETS_FILE).map_err(|err| whole(err.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| whole("not UTF-8 text".into()))?;
    parse(&text, path, |body| {
        crate::util::files::read_limited(body, MAX_BODY_FILE).map_err(|err| err.to_string())
    })
}

/// The run's target (scheme, host, port of the first target's URL) and a workload of the
/// targets taken in turn. Every target must name the same scheme, host and port (a run has one
/// target); otherwise the first one that does not is named.
pub fn workload(targets: &[HttpTarget], origin: &Path) -> Result<(Target, Workload), TargetsError> {
    let at = |target: &HttpTarget, message: String| TargetsError {
        path: origin.to_path_buf(),
        line: target.line,
        column: 1,
        message,
    };
    let first = targets.first().ok_or_else(|| TargetsError {
        path: origin.to_path_buf(),
        line: 0,
        column: 0,
        message: "no target in the file".into(),
    })?;
    let base = Target::parse(&first.url).map_err(|err| at(first, err.message()))?;
    let mut names: Vec<String> = Vec::new();
    let mut calls: Vec<(String, Vec<(HttpTarget, Target)>)> = Vec::new();
    for target in targets {
        let parsed = Target::parse(&target.url).map_err(|err| at(target, err.message()))?;
        if (parsed.scheme, &parsed.host, parsed.port) != (base.scheme, &base.host, base.port) {
            return Err(at(
                target,
                format!(
                    "every target must go to {} (one run, one host); this one goes elsewhere",
                    base.redacted()
                ),
            ));
        }
        let name = format!("{} {}", target.method, path_label(&parsed.path_and_query));
        match names.iter().position(|known| *known == name) {
            Some(index) => calls[index].1.push((target.clone(), parsed)),
            None => {
                names.push(name.clone());
                calls.push((name, vec![(target.clone(), parsed)]));
            }
        }
    }
    let mut built = Vec::with_capacity(calls.len());
    for (name, variants) in &calls {
        let specs: Vec<HttpRequestSpec> = variants
            .iter()
            .map(|(target, parsed)| HttpRequestSpec {
                method: target.method,
                path: vec![TemplatePiece::Text(parsed.path_and_query.clone())],
                headers: target.headers.clone(),
                body: if target.body.is_empty() {
                    HttpBody::Empty
                } else {
                    HttpBody::Raw(target.body.clone())
                },
                expect_json: false,
            })
            .collect();
        let call = Call::http_variants(name.clone(), &specs).map_err(|err| at(&variants[0].0, err.0))?;
        built.push(call);
    }
    // The order of the file: each line names its call and which of its variants.
    let mut order = Vec::with_capacity(targets.len());
    let mut seen = vec![0usize; calls.len()];
    for target in targets {
        let parsed = Target::parse(&target.url).map_err(|err| at(target, err.message()))?;
        let name = format!("{} {}", target.method, path_label(&parsed.path_and_query));
        let call = names.iter().position(|known| *known == name).unwrap_or(0);
        order.push((call, seen[call]));
        seen[call] += 1;
    }
    let workload = Workload::new(built)
        .and_then(|workload| workload.in_file_order(order))
        .map_err(|err| at(first, err.0))?;
    Ok((base, workload))
}

/// The path as a call's name: numbers, `0x` hex values and long identifiers become `{n}`,
/// `{hex}` and `{id}`, query values `{v}`, so that a file of many blocks is one row per
/// endpoint.
pub fn path_label(path_and_query: &str) -> String {
    let (path, query) = match path_and_query.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path_and_query, None),
    };
    let segments: Vec<String> = path
        .split('/')
        .map(|segment| {
            if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
                "{n}".to_string()
            } else if segment.len() > 2
                && (segment.starts_with("0x") || segment.starts_with("0X"))
                && segment[2..].bytes().all(|b| b.is_ascii_hexdigit())
            {
                "{hex}".to_string()
            } else if segment.len() >= 20 && segment.bytes().all(|b| b.is_ascii_alphanumeric()) {
                "{id}".to_string()
            } else {
                segment.to_string()
            }
        })
        .collect();
    let mut label = segments.join("/");
    if let Some(query) = query {
        let keys: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) => format!("{key}={{v}}"),
                None => pair.to_string(),
            })
            .collect();
        label.push('?');
        label.push_str(&keys.join("&"));
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<HttpTarget>, TargetsError> {
        parse(text, Path::new("dir/targets.txt"), |path| {
            if path == Path::new("dir/body.json") {
                Ok(b"{\"to\":\"0x1\"}".to_vec())
            } else {
                Err("No such file or directory".into())
            }
        })
    }

    /// Seed 002's dapp targets, in the shape its study uses (written for this test).
    const DAPP: &str = "GET http://localhost:8000/gasprice\n\n\
        # a comment\n\
        GET http://localhost:8000/balance/0x8B6492aB5c3cB3b6C5c1B6f0A3bE1a2f6E1D7C3a\n\
        Accept: application/json\n\n\
        GET http://localhost:8000/log/0x8B6492/0x8B649C/0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef\n\n\
        POST http://localhost:8000/call\n\
        Content-Type: application/json\n\
        @body.json\n\
        GET http://localhost:8000/block/9128600\n\
        GET http://localhost:8000/block/9128601\n";

    #[test]
    fn vegeta_targets_parse_with_headers_bodies_and_comments() {
        // Blank lines separate targets, and a request line starts one after a body or a
        // header line too (the last three follow each other), as vegeta reads it.
        let targets = parsed(DAPP).unwrap();
        assert_eq!(targets.len(), 6);
        assert_eq!(targets[1].headers, vec![("Accept".to_string(), "application/json".to_string())]);
        assert_eq!(targets[3].method, HttpMethod::Post);
        assert_eq!(targets[3].body, b"{\"to\":\"0x1\"}");
        assert_eq!(targets[5].line, 13);
        let (target, workload) = workload(&targets, Path::new("targets.txt")).unwrap();
        assert_eq!(target.host_header, "localhost:8000");
        let names: Vec<&str> = workload.calls().iter().map(|call| call.name()).collect();
        assert_eq!(
            names,
            vec![
                "GET /gasprice",
                "GET /balance/{hex}",
                "GET /log/{hex}/{hex}/{hex}",
                "POST /call",
                "GET /block/{n}"
            ]
        );
    }

    #[test]
    fn malformed_targets_name_the_line_and_column() {
        for (text, place, words) in [
            ("FETCH http://x/\n", "dir/targets.txt:1:1:", "not an HTTP method"),
            ("GET\n", "dir/targets.txt:1:1:", "METHOD URL"),
            ("GET ftp://x/\n", "dir/targets.txt:1:5:", "scheme 'ftp'"),
            ("GET http://x/\nnot a header\n", "dir/targets.txt:2:1:", "header"),
            ("GET http://x/\n@missing.json\n", "dir/targets.txt:2:1:", "missing.json"),
            ("# only a comment\n\n", "dir/targets.txt:", "no target"),
        ] {
            let message = parsed(text).unwrap_err().to_string();
            assert!(message.starts_with(place) && message.contains(words), "{text:?}: {message}");
        }
        let two_hosts = parsed("GET http://a:1/x\n\nGET http://b:1/x\n").unwrap();
        let message = workload(&two_hosts, Path::new("t.txt")).unwrap_err().to_string();
        assert!(message.starts_with("t.txt:3:1:") && message.contains("one host"), "{message}");
    }

    #[test]
    fn path_labels_group_ids_and_values() {
        assert_eq!(path_label("/block/123"), "/block/{n}");
        assert_eq!(path_label("/tx/0xabcDEF12"), "/tx/{hex}");
        assert_eq!(path_label("/account/4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ"), "/account/{id}");
        assert_eq!(path_label("/call?to=0x1&data=0x2"), "/call?to={v}&data={v}");
        assert_eq!(path_label("/block/last/full"), "/block/last/full");
    }
}
