//! The library's settings ([`Field`]) as the flags that set them, and [`ConfigError`], the
//! CLI's usage error that names the flag (or argument, or file place) at fault. The library
//! names settings, never flags: every error it returns about a setting is turned into a flag
//! here, and only here.

use std::fmt;

use rpcbench::engine::TooManyConnections;
use rpcbench::field::{Field, SettingError};
use rpcbench::replay::ReplayError;

/// The flag (or positional argument) that sets `field`.
pub fn flag(field: &Field) -> String {
    let flag = match field {
        Field::Url => "URL",
        Field::Connections => "--connections",
        Field::MaxConnections => "--max-connections",
        Field::Rate => "--rate",
        Field::Duration => "--duration",
        Field::Requests => "--requests",
        Field::Timeout => "--timeout",
        Field::ConnectTimeout => "--connect-timeout",
        Field::Headers => "--header",
        Field::MaxBody => "--max-body",
        Field::Batch => "--batch",
        Field::FixedId => "--fixed-id",
        Field::Streams => "--streams",
        Field::Http2 => "--http2",
        Field::H2c => "--h2c",
        Field::InFlight => "--in-flight",
        Field::HttpCalls => "--http",
        Field::Keepalive => "--no-keepalive",
        Field::Warmup => "--warmup",
        Field::Speed => "--speed",
        Field::Loop => "--loop",
        Field::IgnoredFields => "--ignore-field",
        Field::Shard => "--shard",
        // Stages come from a scenario's [[stage]] tables, or from `--stage` on `subscribe`.
        Field::Stage(_) | Field::FeedAccounts => return field.name(),
        Field::Stages => "--stage",
        Field::Ramp => "--ramp",
        Field::Subscriptions => "--sub",
        Field::Subscribers => "--subscribers",
        Field::SubscriptionsPerSocket => "--subs-per-socket",
        Field::XToken => "--x-token",
        Field::Method => "--method",
        Field::Params => "--params",
        Field::IdleTimeout => "--idle-timeout",
        Field::StartRate => "--start-rate",
        Field::MaxRate => "--max-rate",
        Field::Precision => "--precision",
        Field::Step => "--step",
        Field::Slo => "--slo",
        Field::StartConnections => "--start-connections",
        Field::CaFile => "--cacert",
        Field::Insecure => "--insecure",
        Field::Upstream => "--upstream",
        Field::Listen => "--listen",
        Field::MetricsListen => "--metrics-listen",
        Field::RecordFile => "--record",
        Field::ErrorRate => "--error-rate",
        Field::DropRate => "--drop-rate",
        Field::Threads => "--threads",
        Field::UpstreamConnections => "--upstream-connections",
        Field::QueueTimeout => "--queue-timeout",
        Field::Race => "--race",
        Field::SlotTime => "--slot-time",
        Field::FeedQueue => "--grpc-queue",
    };
    flag.to_string()
}

/// A flag, argument or file place that is not usable, and what is wrong with it: what the
/// CLI prints as `error: SETTING: MESSAGE` before exiting 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The flag, argument or place at fault, e.g. `--rate` or `FILE:LINE:COL`.
    pub setting: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    /// A new error for `setting`.
    pub fn new(setting: impl Into<String>, message: impl Into<String>) -> Self {
        Self { setting: setting.into(), message: message.into() }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.setting, self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<SettingError> for ConfigError {
    fn from(err: SettingError) -> Self {
        Self { setting: flag(&err.field), message: err.message_naming(flag) }
    }
}

impl From<TooManyConnections> for ConfigError {
    fn from(err: TooManyConnections) -> Self {
        Self { setting: flag(&err.field), message: err.message() }
    }
}

impl From<ReplayError> for ConfigError {
    fn from(err: ReplayError) -> Self {
        match err {
            ReplayError::Setting(err) => err.into(),
            ReplayError::File { path, message } => Self::new(path.display().to_string(), message),
            ReplayError::Line { path, line, column, message } => {
                Self::new(format!("{}:{line}:{column}", path.display()), message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_error_names_the_flags_of_its_settings() {
        let err = SettingError::mentioning(Field::MaxRate, "must be at least {}", &[Field::StartRate]);
        assert_eq!(ConfigError::from(err).to_string(), "--max-rate: must be at least --start-rate");
        let err = SettingError::new(Field::Stage(0), "every stage has a level of zero");
        assert_eq!(ConfigError::from(err).to_string(), "stage 1: every stage has a level of zero");
        assert_eq!(flag(&Field::Keepalive), "--no-keepalive");
    }
}
