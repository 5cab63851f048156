//! Signed transactions under load (`rpcbench tx`): sender keys ([`keys`]), signing and
//! decoding ([`sign`]), the nonce book per sender ([`nonce`]), the signed-ahead queue
//! ([`ahead`]) and why a node refused a transaction ([`refusal`]). Nothing here opens a socket; the mock node's mempool and the
//! command's driver use these pieces.

pub mod ahead;
pub mod keys;
pub mod nonce;
pub mod refusal;
pub mod sign;
