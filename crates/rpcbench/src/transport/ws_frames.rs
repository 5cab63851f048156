//! WebSocket frames of the request/response path, read and written by rpcbench itself
//! (RFC 6455, no extensions): a client's masked frames written straight into the socket's
//! outgoing bytes, a server's frame heads parsed from the receive buffer so that a message is
//! handed on where it was read, and the check of the server's answer to the upgrade. The
//! upgrade request itself is tungstenite's; subscriptions (`WsFeed`) keep tungstenite's
//! framing too.
//!
//! Every rule a server's frame can break is told apart as tungstenite tells it, so the
//! classification of a hostile server's frames does not depend on which code read them:
//! reserved bits, a masked frame, an unknown opcode, a fragmented or oversized control frame
//! are protocol errors ([`FrameError::Protocol`]); a frame or message over the run's body limit
//! is [`FrameError::TooLarge`], known from the frame's head before its payload is read.

/// A text frame's opcode.
pub(crate) const OP_TEXT: u8 = 0x1;
/// A binary frame's opcode.
pub(crate) const OP_BINARY: u8 = 0x2;
/// A continuation frame's opcode.
pub(crate) const OP_CONTINUATION: u8 = 0x0;
/// A close frame's opcode.
pub(crate) const OP_CLOSE: u8 = 0x8;
/// A ping frame's opcode.
pub(crate) const OP_PING: u8 = 0x9;
/// A pong frame's opcode.
pub(crate) const OP_PONG: u8 = 0xA;

/// The head of one frame from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHead {
    /// The last frame of its message.
    pub(crate) fin: bool,
    /// The opcode (one of the `OP_` constants: others are refused).
    pub(crate) opcode: u8,
    /// Bytes of the head (2 to 10: a server's frames carry no mask).
    pub(crate) head_len: usize,
    /// Bytes of the payload.
    pub(crate) payload_len: usize,
}

/// Why a server's frame ends its socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// A frame that breaks RFC 6455.
    Protocol,
    /// A frame (or the message it continues) larger than the run's body limit.
    TooLarge,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Protocol => f.write_str("a frame that breaks the WebSocket protocol"),
            FrameError::TooLarge => f.write_str("a frame larger than the body limit"),
        }
    }
}

/// Parses the head of the frame at the start of `bytes`; `Ok(None)` while the head is not all
/// there. A frame's payload over `max_frame` bytes is refused from its head alone.
pub(crate) fn parse_head(bytes: &[u8], max_frame: usize) -> Result<Option<FrameHead>, FrameError> {
    let [first, second, ..] = *bytes else { return Ok(None) };
    let fin = first & 0x80 != 0;
    let opcode = first & 0x0F;
    let (head_len, declared) = match second & 0x7F {
        126 => {
            let Some(len) = bytes.get(2..4) else { return Ok(None) };
            (4, u64::from(u16::from_be_bytes([len[0], len[1]])))
        }
        127 => {
            let Some(len) = bytes.get(2..10) else { return Ok(None) };
            let mut word = [0u8; 8];
            word.copy_from_slice(len);
            (10, u64::from_be_bytes(word))
        }
        short => (2, u64::from(short)),
    };
    let payload_len = match usize::try_from(declared) {
        Ok(len) if len <= max_frame => len,
        _ => return Err(FrameError::TooLarge),
    };
    if first & 0x70 != 0 || second & 0x80 != 0 {
        // Reserved bits without an extension, or a server that masks its frames.
        return Err(FrameError::Protocol);
    }
    match opcode {
        OP_CONTINUATION | OP_TEXT | OP_BINARY => {}
        OP_CLOSE | OP_PING | OP_PONG => {
            if !fin || payload_len > 125 {
                return Err(FrameError::Protocol);
            }
        }
        _ => return Err(FrameError::Protocol),
    }
    Ok(Some(FrameHead { fin, opcode, head_len, payload_len }))
}

/// Appends a client frame (`opcode`, FIN set) carrying `payload` masked with `mask` to `out`:
/// the 2-to-10-byte head, the 4-byte key, the payload masked in place.
pub(crate) fn write_frame(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.reserve(14 + payload.len());
    out.push(0x80 | opcode);
    match payload.len() {
        len @ 0..=125 => out.push(0x80 | len as u8),
        len @ 126..=0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    apply_mask(&mut out[start..], mask);
}

/// XORs `bytes` with the repeated 4-byte `mask`, eight bytes at a time.
pub(crate) fn apply_mask(bytes: &mut [u8], mask: [u8; 4]) {
    let word = u64::from_ne_bytes([mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3]]);
    let mut words = bytes.chunks_exact_mut(8);
    for chunk in &mut words {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(eight) ^ word).to_ne_bytes());
    }
    // The tail starts at a multiple of 8, so its byte i takes the key's byte i % 4.
    for (i, byte) in words.into_remainder().iter_mut().enumerate() {
        *byte ^= mask[i % 4];
    }
}

