//! Parsing of the human units used on the command line and in scenario files:
//! durations (`250ms`, `10s`, `1m30s`), byte sizes (`64KiB`) and rates (`50/s`); and the
//! `0x` hex quantities of Ethereum's JSON-RPC.

use std::fmt;
use std::time::Duration;

/// A value that could not be parsed, with a message saying what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// The text that was rejected.
    pub input: String,
    /// What was expected instead.
    pub expected: &'static str,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid value '{}': expected {}", self.input, self.expected)
    }
}

impl std::error::Error for UnitError {}

const DURATION_EXPECTED: &str = "a duration such as 500us, 250ms, 10s, 5m or 1h30m";

/// The longest duration taken: a year. Longer ones are slips (`-d 1000000000000000000s`),
/// which the engine's clocks in nanoseconds would have cut to 584 years and shown as such.
pub(crate) const LONGEST_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

const DURATION_TOO_LONG: &str = "a duration of at most a year (365days)";

/// Parses a duration made of one or more `<number><unit>` parts (`humantime`'s grammar): units
/// `ns`, `us`, `ms`, `s`, `m`, `h` and their long names (`min`, `hours`, `days`...), fractions
/// allowed (`1.5s`), parts optionally separated by spaces (`1m 30s`). A bare `0` is zero.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let err = || UnitError { input: input.to_string(), expected: DURATION_EXPECTED };
    let text = input.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    // humantime reads a leading '+' as a sign; a duration here has none.
    if !text.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(err());
    }
    let duration = humantime::parse_duration(text).map_err(|_| err())?;
    if duration > LONGEST_DURATION {
        return Err(UnitError { input: input.to_string(), expected: DURATION_TOO_LONG });
    }
    Ok(duration)
}

/// Formats a duration the way reports show it: `812us`, `1.91ms`, `2.00s`.
pub fn format_duration(duration: Duration) -> String {
    format_micros(duration.as_secs_f64() * 1e6)
}

/// Formats a number of microseconds with a unit chosen for readability.
pub fn format_micros(micros: f64) -> String {
    if micros < 1000.0 {
        format!("{micros:.0}us")
    } else if micros < 1_000_000.0 {
        format!("{:.2}ms", micros / 1000.0)
    } else {
        format!("{:.2}s", micros / 1_000_000.0)
    }
}

const SIZE_EXPECTED: &str = "a size such as 512, 64KB, 64KiB, 10MB or 1GiB";

/// Parses a byte size: a whole number with an optional unit (`B`, `KB`, `KiB`, `MB`, `MiB`,
/// `GB`, `GiB`; decimal units are powers of 1000, binary ones powers of 1024).
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let err = || UnitError { input: input.to_string(), expected: SIZE_EXPECTED };
    let text = input.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    if digits == 0 {
        return Err(err());
    }
    let number: u64 = text[..digits].parse().map_err(|_| err())?;
    let multiplier: u64 = match text[digits..].trim() {
        "" | "B" => 1,
        "KB" | "kB" => 1000,
        "KiB" => 1024,
        "MB" => 1000 * 1000,
        "MiB" => 1024 * 1024,
        "GB" => 1000 * 1000 * 1000,
        "GiB" => 1024 * 1024 * 1024,
        _ => return Err(err()),
    };
    number.checked_mul(multiplier).ok_or_else(err)
}

const RATE_EXPECTED: &str = "a rate such as 5000, 50/s, 600/m or 1.5/ms";

