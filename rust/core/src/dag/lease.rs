//! Leased claims for many workers sharing one stored graph (docs/dag.md "Stores and workers").
//!
//! A leased claim records `claimed_by` and `lease_expires_at` in the node's metadata (so they are visible in
//! `node()` and the JSON, and stored with the node row). A lease that runs out sends the node back to
//! `pending` with `metadata.attempt + 1`, or to `errored` (`lease_expired`) once `max_attempts` is reached.

use super::arena::Dag;
use super::error::{DagCode, DagError, DagResult};
use super::events::obj;
use super::types::State;
use crate::clock::now;
use crate::value::Value;

pub const CLAIMED_BY: &str = "claimed_by";
pub const LEASE_EXPIRES_AT: &str = "lease_expires_at";
pub const ATTEMPT: &str = "attempt";

/// A graph's work at a glance (`Dag::work`), kept beside its row by a store so workers find work by index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    pub claimable: usize,
    pub running: usize,
    pub lease_due: Option<f64>,
}

impl Dag {
    fn lease_of(&self, n: u32) -> (Option<&str>, Option<f64>) {
        let meta = self.nodes[n as usize].metadata();
        let by = meta.get(CLAIMED_BY).and_then(Value::as_str);
        let until = match meta.get(LEASE_EXPIRES_AT) {
            Some(Value::Float(f)) => Some(*f),
            Some(Value::Int(i)) => Some(*i as f64),
            _ => None,
        };
        (by, until)
    }

    /// `claim`, then records the claimant and the lease end on each claimed node.
    pub fn claim_leased(
        &mut self,
        limit: usize,
        worker_id: Option<&str>,
        lease_until: Option<f64>,
    ) -> Vec<String> {
        let picked = self.claim_nodes(limit);
        let leased = if worker_id.is_some() || lease_until.is_some() {
            &picked[..]
        } else {
            &[]
        };
        for &n in leased {
            self.save_node(n);
            let meta = self.nodes[n as usize].metadata_mut();
            if let Some(w) = worker_id {
                meta.set(CLAIMED_BY, Value::Str(w.to_owned()));
            }
            if let Some(t) = lease_until {
                meta.set(LEASE_EXPIRES_AT, Value::Float(t));
            }
        }
        picked
            .into_iter()
            .map(|n| self.nodes[n as usize].id.to_string())
            .collect()
    }

    /// Extends to `lease_until` the leases `worker_id` still holds (running, claimed by it) among `ids`.
    /// Unknown ids are an error and change nothing.
    pub fn heartbeat(
        &mut self,
        ids: &[String],
        worker_id: &str,
        lease_until: f64,
    ) -> DagResult<Vec<String>> {
        let idx: Vec<u32> = ids
            .iter()
            .map(|id| self.idx(id))
            .collect::<DagResult<_>>()?;
        let mut held = Vec::new();
        for n in idx {
            let node = &self.nodes[n as usize];
            let holds = node.is_active()
                && node.state == State::Running
                && self.lease_of(n).0 == Some(worker_id);
            if holds {
                self.save_node(n);
                self.nodes[n as usize]
                    .metadata_mut()
                    .set(LEASE_EXPIRES_AT, Value::Float(lease_until));
                held.push(self.nodes[n as usize].id.to_string());
            }
        }
        held.sort_unstable();
        held.dedup();
        Ok(held)
    }