/// The masking keys of one socket: a fresh key per frame (RFC 6455, 5.3) from a xorshift
/// generator seeded from the process's random hasher keys.
#[derive(Debug, Clone)]
pub(crate) struct MaskKeys(u64);

impl MaskKeys {
    /// Keys from a fresh seed.
    pub(crate) fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let seed = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Self(seed | 1)
    }

    /// The next key.
    pub(crate) fn next_key(&mut self) -> [u8; 4] {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        let bytes = x.to_le_bytes();
        [bytes[0], bytes[1], bytes[2], bytes[3]]
    }
}

/// What a close frame's payload says: the code to report (1005 without one; a code no
/// endpoint may send is reported as 1002, as tungstenite reports it), or a protocol error
/// (a 1-byte payload, a reason that is not UTF-8).
pub(crate) fn close_code(payload: &[u8]) -> Result<u16, FrameError> {
    match payload {
        [] => Ok(1005),
        [_] => Err(FrameError::Protocol),
        [high, low, reason @ ..] => {
            std::str::from_utf8(reason).map_err(|_| FrameError::Protocol)?;
            let code = u16::from_be_bytes([*high, *low]);
            let allowed = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
            Ok(if allowed { code } else { 1002 })
        }
    }
}

/// Why a server's answer to the upgrade request is not a WebSocket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UpgradeAnswer {
    /// The head is not all there yet.
    Partial,
    /// Upgraded: the head's length (the frames start after it).
    Upgraded(usize),
    /// A status other than 101.
    Refused(u16),
    /// A 101 without the headers RFC 6455 requires, or not HTTP at all.
    Broken(&'static str),
}

