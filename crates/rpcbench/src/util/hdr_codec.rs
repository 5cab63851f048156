//! The lossless text form of an HDR histogram in results files and reports: HdrHistogram's V2
//! serialization in base64, read back into a histogram of the shape the recorder records into.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

use crate::record::{new_histogram_like, MAX_TRACKABLE_US};

/// Why the text form of a histogram does not decode.
#[derive(Debug)]
pub enum HistogramTextError {
    /// The text is not base64.
    NotBase64(base64::DecodeError),
    /// The bytes are not an HdrHistogram V2 (or V2-deflate) serialization.
    Deserialize(hdrhistogram::serialization::DeserializeError),
    /// A value beyond what rpcbench's histograms ever held (2^32 - 1 us).
    OutOfRange,
    /// The values do not fit the histogram rpcbench records into.
    Addition(hdrhistogram::AdditionError),
}

impl std::fmt::Display for HistogramTextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistogramTextError::NotBase64(err) => write!(f, "not base64: {err}"),
            HistogramTextError::Deserialize(err) => write!(f, "{err:?}"),
            // The name HdrHistogram gives the same fault when adding.
            HistogramTextError::OutOfRange => f.write_str("OtherAddendValueExceedsRange"),
            HistogramTextError::Addition(err) => write!(f, "{err:?}"),
        }
    }
}

impl std::error::Error for HistogramTextError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HistogramTextError::NotBase64(err) => Some(err),
            HistogramTextError::Deserialize(err) => Some(err),
            HistogramTextError::Addition(err) => Some(err),
            HistogramTextError::OutOfRange => None,
        }
    }
}

/// Encodes a histogram losslessly: HdrHistogram V2, base64. The header always states the full
/// 1 us to 1 h range (the recorder's histograms grow to the largest value they saw), so a file
/// does not depend on the latencies in it beyond their counts.
pub fn encode_histogram(histogram: &Histogram<u64>) -> String {
    let full = Histogram::<u64>::new_with_bounds(1, MAX_TRACKABLE_US, histogram.sigfig())
        .ok()
        .and_then(|mut full| full.add(histogram).is_ok().then_some(full));
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(full.as_ref().unwrap_or(histogram), &mut bytes)
        .expect("a histogram serializes into memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes [`encode_histogram`]'s output (or any V2 / V2-deflate histogram) into a histogram
/// of the shape rpcbench records into: phase histograms (2 significant digits) stay coarse,
/// everything else is read at 3, so a report from a file matches the live one.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, HistogramTextError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(HistogramTextError::NotBase64)?;
    let decoded: Histogram<u64> =
        Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(HistogramTextError::Deserialize)?;
    // What the fixed 1 us-1 h histograms of earlier versions could hold (their last bucket
    // ends at 2^32 - 1 us): the same files are accepted and rejected as before.
    if decoded.max() > u64::from(u32::MAX) {
        return Err(HistogramTextError::OutOfRange);
    }
    let mut histogram = new_histogram_like(&decoded);
    histogram.add(&decoded).map_err(HistogramTextError::Addition)?;
    Ok(histogram)
}
