//! A node's edge positions in one direction (docs/dag.md "Memory").
//!
//! Most nodes have one to three edges each way, so up to three are held inline; a node with more (a fan-out's
//! hub) holds them in a vector behind one pointer. Sixteen bytes either way, where a small-vector with two
//! inline was twenty-four, and a build writes two a node.

const INLINE: usize = 3;

#[derive(Clone, Debug)]
pub(crate) enum Adjacency {
    Inline {
        len: u8,
        items: [u32; INLINE],
    },
    // The box keeps the enum at 16 bytes (a `Vec` inline is 24): only hubs pay the second pointer.
    #[allow(clippy::box_collection)]
    Heap(Box<Vec<u32>>),
}

impl Default for Adjacency {
    fn default() -> Self {
        Adjacency::new()
    }
}

impl Adjacency {
    pub const fn new() -> Self {
        Adjacency::Inline {
            len: 0,
            items: [0; INLINE],
        }
    }

    #[inline]
    pub fn push(&mut self, e: u32) {
        match self {
            Adjacency::Inline { len, items } if usize::from(*len) < INLINE => {
                items[usize::from(*len)] = e;
                *len += 1;
            }
            Adjacency::Inline { items, .. } => {
                let mut heap = Vec::with_capacity(2 * INLINE);
                heap.extend_from_slice(items);
                heap.push(e);
                *self = Adjacency::Heap(Box::new(heap));
            }
            Adjacency::Heap(v) => v.push(e),
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<u32> {
        match self {
            Adjacency::Inline { len: 0, .. } => None,
            Adjacency::Inline { len, items } => {
                *len -= 1;
                Some(items[usize::from(*len)])
            }
            Adjacency::Heap(v) => v.pop(),
        }
    }
}

impl std::ops::Deref for Adjacency {
    type Target = [u32];

    #[inline]
    fn deref(&self) -> &[u32] {
        match self {
            Adjacency::Inline { len, items } => &items[..usize::from(*len)],
            Adjacency::Heap(v) => v,
        }
    }
}

impl<'a> IntoIterator for &'a Adjacency {
    type Item = &'a u32;
    type IntoIter = std::slice::Iter<'a, u32>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_a_vec_holds_across_the_inline_limit() {
        assert_eq!(std::mem::size_of::<Adjacency>(), 16);
        let mut a = Adjacency::new();
        let mut v = Vec::new();
        for round in 0..3u32 {
            for e in 0..(5 + round) {
                a.push(e * 7 + round);
                v.push(e * 7 + round);
                assert_eq!(&*a, &v[..]);
            }
            for _ in 0..(3 + round) {
                assert_eq!(a.pop(), v.pop());
                assert_eq!(&*a, &v[..]);
            }
        }
        let mut b = Adjacency::new();
        assert_eq!(b.pop(), None);
        b.push(4);
        assert!(matches!(b, Adjacency::Inline { len: 1, .. }));
        assert_eq!((&b).into_iter().copied().collect::<Vec<_>>(), [4]);
    }
}
