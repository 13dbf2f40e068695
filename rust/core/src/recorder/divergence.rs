//! Loop and runaway detection: repeated (kind, name) signatures in a sliding window, and
//! cost-rate / token-velocity spikes on completed calls. Each signal fires once per chain.

use rustc_hash::FxHashSet;

use super::intern::Sym;
use super::kind::Kind;
use crate::ids::NodeId;

const WINDOW: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Consecutive,
    Frequency,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Consecutive => "consecutive",
            Mode::Frequency => "frequency",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum DivergenceEvent {
    Pattern {
        mode: Mode,
        kind: Kind,
        name: Sym,
        repeat_count: u64,
    },
    CostRate {
        cost_rate: f64,
        threshold: f64,
        node: NodeId,
    },
    TokenVelocity {
        token_velocity: f64,
        threshold: f64,
        node: NodeId,
    },
}

/// The last WINDOW dispatch signatures, oldest first from `head`.
struct Window {
    sigs: [(Kind, Sym); WINDOW],
    len: usize,
    head: usize,
    /// How many of the newest signatures are equal (at most `len`): the trailing run, kept as
    /// signatures arrive so a loop repeating one call never scans the window.
    run: usize,
}

impl Default for Window {
    fn default() -> Self {
        // Slots beyond `len` are never read.
        Window {
            sigs: [(Kind::System, 0); WINDOW],
            len: 0,
            head: 0,
            run: 0,
        }
    }
}

impl Window {
    /// Returns the signature pushed out of a full window.
    fn push(&mut self, sig: (Kind, Sym)) -> Option<(Kind, Sym)> {
        let extends = self.len > 0 && self.sigs[(self.head + self.len - 1) % WINDOW] == sig;
        self.run = if extends {
            (self.run + 1).min(WINDOW)
        } else {
            1
        };
        let slot = (self.head + self.len) % WINDOW;
        if self.len == WINDOW {
            let evicted = std::mem::replace(&mut self.sigs[slot], sig);
            self.head = (self.head + 1) % WINDOW;
            Some(evicted)
        } else {
            self.sigs[slot] = sig;
            self.len += 1;
            None
        }
    }

    /// Newest first.
    fn iter_rev(&self) -> impl Iterator<Item = (Kind, Sym)> + '_ {
        (0..self.len).map(move |i| self.sigs[(self.head + self.len - 1 - i) % WINDOW])
    }
}

#[derive(Default)]
pub struct Divergence {
    window: Window,
    emitted: FxHashSet<(Kind, Sym, Mode)>,
    cost_rate_fired: bool,
    velocity_fired: bool,
    /// Signals emitted before this graph was loaded from a snapshot.
    pub restored_emitted: u64,
    pub pending: Vec<DivergenceEvent>,
}

/// What a dispatch did to the symbols the detector holds: the caller keeps one interner
/// reference per window slot and per reported signature.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DispatchRefs {
    pub left_window: Option<Sym>,
    pub reported: Option<Sym>,
}

impl Divergence {
    pub fn emitted_count(&self) -> u64 {
        self.restored_emitted
            + self.emitted.len() as u64
            + u64::from(self.cost_rate_fired)
            + u64::from(self.velocity_fired)
    }

    /// Records one dispatch of `(kind, name)`; at most one pattern event per call.
    pub fn observe_dispatch(&mut self, kind: Kind, name: Sym) -> DispatchRefs {
        let sig = (kind, name);
        let mut refs = DispatchRefs {
            left_window: self.window.push(sig).map(|(_, s)| s),
            reported: None,
        };
        let consecutive = self.window.run;
        debug_assert_eq!(
            consecutive,
            self.window.iter_rev().take_while(|&s| s == sig).count()
        );
        let consec_threshold = kind.consecutive_threshold();
        if consecutive >= consec_threshold {
            // The trailing run grows one step at a time, so it can only newly qualify at
            // exactly the threshold; past it the signature has already been reported.
            if consecutive == consec_threshold
                && self.emitted.insert((kind, name, Mode::Consecutive))
            {
                self.pending.push(DivergenceEvent::Pattern {
                    mode: Mode::Consecutive,
                    kind,
                    name,
                    repeat_count: consecutive as u64,
                });
                refs.reported = Some(name);
            }
            // A consecutive burst is never also reported as a frequency pattern.
            return refs;
        }
        let freq = self.window.iter_rev().filter(|&s| s == sig).count();
        if freq >= kind.frequency_threshold() && self.emitted.insert((kind, name, Mode::Frequency))
        {
            self.pending.push(DivergenceEvent::Pattern {
                mode: Mode::Frequency,
                kind,
                name,
                repeat_count: freq as u64,
            });
            refs.reported = Some(name);
        }
        refs
    }

