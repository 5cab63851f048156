//! Rate limits as a target shows them: which answers mean "over the limit" ([`signs`]), the
//! limit headers a server announces ([`headers`]), and what a connection does after such an
//! answer ([`pause`]). The `limits` probe (`crate::limits`) is the driver that finds them.

pub(crate) mod headers;
pub(crate) mod pause;
pub(crate) mod signs;
