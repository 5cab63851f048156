//! The settings a run, a capacity search, a subscription run or a proxy is made of, named as settings
//! ([`Field`]) rather than as the CLI flags or scenario keys that set them, and [`SettingError`],
//! the error that says which setting is at fault. The CLI maps a [`Field`] to its flag, the
//! scenario loader to the `file:line:col` of its key: the library names neither.

use std::fmt;

/// One setting, whatever sets it (a CLI flag, a scenario key, a library caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The endpoint's URL.
    Url,
    /// Connections of a closed-loop run (or held connections of an open-loop run).
    Connections,
    /// The most connections an open-loop run or a search may open.
    MaxConnections,
    /// Requests per second of an open-loop run.
    Rate,
    /// How long the run lasts.
    Duration,
    /// How many requests the run sends.
    Requests,
    /// The response timeout.
    Timeout,
    /// The connect timeout.
    ConnectTimeout,
    /// The extra request headers.
    Headers,
    /// The largest response body read.
    MaxBody,
    /// Calls per JSON-RPC batch.
    Batch,
    /// The one id every request carries.
    FixedId,
    /// HTTP/2 streams per connection.
    Streams,
    /// HTTP/2 over TLS.
    Http2,
    /// Cleartext HTTP/2.
    H2c,
    /// Requests in flight per WebSocket.
    InFlight,
    /// Plain HTTP calls instead of JSON-RPC.
    HttpCalls,
    /// Keeping connections open between requests.
    Keepalive,
    /// The warm-up before measuring.
    Warmup,
    /// A replay's speed factor.
    Speed,
    /// A replay that loops over its file.
    Loop,
    /// The response fields a replay leaves out of its digests.
    IgnoredFields,
    /// This run's share of a sharded load.
    Shard,
    /// One stage of a staged load, from 0.
    Stage(usize),
    /// The stages of a subscription run.
    Stages,
    /// The ramp of a subscription run.
    Ramp,
    /// The subscription kinds.
    Subscriptions,
    /// The number of subscribers.
    Subscribers,
    /// Subscriptions per WebSocket.
    SubscriptionsPerSocket,
    /// The x-token sent to a Geyser feed.
    XToken,
    /// The method a run calls (`--method`).
    Method,
    /// The params of the method a run calls (`--params`).
    Params,
    /// How long a connection may receive nothing: a subscription's stall, a proxy's idle client.
    IdleTimeout,
    /// A capacity search's first rate.
    StartRate,
    /// A capacity search's highest rate.
    MaxRate,
    /// A capacity search's precision.
    Precision,
    /// A capacity search's step length.
    Step,
    /// A capacity search's service-level objective.
    Slo,
    /// A connection search's first count.
    StartConnections,
    /// The file of CA certificates trusted for TLS.
    CaFile,
    /// Skipping the TLS certificate check.
    Insecure,
    /// The upstream a proxy relays to.
    Upstream,
    /// The address a proxy or mock listens on.
    Listen,
    /// The address the Prometheus endpoint listens on.
    MetricsListen,
    /// The traffic file a proxy records to.
    RecordFile,
    /// The share of requests a proxy answers with an injected error.
    ErrorRate,
    /// The share of requests a proxy drops.
    DropRate,
    /// Threads a proxy serves on.
    Threads,
    /// Connections a proxy holds to its upstream.
    UpstreamConnections,
    /// How long a proxy's request may wait for an upstream connection.
    QueueTimeout,
    /// The endpoints of a feed race.
    Race,
    /// A mock chain's slot (block) time.
    SlotTime,
    /// Updates a mock gRPC feed queues per subscriber.
    FeedQueue,
    /// The accounts a mock gRPC feed's transactions touch.
    FeedAccounts,
}

