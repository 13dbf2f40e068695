//! The sync calls open on this thread, of every chain, innermost last: the one per-thread stack
//! of open calls. A wrap nested in one takes it as parent (`Contained::begin`), and the bindings
//! find the call a `report_cost` runs in (and its chain) from it (docs/design.md §20).
//!
//! A sync callable runs to completion on the thread that wrapped it, so a thread-local stack
//! is exact for sync nesting and costs nanoseconds; async wraps pass their parent explicitly.
//! Each entry carries its chain's `Owner`: an opaque handle the embedding layer gives the chain
//! once (`Contained::set_owner`) and turns back into its own object; the core never looks inside.
//! An entry is pushed once when its call is admitted and popped once when it is settled.

use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

use crate::ids::NodeId;

/// What the embedding layer keeps to find a chain's own object again (e.g. a weak reference).
pub type Owner = Arc<dyn Any + Send + Sync>;

struct Open {
    /// Which chain (`Contained`'s key): the entries of one chain are its nesting.
    key: u64,
    node: NodeId,
    owner: Option<Owner>,
}

thread_local! {
    static OPEN: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
}

/// The innermost open call of chain `key` on this thread.
pub(super) fn innermost(key: u64) -> Option<NodeId> {
    OPEN.with_borrow(|open| open.iter().rev().find(|e| e.key == key).map(|e| e.node))
}

pub(super) fn push(key: u64, node: NodeId, owner: Option<Owner>) {
    OPEN.with_borrow_mut(|open| open.push(Open { key, node, owner }));
}

/// Forgets `node`; a no-op when it was never pushed (async calls, refusals). Entries above it were
/// left open by a wrap that never settled them (its caller died between admission and settle):
/// calls nested in this one end before it, so they are forgotten with it and cannot become the
/// parent of a later wrap.
pub(super) fn pop(key: u64, node: NodeId) {
    // The entry on top (the usual case, no allocation), or it and the entries left open above it.
    let popped: Option<Result<Open, Vec<Open>>> = OPEN.with_borrow_mut(|open| {
        let i = open.iter().rposition(|e| e.key == key && e.node == node)?;
        if i + 1 == open.len() {
            open.pop().map(Ok)
        } else {
            Some(Err(open.drain(i..).collect()))
        }
    });
    // Owners are dropped outside the borrow: dropping one may run the embedding layer's code.
    drop(popped);
}

/// Forgets every entry of chain `key` on this thread (the chain is being dropped).
pub(super) fn forget(key: u64) {
    let gone = OPEN.try_with(|open| {
        let Ok(mut open) = open.try_borrow_mut() else {
            return Vec::new();
        };
        let mut gone = Vec::new();
        open.retain_mut(|e| {
            if e.key == key {
                gone.push(e.owner.take());
            }
            e.key != key
        });
        gone
    });
    drop(gone);
}

/// How many sync calls are open on this thread, of every chain.
pub fn depth() -> usize {
    OPEN.with_borrow(Vec::len)
}

/// The innermost open call on this thread that `find` accepts, given its chain's owner and node,
/// with the stack's depth: the embedding layer skips the entries of chains it no longer has.
/// `find` runs while the stack is borrowed: it must not open or close calls.
pub fn innermost_of<R>(mut find: impl FnMut(&Owner, NodeId) -> Option<R>) -> (usize, Option<R>) {
    OPEN.with_borrow(|open| {
        let found = open
            .iter()
            .rev()
            .find_map(|e| e.owner.as_ref().and_then(|o| find(o, e.node)));
        (open.len(), found)
    })
}
