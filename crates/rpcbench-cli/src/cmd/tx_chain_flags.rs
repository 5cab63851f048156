//! `tx` flags that only one chain reads: given to a run on the other chain they are refused by
//! name (exit 2) before anything is sent, not silently ignored (a `--key-file` on a Solana node
//! sent from generated payers, a `--keypair` on an Ethereum node was never read).

use std::time::Duration;

use crate::args::tx::{CommitmentArg, LandingArg, TxArgs};

/// The Ethereum-only flags `args` sets (a flag with a default counts when it differs from it).
fn ethereum_flags(args: &TxArgs) -> Vec<&'static str> {
    let given = [
        ("--key-file", args.key_file.is_some()),
        ("--mnemonic", args.mnemonic.is_some()),
        ("--dev", args.dev),
        ("--fund-amount", args.fund_amount.is_some()),
        ("--no-fund", args.no_fund),
        ("--fund-timeout", args.fund_timeout != Duration::from_secs(60)),
        ("--chain-id", args.chain_id.is_some()),
        ("--confirm-depth", args.confirm_depth != rpcbench::tx::inclusion::DEFAULT_CONFIRM_DEPTH),
        ("--receipts", args.receipts != rpcbench::tx::receipts::ReceiptSample::ALL),
        ("--gas-price", args.gas_price.is_some()),
        ("--max-fee", args.max_fee.is_some()),
        ("--priority-fee", args.priority_fee.is_some()),
        ("--gas-limit", args.gas_limit.is_some()),
        ("--to", args.to.is_some()),
        ("--data", args.data.is_some()),
        ("--deploy", args.deploy.is_some()),
    ];
    given.iter().filter(|(_, set)| *set).map(|(flag, _)| *flag).collect()
}

/// The Solana-only flags `args` sets.
fn solana_flags(args: &TxArgs) -> Vec<&'static str> {
    let solana = &args.solana;
    let given = [
        ("--keypair", !solana.keypair.is_empty()),
        ("--airdrop", solana.airdrop.is_some()),
        ("--lamports", solana.lamports != 1),
        ("--cu-price", solana.cu_price.is_some()),
        ("--skip-preflight", solana.skip_preflight),
        ("--commitment", solana.commitment != CommitmentArg::Confirmed),
        ("--blockhash-refresh", solana.blockhash_refresh != Duration::from_millis(400)),
        ("--landing", solana.landing != LandingArg::Signatures),
    ];
    given.iter().filter(|(_, set)| *set).map(|(flag, _)| *flag).collect()
}

/// Refuses, naming the first, the flags of the chain the node is not (`solana`: it is Solana).
pub fn other_chain_flags(args: &TxArgs, solana: bool) -> Result<(), String> {
    let (foreign, this, other, own) = if solana {
        (
            ethereum_flags(args),
            "Solana",
            "Ethereum",
            "payers: --keypair FILE, or --senders N funded by --airdrop",
        )
    } else {
        (solana_flags(args), "Ethereum", "Solana", "sender keys: --key-file, --mnemonic or --dev")
    };
    match foreign.first() {
        None => Ok(()),
        Some(flag) => Err(format!("{flag}: for {other} nodes, and this node is {this} ({own})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::tx::tests::tx_args;

    #[test]
    fn the_defaults_and_the_shared_flags_belong_to_both_chains() {
        let args = tx_args(&["--senders", "3", "--poll", "1s", "--mainnet", "-H", "a: b"]);
        assert!(other_chain_flags(&args, true).is_ok());
        assert!(other_chain_flags(&args, false).is_ok());
        let args = tx_args(&["--commitment", "confirmed", "--confirm-depth", "8", "--lamports", "1"]);
        assert!(other_chain_flags(&args, true).is_ok() && other_chain_flags(&args, false).is_ok());
    }

    #[test]
    fn a_flag_of_the_other_chain_is_named() {
        let err = other_chain_flags(&tx_args(&["--key-file", "k.txt"]), true).unwrap_err();
        assert!(err.starts_with("--key-file: for Ethereum nodes, and this node is Solana"), "{err}");
        let err = other_chain_flags(&tx_args(&["--dev", "--commitment", "finalized"]), false).unwrap_err();
        assert!(err.starts_with("--commitment: for Solana nodes, and this node is Ethereum"), "{err}");
        assert!(other_chain_flags(&tx_args(&["--dev", "--receipts", "none"]), true).is_err());
        assert!(other_chain_flags(&tx_args(&["--keypair", "id.json"]), false).is_err());
    }
}