impl Field {
    /// A plain name of the setting, such as `max_connections`, `URL` or `stage 2`: what a
    /// [`SettingError`] shows when nobody maps the field to a flag or a key.
    pub fn name(&self) -> String {
        let name = match self {
            Field::Url => "URL",
            Field::Connections => "connections",
            Field::MaxConnections => "max_connections",
            Field::Rate => "rate",
            Field::Duration => "duration",
            Field::Requests => "requests",
            Field::Timeout => "timeout",
            Field::ConnectTimeout => "connect_timeout",
            Field::Headers => "headers",
            Field::MaxBody => "max_body",
            Field::Batch => "batch",
            Field::FixedId => "fixed_id",
            Field::Streams => "streams",
            Field::Http2 => "http2",
            Field::H2c => "h2c",
            Field::InFlight => "in_flight",
            Field::HttpCalls => "http",
            Field::Keepalive => "keepalive",
            Field::Warmup => "warmup",
            Field::Speed => "speed",
            Field::Loop => "loop",
            Field::IgnoredFields => "ignore_fields",
            Field::Shard => "shard",
            Field::Stage(index) => return format!("stage {}", index + 1),
            Field::Stages => "stages",
            Field::Ramp => "ramp",
            Field::Subscriptions => "subscriptions",
            Field::Subscribers => "subscribers",
            Field::SubscriptionsPerSocket => "subs_per_socket",
            Field::XToken => "x_token",
            Field::Method => "method",
            Field::Params => "params",
            Field::IdleTimeout => "idle_timeout",
            Field::StartRate => "start_rate",
            Field::MaxRate => "max_rate",
            Field::Precision => "precision",
            Field::Step => "step",
            Field::Slo => "slo",
            Field::StartConnections => "start_connections",
            Field::CaFile => "ca_file",
            Field::Insecure => "insecure",
            Field::Upstream => "upstream",
            Field::Listen => "listen",
            Field::MetricsListen => "metrics_listen",
            Field::RecordFile => "record",
            Field::ErrorRate => "error_rate",
            Field::DropRate => "drop_rate",
            Field::Threads => "threads",
            Field::UpstreamConnections => "upstream_connections",
            Field::QueueTimeout => "queue_timeout",
            Field::Race => "race",
            Field::SlotTime => "slot_time",
            Field::FeedQueue => "feed_queue",
            Field::FeedAccounts => "feed_accounts",
        };
        name.to_string()
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A setting that is not usable: which one, and what is wrong with it. The message may name
/// other settings (`must be at least {}` the start rate): each `{}` in it stands for one of
/// [`SettingError::mentions`], in order, so whoever shows the error names them as it names
/// the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError {
    /// The setting at fault.
    pub field: Field,
    template: String,
    mentions: Vec<Field>,
}

impl SettingError {
    /// A new error for `field`; `message` names no other setting.
    pub fn new(field: Field, message: impl Into<String>) -> Self {
        Self { field, template: message.into().replace('{', "{{").replace('}', "}}"), mentions: Vec::new() }
    }

    /// A new error for `field` whose message names other settings: each `{}` in `template`
    /// stands for the next of `mentions`.
    pub fn mentioning(field: Field, template: &str, mentions: &[Field]) -> Self {
        Self { field, template: template.to_string(), mentions: mentions.to_vec() }
    }

    /// The other settings the message names, in order.
    pub fn mentions(&self) -> &[Field] {
        &self.mentions
    }

    /// What is wrong, the settings it mentions named by `name`.
    pub fn message_naming(&self, name: impl Fn(&Field) -> String) -> String {
        let mut out = String::with_capacity(self.template.len());
        let mut mentions = self.mentions.iter();
        let mut rest = self.template.as_str();
        while let Some(at) = rest.find(['{', '}']) {
            out.push_str(&rest[..at]);
            let tail = &rest[at..];
            rest = if let Some(after) = tail.strip_prefix("{{") {
                out.push('{');
                after
            } else if let Some(after) = tail.strip_prefix("}}") {
                out.push('}');
                after
            } else if let Some(after) = tail.strip_prefix("{}") {
                if let Some(field) = mentions.next() {
                    out.push_str(&name(field));
                }
                after
            } else {
                out.push_str(&tail[..1]);
                &tail[1..]
            };
        }
        out.push_str(rest);
        out
    }

    /// What is wrong, other settings named by their plain names ([`Field::name`]).
    pub fn message(&self) -> String {
        self.message_naming(Field::name)
    }
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

impl std::error::Error for SettingError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_names_the_settings_it_mentions_as_the_reader_names_them() {
        let err = SettingError::mentioning(Field::MaxRate, "must be at least {}", &[Field::StartRate]);
        assert_eq!(err.to_string(), "max_rate: must be at least start_rate");
        let flag = |field: &Field| format!("--{}", field.name().replace('_', "-"));
        assert_eq!(err.message_naming(flag), "must be at least --start-rate");
    }

    #[test]
    fn braces_in_a_plain_message_are_shown_as_they_are() {
        let err = SettingError::new(Field::Headers, "'{x}' is set by rpcbench");
        assert_eq!(err.message(), "'{x}' is set by rpcbench");
        assert_eq!(SettingError::new(Field::Stage(1), "bad").to_string(), "stage 2: bad");
    }
}
