//! Text from outside (a server's error message, a field of a results file) made safe to show
//! on a terminal: control characters are written as visible escapes, so that an ESC, BEL or
//! CR in a server's answer cannot clear the screen, ring the bell or overwrite a line.

use std::borrow::Cow;
use std::fmt::Write;

/// The text with every control character (C0, DEL and C1) but the line feed written as a
/// visible escape: `\r`, `\t`, or `\u00NN` (`\u001b` for ESC, `\u0007` for BEL, `\u009b`
/// for CSI). Line feeds are kept, for multi-line text; a renderer that wants one line replaces
/// them first. Text without control characters comes back borrowed.
///
/// The escapes are JSON's own, so JSON text stays valid JSON: serde escapes C0 controls inside
/// strings but writes DEL and C1 raw, and those can only be inside strings.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && c.is_control()) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible_escapes() {
        assert_eq!(escape_controls("\x1b[2J\x07clear\rme\ttab"), "\\u001b[2J\\u0007clear\\rme\\ttab");
        assert_eq!(escape_controls("c1 \u{9b}31m and del \u{7f}"), "c1 \\u009b31m and del \\u007f");
        assert_eq!(escape_controls("nul \0"), "nul \\u0000");
    }

    #[test]
    fn plain_text_and_line_feeds_are_kept() {
        assert!(matches!(escape_controls("plain text, ünïcode ✓"), Cow::Borrowed(_)));
        assert_eq!(escape_controls("two\nlines"), "two\nlines");
    }

    #[test]
    fn json_stays_valid_json() {
        let json = serde_json::json!({"message": "\u{1b}[2J\u{9b}\u{7f}"}).to_string();
        let escaped = escape_controls(&json);
        assert!(!escaped.chars().any(char::is_control), "{escaped}");
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back["message"], "\u{1b}[2J\u{9b}\u{7f}");
    }
}
