//! String interning for names, models and error classes: agent chains repeat a handful of
//! labels thousands of times, so each node stores a 4-byte symbol instead of a String.

use rustc_hash::FxHashMap;

pub type Sym = u32;

#[derive(Default)]
pub struct Interner {
    by_text: FxHashMap<Box<str>, Sym>,
    texts: Vec<Box<str>>,
    // Loops usually reuse the previous label; checking it first skips the hash.
    last: Option<Sym>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(sym) = self.last {
            if &*self.texts[sym as usize] == s {
                return sym;
            }
        }
        let sym = match self.by_text.get(s) {
            Some(&sym) => sym,
            None => {
                let sym = self.texts.len() as Sym;
                self.texts.push(s.into());
                self.by_text.insert(s.into(), sym);
                sym
            }
        };
        self.last = Some(sym);
        sym
    }

    pub fn resolve(&self, sym: Sym) -> &str {
        &self.texts[sym as usize]
    }

    pub fn len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
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
}
