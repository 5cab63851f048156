//! Paths to fields of a JSON-RPC response (`result.context.slot`) and the normal form answers
//! are compared and digested in: hex strings lowercased, object keys sorted, ignored fields
//! removed. Used by `compare --equal`, recorded traffic files and replay's response checks.

use serde_json::Value;

/// A field path that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldPathError {
    /// The path, or one of its segments, is empty (`result..slot`).
    EmptySegment {
        /// The path as given.
        text: String,
    },
}

impl std::fmt::Display for FieldPathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldPathError::EmptySegment { text } => {
                write!(f, "'{text}' is not a field path such as result.context.slot")
            }
        }
    }
}

impl std::error::Error for FieldPathError {}

/// A path to a field of a response, `result.context.slot`; `*` matches any key or index and
/// `[n]` is the same as `.n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    text: String,
    segments: Vec<String>,
}

impl FieldPath {
    /// Parses a path; an empty path or segment is an error.
    pub fn parse(text: &str) -> Result<Self, FieldPathError> {
        let normalised = text.trim().replace('[', ".").replace(']', "");
        let segments: Vec<String> = normalised.split('.').map(str::to_string).collect();
        if text.trim().is_empty() || segments.iter().any(String::is_empty) {
            return Err(FieldPathError::EmptySegment { text: text.to_string() });
        }
        Ok(Self { text: text.trim().to_string(), segments })
    }

    /// The path as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn remove_from(&self, value: &mut Value) {
        remove_path(value, &self.segments);
    }
}

fn remove_path(value: &mut Value, segments: &[String]) {
    let Some((head, rest)) = segments.split_first() else { return };
    match value {
        Value::Object(object) => {
            if rest.is_empty() {
                if head == "*" {
                    object.clear();
                } else {
                    object.remove(head);
                }
            } else if head == "*" {
                object.values_mut().for_each(|v| remove_path(v, rest));
            } else if let Some(child) = object.get_mut(head) {
                remove_path(child, rest);
            }
        }
        Value::Array(items) => {
            if head == "*" {
                if rest.is_empty() {
                    items.clear();
                } else {
                    items.iter_mut().for_each(|v| remove_path(v, rest));
                }
            } else if let Ok(index) = head.parse::<usize>() {
                if rest.is_empty() {
                    if index < items.len() {
                        // Keep the other indices where they were.
                        items[index] = Value::Null;
                    }
                } else if let Some(child) = items.get_mut(index) {
                    remove_path(child, rest);
                }
            }
        }
        _ => {}
    }
}

/// Normalises a response for comparison: hex strings (`0x…`) lowercased, object keys sorted,
/// and the ignored fields removed.
pub fn normalize(value: &mut Value, ignore: &[FieldPath]) {
    for path in ignore {
        path.remove_from(value);
    }
    canonicalize(value);
}

fn canonicalize(value: &mut Value) {
    match value {
        Value::String(text) => {
            let is_hex = text.len() > 2
                && (text.starts_with("0x") || text.starts_with("0X"))
                && text[2..].bytes().all(|b| b.is_ascii_hexdigit());
            if is_hex {
                *text = text.to_ascii_lowercase();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonicalize),
        Value::Object(object) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(object).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (key, mut child) in entries {
                canonicalize(&mut child);
                object.insert(key, child);
            }
        }
        _ => {}
    }
}
