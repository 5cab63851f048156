//! Leaf helpers every room may use and that use nothing of the crate's own: human units and
//! RFC 3339 times, size-limited file reads and atomic saves, redaction of secrets, escaping of
//! server text for a terminal, JSON paths and normal forms, and the HDR histogram text codec.

pub mod files;
pub mod hdr_codec;
pub mod json_path;
pub mod printable;
pub mod redact;
pub mod units;
