//! Text from outside (a server's error message, a field of a results file) made safe to show
//! on a terminal: control characters are written as visible escapes, so that an ESC, BEL or
//! CR in a server's answer cannot clear the screen, ring the bell or overwrite a line. The
//! same text on one line ([`one_line`], so that a name cannot forge a report line), in a
//! Markdown document ([`markdown`]) and in a spreadsheet cell ([`spreadsheet_cell`]).

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

/// The text on one line: control characters escaped as [`escape_controls`] does, and line
/// feeds too (`\n`), so that a method name or a title from a client or a file cannot start a
/// line of a report of its own.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    match escape_controls(text) {
        Cow::Borrowed(text) if !text.contains('\n') => Cow::Borrowed(text),
        escaped => Cow::Owned(escaped.replace('\n', "\\n")),
    }
}

/// Characters Markdown may read as markup anywhere in a line (emphasis, code, links, images,
/// HTML, entities, table cells, strikethrough): each is written with a backslash.
const MARKDOWN_PUNCTUATION: &str = "\\`*[]<>|&!~";

/// The text as literal Markdown (GitHub-flavoured), on one line: its markup characters
/// backslash-escaped, a `#`, `+`, `-`, `=` or `>` that opens it too (a heading, a list, a
/// quote), an `_` unless inside a word, control characters as [`escape_controls`] writes them,
/// and line feeds as spaces. So a server's message or a file's name shows as typed, in a table
/// cell or a heading, as HTML output escapes it.
pub(crate) fn markdown(text: &str) -> String {
    let flat = escape_controls(text).replace(['\n', '\r'], " ");
    let chars: Vec<char> = flat.chars().collect();
    let mut out = String::with_capacity(flat.len() + 8);
    for (index, &c) in chars.iter().enumerate() {
        let word = |at: Option<&char>| at.is_some_and(|c| c.is_alphanumeric());
        let escaped = MARKDOWN_PUNCTUATION.contains(c)
            || (index == 0 && "#+-=>".contains(c))
            || (c == '_'
                && !(word(index.checked_sub(1).and_then(|i| chars.get(i))) && word(chars.get(index + 1))));
        if escaped {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The text as a Markdown code span on one line (a URL, shown exactly: `***` of a redacted key
/// stays `***` rather than emphasis): fenced by more backticks than any run inside, a `|`
/// escaped for a table cell, control characters as [`escape_controls`] writes them and line
/// feeds as spaces.
pub(crate) fn markdown_code(text: &str) -> String {
    let flat = escape_controls(text).replace(['\n', '\r'], " ").replace('|', "\\|");
    let longest = flat.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A space each side keeps a backtick at either end apart from the fence.
    let pad = if flat.starts_with('`') || flat.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{flat}{pad}{fence}")
}

/// A cell for a spreadsheet: text that opens with `=`, `+`, `-`, `@`, a tab or a carriage
/// return gets a leading `'`, so that a spreadsheet shows it rather than running it as a
/// formula (OWASP's CSV injection advice). Numbers (`-1.5`) are left alone.
pub(crate) fn spreadsheet_cell(text: &str) -> Cow<'_, str> {
    let formula = text.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && text.parse::<f64>().is_err() {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_feed_in_a_name_cannot_forge_a_report_line() {
        assert_eq!(one_line("getSlot\nerrors: 0 (0.00%)"), "getSlot\\nerrors: 0 (0.00%)");
        assert_eq!(one_line("a\r\nb\u{1b}"), "a\\r\\nb\\u001b");
        assert!(matches!(one_line("eth_call"), Cow::Borrowed("eth_call")));
    }

    #[test]
    fn markdown_markup_from_server_text_is_escaped() {
        assert_eq!(markdown("eth_getBalance 12.5ms"), "eth_getBalance 12.5ms");
        assert_eq!(
            markdown("[click](http://x) ![i](y) <img src=x>"),
            "\\[click\\](http://x) \\!\\[i\\](y) \\<img src=x\\>"
        );
        assert_eq!(
            markdown("# title | `code` **b** _i_ ~~s~~ &lt;"),
            "\\# title \\| \\`code\\` \\*\\*b\\*\\* \\_i\\_ \\~\\~s\\~\\~ \\&lt;"
        );
        assert_eq!(markdown("two\nlines\\"), "two lines\\\\");
        assert_eq!(markdown("- item"), "\\- item");
    }

    #[test]
    fn a_url_in_markdown_is_a_code_span_shown_exactly() {
        assert_eq!(markdown_code("https://x/v3/***?k=***"), "`https://x/v3/***?k=***`");
        assert_eq!(markdown_code("a`b|c\nd"), "``a`b\\|c d``");
        assert_eq!(markdown_code("`x`"), "`` `x` ``");
    }

    #[test]
    fn spreadsheet_formulas_from_server_text_are_defused() {
        for formula in ["=HYPERLINK(\"http://x\")", "+1+cmd", "-2+3", "@SUM(A1)", "\tx"] {
            assert_eq!(spreadsheet_cell(formula), format!("'{formula}"));
        }
        for plain in ["-1.5", "12", "getSlot", "", "a=b"] {
            assert_eq!(spreadsheet_cell(plain), plain);
        }
    }

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
