//! Where a scenario file sets a setting: the library's errors name a [`Field`], and a run
//! read from a scenario names the `file:line:col` of the key that set it (not a CLI flag the
//! user never typed).

use super::*;
use crate::settings::{Field, SettingError};

/// The table and key of a scenario that set `field` (`("load", "max_connections")`), or `None`
/// for a setting a scenario does not have. A stage is the `[[stage]]` table itself.
pub fn key_of(field: &Field) -> Option<(&'static str, &'static str)> {
    let key = match field {
        Field::Url => ("target", "url"),
        Field::Headers => ("target", "headers"),
        Field::Timeout => ("target", "timeout"),
        Field::ConnectTimeout => ("target", "connect_timeout"),
        Field::Keepalive => ("target", "keepalive"),
        Field::MaxBody => ("target", "max_body"),
        Field::FixedId => ("target", "fixed_id"),
        Field::CaFile => ("target", "cacert"),
        Field::Connections => ("load", "connections"),
        Field::MaxConnections => ("load", "max_connections"),
        Field::Rate => ("load", "rate"),
        Field::Duration => ("load", "duration"),
        Field::Requests => ("load", "requests"),
        Field::Warmup => ("load", "warmup"),
        Field::Batch => ("load", "batch"),
        Field::Speed => ("source", "speed"),
        Field::Loop => ("source", "loop"),
        Field::Stage(_) | Field::Stages => ("stage", ""),
        Field::Streams
        | Field::Http2
        | Field::H2c
        | Field::InFlight
        | Field::HttpCalls
        | Field::Shard
        | Field::Ramp
        | Field::Subscriptions
        | Field::Subscribers
        | Field::SubscriptionsPerSocket
        | Field::XToken
        | Field::Method
        | Field::Params
        | Field::IdleTimeout
        | Field::StartRate
        | Field::MaxRate
        | Field::Precision
        | Field::Step
        | Field::Slo
        | Field::StartConnections
        | Field::IgnoredFields
        | Field::Insecure
        | Field::Upstream
        | Field::Listen
        | Field::MetricsListen
        | Field::RecordFile
        | Field::ErrorRate
        | Field::DropRate
        | Field::Threads
        | Field::UpstreamConnections
        | Field::QueueTimeout
        | Field::Race
        | Field::SlotTime
        | Field::FeedQueue
        | Field::FeedAccounts => return None,
    };
    Some(key)
}

/// What is wrong with a replay, the settings it names named by their keys (`[load] rate`).
pub(crate) fn replay_message(err: &crate::replay::ReplayError) -> String {
    match err {
        crate::replay::ReplayError::Setting(err) => err.message_naming(key_name),
        other => other.to_string(),
    }
}

/// How a scenario names `field` in a message: `[load] max_connections`, or the setting's plain
/// name when a scenario has no such key.
fn key_name(field: &Field) -> String {
    match (field, key_of(field)) {
        (Field::Stage(_), _) => field.name(),
        (_, Some((table, key))) => format!("[{table}] {key}"),
        (_, None) => field.name(),
    }
}

impl ScenarioDraft {
    /// The line and column (from 1) where this file sets `field`: the start of the key's
    /// value, or of the `[[stage]]` table for a stage; `None` when the file does not set it.
    pub fn place_of(&self, field: &Field) -> Option<(usize, usize)> {
        let offset = match field {
            Field::Stage(index) => self.file.stages.get(*index).map(|stage| stage.span().start)?,
            // A staged load gives its levels in the stages: the first stage's.
            Field::Connections | Field::Rate => {
                let (table, key) = key_of(field)?;
                value_offset(&self.text, table, key).or_else(|| value_offset(&self.text, "stage", key))?
            }
            _ => {
                let (table, key) = key_of(field)?;
                value_offset(&self.text, table, key)?
            }
        };
        Some(line_col(&self.text, offset))
    }

    /// `err` named by the place in this file of the setting at fault (other settings it
    /// mentions named by their keys), or `None` when the file does not set that setting.
    pub fn locate(&self, err: &SettingError) -> Option<ScenarioError> {
        let (line, column) = self.place_of(&err.field)?;
        Some(ScenarioError { path: self.path.clone(), line, column, message: err.message_naming(key_name) })
    }
}

/// The byte offset of the value of `key` in the top-level table `[table]` of a TOML text, read
/// line by line (`key = value`, the key bare or quoted).
fn value_offset(text: &str, table: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(header) = trimmed.strip_prefix('[') {
            let name = header.trim_start_matches('[');
            current = name.split(']').next().unwrap_or("").trim().to_string();
        } else if current == table {
            let rest = trimmed
                .strip_prefix(key)
                .or_else(|| trimmed.strip_prefix(&format!("\"{key}\"")))
                .filter(|rest| rest.trim_start().starts_with('='));
            if let Some(rest) = rest {
                let after_equals = &rest.trim_start()[1..];
                let value = after_equals.trim_start();
                return Some(offset + indent + (trimmed.len() - value.len()));
            }
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod place_tests {
    use super::*;

    const FILE: &str = r#"
[target]
url = "http://127.0.0.1:1/"
timeout = "2s"

[load]
connections = 8
max_connections = 5000
duration = "1s"

[[call]]
method = "getSlot"

[[stage]]
connections = 4
duration = "1s"

[[stage]]
connections = 0
duration = "1s"
"#;

    #[test]
    fn a_setting_error_names_the_file_line_and_column_of_its_key() {
        let draft = ScenarioDraft::parse(FILE, Path::new("s.toml")).unwrap();
        let err = SettingError::new(Field::MaxConnections, "5000 connections exceed the limit");
        let located = draft.locate(&err).expect("the file sets max_connections");
        assert_eq!(located.to_string(), "s.toml:8:19: 5000 connections exceed the limit");
        assert_eq!(draft.place_of(&Field::Timeout), Some((4, 11)));
        assert_eq!(draft.place_of(&Field::Connections), Some((7, 15)));
        assert_eq!(draft.place_of(&Field::Stage(1)), Some((18, 1)));
        // Without a [load] level, the level of the first stage.
        let staged = FILE.replace("connections = 8\n", "");
        let draft_staged = ScenarioDraft::parse(&staged, Path::new("s.toml")).unwrap();
        assert_eq!(draft_staged.place_of(&Field::Connections), Some((14, 15)));
        // A setting the file leaves out, or one a scenario has no key for: not located.
        assert_eq!(draft.place_of(&Field::Requests), None);
        assert!(draft.locate(&SettingError::new(Field::Streams, "too many")).is_none());
    }

    #[test]
    fn other_settings_in_a_located_message_are_named_by_their_keys() {
        let draft = ScenarioDraft::parse(FILE, Path::new("s.toml")).unwrap();
        let err = SettingError::mentioning(Field::Duration, "cannot go with {}", &[Field::Connections]);
        let located = draft.locate(&err).unwrap();
        assert_eq!(located.message, "cannot go with [load] connections");
        assert!(!located.to_string().contains("--"), "{located}");
    }
}
