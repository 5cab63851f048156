//! Watches the frames an HTTP/2 server sends for a GOAWAY, for the gRPC feed: when a server
//! ends a connection with a GOAWAY whose last stream id spares the open subscribe streams and
//! then closes it, HTTP/2's client sees only the connection closing under each stream (h2
//! ends them with a broken pipe), so the feed would report "connection lost". Reading the
//! 9-byte frame headers as the bytes go by (nothing is buffered or copied: a header split
//! across reads is kept in 9 bytes of state) tells the feed that the server said GOAWAY, and
//! with which error code.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// HTTP/2's GOAWAY frame type.
const GOAWAY: u8 = 0x7;
/// A frame header's length.
const HEADER: usize = 9;
/// A GOAWAY payload's error code ends at this byte (last stream id, then the code).
const CODE_END: usize = 8;

/// What a connection's server said by GOAWAY, shared between the watched stream and the feed.
#[derive(Debug, Default, Clone)]
pub(crate) struct GoAwaySeen(Arc<AtomicU64>);

/// Set in [`GoAwaySeen`]'s word when a GOAWAY was read (its low 32 bits are the error code).
const SEEN: u64 = 1 << 32;

impl GoAwaySeen {
    /// The error code of the GOAWAY the server sent, if it sent one.
    pub(crate) fn code(&self) -> Option<u32> {
        let word = self.0.load(Ordering::Relaxed);
        (word & SEEN != 0).then_some(word as u32)
    }

    fn note(&self, code: u32) {
        self.0.store(SEEN | u64::from(code), Ordering::Relaxed);
    }
}

/// Where the reader is in the server's frames.
#[derive(Debug, Default)]
struct FrameCursor {
    /// Bytes of the current frame header read so far.
    header: [u8; HEADER],
    filled: usize,
    /// Payload bytes of the current frame still to go by.
    payload_left: usize,
    /// The current frame is a GOAWAY: its first payload bytes are kept to read the code.
    goaway: Option<([u8; CODE_END], usize)>,
}

impl FrameCursor {
    /// Follows `bytes` (the next bytes the server sent), noting a GOAWAY in `seen`.
    fn follow(&mut self, mut bytes: &[u8], seen: &GoAwaySeen) {
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let take = self.payload_left.min(bytes.len());
                if let Some((code, kept)) = self.goaway.as_mut() {
                    let keep = (CODE_END - *kept).min(take);
                    code[*kept..*kept + keep].copy_from_slice(&bytes[..keep]);
                    *kept += keep;
                    if *kept == CODE_END {
                        seen.note(u32::from_be_bytes([code[4], code[5], code[6], code[7]]));
                        self.goaway = None;
                    }
                }
                self.payload_left -= take;
                bytes = &bytes[take..];
                continue;
            }
            let take = (HEADER - self.filled).min(bytes.len());
            self.header[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == HEADER {
                self.filled = 0;
                let [a, b, c, kind, ..] = self.header;
                self.payload_left = (usize::from(a) << 16) | (usize::from(b) << 8) | usize::from(c);
                self.goaway = None;
                if kind == GOAWAY {
                    if self.payload_left < CODE_END {
                        // Too short to carry a code: a GOAWAY all the same.
                        seen.note(0);
                    } else {
                        self.goaway = Some(([0; CODE_END], 0));
                    }
                }
            }
        }
    }
}

/// A connection whose incoming HTTP/2 frames are watched for a GOAWAY.
#[derive(Debug)]
pub(crate) struct GoAwayWatch<S> {
    inner: S,
    cursor: FrameCursor,
    seen: GoAwaySeen,
}

impl<S> GoAwayWatch<S> {
    /// Watches `inner`'s incoming frames (from its first byte: a server's connection preface
    /// is a frame), noting a GOAWAY in `seen`.
    pub(crate) fn new(inner: S, seen: GoAwaySeen) -> Self {
        Self { inner, cursor: FrameCursor::default(), seen }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for GoAwayWatch<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &result {
            this.cursor.follow(&buf.filled()[before..], &this.seen);
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for GoAwayWatch<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, 0, 0, 0, 0, 0];
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn a_goaway_among_other_frames_is_seen_with_its_code_however_the_reads_split_it() {
        let mut bytes = frame(4, &[]);
        bytes.extend(frame(0, &[0x07; 300])); // DATA whose payload holds GOAWAY's type byte
        bytes.extend(frame(GOAWAY, &[0, 0, 0, 1, 0, 0, 0, 11, b'x']));
        for split in [1, 2, 5, 9, 10, 64, bytes.len()] {
            let (mut cursor, seen) = (FrameCursor::default(), GoAwaySeen::default());
            let goaway_at = bytes.len() - 18;
            for chunk in bytes[..goaway_at].chunks(split) {
                cursor.follow(chunk, &seen);
            }
            assert_eq!(seen.code(), None, "no GOAWAY before its frame (split {split})");
            for chunk in bytes[goaway_at..].chunks(split) {
                cursor.follow(chunk, &seen);
            }
            assert_eq!(seen.code(), Some(11), "ENHANCE_YOUR_CALM (split {split})");
        }
    }
}
