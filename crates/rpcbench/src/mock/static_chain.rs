//! The static baseline node: every call, whatever its method, answers `"0x1"`.
//!
//! This is the performance baseline of the mock nodes, so it does no work beyond what the
//! JSON-RPC envelope needs. [`scan`] recognises the common case, a body that is one plain
//! valid request object, in a single pass over the bytes without building anything, and
//! returns the id to echo; everything else (batches, escapes, non-ASCII text, invalid
//! requests, deep nesting) is left to the general dispatch in the server, which answers
//! exactly the same bytes for the bodies both accept.

/// The constant result, as JSON.
pub(crate) const RESULT: &[u8] = b"\"0x1\"";

/// Appends the result of any call.
pub(crate) fn answer(out: &mut Vec<u8>) {
    out.extend_from_slice(RESULT);
}

/// What a plain request object asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plain<'a> {
    /// A call with this id, as raw JSON (a string with its quotes, a number or `null`).
    Call(&'a [u8]),
    /// A notification: nothing is answered.
    Notification,
}

/// Appends the whole response to a call with the raw id `id`.
pub(crate) fn write_response(out: &mut Vec<u8>, id: &[u8]) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(RESULT);
    out.push(b'}');
}

/// Deepest nesting of params the scan follows before leaving the body to the general path.
const MAX_DEPTH: usize = 64;

/// Recognises a body that is exactly one valid JSON-RPC 2.0 request object made of plain
/// text: `"jsonrpc":"2.0"`, a string `method`, optional array or object `params`, an
/// optional string, number or null `id`, no duplicate member, and nothing but whitespace
/// around it. Strings must be printable ASCII without escapes. `None` means "not that
/// simple", never "invalid": the caller then uses the general dispatch.
pub(crate) fn scan(body: &[u8]) -> Option<Plain<'_>> {
    let mut s = Scanner { bytes: body, at: 0 };
    s.skip_ws();
    s.eat(b'{')?;
    s.skip_ws();
    let (mut jsonrpc, mut method, mut params) = (false, false, false);
    let mut id: Option<&[u8]> = None;
    loop {
        let key = s.string()?;
        s.skip_ws();
        s.eat(b':')?;
        s.skip_ws();
        match key {
            b"jsonrpc" if !jsonrpc => {
                jsonrpc = true;
                s.literal(b"\"2.0\"")?;
            }
            b"method" if !method => {
                method = true;
                s.string()?;
            }
            b"params" if !params => {
                params = true;
                if !matches!(s.peek(), Some(b'[' | b'{')) {
                    return None;
                }
                s.value(0)?;
            }
            b"id" if id.is_none() => {
                let start = s.at;
                match s.peek()? {
                    b'"' => s.string().map(drop)?,
                    b'-' | b'0'..=b'9' => s.number()?,
                    b'n' => s.literal(b"null")?,
                    _ => return None,
                }
                id = Some(&body[start..s.at]);
            }
            b"jsonrpc" | b"method" | b"params" | b"id" => return None,
            _ => s.value(0)?,
        }
        s.skip_ws();
        match s.next()? {
            b',' => s.skip_ws(),
            b'}' => break,
            _ => return None,
        }
    }
    s.skip_ws();
    if s.at != body.len() || !jsonrpc || !method {
        return None;
    }
    Some(id.map_or(Plain::Notification, Plain::Call))
}

/// A cursor over the body; every method returns `None` as soon as the text is not simple.
struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, text: &[u8]) -> Option<()> {
        let end = self.at.checked_add(text.len())?;
        (self.bytes.get(self.at..end)? == text).then(|| self.at = end)
    }

    /// A string of printable ASCII without escapes; returns its contents.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match self.next()? {
                b'"' => return Some(&self.bytes[start..self.at - 1]),
                b'\\' => return None,
                0x20..=0x7e => {}
                _ => return None,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    /// A number in the JSON grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// Any simple JSON value, nested at most [`MAX_DEPTH`] deep.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            open @ (b'[' | b'{') => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                let close = if open == b'[' { b']' } else { b'}' };
                self.at += 1;
                self.skip_ws();
                if self.peek() == Some(close) {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    if open == b'{' {
                        self.string()?;
                        self.skip_ws();
                        self.eat(b':')?;
                        self.skip_ws();
                    }
                    self.value(depth + 1)?;
                    self.skip_ws();
                    match self.next()? {
                        b',' => self.skip_ws(),
                        byte if byte == close => return Some(()),
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_is_a_json_string() {
        let mut out = Vec::new();
        super::answer(&mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value, "0x1");
    }

    #[test]
    fn plain_requests_are_recognised() {
        fn call(body: &str) -> Option<Plain<'_>> {
            scan(body.as_bytes())
        }
        assert_eq!(call(r#"{"jsonrpc":"2.0","id":1,"method":"getSlot"}"#), Some(Plain::Call(b"1")));
        assert_eq!(
            call(" \r\n{ \"id\" : \"a b\" , \"method\":\"x\",\"jsonrpc\":\"2.0\",\"params\":[] }\n\t"),
            Some(Plain::Call(b"\"a b\""))
        );
        assert_eq!(call(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#), Some(Plain::Call(b"null")));
        assert_eq!(call(r#"{"jsonrpc":"2.0","id":-1.5e+3,"method":"x"}"#), Some(Plain::Call(b"-1.5e+3")));
        assert_eq!(
            call(r#"{"jsonrpc":"2.0","method":"x","params":{"a":[1,true,null]}}"#),
            Some(Plain::Notification)
        );
        assert_eq!(
            call(r#"{"jsonrpc":"2.0","id":7,"method":"x","extra":{"k":[false,-0,"s"]},"params":[[{}],[]]}"#),
            Some(Plain::Call(b"7"))
        );
    }

    #[test]
    fn anything_else_is_left_to_the_general_path() {
        for body in [
            "",
            "[]",
            r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":01,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1.,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":nul,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":"\u0031","method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":"é","method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1,]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x",}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x"} {}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x""#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x"#,
            r#"{"jsonrpc":"2.0","i\d":1,"method":"x"}"#,
        ] {
            assert_eq!(scan(body.as_bytes()), None, "{body}");
        }
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}{}}}"#,
            "[".repeat(65),
            "]".repeat(65)
        );
        assert_eq!(scan(deep.as_bytes()), None);
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{}{}}}"#,
            "[".repeat(64),
            "]".repeat(64)
        );
        assert_eq!(scan(ok.as_bytes()), Some(Plain::Call(b"1")));
    }
}
