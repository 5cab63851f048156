//! Signed transactions under load (`rpcbench tx`): sender keys ([`keys`]) and funding them
//! from the first before load ([`fund`]), signing and
//! decoding ([`sign`]), the nonce book per sender ([`nonce`]), the signed-ahead queue
//! ([`ahead`], on both chains' [`ahead_queue`]) and how much a run keeps in hand at its rate ([`headroom`]), why a node refused a transaction ([`refusal`]) and which block included each
//! one, when ([`inclusion`]), the status of its receipt ([`receipts`]) and how much of each block was ours ([`block_shares`]), from the heads [`watch`] sees arrive (through the feed seam) or
//! [`poll`] polls without WebSocket (the two modules here that open sockets; `feed_watch` is
//! the watch's thread and handshake, shared with Solana's signature watch); a nonce refusal
//! goes back to the signer through [`resync`], an "insufficient funds" one
//! refills the sender from the funder ([`top_up`]). The node's hex numbers are read by [`quantity`]; both chains' landing watches
//! run on [`landing_loop`]'s thread while the engine sends. The mock node's mempool and the
//! command's driver use these pieces. Solana's pieces are in [`solana`].

pub mod ahead;
pub mod ahead_queue;
pub mod block_shares;
pub mod ethereum_landing;
pub(crate) mod feed_watch;
pub mod fund;
pub mod headroom;
pub mod inclusion;
pub mod keys;
pub mod landing_loop;
pub mod nonce;
pub mod poll;
pub mod quantity;
pub mod receipts;
pub mod refusal;
pub mod resync;
pub mod sends_noted;
pub mod sign;
pub mod signer_watch;
pub mod solana;
pub mod top_up;
pub mod watch;