    /// Checks a completed call's spend and output rates; `elapsed_ms` is at least 1.
    pub fn observe_completion(
        &mut self,
        node: NodeId,
        cost_usd: f64,
        tokens_out: Option<u64>,
        elapsed_ms: i64,
        cost_rate_threshold: f64,
        velocity_threshold: f64,
    ) {
        let elapsed = elapsed_ms as f64;
        if cost_usd > 0.0 && !self.cost_rate_fired {
            // Saturated so that a huge cost never puts a non-finite rate in an event
            // (docs/design.md §23).
            let cost_rate = (cost_usd / elapsed * 1000.0).min(f64::MAX);
            if cost_rate > cost_rate_threshold {
                self.cost_rate_fired = true;
                self.pending.push(DivergenceEvent::CostRate {
                    cost_rate,
                    threshold: cost_rate_threshold,
                    node,
                });
            }
        }
        if let Some(tokens) = tokens_out {
            if elapsed_ms > 0 && !self.velocity_fired {
                let token_velocity = tokens as f64 / elapsed * 1000.0;
                if token_velocity > velocity_threshold {
                    self.velocity_fired = true;
                    self.pending.push(DivergenceEvent::TokenVelocity {
                        token_velocity,
                        threshold: velocity_threshold,
                        node,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_repeated_three_times_fires_once() {
        let mut d = Divergence::default();
        for _ in 0..6 {
            d.observe_dispatch(Kind::Tool, 7);
        }
        assert_eq!(
            d.pending,
            vec![DivergenceEvent::Pattern {
                mode: Mode::Consecutive,
                kind: Kind::Tool,
                name: 7,
                repeat_count: 3
            }]
        );
        assert_eq!(d.emitted_count(), 1);
    }

    #[test]
    fn alternating_tools_fire_by_frequency() {
        let mut d = Divergence::default();
        // A, A, B, …: never three in a row, but five A's within the window of eight.
        for i in 0..12 {
            d.observe_dispatch(Kind::Tool, u32::from(i % 3 == 2));
        }
        let modes: Vec<_> = d
            .pending
            .iter()
            .map(|e| match e {
                DivergenceEvent::Pattern {
                    mode,
                    name,
                    repeat_count,
                    ..
                } => (*mode, *name, *repeat_count),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(modes, vec![(Mode::Frequency, 0, 5)]);
    }

    #[test]
    fn the_trailing_run_is_the_count_of_equal_newest_signatures() {
        let mut d = Divergence::default();
        // Runs shorter than, equal to and longer than the window, two kinds with one name.
        let seq = [1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 3, 3];
        for (i, &name) in seq.iter().enumerate() {
            let kind = if i % 7 == 6 { Kind::Tool } else { Kind::Llm };
            d.observe_dispatch(kind, name);
            let newest = (kind, name);
            let scanned = d.window.iter_rev().take_while(|&s| s == newest).count();
            assert_eq!(d.window.run, scanned, "after {i} dispatches");
        }
    }

    #[test]
    fn system_nodes_never_fire() {
        let mut d = Divergence::default();
        for _ in 0..50 {
            d.observe_dispatch(Kind::System, 1);
        }
        assert!(d.pending.is_empty());
    }

    #[test]
    fn rates_fire_once_above_threshold() {
        let mut d = Divergence::default();
        d.observe_completion(3, 0.05, Some(100), 1000, 0.10, 500.0);
        assert!(d.pending.is_empty());
        d.observe_completion(4, 1.0, Some(1000), 1, 0.10, 500.0);
        d.observe_completion(5, 1.0, Some(1000), 1, 0.10, 500.0);
        assert_eq!(d.pending.len(), 2);
        assert_eq!(d.emitted_count(), 2);
    }

    /// docs/testing.md "Boundary tests": a rate fires only *above* its threshold. 0.25 USD and 4 tokens
    /// in 1 ms are exactly 250 USD/s and 4,000 tokens/s.
    #[test]
    fn a_rate_exactly_at_its_threshold_does_not_fire() {
        let mut d = Divergence::default();
        d.observe_completion(2, 0.25, Some(4), 1, 250.0, 4000.0);
        assert!(d.pending.is_empty());
        d.observe_completion(3, 0.25, Some(4), 1, 249.999_999, 3_999.999_999);
        assert_eq!(
            d.pending,
            vec![
                DivergenceEvent::CostRate {
                    cost_rate: 250.0,
                    threshold: 249.999_999,
                    node: 3
                },
                DivergenceEvent::TokenVelocity {
                    token_velocity: 4000.0,
                    threshold: 3_999.999_999,
                    node: 3
                },
            ]
        );
    }

    #[test]
    fn modes_have_their_documented_names() {
        assert_eq!(Mode::Consecutive.as_str(), "consecutive");
        assert_eq!(Mode::Frequency.as_str(), "frequency");
    }
}
