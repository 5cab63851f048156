//! The codes a wire ends a call with, by name and bucket: HTTP/2's RST_STREAM codes, gRPC's
//! status codes and WebSocket close codes. A code no standard defines is counted in one bucket,
//! so a hostile server's codes cannot grow the outcome table.

/// The HTTP/2 error codes RST_STREAM may carry (RFC 9113, section 7), by number; any other
/// number is counted as [`UNKNOWN_RESET_CODE`].
pub(super) const RESET_CODES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// Where RST_STREAM codes the RFC does not define are counted (one bucket: a hostile server's
/// codes cannot grow the table).
pub const UNKNOWN_RESET_CODE: u32 = u32::MAX;

/// The name of an RST_STREAM error code (`"CANCEL"`), `"unknown"` for codes the RFC does not
/// define.
pub fn reset_code_name(code: u32) -> &'static str {
    RESET_CODES.get(code as usize).copied().unwrap_or("unknown")
}

/// The code a reset is counted under: itself when the RFC defines it, else
/// [`UNKNOWN_RESET_CODE`].
pub fn reset_code_bucket(code: u32) -> u32 {
    if (code as usize) < RESET_CODES.len() {
        code
    } else {
        UNKNOWN_RESET_CODE
    }
}

/// The gRPC status codes (grpc/doc/statuscodes.md), by number; any other number is counted as
/// [`UNKNOWN_GRPC_STATUS`].
pub(super) const GRPC_STATUSES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// Where `grpc-status` codes gRPC does not define are counted (one bucket: a hostile server's
/// codes cannot grow the table).
pub const UNKNOWN_GRPC_STATUS: u32 = u32::MAX;

/// The name of a gRPC status code (`"UNAUTHENTICATED"`), `"unknown"` for codes gRPC does not
/// define.
pub fn grpc_status_name(code: u32) -> &'static str {
    GRPC_STATUSES.get(code as usize).copied().unwrap_or("unknown")
}

/// The code a gRPC status is counted under: itself when gRPC defines it, else
/// [`UNKNOWN_GRPC_STATUS`].
pub fn grpc_status_bucket(code: u32) -> u32 {
    if (code as usize) < GRPC_STATUSES.len() {
        code
    } else {
        UNKNOWN_GRPC_STATUS
    }
}

/// The most distinct WebSocket close codes counted one by one; further codes are counted
/// under [`OTHER_CLOSE_CODE`].
pub const MAX_CLOSE_CODES: usize = 32;

/// The key of the WebSocket close codes counted past [`MAX_CLOSE_CODES`] (0 is no close code a
/// server can send).
pub const OTHER_CLOSE_CODE: u16 = 0;

/// A WebSocket close code as reports show it (`other` for the codes past the first
/// [`MAX_CLOSE_CODES`]).
pub fn close_code_text(code: u16) -> String {
    if code == OTHER_CLOSE_CODE {
        "other".to_string()
    } else {
        code.to_string()
    }
}
