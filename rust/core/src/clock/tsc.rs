//! Wall time read from the CPU's time-stamp counter between readings of the OS clock (docs/design.md
//! §46).
//!
//! `clock_gettime(CLOCK_REALTIME)` is the OS's answer, but on the virtual machines agents run on it costs
//! 40-45 ns (an ordered counter read and the kernel's conversion), and the DAG reads it for every node and
//! every edge, the call graph twice per call. The counter itself reads in about 11 ns. So each thread keeps
//! an anchor, one OS reading and the counter beside it, plus the counter's rate measured between two such
//! readings, and extrapolates from it for at most [`SPAN_NS`] before it reads the OS clock again.
//!
//! It is used only where the kernel itself keeps time with the counter (its clock source is `tsc`: the
//! counter runs at a constant rate and agrees across cores); anywhere else every reading is the OS's.
//!
//! What it promises:
//! - within a few hundred nanoseconds of the OS clock (measured: 17-300 ns; 1.4 µs at worst, by
//!   [`MEASURE_NS`]); a DAG time, a float of seconds, resolves 0.24 µs today;
//! - a thread's times never go back by less than [`ABSORBED_NS`] (the OS clock may: the extrapolation's
//!   error, seen at a re-anchoring, is absorbed);
//! - a step of the OS clock (NTP, an operator) is followed within [`SPAN_NS`]; a rate that disagrees with
//!   the last one by more than [`RATE_TOLERANCE`] (the OS clock moved under the anchor) is not used, and the
//!   thread reads the OS clock until it has measured a fresh rate.

use std::cell::Cell;
use std::sync::OnceLock;

use super::os_wall_ns;

/// How long an extrapolation runs before the OS clock is read again (an OS reading a millisecond: the
/// counter's cost stays the cost of a reading).
const SPAN_NS: f64 = 1_000_000.0;
/// The shortest interval a rate is measured over. An anchor's counter value is known to within half its
/// readings' spread (at most [`MAX_READ_TICKS`], 0.7 µs at 3 GHz; about 50 ns when nothing interrupts), so a
/// rate is within 0.14% over this, 1e-4 typically, and an extrapolation over [`SPAN_NS`] within 1.4 µs,
/// 100 ns typically.
const MEASURE_NS: i64 = 500_000;
/// A rate off the previous one by more than this means the OS clock stepped between the two readings.
const RATE_TOLERANCE: f64 = 0.01;
/// An OS reading whose counter readings either side lie further apart was interrupted (an OS reading takes
/// about 150 ticks): its counter value is not known well enough to anchor on or to measure a rate from.
const MAX_READ_TICKS: u64 = 2_000;

#[derive(Clone, Copy)]
struct Anchor {
    /// Counter and OS time read together (0: none yet).
    tsc: u64,
    ns: i64,
    /// Nanoseconds per tick (0: not measured; every reading is the OS's).
    rate: f64,
    /// Ticks the extrapolation may run past `tsc`.
    span: u64,
}

impl Anchor {
    const NONE: Anchor = Anchor {
        tsc: 0,
        ns: 0,
        rate: 0.0,
        span: 0,
    };
}

/// A thread's anchor, and the last time it handed out.
struct Thread {
    anchor: Cell<Anchor>,
    last: Cell<i64>,
}

thread_local! {
    static THREAD: Thread = const {
        Thread {
            anchor: Cell::new(Anchor::NONE),
            last: Cell::new(0),
        }
    };
}

/// A reading this little behind the thread's last is the extrapolation's error, not the OS clock stepping
/// back: the last time is handed out again, so a thread's times never go backwards by it.
const ABSORBED_NS: i64 = 1_000_000;

/// Whether the kernel keeps time with the counter (read once a process).
fn usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc")
    })
}

#[inline]
fn counter() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU and reads a register; it has no memory effects.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

/// Nanoseconds since the epoch.
#[inline]
pub(super) fn now_ns() -> i64 {
    if !usable() {
        return os_wall_ns();
    }
    THREAD.with(|t| {
        let a = t.anchor.get();
        let ticks = counter().wrapping_sub(a.tsc);
        // A counter behind the anchor (another core's, a migration) wraps to a huge value: read the OS.
        let ns = if a.rate > 0.0 && ticks < a.span {
            a.ns + (ticks as f64 * a.rate) as i64
        } else {
            resync(&t.anchor, a)
        };
        let last = t.last.get();
        if ns < last && last - ns < ABSORBED_NS {
            return last;
        }
        t.last.set(ns);
        ns
    })
}

/// Reads the OS clock, and re-anchors and measures the rate when the reading is good enough.
#[cold]
#[inline(never)]
fn resync(cell: &Cell<Anchor>, a: Anchor) -> i64 {
    let before = counter();
    let ns = os_wall_ns();
    let after = counter();
    cell.set(next_anchor(a, before, ns, after));
    ns
}

