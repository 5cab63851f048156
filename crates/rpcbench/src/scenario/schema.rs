//! The scenario file's TOML schema: its tables and keys as serde types, with the values
//! (durations, rates, sizes, counts, speeds) checked while the file is read, each with its
//! place in the file.

use super::*;

/// A duration written as a string (`"10s"`), checked while the file is read.
#[derive(Debug, Clone, Copy)]
pub(super) struct DurationValue(pub(super) Duration);

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_duration(&text).map(DurationValue).map_err(D::Error::custom)
    }
}

/// A rate: a number or a string such as `"50/s"`.
#[derive(Debug, Clone, Copy)]
pub(super) struct RateValue(pub(super) f64);

impl<'de> Deserialize<'de> for RateValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let text = match Raw::deserialize(deserializer)? {
            Raw::Number(number) => number.to_string(),
            Raw::Text(text) => text,
        };
        parse_rate(&text).map(RateValue).map_err(D::Error::custom)
    }
}

/// A byte size written as a string (`"10MB"`) or a number.
#[derive(Debug, Clone, Copy)]
pub(super) struct SizeValue(pub(super) u64);

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(number) => Ok(SizeValue(number)),
            Raw::Text(text) => parse_size(&text).map(SizeValue).map_err(D::Error::custom),
        }
    }
}

/// A count that must be at least one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Positive(pub(super) u64);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = u64::deserialize(deserializer)?;
        if value == 0 {
            return Err(D::Error::custom("must be at least 1"));
        }
        Ok(Positive(value))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    #[serde(default)]
    pub(super) thresholds: Vec<Spanned<String>>,
    /// JSON-RPC error codes that mean "rate limited" at this provider, beside the built-in ones.
    #[serde(default)]
    pub(super) rate_limit_codes: Vec<i64>,
    #[serde(default)]
    pub(super) target: TargetSection,
    /// Several targets, each run in turn with the same load and parameters.
    #[serde(default)]
    pub(super) targets: Vec<Spanned<TargetEntry>>,
    #[serde(default)]
    pub(super) sample: Option<Spanned<SampleSection>>,
    #[serde(default)]
    pub(super) load: LoadSection,
    #[serde(default)]
    pub(super) generators: BTreeMap<String, Spanned<GeneratorSpec>>,
    #[serde(default, rename = "call")]
    pub(super) calls: Option<Spanned<Vec<CallSection>>>,
    /// Recorded requests to replay instead of a mix of calls.
    #[serde(default)]
    pub(super) source: Option<Spanned<SourceSection>>,
    #[serde(default, rename = "stage")]
    pub(super) stages: Vec<Spanned<StageSection>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StageSection {
    pub(super) connections: Option<u64>,
    pub(super) rate: Option<RateValue>,
    pub(super) duration: DurationValue,
    #[serde(default)]
    pub(super) ramp: Option<DurationValue>,
}

/// `[sample]`: how pools are filled from the target.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SampleSection {
    pub(super) chain: Option<Spanned<String>>,
    pub(super) cache: Option<PathBuf>,
    pub(super) window: Option<Positive>,
    pub(super) timeout: Option<DurationValue>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TargetSection {
    pub(super) url: Option<Spanned<String>>,
    pub(super) headers: Option<Spanned<BTreeMap<String, String>>>,
    pub(super) timeout: Option<DurationValue>,
    pub(super) connect_timeout: Option<DurationValue>,
    pub(super) keepalive: Option<bool>,
    pub(super) insecure: Option<bool>,
    pub(super) cacert: Option<PathBuf>,
    pub(super) max_body: Option<SizeValue>,
    pub(super) check: Option<CheckValue>,
    pub(super) fixed_id: Option<u64>,
}

/// `[[targets]]`: one of several targets. Transport settings come from `[target]`; headers
/// are added to `[target]`'s.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TargetEntry {
    pub(super) name: Option<Spanned<String>>,
    pub(super) url: Spanned<String>,
    pub(super) headers: Option<Spanned<BTreeMap<String, String>>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum CheckValue {
    Scan,
    Full,
}

/// `[source]`: a file of requests replayed instead of a mix (`rpcbench replay`'s options).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SourceSection {
    /// The file, relative to the scenario file.
    pub(super) replay: Spanned<PathBuf>,
    /// `traffic`, `vegeta` or `bodies` (default: told by its first line).
    pub(super) from: Option<Spanned<String>>,
    /// The recorded pace times this factor (`"2x"`, 0.5).
    pub(super) speed: Option<Spanned<SpeedValue>>,
    /// Start again at the end.
    #[serde(default, rename = "loop")]
    pub(super) looped: bool,
    /// Compare each answer's digest with the recorded one.
    #[serde(default)]
    pub(super) check_responses: bool,
    /// Skip lines that do not parse.
    #[serde(default)]
    pub(super) skip_bad_lines: bool,
}

