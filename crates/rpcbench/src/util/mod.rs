//! Leaf helpers every room may use and that use nothing of the crate's own: human units and
//! RFC 3339 times, size-limited file reads and atomic saves, redaction of secrets, escaping of
//! server text for a terminal, JSON paths and normal forms, the HDR histogram text codec, a
//! fast hasher for bounded tables of numbers, and helper threads stepping aside for the pacer.

pub(crate) mod fast_hash;
pub(crate) mod files;
pub(crate) mod hdr_codec;
pub(crate) mod json_path;
pub(crate) mod printable;
pub(crate) mod redact;
pub(crate) mod thread_class;
pub(crate) mod units;
