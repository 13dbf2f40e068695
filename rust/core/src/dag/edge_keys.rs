//! The active edge of a `(from, to, type)`: docs/design.md §9 returns the existing edge's id for a duplicate.
//!
//! Most nodes have a few edges each way, so the answer is a scan of the shorter of `from`'s out-edges and
//! `to`'s in-edges — nothing to maintain, and a new edge into a new node (every build) finds none at once.
//! Only between two nodes that both have many edges that way (more than [`NARROW`]: a hub joined to a hub)
//! would a scan be long; those pairs' active edges are kept in a map instead, from the moment both ends are
//! that wide. A node is marked wide for good (a rollback does not narrow it), so the map holds every active
//! edge between wide ends whatever happened since (docs/dag.md "Ids and indexes").

use rustc_hash::FxHashMap;

use super::arena::Dag;
use super::growth::PushWide;
use super::types::EdgeType;

/// Edges a node may have in one direction before its pairs with other wide nodes are mapped.
pub(crate) const NARROW: usize = 32;

const OUT: u8 = 1;
const IN: u8 = 2;

#[derive(Default)]
pub(crate) struct EdgeKeys {
    /// Per node: `OUT` once its out-edges outgrew [`NARROW`], `IN` for its in-edges.
    wide: Vec<u8>,
    /// Every active edge from an out-wide node to an in-wide node.
    map: FxHashMap<(u32, u32, EdgeType), u32>,
}

impl EdgeKeys {
    pub fn node_added(&mut self) {
        self.wide.push_wide(0);
    }

    pub fn node_removed(&mut self) {
        self.wide.pop();
    }

    pub fn reserve(&mut self, nodes: usize) {
        self.wide.reserve(nodes);
    }

    fn both_wide(&self, from: u32, to: u32) -> bool {
        self.wide[from as usize] & OUT != 0 && self.wide[to as usize] & IN != 0
    }

    #[cfg(test)]
    pub fn mapped(&self) -> usize {
        self.map.len()
    }
}

impl Dag {
    /// The active edge from `from` to `to` of type `t`, if there is one.
    pub(crate) fn active_edge(&self, from: u32, to: u32, t: EdgeType) -> Option<u32> {
        let keys = &self.edge_keys;
        if keys.both_wide(from, to) {
            return keys.map.get(&(from, to, t)).copied();
        }
        let out = &self.out_adj[from as usize];
        let inc = &self.in_adj[to as usize];
        let matches = |&&e: &&u32| {
            let h = self.hot[e as usize];
            h.active && h.from == from && h.to == to && h.edge_type == t
        };
        let shorter = if out.len() <= inc.len() { out } else { inc };
        shorter.iter().find(matches).copied()
    }

    /// After edge `e` was appended to both adjacency lists: marks an end that just became wide, and maps
    /// the edge when both ends are.
    pub(crate) fn edge_key_added(&mut self, e: u32) {
        let h = self.hot[e as usize];
        if self.out_adj[h.from as usize].len() > NARROW
            && self.edge_keys.wide[h.from as usize] & OUT == 0
        {
            self.widen(h.from, OUT);
        }
        if self.in_adj[h.to as usize].len() > NARROW && self.edge_keys.wide[h.to as usize] & IN == 0
        {
            self.widen(h.to, IN);
        }
        self.edge_key_restored(e);
    }

    /// An edge that is active again (a rolled-back archive, a caught-up row): mapped when both ends are wide.
    pub(crate) fn edge_key_restored(&mut self, e: u32) {
        let h = self.hot[e as usize];
        if h.active && self.edge_keys.both_wide(h.from, h.to) {
            self.edge_keys.map.insert((h.from, h.to, h.edge_type), e);
        }
    }

    /// An edge archived or removed: no longer the active edge of its key.
    pub(crate) fn edge_key_removed(&mut self, e: u32) {
        let h = self.hot[e as usize];
        let key = (h.from, h.to, h.edge_type);
        if self.edge_keys.map.get(&key) == Some(&e) {
            self.edge_keys.map.remove(&key);
        }
    }

    /// Marks `n` wide in direction `dir` and maps its active edges to or from nodes wide the other way.
    fn widen(&mut self, n: u32, dir: u8) {
        self.edge_keys.wide[n as usize] |= dir;
        let edges = if dir == OUT {
            &self.out_adj[n as usize]
        } else {
            &self.in_adj[n as usize]
        };
        let keys = &mut self.edge_keys;
        for &e in edges {
            let h = self.hot[e as usize];
            if h.active && keys.both_wide(h.from, h.to) {
                keys.map.insert((h.from, h.to, h.edge_type), e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::dag::{Dag, NodeSpec};

    fn task(g: &mut Dag, id: String) -> String {
        let spec = NodeSpec {
            node_id: Some(id),
            ..NodeSpec::default()
        };
        g.create_node("task", "pending", spec).unwrap().to_string()
    }

    /// Two layers of hubs joined every way: every pair ends up wide at both ends, so duplicates are found
    /// through the map, also after a rollback and after archiving.
    #[test]
    fn hubs_joined_to_hubs_find_their_duplicates_through_the_map() {
        let mut g = Dag::new(None);
        let width = super::NARROW + 8;
        let tops: Vec<String> = (0..width)
            .map(|i| task(&mut g, format!("a{i:03}")))
            .collect();
        let bottoms: Vec<String> = (0..width)
            .map(|i| task(&mut g, format!("b{i:03}")))
            .collect();
        let mut made = Vec::new();
        for a in &tops {
            for b in &bottoms {
                made.push(g.create_edge(a, b, "sequence", None, None).unwrap());
            }
        }
        assert!(g.edge_keys.mapped() > 0);
        let mut i = 0;
        for a in &tops {
            for b in &bottoms {
                let again = g.create_edge(a, b, "sequence", None, None).unwrap();
                assert_eq!(again, made[i], "{a} -> {b}");
                i += 1;
            }
        }
        assert_eq!(g.edge_count(), width * width);
        // A dependency is another key; rolled back, it is gone from the map too.
        g.begin();
        let dep = g
            .create_edge(&tops[0], &bottoms[0], "dependency", None, None)
            .unwrap();
        assert_ne!(dep, made[0]);
        g.rollback();
        let dep2 = g
            .create_edge(&tops[0], &bottoms[0], "dependency", None, None)
            .unwrap();
        assert_ne!(dep2, dep);
        g.check_invariants().unwrap();
    }
}
