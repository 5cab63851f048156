//! A hasher of one multiplication per word for tables keyed by numbers the program makes
//! itself or bounds by count (request ids, an item's slot or fingerprint), where SipHash's
//! protection against chosen keys costs more than the rest of the lookup. A table that uses
//! it must be bounded: keys a hostile server picks to collide can cost CPU, never memory.

use std::hash::{BuildHasherDefault, Hasher};

/// Fibonacci hashing's multiplier (2^64 divided by the golden ratio, made odd).
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Folds every word into the state with a rotation, an xor and one multiplication.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MultiplyHasher(u64);

impl Hasher for MultiplyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(MULTIPLIER);
    }

    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

/// Builds [`MultiplyHasher`]s for a `HashMap` or `HashSet`.
pub(crate) type MultiplyHasherBuilder = BuildHasherDefault<MultiplyHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    #[test]
    fn consecutive_ids_spread_over_the_high_and_the_low_bits() {
        let build = MultiplyHasherBuilder::default();
        let hashes: Vec<u64> = (0..1024u64).map(|id| build.hash_one(id)).collect();
        let top: std::collections::HashSet<u64> = hashes.iter().map(|hash| hash >> 57).collect();
        let low: std::collections::HashSet<u64> = hashes.iter().map(|hash| hash & 1023).collect();
        assert_eq!(top.len(), 128, "every top-7-bit value is used");
        assert_eq!(low.len(), 1024, "the low ten bits tell 1,024 consecutive ids apart");
    }

    #[test]
    fn a_tuple_key_hashes_each_part() {
        let build = MultiplyHasherBuilder::default();
        assert_ne!(build.hash_one((1usize, 2u64)), build.hash_one((2usize, 1u64)));
        let mut hasher = MultiplyHasher::default();
        7u64.hash(&mut hasher);
        assert_eq!(hasher.finish(), 7u64.wrapping_mul(MULTIPLIER));
    }
}