/// Reads the server's answer to an upgrade request that sent `key`.
pub(crate) fn check_upgrade_answer(bytes: &[u8], key: &str) -> UpgradeAnswer {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let head_len = match response.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return UpgradeAnswer::Partial,
        Err(_) => return UpgradeAnswer::Broken("an answer that is not HTTP"),
    };
    let status = response.code.unwrap_or(0);
    if status != 101 {
        return UpgradeAnswer::Refused(status);
    }
    let headers: &[httparse::Header<'_>] = response.headers;
    let header = |name: &'static str| {
        headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    };
    if !header("upgrade").any(|value| value.eq_ignore_ascii_case(b"websocket")) {
        return UpgradeAnswer::Broken("no 'Upgrade: websocket' header");
    }
    let connection_upgrade = header("connection").any(|value| {
        value.split(|&byte| byte == b',').any(|token| token.trim_ascii().eq_ignore_ascii_case(b"upgrade"))
    });
    if !connection_upgrade {
        return UpgradeAnswer::Broken("no 'Connection: Upgrade' header");
    }
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    if !header("sec-websocket-accept").any(|value| value == accept.as_bytes()) {
        return UpgradeAnswer::Broken("a wrong Sec-WebSocket-Accept key");
    }
    UpgradeAnswer::Upgraded(head_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unmask(frame: &[u8], head: usize) -> Vec<u8> {
        let mask = [frame[head - 4], frame[head - 3], frame[head - 2], frame[head - 1]];
        let mut payload = frame[head..].to_vec();
        apply_mask(&mut payload, mask);
        payload
    }

    #[test]
    fn a_client_frame_carries_its_length_in_the_shortest_form_and_its_payload_masked() {
        for (len, head) in [(0, 6), (125, 6), (126, 8), (65_535, 8), (65_536, 14)] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let mut out = vec![0xEE];
            write_frame(&mut out, OP_TEXT, &payload, [0x12, 0x34, 0x56, 0x78]);
            let frame = &out[1..];
            assert_eq!(frame[0], 0x81);
            assert_eq!(frame[1] & 0x80, 0x80, "masked");
            assert_eq!(frame.len(), head + len);
            assert_eq!(unmask(frame, head), payload, "{len} bytes");
            if len > 16 {
                assert_ne!(&frame[head..], &payload[..], "masked");
            }
        }
    }

    #[test]
    fn masking_word_at_a_time_matches_masking_byte_by_byte_at_every_length() {
        let mask = [0xA1, 0x02, 0xF3, 0x44];
        for len in 0..40 {
            let plain: Vec<u8> = (0..len).map(|i| (i * 31 + 5) as u8).collect();
            let mut fast = plain.clone();
            apply_mask(&mut fast, mask);
            let slow: Vec<u8> = plain.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]).collect();
            assert_eq!(fast, slow, "{len}");
        }
    }

    #[test]
    fn every_frame_gets_a_fresh_mask_key() {
        let mut keys = MaskKeys::new();
        let first: Vec<[u8; 4]> = (0..64).map(|_| keys.next_key()).collect();
        let distinct: std::collections::HashSet<_> = first.iter().collect();
        assert!(distinct.len() > 60);
    }

    #[test]
    fn a_server_frame_head_is_read_in_all_three_length_forms_and_waits_for_missing_bytes() {
        let max = 1 << 20;
        assert_eq!(
            parse_head(&[0x81, 5], max),
            Ok(Some(FrameHead { fin: true, opcode: OP_TEXT, head_len: 2, payload_len: 5 }))
        );
        assert_eq!(
            parse_head(&[0x02, 126, 0x01, 0x00], max),
            Ok(Some(FrameHead { fin: false, opcode: OP_BINARY, head_len: 4, payload_len: 256 }))
        );
        assert_eq!(
            parse_head(&[0x80, 127, 0, 0, 0, 0, 0, 1, 0, 0], max),
            Ok(Some(FrameHead { fin: true, opcode: OP_CONTINUATION, head_len: 10, payload_len: 65_536 }))
        );
        for partial in [&[][..], &[0x81], &[0x81, 126, 1], &[0x81, 127, 0, 0, 0, 0, 0, 0, 1]] {
            assert_eq!(parse_head(partial, max), Ok(None), "{partial:?}");
        }
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_from_its_head_before_its_payload_arrives() {
        assert_eq!(parse_head(&[0x81, 126, 0x01, 0x01], 256), Err(FrameError::TooLarge));
        assert_eq!(
            parse_head(&[0x81, 127, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], 256),
            Err(FrameError::TooLarge)
        );
        assert_eq!(
            parse_head(&[0x81, 126, 0x01, 0x00], 256).map(|h| h.map(|h| h.payload_len)),
            Ok(Some(256))
        );
    }

    #[test]
    fn hostile_frame_heads_are_protocol_errors() {
        let max = 1 << 20;
        for (bytes, why) in [
            (&[0xC1, 1][..], "reserved bit 1"),
            (&[0xA1, 1], "reserved bit 2"),
            (&[0x91, 1], "reserved bit 3"),
            (&[0x81, 0x81, 1, 2, 3, 4], "masked by the server"),
            (&[0x83, 1], "reserved data opcode"),
            (&[0x8B, 1], "reserved control opcode"),
            (&[0x09, 1], "fragmented ping"),
            (&[0x88, 126, 0, 126], "close over 125 bytes"),
            (&[0x89, 126, 0, 200], "ping over 125 bytes"),
        ] {
            assert_eq!(parse_head(bytes, max), Err(FrameError::Protocol), "{why}");
        }
    }

    #[test]
    fn a_close_frame_reports_its_code_or_breaks_the_protocol() {
        assert_eq!(close_code(&[]), Ok(1005));
        assert_eq!(close_code(&[0x03]), Err(FrameError::Protocol));
        assert_eq!(close_code(&[0x03, 0xE9, b'b', b'y', b'e']), Ok(1001));
        assert_eq!(close_code(&[0x0F, 0xA0]), Ok(4000));
        assert_eq!(close_code(&[0x03, 0xED]), Ok(1002), "1005 may not be sent");
        assert_eq!(close_code(&[0x00, 0x10]), Ok(1002), "below 1000");
        assert_eq!(close_code(&[0x03, 0xE8, 0xFF]), Err(FrameError::Protocol), "reason not UTF-8");
    }

    #[test]
    fn an_upgrade_answer_needs_101_and_the_headers_rfc_6455_requires() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let good = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        let mut with_frame = good.as_bytes().to_vec();
        with_frame.extend_from_slice(&[0x89, 0]);
        assert_eq!(check_upgrade_answer(&with_frame, key), UpgradeAnswer::Upgraded(good.len()));
        assert_eq!(check_upgrade_answer(&good.as_bytes()[..40], key), UpgradeAnswer::Partial);
        assert_eq!(
            check_upgrade_answer(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n", key),
            UpgradeAnswer::Refused(403)
        );
        let wrong_key = good.replace("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", "AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
        assert!(matches!(check_upgrade_answer(wrong_key.as_bytes(), key), UpgradeAnswer::Broken(_)));
        let no_upgrade = good.replace("Upgrade: websocket\r\n", "");
        assert!(matches!(check_upgrade_answer(no_upgrade.as_bytes(), key), UpgradeAnswer::Broken(_)));
        let keep_alive_upgrade = good.replace("Connection: Upgrade", "Connection: keep-alive, upgrade");
        assert!(matches!(
            check_upgrade_answer(keep_alive_upgrade.as_bytes(), key),
            UpgradeAnswer::Upgraded(_)
        ));
        assert!(matches!(check_upgrade_answer(b"\x00\x01garbage\r\n\r\n", key), UpgradeAnswer::Broken(_)));
    }
}
