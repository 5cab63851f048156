//! The share of each block that was the run's own transactions (ours over all it carried),
//! kept in a table of bounded size however long the run: the blocks counted, the exact least
//! and greatest share, and a table of distinct shares with how many blocks had each. While a
//! run's blocks have at most [`SHARES_KEPT`] distinct shares the table is exact (a block of 2
//! of 4 and one of 1 of 2 are the same share, so the distinct ones are few in practice); past
//! that, the two nearest rows are merged into their weighted mean, so the median stays within
//! the gap of the rows merged around it. An hour of 100 ms blocks is 36,000 blocks but never
//! more than [`SHARES_KEPT`] rows.

/// How many distinct shares the table keeps before it merges the two nearest.
pub const SHARES_KEPT: usize = 512;

/// Of the blocks that carried any of the run's transactions, how many and the share of each
/// that was the run's (`min`, `median`, `max`), in memory bounded by [`SHARES_KEPT`].
#[derive(Debug, Clone, Default)]
pub struct BlockShares {
    /// Blocks recorded, an empty one (no transaction count) too.
    blocks: u64,
    /// (share, blocks with it), ordered by share, at most [`SHARES_KEPT`] rows.
    table: Vec<(f64, u64)>,
    /// The least and the greatest share recorded, exact whatever was merged.
    least: Option<f64>,
    greatest: Option<f64>,
}

impl BlockShares {
    /// No block yet.
    pub fn new() -> Self {
        BlockShares::default()
    }

    /// One block that carried `ours` of the run's transactions among `all` it carried. A block
    /// that says it carried none (`all == 0`) is counted among the blocks but has no share.
    pub fn record(&mut self, ours: u64, all: u64) {
        self.blocks += 1;
        if all == 0 {
            return;
        }
        // Equal fractions divide to the same float (division rounds the exact quotient), so a
        // share seen before finds its row.
        let share = ours as f64 / all as f64;
        self.least = Some(self.least.map_or(share, |least| least.min(share)));
        self.greatest = Some(self.greatest.map_or(share, |greatest| greatest.max(share)));
        match self.table.binary_search_by(|(row, _)| row.total_cmp(&share)) {
            Ok(at) => self.table[at].1 += 1,
            Err(at) => {
                self.table.insert(at, (share, 1));
                if self.table.len() > SHARES_KEPT {
                    self.merge_nearest_rows();
                }
            }
        }
    }

    /// Merges the two neighbouring rows whose shares are nearest into one at their weighted mean.
    fn merge_nearest_rows(&mut self) {
        let Some(at) =
            (0..self.table.len() - 1).min_by(|&a, &b| self.gap_after(a).total_cmp(&self.gap_after(b)))
        else {
            return;
        };
        let (low, low_blocks) = self.table[at];
        let (high, high_blocks) = self.table.remove(at + 1);
        let blocks = low_blocks + high_blocks;
        let mean = (low * low_blocks as f64 + high * high_blocks as f64) / blocks as f64;
        self.table[at] = (mean, blocks);
    }

    fn gap_after(&self, at: usize) -> f64 {
        self.table[at + 1].0 - self.table[at].0
    }

    /// Blocks recorded.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Rows the table holds now (never more than [`SHARES_KEPT`]).
    pub fn rows(&self) -> usize {
        self.table.len()
    }

    /// The least share; `None` when no block had one.
    pub fn min(&self) -> Option<f64> {
        self.least
    }

    /// The greatest share; `None` when no block had one.
    pub fn max(&self) -> Option<f64> {
        self.greatest
    }

    /// The lower median share (of n shares in order, the `(n - 1) / 2`-th from 0): exact while
    /// no rows were merged; `None` when no block had a share.
    pub fn median(&self) -> Option<f64> {
        let counted: u64 = self.table.iter().map(|(_, blocks)| blocks).sum();
        let wanted = counted.checked_sub(1)? / 2;
        let mut below = 0;
        for (share, blocks) in &self.table {
            below += blocks;
            if below > wanted {
                return Some(share.clamp(self.least?, self.greatest?));
            }
        }
        self.greatest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_blocks_shares_are_exact_and_equal_fractions_share_a_row() {
        let mut shares = BlockShares::new();
        assert_eq!((shares.min(), shares.median(), shares.max()), (None, None, None));
        for (ours, all) in [(2, 3), (1, 1), (1, 2), (2, 4), (1, 8), (0, 0)] {
            shares.record(ours, all);
        }
        assert_eq!(shares.blocks(), 6);
        assert_eq!(shares.rows(), 4, "1/2 and 2/4 are one share");
        // 0.125, 0.5, 0.5, 0.667, 1: the lower median of five is the third.
        assert_eq!((shares.min(), shares.median(), shares.max()), (Some(0.125), Some(0.5), Some(1.0)));
        shares.record(3, 4);
        // Six: the lower median is still the third.
        assert_eq!(shares.median(), Some(0.5));
    }

    #[test]
    fn the_share_table_stays_bounded_over_an_hour_of_blocks() {
        let mut shares = BlockShares::new();
        let mut truth = Vec::new();
        // An hour of 100 ms blocks, each with 1 to 5 of ours among 0 to 999 others' (thousands
        // of distinct shares).
        for block in 0..36_000u64 {
            let ours = 1 + (block / 1_000) % 5;
            let all = ours + (block * 7_919) % 1_000;
            shares.record(ours, all);
            truth.push(ours as f64 / all as f64);
            assert!(shares.rows() <= SHARES_KEPT, "{} rows after {block} blocks", shares.rows());
        }
        assert_eq!(shares.blocks(), 36_000);
        assert_eq!(shares.rows(), SHARES_KEPT, "more distinct shares than kept: merged down to the bound");
        truth.sort_by(f64::total_cmp);
        assert_eq!(shares.min(), Some(truth[0]));
        assert_eq!(shares.max(), Some(truth[truth.len() - 1]));
        let median = shares.median().unwrap();
        let exact = truth[(truth.len() - 1) / 2];
        assert!((median - exact).abs() < 0.005, "median {median} against {exact}");
    }
}
