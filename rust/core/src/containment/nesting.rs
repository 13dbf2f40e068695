//! Which call is open on this thread, per chain: the parent of a wrap nested inside it.
//!
//! A sync callable runs to completion on the thread that wrapped it, so a thread-local stack
//! is exact for sync nesting and costs nanoseconds; async wraps pass their parent explicitly.

use std::cell::RefCell;

use crate::ids::NodeId;

thread_local! {
    static OPEN: RefCell<Vec<(u64, NodeId)>> = const { RefCell::new(Vec::new()) };
}

/// The innermost open call of chain `key` on this thread.
pub fn innermost(key: u64) -> Option<NodeId> {
    OPEN.with_borrow(|open| open.iter().rev().find(|(k, _)| *k == key).map(|&(_, n)| n))
}

pub fn push(key: u64, node: NodeId) {
    OPEN.with_borrow_mut(|open| open.push((key, node)));
}

/// Forgets `node`; a no-op when it was never pushed (async calls, refusals).
pub fn pop(key: u64, node: NodeId) {
    OPEN.with_borrow_mut(|open| {
        if let Some(i) = open.iter().rposition(|&e| e == (key, node)) {
            open.remove(i);
        }
    });
}
