//! Each recent block's landed signatures on the Solana mock node, written as its
//! `blockNotification` lists them while its transactions land (`solana_blocks.rs` serves them).
//! Written a signature at a time as each lands, not scanned and encoded when the notification
//! is built: at 40,000/s a block of ~4,000 signatures every 100 ms took ~3 ms of the mock's one
//! thread at once, and the sends waiting for their answers meanwhile left late.

use std::collections::VecDeque;

/// Each recent block's landed signatures as the `signatures` array of its notification writes
/// them (base58, quoted, comma-separated, in landing order), added to as each lands. Landing
/// slots only grow, so the newest list is at the back; lists more than its kept slots behind
/// the newest are forgotten, so it holds a few seconds of landings at most.
#[derive(Debug)]
pub(crate) struct BlockSignatures {
    blocks: VecDeque<(u64, String)>,
    /// How many slots behind the newest a list is kept (the deepest commitment a notification
    /// waits for, and a few slots more).
    kept_slots: u64,
}

impl BlockSignatures {
    /// Keeping the lists of the blocks up to `kept_slots` behind the newest.
    pub(crate) fn keeping(kept_slots: u64) -> Self {
        BlockSignatures { blocks: VecDeque::new(), kept_slots }
    }

    /// The signature whose base58 text is `name` landed in `slot` (never older than the newest
    /// slot added so far). The text is the one the send's answer carried, written once per
    /// transaction (`SolanaTxPool::forward`), not encoded again here.
    pub(crate) fn add(&mut self, slot: u64, name: &str) {
        if self.blocks.back().is_none_or(|(newest, _)| *newest < slot) {
            self.blocks.push_back((slot, String::new()));
            while self.blocks.front().is_some_and(|(oldest, _)| oldest + self.kept_slots < slot) {
                self.blocks.pop_front();
            }
        }
        let Some((_, text)) = self.blocks.iter_mut().rev().find(|(at, _)| *at == slot) else {
            return;
        };
        if !text.is_empty() {
            text.push(',');
        }
        text.push('"');
        text.push_str(name);
        text.push('"');
    }

    /// The list of `slot` ("" when nothing landed in it or it is no longer kept).
    pub(crate) fn of(&self, slot: u64) -> &str {
        self.blocks.iter().rev().find(|(at, _)| *at == slot).map_or("", |(_, text)| text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocks_signature_list_is_written_as_they_land_in_order_and_old_blocks_are_forgotten() {
        let kept = 39;
        let mut blocks = BlockSignatures::keeping(kept);
        let (a, b, c) = ([1u8; 64], [2u8; 64], [3u8; 64]);
        let name = |s: &[u8; 64]| crate::tx::solana::base58::signature_text(s);
        blocks.add(10, &name(&a));
        blocks.add(10, &name(&b));
        blocks.add(12, &name(&c));
        let quoted = |s: &[u8; 64]| format!("\"{}\"", bs58::encode(s).into_string());
        assert_eq!(blocks.of(10), format!("{},{}", quoted(&a), quoted(&b)));
        assert_eq!(blocks.of(12), quoted(&c));
        assert_eq!(blocks.of(11), "", "no landing in slot 11");
        blocks.add(12 + kept, &name(&a));
        assert_eq!(blocks.of(10), "", "more than the kept slots behind the newest");
        assert_eq!(blocks.of(12), quoted(&c), "exactly the kept slots behind is kept");
    }
}
