//! How the arena's long side vectors grow (docs/dag.md "Memory").
//!
//! A `Vec` that outgrows its buffer moves into one twice the size: under mimalloc a large buffer is a fresh
//! allocation, so every doubling copies what the vector holds into pages the process touches for the first
//! time (a page fault each), and a build of n rows copies about n rows. Past a few thousand rows these
//! vectors grow fourfold instead: the copies fall to a third, and the capacity not yet written costs address
//! space, not memory (an untouched page is never backed).

/// Rows below which a vector keeps `Vec`'s own doubling (small graphs stay small).
const WIDE_FROM: usize = 1 << 12;

/// `push` with the arena's growth.
pub(crate) trait PushWide<T> {
    fn push_wide(&mut self, item: T);
}

impl<T> PushWide<T> for Vec<T> {
    #[inline]
    fn push_wide(&mut self, item: T) {
        if self.len() == self.capacity() && self.len() >= WIDE_FROM {
            self.reserve_exact(self.len() * 3);
        }
        self.push(item);
    }
}
