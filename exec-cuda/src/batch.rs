//! Turns an interaction list into equal-sized work items for one batched launch.

use nbody_core::{InteractionList, Span};

/// Threads per block of the batched kernel: 32 targets x 4 threads each.
pub(crate) const BLOCK: u32 = 128;
/// Targets per work item.
const GROUP: u32 = 32;
/// Sources per work item at most: long lists are cut so items cost about the same and
/// uneven lists still spread over every SM; items of one target group add atomically.
const CHUNK: u32 = 4096;

/// One block's work, as the kernel's `Item` reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Item {
    t0: u32,
    t1: u32,
    span_first: u32,
    span_last: u32,
}

/// Items, the span list they index (the list's spans cut into pieces of at most
/// `CHUNK`, grouped so that no item holds more than `CHUNK` sources), and for each span
/// where it starts in its item's concatenated source list.
pub(crate) fn expand(list: &InteractionList<'_>) -> (Vec<Item>, Vec<Span>, Vec<u32>) {
    let (mut items, mut spans, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
    let mut groups = Vec::new();
    for pair in list.pairs {
        groups.clear();
        let (mut first, mut total) = (spans.len() as u32, 0u32);
        for s in list.sources_of(pair) {
            let mut a = s.start;
            while a < s.end {
                let take = (s.end - a).min(CHUNK - total);
                spans.push(Span::new(a, a + take));
                offsets.push(total);
                (a, total) = (a + take, total + take);
                if total == CHUNK {
                    groups.push((first, spans.len() as u32));
                    (first, total) = (spans.len() as u32, 0);
                }
            }
        }
        if total > 0 {
            groups.push((first, spans.len() as u32));
        }
        for t0 in (pair.targets.start..pair.targets.end).step_by(GROUP as usize) {
            let t1 = (t0 + GROUP).min(pair.targets.end);
            items.extend(groups.iter().map(|&(span_first, span_last)| Item { t0, t1, span_first, span_last }));
        }
    }
    (items, spans, offsets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nbody_core::Pair;

    #[test]
    fn items_cover_every_interaction_once() {
        let spans = [Span::new(0, 5000), Span::new(7000, 7100), Span::new(3, 3)];
        let pairs = [
            Pair { targets: Span::new(0, 70), sources: Span::new(0, 3) },
            Pair { targets: Span::new(100, 101), sources: Span::new(1, 2) },
        ];
        let list = InteractionList { pairs: &pairs, source_spans: &spans };
        let (items, cut, offsets) = expand(&list);
        for i in &items {
            let mut at = 0;
            for s in i.span_first..i.span_last {
                assert_eq!(offsets[s as usize], at);
                at += cut[s as usize].len() as u32;
            }
        }
        let count: usize = items
            .iter()
            .map(|i| {
                let sources: usize = cut[i.span_first as usize..i.span_last as usize].iter().map(Span::len).sum();
                assert!(sources <= CHUNK as usize && i.t1 - i.t0 <= GROUP);
                (i.t1 - i.t0) as usize * sources
            })
            .sum();
        assert_eq!(count, list.interactions());
        assert_eq!(items.len(), 3 * 2 + 1); // 70 targets in 3 groups x 2 chunks; 1 x 1
    }
}