/// A replay speed written as `"2x"`, `"0.5x"` or a number: a positive factor.
#[derive(Debug, Clone, Copy)]
pub(super) struct SpeedValue(pub(super) f64);

impl<'de> Deserialize<'de> for SpeedValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let value = match Raw::deserialize(deserializer)? {
            Raw::Number(number) => Some(number),
            Raw::Text(text) => text.trim().trim_end_matches(['x', 'X']).parse::<f64>().ok(),
        };
        match value {
            Some(speed) if speed.is_finite() && speed > 0.0 => Ok(SpeedValue(speed)),
            _ => Err(D::Error::custom("speed: must be a positive factor such as 0.5x, 1x or 2x")),
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum ArrivalsValue {
    Uniform,
    Poisson,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LoadSection {
    pub(super) connections: Option<Spanned<Positive>>,
    pub(super) rate: Option<Spanned<RateValue>>,
    pub(super) arrivals: Option<ArrivalsValue>,
    pub(super) max_connections: Option<Positive>,
    pub(super) duration: Option<DurationValue>,
    pub(super) requests: Option<Positive>,
    pub(super) warmup: Option<DurationValue>,
    pub(super) seed: Option<u64>,
    pub(super) threads: Option<Positive>,
    /// Pause between two targets' runs.
    pub(super) cooldown: Option<DurationValue>,
    /// JSON-RPC calls per HTTP request (a batch).
    pub(super) batch: Option<Spanned<u64>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GeneratorSpec {
    pub(super) range: Option<[u64; 2]>,
    pub(super) hex_range: Option<[u64; 2]>,
    pub(super) choice: Option<Vec<toml::Value>>,
    pub(super) random_hex: Option<usize>,
    pub(super) random_base58: Option<usize>,
    pub(super) pool: Option<String>,
    /// Block numbers or slots relative to the sampled head: `"head-1000..head"`.
    pub(super) head: Option<String>,
    /// The same written as `0x` hex quantities (Ethereum block numbers).
    pub(super) head_hex: Option<String>,
}

impl GeneratorSpec {
    /// The head-relative range, if this generator has one: (text, written as hex).
    pub(super) fn head_range(&self) -> Option<(&str, bool)> {
        match (&self.head, &self.head_hex) {
            (Some(text), None) => Some((text, false)),
            (None, Some(text)) => Some((text, true)),
            _ => None,
        }
    }
}

/// Parses `head-N..head-M` (either end may be plain `head`) into the offsets back from the
/// head of the low and the high end.
pub(super) fn parse_head_range(text: &str) -> Result<(u64, u64), String> {
    let expected = || format!("'{text}': expected a range relative to the head such as \"head-1000..head\"");
    let offset = |end: &str| -> Result<u64, String> {
        let end = end.trim();
        if end == "head" {
            return Ok(0);
        }
        let back = end
            .strip_prefix("head")
            .map(str::trim)
            .and_then(|rest| rest.strip_prefix('-'))
            .ok_or_else(expected)?;
        back.trim().parse::<u64>().map_err(|_| expected())
    };
    let (low, high) = text.split_once("..").ok_or_else(expected)?;
    let (low, high) = (offset(low)?, offset(high)?);
    if low < high {
        return Err(format!("'{text}': the range is empty (its start is after its end)"));
    }
    Ok((low, high))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallSection {
    pub(super) name: Option<String>,
    /// A JSON-RPC call's method.
    pub(super) method: Option<Spanned<String>>,
    pub(super) params: Option<Spanned<toml::Value>>,
    pub(super) weight: Option<Spanned<u32>>,
    /// A plain HTTP call instead: `"GET /block/{block}"`.
    pub(super) http: Option<Spanned<String>>,
    /// An HTTP call's body: a string (text, `{generator}` replaced) or a table/array (JSON).
    pub(super) body: Option<Spanned<toml::Value>>,
    /// An HTTP call's own headers.
    pub(super) headers: Option<Spanned<BTreeMap<String, String>>>,
    /// `"json"`: a 2xx answer must carry JSON.
    pub(super) expect: Option<Spanned<String>>,
}