/// The anchor after an OS reading `ns` taken between counter readings `before` and `after`.
fn next_anchor(a: Anchor, before: u64, ns: i64, after: u64) -> Anchor {
    let Some(spread) = after.checked_sub(before).filter(|&s| s <= MAX_READ_TICKS) else {
        // Interrupted: not an anchor to extrapolate from nor to measure against.
        return Anchor::NONE;
    };
    let tsc = before + spread / 2;
    let fresh = Anchor {
        tsc,
        ns,
        rate: 0.0,
        span: 0,
    };
    if a.tsc == 0 || tsc <= a.tsc || ns <= a.ns {
        return fresh;
    }
    if ns - a.ns < MEASURE_NS {
        // Too close to measure a rate over: keep the older anchor (and its rate, if any).
        return a;
    }
    let rate = (ns - a.ns) as f64 / (tsc - a.tsc) as f64;
    // Counters run between 100 MHz and 100 GHz; a first rate outside that, or a later one that disagrees
    // with the last, saw the OS clock step.
    let plausible = (0.01..=10.0).contains(&rate);
    let agrees = a.rate == 0.0 || (rate / a.rate - 1.0).abs() <= RATE_TOLERANCE;
    if !(plausible && agrees) {
        return fresh;
    }
    Anchor {
        rate,
        span: (SPAN_NS / rate) as u64,
        ..fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anchor(tsc: u64, ns: i64, rate: f64) -> Anchor {
        Anchor {
            tsc,
            ns,
            rate,
            span: if rate > 0.0 {
                (SPAN_NS / rate) as u64
            } else {
                0
            },
        }
    }

    #[test]
    fn a_rate_is_measured_between_two_good_readings() {
        let first = next_anchor(Anchor::NONE, 1_000, 5_000_000, 1_100);
        assert_eq!((first.tsc, first.ns, first.rate), (1_050, 5_000_000, 0.0));
        // 1,500,000 ticks later the OS clock moved 500 µs: a third of a nanosecond a tick.
        let second = next_anchor(first, 1_501_000, 5_500_000, 1_501_100);
        assert_eq!(second.tsc, 1_501_050);
        assert!((second.rate - 1.0 / 3.0).abs() < 1e-9, "{}", second.rate);
        assert_eq!(second.span, 3_000_000);
    }

    #[test]
    fn readings_too_close_together_keep_the_older_anchor() {
        let a = anchor(1_000, 5_000_000, 0.0);
        let b = next_anchor(a, 301_000, 5_100_000, 301_010);
        assert_eq!((b.tsc, b.ns, b.rate), (1_000, 5_000_000, 0.0));
    }

    #[test]
    fn an_interrupted_reading_is_no_anchor() {
        let a = anchor(1_000, 5_000_000, 1.0 / 3.0);
        let b = next_anchor(a, 3_001_000, 6_000_000, 3_001_000 + MAX_READ_TICKS + 1);
        assert_eq!((b.tsc, b.rate), (0, 0.0));
        // A counter that went backwards between the two readings is interrupted too.
        let c = next_anchor(a, 3_001_000, 6_000_000, 3_000_000);
        assert_eq!((c.tsc, c.rate), (0, 0.0));
    }

    #[test]
    fn a_step_of_the_os_clock_drops_the_rate() {
        let a = anchor(1_000, 5_000_000, 1.0 / 3.0);
        // 3,000,000 ticks are 1 ms at the known rate, but the OS clock moved 2 ms: it stepped forward.
        let b = next_anchor(a, 3_001_000, 7_000_000, 3_001_010);
        assert_eq!((b.tsc, b.ns, b.rate), (3_001_005, 7_000_000, 0.0));
        // Backwards: no rate either, and the anchor is the new reading.
        let c = next_anchor(a, 3_001_000, 4_000_000, 3_001_010);
        assert_eq!((c.tsc, c.ns, c.rate), (3_001_005, 4_000_000, 0.0));
        // Within the tolerance the new rate is taken.
        let d = next_anchor(a, 3_001_000, 6_002_000, 3_001_010);
        assert!((d.rate / (1.0 / 3.0) - 1.0).abs() < RATE_TOLERANCE);
    }

    #[test]
    fn an_implausible_first_rate_is_not_taken() {
        let a = anchor(1_000, 5_000_000, 0.0);
        // 1 ms over 5,000 ticks: a 5 MHz counter, which no x86_64 CPU has.
        let b = next_anchor(a, 6_000, 6_000_000, 6_000);
        assert_eq!(b.rate, 0.0);
    }

    #[test]
    fn a_thread_never_sees_its_time_go_back() {
        let mut last = now_ns();
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_millis(20) {
            let t = now_ns();
            assert!(t >= last, "{t} after {last}");
            last = t;
        }
    }

    #[test]
    fn readings_stay_close_to_the_os_clock_on_every_thread() {
        // Ours read between two OS readings should lie between them; pairs further apart than 5 µs (the
        // thread was descheduled) say nothing and are left out.
        let worst = || {
            let (mut worst, mut samples) = (0i64, 0u32);
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_millis(30) {
                let before = os_wall_ns();
                let ours = now_ns();
                let after = os_wall_ns();
                if after - before <= 5_000 {
                    worst = worst.max(before - ours).max(ours - after);
                    samples += 1;
                }
            }
            (worst, samples)
        };
        let threads: Vec<_> = (0..3).map(|_| std::thread::spawn(worst)).collect();
        for t in threads {
            let (w, samples) = t.join().unwrap();
            assert!(samples > 1_000, "{samples} samples");
            assert!(
                w < 1_000,
                "a reading {w} ns outside the OS readings either side"
            );
        }
    }
}
