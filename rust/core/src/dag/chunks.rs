//! The arena's per-node and per-edge rows: a sequence indexed by position that grows in fixed-size chunks.
//!
//! A `Vec` grows by moving everything it holds into a buffer twice the size, so a build of n rows copied
//! about n rows more and, for a moment, held both buffers. Here only the first chunk grows that way (a small
//! graph stays small); once full, each next chunk is allocated at its full size and nothing already stored
//! moves again (docs/dag.md "Memory"). A position is its chunk and its place in it: a shift and a mask.

use std::ops::{Index, IndexMut};

const CHUNK_BITS: u32 = 12;
/// Rows a chunk holds: a few hundred kilobytes for the largest rows (nodes), so the copies of the first
/// chunk's growth are bounded and a chunk is one allocation among many thousand rows.
const CHUNK: usize = 1 << CHUNK_BITS;
const MASK: usize = CHUNK - 1;

pub(crate) struct Chunks<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunks<T> {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn push(&mut self, item: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(item),
            _ => self.push_chunk(item),
        }
        self.len += 1;
    }

    /// Starts the next chunk: the first grows as a `Vec` does, every later one is allocated whole.
    #[cold]
    fn push_chunk(&mut self, item: T) {
        let mut chunk = if self.chunks.is_empty() {
            Vec::new()
        } else {
            Vec::with_capacity(CHUNK)
        };
        chunk.push(item);
        self.chunks.push(chunk);
    }

    pub fn pop(&mut self) -> Option<T> {
        let last = self.chunks.last_mut()?;
        let item = last.pop();
        if last.is_empty() {
            self.chunks.pop();
        }
        if item.is_some() {
            self.len -= 1;
        }
        item
    }

    /// Keeps the first `len` rows.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let whole = len.div_ceil(CHUNK);
        self.chunks.truncate(whole);
        if let Some(last) = self.chunks.last_mut() {
            last.truncate(len - (whole - 1) * CHUNK);
        }
        self.len = len;
    }

    /// Room for `additional` more rows in the chunk being filled (a bulk load knows its counts); later
    /// chunks are allocated whole anyway.
    pub fn reserve(&mut self, additional: usize) {
        match self.chunks.last_mut() {
            Some(last) => last.reserve_exact(additional.min(CHUNK - last.len())),
            None if additional > 0 => self.chunks.push(Vec::with_capacity(additional.min(CHUNK))),
            None => {}
        }
    }

    #[cfg(test)]
    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i >> CHUNK_BITS)?.get(i & MASK)
    }

    #[inline]
    pub fn last(&self) -> Option<&T> {
        self.chunks.last()?.last()
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    /// The rows from position `start` on (none when `start` is past the end).
    pub fn iter_from(&self, start: usize) -> impl Iterator<Item = &T> + '_ {
        let first = (start >> CHUNK_BITS).min(self.chunks.len());
        self.chunks[first..]
            .iter()
            .flatten()
            .skip(start.saturating_sub(first << CHUNK_BITS))
    }
}

impl<T> Index<usize> for Chunks<T> {
    type Output = T;

    #[inline]
    fn index(&self, i: usize) -> &T {
        assert!(i < self.len, "row {i} of {}", self.len);
        // SAFETY: every chunk but the last holds CHUNK rows and `len` counts them all, so a position below
        // `len` names a stored row.
        unsafe {
            self.chunks
                .get_unchecked(i >> CHUNK_BITS)
                .get_unchecked(i & MASK)
        }
    }
}

impl<T> IndexMut<usize> for Chunks<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(i < self.len, "row {i} of {}", self.len);
        // SAFETY: as in `index`.
        unsafe {
            self.chunks
                .get_unchecked_mut(i >> CHUNK_BITS)
                .get_unchecked_mut(i & MASK)
        }
    }
}

impl<T> FromIterator<T> for Chunks<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut chunks = Chunks::default();
        for item in items {
            chunks.push(item);
        }
        chunks
    }
}

#[cfg(test)]
mod tests {
    use super::{Chunks, CHUNK};

    /// Every operation agrees with a `Vec` of the same rows, across chunk boundaries.
    #[test]
    fn chunks_read_and_shrink_as_a_vec_does() {
        let n = 2 * CHUNK + 17;
        let mut c: Chunks<usize> = Chunks::default();
        let mut v: Vec<usize> = Vec::new();
        c.reserve(10);
        for i in 0..n {
            c.push(i * 3);
            v.push(i * 3);
        }
        assert_eq!(c.len(), n);
        assert!(c.iter().eq(v.iter()));
        assert!(c.iter().rev().eq(v.iter().rev()));
        for i in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, n - 1] {
            assert_eq!(c[i], v[i]);
            assert_eq!(c.get(i), v.get(i));
            assert!(c.iter_from(i).eq(v[i..].iter()));
        }
        assert_eq!(c.get(n), None);
        assert_eq!(c.iter_from(n).count(), 0);
        assert_eq!(c.iter_from(n + CHUNK * 3).count(), 0);
        c[CHUNK] = 7;
        v[CHUNK] = 7;
        for len in [2 * CHUNK + 1, 2 * CHUNK, CHUNK + 5, CHUNK, 3, 0] {
            c.truncate(len);
            v.truncate(len);
            assert_eq!(c.len(), len);
            assert!(c.iter().eq(v.iter()));
            assert_eq!(c.last(), v.last());
        }
        for i in 0..CHUNK + 2 {
            c.push(i);
            v.push(i);
        }
        while let Some(x) = c.pop() {
            assert_eq!(Some(x), v.pop());
            assert_eq!(c.len(), v.len());
            assert_eq!(c.last(), v.last());
        }
        assert!(v.is_empty() && c.is_empty());
        let collected: Chunks<usize> = (0..CHUNK + 1).collect();
        assert_eq!(collected.len(), CHUNK + 1);
        assert_eq!(collected[CHUNK], CHUNK);
    }

    /// Growing past the first chunk never moves a stored row.
    #[test]
    fn rows_stay_where_they_were_stored() {
        let mut c: Chunks<u64> = Chunks::default();
        for i in 0..CHUNK as u64 {
            c.push(i);
        }
        let first: *const u64 = &c[0];
        let last: *const u64 = &c[CHUNK - 1];
        for i in 0..3 * CHUNK as u64 {
            c.push(i);
        }
        assert_eq!(first, &c[0] as *const u64);
        assert_eq!(last, &c[CHUNK - 1] as *const u64);
    }
}