/// Parses a rate in events per second: a bare number, or `N/s`, `N/m`, `N/ms`, `N/h`.
/// The rate must be positive and finite.
pub fn parse_rate(input: &str) -> Result<f64, UnitError> {
    let err = || UnitError { input: input.to_string(), expected: RATE_EXPECTED };
    let text = input.trim();
    let (number, per) = match text.split_once('/') {
        Some((number, unit)) => {
            let per_seconds = match unit.trim() {
                "s" | "1s" => 1.0,
                "ms" => 1e-3,
                "m" | "min" => 60.0,
                "h" => 3600.0,
                _ => return Err(err()),
            };
            (number.trim(), per_seconds)
        }
        None => (text, 1.0),
    };
    let value: f64 = number.parse().map_err(|_| err())?;
    let rate = value / per;
    if !rate.is_finite() || rate <= 0.0 {
        return Err(err());
    }
    Ok(rate)
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// A number without decimals when it is whole.
pub fn trim_float(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// Formats a time as RFC 3339 in UTC, to the second: `2024-05-01T12:00:00Z` (times before
/// 1970 as the epoch, after 9999 as its last second).
pub fn rfc3339(time: std::time::SystemTime) -> String {
    use time::format_description::well_known::Rfc3339;
    /// 9999-12-31T23:59:59Z, the last second RFC 3339's four-digit years can write.
    const LAST: i64 = 253_402_300_799;
    let secs = time.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let secs = i64::try_from(secs).unwrap_or(LAST).min(LAST);
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

/// Seconds since the Unix epoch of an RFC 3339 time (`2026-11-23T10:00:00Z`, fractions of a
/// second and `+HH:MM` offsets accepted); `None` when the text is not one.
pub fn parse_rfc3339(text: &str) -> Option<f64> {
    use time::format_description::well_known::Rfc3339;
    let text = text.trim();
    // RFC 3339 lets a space stand for the 'T' (section 5.6's note), as this always accepted.
    let spaced = text.as_bytes().get(10) == Some(&b' ');
    let text = if spaced { format!("{}T{}", &text[..10], &text[11..]) } else { text.to_string() };
    let at = time::OffsetDateTime::parse(&text, &Rfc3339).ok()?;
    Some(at.unix_timestamp() as f64 + f64::from(at.nanosecond()) / 1e9)
}

/// Decodes a `0x`-prefixed hex quantity that fits in a `u64`.
pub(crate) fn parse_hex_quantity(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_are_read() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20Z"), Some(1_700_000_000.0));
        assert_eq!(parse_rfc3339("2023-11-14T23:13:20+01:00"), Some(1_700_000_000.0));
        assert_eq!(parse_rfc3339("2023-11-14T22:13:20.5Z"), Some(1_700_000_000.5));
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00Z"), Some(951_782_400.0));
        assert_eq!(parse_rfc3339("2023-11-14 22:13:20z"), Some(1_700_000_000.0));
        assert_eq!(parse_rfc3339("2023-11-14t22:13:20-00:30"), Some(1_700_001_800.0));
        for bad in [
            "2023-11-14",
            "2023-13-01T00:00:00Z",
            "2023-11-14T22:13:20",
            "yesterday",
            "2023-11-14T22:13:20.Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_in_every_unit() {
        let ms = Duration::from_millis;
        let cases = [
            ("0", Duration::ZERO),
            ("10s", Duration::from_secs(10)),
            ("250ms", ms(250)),
            ("500us", Duration::from_micros(500)),
            ("1.5s", ms(1500)),
            ("1m30s", Duration::from_secs(90)),
            ("2h", Duration::from_secs(7200)),
            ("100ns", Duration::from_nanos(100)),
            ("1m 30s", Duration::from_secs(90)),
            ("2min", Duration::from_secs(120)),
            (" 5s ", Duration::from_secs(5)),
            ("0.25s", ms(250)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn a_duration_longer_than_a_year_is_refused_not_saturated() {
        assert_eq!(parse_duration("365days"), Ok(LONGEST_DURATION));
        for text in ["366days", "1000000000000000000s", "99999999999999d"] {
            let err = parse_duration(text).unwrap_err();
            assert_eq!(err.expected, DURATION_TOO_LONG, "{text}");
            assert!(err.to_string().contains("at most a year"), "{err}");
        }
    }

    #[test]
    fn bad_durations_say_what_was_expected() {
        for text in ["", "10", "s", "10x", "1..5s", "-1s", "ms10", "+5s", "99999999999999999999h"] {
            let err = parse_duration(text).unwrap_err();
            assert!(err.to_string().contains("expected a duration"), "{text}: {err}");
        }
    }

    #[test]
    fn sizes_and_rates() {
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("ten").is_err());
        assert!(parse_size("99999999999GiB").is_err());
        assert_eq!(parse_rate("5000"), Ok(5000.0));
        assert_eq!(parse_rate("50/s"), Ok(50.0));
        assert_eq!(parse_rate("600/m"), Ok(10.0));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("5/fortnight").is_err());
    }

    #[test]
    fn durations_format_with_readable_units() {
        assert_eq!(format_duration(Duration::from_micros(812)), "812us");
        assert_eq!(format_duration(Duration::from_micros(1910)), "1.91ms");
        assert_eq!(format_duration(Duration::from_secs(2)), "2.00s");
    }
}
