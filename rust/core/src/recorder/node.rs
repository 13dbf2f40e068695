//! One recorded call, packed into 80 bytes: a million of these must stay far below the
//! footprint of a Python object per node. Optional numbers use sentinels instead of
//! `Option` (which would double their width), and the rarely-present text fields (stop
//! reason, metadata) live beside the arena (see `arena::Extras`).

use super::intern::Sym;
use super::kind::{Kind, Status};
use crate::ids::NodeId;

const NO_I64: i64 = i64::MIN;
const NO_U64: u64 = u64::MAX;
const NO_SYM: Sym = Sym::MAX;

#[derive(Clone, Debug)]
pub struct Node {
    pub id: NodeId,
    /// 0 for the root (ids start at 1).
    pub parent: NodeId,
    pub start_ms: i64,
    end_ms: i64,
    pub cost_usd: f64,
    tokens_in: u64,
    tokens_out: u64,
    pub name: Sym,
    model: Sym,
    error_class: Sym,
    pub depth: u32,
    pub retries: u32,
    pub kind: Kind,
    pub status: Status,
    /// Evicted by `max_nodes` pruning; the slot stays until its whole chunk is gone.
    pub pruned: bool,
    /// A stop reason or metadata is stored in the arena's side table.
    pub has_extras: bool,
}

fn opt_sym(s: Sym) -> Option<Sym> {
    (s != NO_SYM).then_some(s)
}

impl Node {
    pub fn new(
        id: NodeId,
        parent: NodeId,
        start_ms: i64,
        kind: Kind,
        name: Sym,
        model: Option<Sym>,
    ) -> Node {
        Node {
            id,
            parent,
            start_ms,
            end_ms: NO_I64,
            cost_usd: 0.0,
            tokens_in: NO_U64,
            tokens_out: NO_U64,
            name,
            model: model.unwrap_or(NO_SYM),
            error_class: NO_SYM,
            depth: 0,
            retries: 0,
            kind,
            status: Status::Created,
            pruned: false,
            has_extras: false,
        }
    }

    pub fn parent_id(&self) -> Option<NodeId> {
        (self.parent != 0).then_some(self.parent)
    }

    pub fn end_ms(&self) -> Option<i64> {
        (self.end_ms != NO_I64).then_some(self.end_ms)
    }

    pub fn set_end_ms(&mut self, ms: i64) {
        self.end_ms = ms;
    }

    pub fn tokens_in(&self) -> Option<u64> {
        (self.tokens_in != NO_U64).then_some(self.tokens_in)
    }

    pub fn tokens_out(&self) -> Option<u64> {
        (self.tokens_out != NO_U64).then_some(self.tokens_out)
    }

    /// Token counts are validated below `u64::MAX` (they come from non-negative i64s).
    pub fn set_tokens(&mut self, tokens_in: Option<u64>, tokens_out: Option<u64>) {
        self.tokens_in = tokens_in.unwrap_or(NO_U64);
        self.tokens_out = tokens_out.unwrap_or(NO_U64);
    }

    pub fn model(&self) -> Option<Sym> {
        opt_sym(self.model)
    }

    pub fn error_class(&self) -> Option<Sym> {
        opt_sym(self.error_class)
    }

    pub fn set_error_class(&mut self, sym: Option<Sym>) {
        self.error_class = sym.unwrap_or(NO_SYM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_stays_compact() {
        assert!(
            std::mem::size_of::<Node>() <= 80,
            "{}",
            std::mem::size_of::<Node>()
        );
    }

    #[test]
    fn sentinels_read_back_as_none() {
        let mut n = Node::new(1, 0, 5, Kind::Llm, 0, None);
        assert_eq!(
            (
                n.end_ms(),
                n.tokens_in(),
                n.tokens_out(),
                n.model(),
                n.error_class()
            ),
            (None, None, None, None, None)
        );
        n.set_end_ms(0);
        n.set_tokens(Some(0), None);
        n.set_error_class(Some(3));
        assert_eq!(
            (n.end_ms(), n.tokens_in(), n.tokens_out(), n.error_class()),
            (Some(0), Some(0), None, Some(3))
        );
    }
}
