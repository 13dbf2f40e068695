//! String interning for names, models and error classes: agent chains repeat a handful of
//! labels thousands of times, so each node stores a 4-byte symbol instead of a String.
//!
//! Symbols are reference-counted (one reference per node field, divergence-window slot or
//! reported signature) and a text nobody references is freed and its symbol reused, so a
//! pruned graph with a unique name per node stays bounded (docs/design.md §27).

use rustc_hash::FxHashMap;

pub type Sym = u32;

#[derive(Default)]
pub struct Interner {
    by_text: FxHashMap<Box<str>, Sym>,
    /// Freed slots hold an empty text and sit in `free`.
    texts: Vec<Box<str>>,
    refs: Vec<u32>,
    free: Vec<Sym>,
    // Loops usually reuse the previous label; checking it first skips the hash.
    last: Option<Sym>,
}

impl Interner {
    /// The symbol for `s`, with one more reference to it.
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(sym) = self.last {
            if &*self.texts[sym as usize] == s {
                self.retain(sym);
                return sym;
            }
        }
        let sym = match self.by_text.get(s) {
            Some(&sym) => sym,
            None => {
                let sym = match self.free.pop() {
                    Some(sym) => {
                        self.texts[sym as usize] = s.into();
                        sym
                    }
                    None => {
                        self.texts.push(s.into());
                        self.refs.push(0);
                        (self.texts.len() - 1) as Sym
                    }
                };
                self.by_text.insert(s.into(), sym);
                sym
            }
        };
        self.retain(sym);
        self.last = Some(sym);
        sym
    }

    #[inline]
    pub fn retain(&mut self, sym: Sym) {
        let r = &mut self.refs[sym as usize];
        // A count that ever saturates stays pinned: the text is then never freed.
        *r = r.saturating_add(1);
    }

    /// Drops one reference; the text is freed with the last one.
    #[inline]
    pub fn release(&mut self, sym: Sym) {
        let r = &mut self.refs[sym as usize];
        if *r == u32::MAX || *r == 0 {
            return;
        }
        *r -= 1;
        if *r == 0 {
            let text = std::mem::take(&mut self.texts[sym as usize]);
            self.by_text.remove(&text);
            self.free.push(sym);
            if self.last == Some(sym) {
                self.last = None;
            }
        }
    }

    pub fn resolve(&self, sym: Sym) -> &str {
        &self.texts[sym as usize]
    }

    /// Symbol slots, live or free: the bound for per-symbol caches.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }

    /// Texts currently referenced.
    pub fn live(&self) -> usize {
        self.texts.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_same_symbol() {
        let mut i = Interner::default();
        let a = i.intern("plan");
        let b = i.intern("search");
        assert_ne!(a, b);
        assert_eq!(i.intern("plan"), a);
        assert_eq!(i.intern("search"), b);
        assert_eq!(i.resolve(b), "search");
        assert_eq!(i.len(), 2);
    }

    #[test]
    fn unreferenced_texts_are_freed_and_their_slots_reused() {
        let mut i = Interner::default();
        let keep = i.intern("keep");
        for n in 0..10_000 {
            let s = i.intern(&format!("unique-{n}"));
            i.retain(s);
            i.release(s);
            i.release(s);
        }
        assert_eq!(i.len(), 2, "one slot recycled for every unique name");
        assert_eq!(i.live(), 1);
        assert_eq!(i.by_text.len(), 1);
        assert_eq!(i.resolve(keep), "keep");
        // A freed text interned again gets a fresh, correct symbol.
        let again = i.intern("unique-3");
        assert_eq!(i.resolve(again), "unique-3");
        assert_eq!(i.intern("keep"), keep);
        // Two references: freed with the second release; a further release is a no-op.
        i.release(keep);
        assert_eq!(i.live(), 2);
        i.release(keep);
        i.release(keep);
        assert_eq!(i.live(), 1);
        assert_eq!(i.resolve(again), "unique-3");
    }
}
