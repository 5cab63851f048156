//! What to send, resolved before a run: vegeta targets files, the built-in suites, sampling a
//! target's recent blocks into pools, and binding a scenario draft to a URL and pools.

pub mod prepare;
pub mod sample;
pub mod suites;
pub mod targets;
