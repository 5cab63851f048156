//! A Geyser filter file (`subscribe --filters FILE`): the filters of a Yellowstone `Subscribe`
//! request written once in TOML instead of as `--sub` flags. Each table is one subscription:
//!
//! ```toml
//! commitment = "confirmed"        # every table's, unless it gives its own
//!
//! [slots]                         # geyser-slot (or with stages = true, geyser-stages)
//! stages = false
//!
//! [blocks_meta]                   # geyser-blocks-meta
//!
//! [transactions]                  # geyser-tx
//! include = ["PUBKEY"]            # any of these accounts
//! exclude = ["PUBKEY"]            # none of these
//! required = ["PUBKEY"]           # all of these
//! vote = false
//! failed = false
//!
//! [accounts]                      # geyser-account
//! pubkeys = ["PUBKEY"]
//! owners = ["PUBKEY"]
//! ```
//!
//! Mistakes name the file, line and column: an unknown table or key, a commitment that is not
//! one, a key that is not a base58 public key, an `[accounts]` table with nothing to match.
//! The file and `--sub` flags merge by one rule ([`merge`]): a flag of the same kind as a
//! table replaces the table (flags win), every other flag is added.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use yellowstone_grpc_proto::geyser::{
    CommitmentLevel, SubscribeRequestFilterAccounts, SubscribeRequestFilterTransactions,
};

use super::kinds::geyser::{commitment, GeyserFilter};
use super::kinds::SubscriptionKind;

/// Why a filter file cannot be used: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterFileError {
    /// It could not be read.
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A mistake at a place in it.
    At {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
}

impl std::fmt::Display for FilterFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FilterFileError::Read { path, reason } => write!(f, "{path}: cannot read: {reason}"),
            FilterFileError::At { path, line, column, message } => {
                write!(f, "{path}:{line}:{column}: {message}")
            }
        }
    }
}

