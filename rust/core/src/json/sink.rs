//! Where the one JSON writer puts its bytes: a growable `Vec<u8>`, a length counter, or a
//! pre-sized buffer (the bindings' Python `bytes`, sized by a counting pass so a snapshot is
//! written once, with no regrowth and no final copy — docs/design.md §23).

use std::mem::MaybeUninit;

/// An output for the JSON writer. Method names match `Vec<u8>`'s so writer code reads the same.
pub trait Sink {
    fn extend_from_slice(&mut self, bytes: &[u8]);

    fn push(&mut self, b: u8) {
        self.extend_from_slice(&[b]);
    }

    /// `n` copies of `b` (float zero padding).
    fn fill(&mut self, b: u8, n: usize) {
        for _ in 0..n {
            self.push(b);
        }
    }

    /// A hint that `additional` more bytes follow.
    fn reserve(&mut self, _additional: usize) {}

    /// True for the sizing pass, which needs only lengths: writers then skip formatting what they can
    /// measure (the digits of an integer) and write any `n` bytes instead.
    fn counts_only(&self) -> bool {
        false
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }

    #[inline]
    fn push(&mut self, b: u8) {
        Vec::push(self, b);
    }

    fn fill(&mut self, b: u8, n: usize) {
        self.resize(self.len() + n, b);
    }

    #[inline]
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }
}

/// Counts the bytes a write would produce, writing nothing (the sizing pass).
#[derive(Debug, Default)]
pub struct Counter(pub usize);

impl Sink for Counter {
    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }

    #[inline]
    fn push(&mut self, _b: u8) {
        self.0 += 1;
    }

    fn fill(&mut self, _b: u8, n: usize) {
        self.0 += n;
    }

    #[inline]
    fn counts_only(&self) -> bool {
        true
    }
}

/// Writes into a fixed buffer, which may start uninitialised (a fresh Python `bytes`: zeroing 30 MB
/// first cost 14% of a large snapshot). Writing past its end never panics: the excess is dropped and
/// [`Cursor::finish`] reports the mismatch; only a cursor that finished exactly has initialised every byte.
#[derive(Debug)]
pub struct Cursor<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    pos: usize,
    overflow: bool,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        // SAFETY: `u8` and `MaybeUninit<u8>` have the same layout, and the cursor only ever writes
        // initialised bytes into the slice.
        let len = buf.len();
        Self::uninit(unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), len) })
    }

    pub fn uninit(buf: &'a mut [MaybeUninit<u8>]) -> Self {
        Cursor {
            buf,
            pos: 0,
            overflow: false,
        }
    }

    /// True when the writes filled the buffer exactly.
    pub fn finish(&self) -> bool {
        !self.overflow && self.pos == self.buf.len()
    }
}

impl Sink for Cursor<'_> {
    #[inline]
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        let end = self.pos + bytes.len();
        match self.buf.get_mut(self.pos..end) {
            Some(dst) => {
                // SAFETY: `dst` and `bytes` are distinct slices of the same length (`u8` and
                // `MaybeUninit<u8>` share a layout); `write_copy_of_slice` needs a newer Rust than our MSRV.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        dst.as_mut_ptr().cast(),
                        bytes.len(),
                    )
                };
                self.pos = end;
            }
            None => self.overflow = true,
        }
    }

    #[inline]
    fn push(&mut self, b: u8) {
        match self.buf.get_mut(self.pos) {
            Some(dst) => {
                dst.write(b);
                self.pos += 1;
            }
            None => self.overflow = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_reports_short_and_long_writes() {
        let mut buf = [0u8; 4];
        let mut c = Cursor::new(&mut buf);
        c.extend_from_slice(b"ab");
        assert!(!c.finish());
        c.push(b'c');
        c.fill(b'd', 1);
        assert!(c.finish());
        c.push(b'e');
        assert!(!c.finish());
        assert_eq!(&buf, b"abcd");
    }
}
