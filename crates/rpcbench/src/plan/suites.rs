//! Built-in suites: scenario files embedded in the binary, without a URL (it comes from the
//! command line: `rpcbench run URL --suite NAME`), whose params are drawn from pools sampled
//! from the target.

use std::path::Path;

use crate::scenario::{ScenarioDraft, ScenarioError};

/// One built-in suite.
#[derive(Debug, Clone, Copy)]
pub struct Suite {
    /// The name given to `--suite`.
    pub name: &'static str,
    /// One line about it.
    pub description: &'static str,
    /// The scenario's TOML text.
    pub text: &'static str,
}

impl Suite {
    /// The suite read as a scenario draft (named `suite:NAME` in errors).
    pub fn draft(&self) -> Result<ScenarioDraft, ScenarioError> {
        ScenarioDraft::parse(self.text, Path::new(&format!("suite:{}", self.name)))
    }
}

/// Every built-in suite.
pub const SUITES: &[Suite] = &[
    Suite {
        name: "solana-seed",
        description:
            "seed 000's four Solana tests: getBalance, getBlocks, getBlock (full), getSlot on sampled slots",
        text: include_str!("../../suites/solana-seed.toml"),
    },
    Suite {
        name: "solana-rpc",
        description: "a Solana wallet and explorer mix: balances, accounts, signatures, transactions, blocks",
        text: include_str!("../../suites/solana-rpc.toml"),
    },
    Suite {
        name: "ethereum-relay",
        description:
            "seed 003's Ethereum relay calls (eth_call, eth_estimateGas, lookups) with sampled values",
        text: include_str!("../../suites/ethereum-relay.toml"),
    },
    Suite {
        name: "ethereum-dapp",
        description:
            "a dapp front end's Ethereum reads: gas price, logs, eth_call, balances, blocks, transactions",
        text: include_str!("../../suites/ethereum-dapp.toml"),
    },
];

/// The suite named `name`.
pub fn find(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|suite| suite.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_reads_and_needs_a_url_from_the_command_line() {
        for suite in SUITES {
            let draft = suite.draft().unwrap_or_else(|err| panic!("{}: {err}", suite.name));
            assert_eq!(draft.url(), None, "{}", suite.name);
            assert!(!draft.pools_needed().is_empty(), "{}", suite.name);
            let error = draft.resolve(None, None).unwrap_err().to_string();
            assert!(error.contains("no URL"), "{error}");
        }
    }
}
