//! [`DecodeError`]: why the figures of a results file (or of one method, stage or step of it)
//! do not decode back into totals.

use std::fmt;

use crate::outcome::CountOverflow;
use crate::util::hdr_codec::HistogramTextError;

/// Figures of a results file that do not decode.
#[derive(Debug)]
#[non_exhaustive]
pub enum DecodeError {
    /// A histogram's text does not decode.
    Histogram {
        /// Which histogram (`latency`, `send_lag`, `stage latency`, `connect` …).
        name: &'static str,
        /// Why.
        error: HistogramTextError,
    },
    /// An HTTP status key that is not a number.
    HttpStatus(String),
    /// Outcome counts whose sum does not fit.
    Overflow(CountOverflow),
    /// The figures of one method are at fault.
    Method {
        /// The method's name in the file.
        name: String,
        /// What is wrong with them.
        error: Box<DecodeError>,
    },
}

impl DecodeError {
    /// A histogram that does not decode, by name.
    pub(crate) fn histogram(name: &'static str) -> impl FnOnce(HistogramTextError) -> DecodeError {
        move |error| DecodeError::Histogram { name, error }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Histogram { name, error } => write!(f, "histogram {name}: {error}"),
            DecodeError::HttpStatus(status) => write!(f, "HTTP status '{status}' is not a number"),
            DecodeError::Overflow(overflow) => write!(f, "{overflow}"),
            DecodeError::Method { name, error } => write!(f, "{name}: {error}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<CountOverflow> for DecodeError {
    fn from(overflow: CountOverflow) -> Self {
        DecodeError::Overflow(overflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_method_histogram_is_a_typed_error_naming_method_and_histogram() {
        let error = crate::util::hdr_codec::decode_histogram("not base64!").unwrap_err();
        let err = DecodeError::Method {
            name: "getSlot".into(),
            error: Box::new(DecodeError::histogram("latency")(error)),
        };
        assert!(err.to_string().starts_with("getSlot: histogram latency: not base64"), "{err}");
        assert!(
            matches!(&err, DecodeError::Method { error, .. } if matches!(**error, DecodeError::Histogram { name: "latency", .. }))
        );
    }
}