    /// Running nodes whose lease ended before `at`, ascending id: each goes back to `pending` with its attempt
    /// counted, or to `errored` with `lease_expired` when that attempt reaches `max_attempts`.
    pub fn reclaim_expired(&mut self, at: Option<f64>, max_attempts: u32) -> Vec<String> {
        self.flush();
        let at_time = at.unwrap_or_else(now);
        let mut expired: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&n| {
                let node = &self.nodes[n as usize];
                node.is_active()
                    && node.state == State::Running
                    && self.lease_of(n).1.is_some_and(|t| t < at_time)
            })
            .collect();
        expired.sort_by(|a, b| self.nodes[*a as usize].id.cmp(&self.nodes[*b as usize].id));
        let stamp = now();
        let mut out = Vec::with_capacity(expired.len());
        for n in expired {
            let (by, until) = self.lease_of(n);
            let by = by.map_or(Value::Null, |s| Value::Str(s.to_owned()));
            let until = until.map_or(Value::Null, Value::Float);
            let attempt = match self.nodes[n as usize].metadata().get(ATTEMPT) {
                Some(Value::Int(i)) => *i,
                _ => 0,
            } + 1;
            self.save_node(n);
            let errored = attempt >= i64::from(max_attempts);
            {
                let node = &mut self.nodes[n as usize];
                node.metadata_mut().set(ATTEMPT, Value::Int(attempt));
                node.metadata_mut().remove(CLAIMED_BY);
                node.metadata_mut().remove(LEASE_EXPIRES_AT);
                if errored {
                    node.metadata_mut()
                        .set("error", Value::Str("lease_expired".to_owned()));
                } else {
                    node.started_at = crate::clock::OptTime::NONE;
                }
            }
            let id = self.nodes[n as usize].id.clone();
            let p = obj(vec![
                ("worker_id", by),
                ("lease_expires_at", until),
                ("attempt", Value::Int(attempt)),
            ]);
            self.record("node_lease_expired", &id, p, stamp);
            let to = if errored {
                State::Errored
            } else {
                State::Pending
            };
            // Running -> pending is not a caller transition (docs/dag-rules.md §2.3); only a lapsed lease
            // takes it, so it goes through `set_state` directly.
            self.set_state(n, to, stamp);
            out.push(id.to_string());
        }
        self.flush();
        out
    }

    /// Gives back, unfinished, the nodes among `ids` that `worker_id` still holds (a worker stopping
    /// gracefully): each goes back to `pending` with its lease cleared and its attempt NOT counted, and a
    /// `node_lease_released` event is recorded. Ids it does not hold are left alone; unknown ids are an error
    /// and change nothing.
    pub fn release(&mut self, ids: &[String], worker_id: &str) -> DagResult<Vec<String>> {
        let mut idx: Vec<u32> = ids
            .iter()
            .map(|id| self.idx(id))
            .collect::<DagResult<_>>()?;
        self.flush();
        idx.sort_by(|a, b| self.nodes[*a as usize].id.cmp(&self.nodes[*b as usize].id));
        idx.dedup();
        let stamp = now();
        let mut out = Vec::new();
        for n in idx {
            let node = &self.nodes[n as usize];
            if !(node.is_active()
                && node.state == State::Running
                && self.lease_of(n).0 == Some(worker_id))
            {
                continue;
            }
            self.save_node(n);
            {
                let node = &mut self.nodes[n as usize];
                node.metadata_mut().remove(CLAIMED_BY);
                node.metadata_mut().remove(LEASE_EXPIRES_AT);
                node.started_at = crate::clock::OptTime::NONE;
            }
            let id = self.nodes[n as usize].id.clone();
            let p = obj(vec![("worker_id", Value::Str(worker_id.to_owned()))]);
            self.record("node_lease_released", &id, p, stamp);
            // Running -> pending, like a lapsed lease (docs/dag-rules.md §2.3): only the holder gives it back.
            self.set_state(n, State::Pending, stamp);
            out.push(id.to_string());
        }
        self.flush();
        Ok(out)
    }

    /// What a pool needs to know about this graph's work: how many nodes are claimable now, and the earliest
    /// `lease_expires_at` among running nodes (None when no running node has a lease).
    pub fn work(&mut self) -> Work {
        self.flush();
        let lease_due = self
            .sets
            .running
            .iter()
            .filter_map(|n| self.lease_of(n).1)
            .reduce(f64::min);
        Work {
            claimable: self.sets.ready.len(),
            running: self.sets.running.len(),
            lease_due,
        }
    }

    /// Refuses a result from `worker_id` for a node it no longer holds (reclaimed, or claimed by another).
    pub fn check_lease(&self, id: &str, worker_id: &str) -> DagResult<()> {
        let n = self.idx(id)?;
        let node = &self.nodes[n as usize];
        let (by, _) = self.lease_of(n);
        if node.state != State::Running || by.is_some_and(|b| b != worker_id) {
            return Err(DagError::new(
                DagCode::ClaimLeaseLost,
                format!("worker {worker_id:?} no longer holds the claim on node {id:?}"),
            ));
        }
        Ok(())
    }
}
