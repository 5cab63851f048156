//! Why a node refused `eth_sendRawTransaction` (or Solana's `sendTransaction`), read from its
//! JSON-RPC error: the messages geth, anvil, reth, erigon, nethermind and Agave answer with, by
//! the reasons a load test acts on (a nonce refusal resyncs the sender, the others are counted).
//! The reasons themselves are rows of the one outcome table (`crate::outcome::CLASSES`).

use crate::outcome::Outcome;
pub use crate::outcome::TxRefusal;

impl TxRefusal {
    /// Reads a JSON-RPC error's `code` and `message`.
    pub fn classify(code: i64, message: &str) -> TxRefusal {
        let message = message.to_ascii_lowercase();
        let has = |word: &str| message.contains(word);
        if has("nonce too low") || has("nonce has already been used") || has("oldnonce") {
            TxRefusal::NonceTooLow
        } else if has("nonce too high") || has("nonce gap") || has("nonce is too high") {
            TxRefusal::NonceGap
        } else if has("replacement") && has("underpriced") {
            TxRefusal::ReplacementUnderpriced
        } else if has("already known") || has("already imported") || has("alreadyknown") {
            TxRefusal::AlreadyKnown
        } else if has("blockhash not found") {
            TxRefusal::BlockhashNotFound
        } else if has("already been processed") || has("alreadyprocessed") {
            TxRefusal::AlreadyProcessed
        } else if has("insufficient funds")
            || has("insufficient balance")
            || has("no record of a prior credit")
        {
            TxRefusal::InsufficientFunds
        } else if has("underpriced") || has("less than block base fee") || has("fee cap") {
            TxRefusal::Underpriced
        } else if has("txpool is full") || has("pool is full") || has("pool full") {
            TxRefusal::PoolFull
        } else if has("intrinsic gas") || has("gas limit") {
            TxRefusal::Gas
        } else if code == -32005 || code == 429 || has("rate limit") || has("too many requests") {
            TxRefusal::RateLimited
        } else {
            TxRefusal::Other(code)
        }
    }

    /// The outcome a send refused this way is counted under, from the one it was classified
    /// as on the wire (a JSON-RPC error): its reason's row of the one outcome table.
    pub(crate) fn counted(self, answered: Outcome) -> Outcome {
        match answered {
            Outcome::RpcError(code) => self.outcome(code),
            other => other,
        }
    }

    /// Whether the sender's nonce must be fetched from the node again.
    pub fn needs_resync(self) -> bool {
        matches!(self, TxRefusal::NonceTooLow | TxRefusal::NonceGap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_of_the_clients_map_to_their_reasons() {
        let table = [
            (-32000, "nonce too low: next nonce 5, tx nonce 3", TxRefusal::NonceTooLow),
            (-32003, "Nonce too low", TxRefusal::NonceTooLow),
            (-32000, "nonce too high", TxRefusal::NonceGap),
            (-32000, "replacement transaction underpriced", TxRefusal::ReplacementUnderpriced),
            (-32000, "already known", TxRefusal::AlreadyKnown),
            (-32000, "insufficient funds for gas * price + value: balance 0", TxRefusal::InsufficientFunds),
            (-32000, "transaction underpriced", TxRefusal::Underpriced),
            (-32000, "max fee per gas less than block base fee", TxRefusal::Underpriced),
            (-32000, "txpool is full", TxRefusal::PoolFull),
            (-32000, "intrinsic gas too low", TxRefusal::Gas),
            (-32005, "limit exceeded", TxRefusal::RateLimited),
            (-32602, "invalid argument 0", TxRefusal::Other(-32602)),
            (-32002, "Transaction simulation failed: Blockhash not found", TxRefusal::BlockhashNotFound),
            (
                -32002,
                "Transaction simulation failed: This transaction has already been processed",
                TxRefusal::AlreadyProcessed,
            ),
            (
                -32002,
                "Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.",
                TxRefusal::InsufficientFunds,
            ),
        ];
        for (code, message, reason) in table {
            assert_eq!(TxRefusal::classify(code, message), reason, "{message}");
        }
        assert!(TxRefusal::NonceGap.needs_resync());
        assert!(!TxRefusal::PoolFull.needs_resync());
        assert_eq!(TxRefusal::Other(-1).name(), "rpc_-1");
    }
}