impl std::error::Error for FilterFileError {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterFile {
    commitment: Option<Spanned<String>>,
    slots: Option<SlotsTable>,
    blocks_meta: Option<BlocksMetaTable>,
    transactions: Option<TransactionsTable>,
    accounts: Option<Spanned<AccountsTable>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlotsTable {
    #[serde(default)]
    stages: bool,
    commitment: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlocksMetaTable {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TransactionsTable {
    #[serde(default)]
    include: Vec<Spanned<String>>,
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
    #[serde(default)]
    required: Vec<Spanned<String>>,
    vote: Option<bool>,
    failed: Option<bool>,
    commitment: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountsTable {
    #[serde(default)]
    pubkeys: Vec<Spanned<String>>,
    #[serde(default)]
    owners: Vec<Spanned<String>>,
}

/// Reads the filter file at `path` into its subscriptions, in the order slots, blocks meta,
/// transactions, accounts.
pub fn load(path: &Path) -> Result<Vec<SubscriptionKind>, FilterFileError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| FilterFileError::Read { path: path.display().to_string(), reason: err.to_string() })?;
    parse(&text, &path.display().to_string())
}

/// Reads a filter file's text; `path` names it in errors.
pub fn parse(text: &str, path: &str) -> Result<Vec<SubscriptionKind>, FilterFileError> {
    let at = |offset: usize, message: String| {
        let (line, column) = crate::scenario::line_col(text, offset);
        FilterFileError::At { path: path.to_string(), line, column, message }
    };
    let file: FilterFile = toml::from_str(text).map_err(|err| {
        let offset = err.span().map_or(0, |span| span.start);
        at(offset, err.message().to_string())
    })?;
    let level = |given: &Option<Spanned<String>>, default: CommitmentLevel| match given {
        None => Ok(default),
        Some(name) => commitment(name.get_ref()).map_err(|message| at(name.span().start, message)),
    };
    let keys = |keys: &[Spanned<String>]| -> Result<Vec<String>, FilterFileError> {
        keys.iter()
            .map(|key| {
                let text = key.get_ref();
                match bs58::decode(text).into_vec() {
                    Ok(bytes) if bytes.len() == 32 => Ok(text.clone()),
                    _ => Err(at(key.span().start, format!("'{text}' is not a base58 public key (32 bytes)"))),
                }
            })
            .collect()
    };
    let everyone = level(&file.commitment, CommitmentLevel::Processed)?;
    let mut kinds = Vec::new();
    if let Some(slots) = &file.slots {
        let commitment = level(&slots.commitment, everyone)?;
        kinds.push(GeyserFilter::Slots { stages: slots.stages, commitment }.kind());
    }
    if file.blocks_meta.is_some() {
        kinds.push(GeyserFilter::BlocksMeta.kind());
    }
    if let Some(table) = &file.transactions {
        let filter = SubscribeRequestFilterTransactions {
            vote: table.vote,
            failed: table.failed,
            account_include: keys(&table.include)?,
            account_exclude: keys(&table.exclude)?,
            account_required: keys(&table.required)?,
            ..Default::default()
        };
        let commitment = level(&table.commitment, everyone)?;
        kinds.push(GeyserFilter::Transactions { filter, commitment }.kind());
    }
    if let Some(table) = &file.accounts {
        let filter = SubscribeRequestFilterAccounts {
            account: keys(&table.get_ref().pubkeys)?,
            owner: keys(&table.get_ref().owners)?,
            ..Default::default()
        };
        if filter.account.is_empty() && filter.owner.is_empty() {
            return Err(at(table.span().start, "[accounts] needs pubkeys or owners".into()));
        }
        kinds.push(GeyserFilter::Accounts { filter }.kind());
    }
    if kinds.is_empty() {
        return Err(at(0, "no filter: give [slots], [blocks_meta], [transactions] or [accounts]".into()));
    }
    Ok(kinds)
}

/// The file's subscriptions with the `--sub` flags': a flag of the same kind as one of the
/// file's replaces it (flags win), every other flag is added after the file's.
pub fn merge(file: Vec<SubscriptionKind>, flags: Vec<SubscriptionKind>) -> Vec<SubscriptionKind> {
    let mut kinds: Vec<SubscriptionKind> =
        file.into_iter().filter(|kind| !flags.iter().any(|flag| flag.name() == kind.name())).collect();
    kinds.extend(flags);
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::feed::SubscribeCall;

    const KEY: &str = "11111111111111111111111111111111";

    fn request(kind: &SubscriptionKind) -> yellowstone_grpc_proto::geyser::SubscribeRequest {
        match kind.call() {
            SubscribeCall::Geyser(request) => *request,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_filter_file_builds_every_table_as_a_subscription() {
        let text = format!(
            "commitment = \"confirmed\"\n[slots]\n[blocks_meta]\n[transactions]\ninclude = [\"{KEY}\"]\nvote = false\nfailed = false\ncommitment = \"finalized\"\n[accounts]\nowners = [\"{KEY}\"]\n"
        );
        let kinds = parse(&text, "f.toml").unwrap();
        let names: Vec<&str> = kinds.iter().map(SubscriptionKind::name).collect();
        assert_eq!(names, ["geyser-slot", "geyser-blocks-meta", "geyser-tx", "geyser-account"]);
        assert_eq!(request(&kinds[0]).commitment, Some(CommitmentLevel::Confirmed as i32));
        let tx = request(&kinds[2]);
        assert_eq!(tx.commitment, Some(CommitmentLevel::Finalized as i32));
        let filter = tx.transactions.values().next().unwrap();
        assert_eq!(
            (filter.account_include.as_slice(), filter.vote, filter.failed),
            ([KEY.to_string()].as_slice(), Some(false), Some(false))
        );
        assert_eq!(request(&kinds[3]).accounts.values().next().unwrap().owner, [KEY]);
        let stages = parse("[slots]\nstages = true\n", "f.toml").unwrap();
        assert_eq!(stages[0].name(), "geyser-stages");
    }

    #[test]
    fn filter_file_mistakes_name_the_file_line_and_column() {
        let cases = [
            ("[slots]\nspeed = 3\n", 2, 1, "unknown field `speed`"),
            ("[slots]\ncommitment = \"fast\"\n", 2, 14, "unknown commitment 'fast'"),
            ("[transactions]\ninclude = [\"0xabc\"]\n", 2, 12, "not a base58 public key"),
            ("[blocks]\n", 1, 2, "unknown field `blocks`"),
            ("\n\n[accounts]\n", 3, 1, "needs pubkeys or owners"),
            ("# nothing\n", 1, 1, "no filter"),
        ];
        for (text, line, column, words) in cases {
            let err = parse(text, "f.toml").unwrap_err();
            let shown = err.to_string();
            assert!(shown.starts_with(&format!("f.toml:{line}:{column}: ")), "{text:?}: {shown}");
            assert!(shown.contains(words), "{text:?}: {shown}");
        }
    }

    #[test]
    fn a_sub_flag_replaces_the_files_subscription_of_its_kind_and_others_are_added() {
        let file = parse(&format!("[slots]\n[transactions]\ninclude = [\"{KEY}\"]\n"), "f.toml").unwrap();
        let flags = vec![
            SubscriptionKind::parse("geyser-tx:vote=true").unwrap(),
            SubscriptionKind::parse("geyser-blocks-meta").unwrap(),
        ];
        let merged = merge(file, flags);
        let names: Vec<&str> = merged.iter().map(SubscriptionKind::name).collect();
        assert_eq!(names, ["geyser-slot", "geyser-tx", "geyser-blocks-meta"]);
        let tx = request(&merged[1]);
        let filter = tx.transactions.values().next().unwrap();
        assert_eq!((filter.vote, filter.account_include.len()), (Some(true), 0));
    }
}
