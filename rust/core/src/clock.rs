//! The core's one clock: wall time since the Unix epoch, the OS's `CLOCK_REALTIME` (read through the CPU's
//! time-stamp counter where the kernel keeps time with it: `clock/tsc.rs`).
//! The call graph records milliseconds (twice per call), the DAG seconds as a float, ids take
//! their time from here too (`crate::ids`).

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod tsc;

/// Nanoseconds since the epoch as the OS tells them; 0 if the clock cannot be read.
#[cfg(unix)]
fn os_wall_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_REALTIME always exists. Going through
    // libc directly skips std's Duration arithmetic, which costs as much as the vDSO read.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

#[cfg(not(unix))]
fn os_wall_ns() -> i64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Nanoseconds since the epoch: the OS clock, read through the time-stamp counter where the kernel keeps
/// time with it (`clock/tsc.rs`, docs/design.md §46).
#[inline]
fn wall_ns() -> i64 {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        tsc::now_ns()
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        os_wall_ns()
    }
}

/// `time.time() * 1000` truncated, as the reference records timestamps (the call graph).
#[inline]
pub fn now_ms() -> i64 {
    wall_ns() / 1_000_000
}

/// `time.time()`: seconds as a float (the DAG's timestamps), made from nanoseconds as CPython makes it.
#[inline]
pub fn now() -> f64 {
    wall_ns() as f64 / 1e9
}

#[cfg(test)]
mod tests {
    #[test]
    fn agrees_with_std() {
        let std_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let ours = super::now_ms();
        assert!((ours - std_ms).abs() < 1_000, "{ours} vs {std_ms}");
        let secs = super::now();
        assert!(
            (secs * 1000.0 - std_ms as f64).abs() < 1_000.0,
            "{secs} vs {std_ms}"
        );
    }
}

/// An optional timestamp in eight bytes instead of sixteen: NaN stands for "none", which no stored time
/// can be (every time is finite: docs/design.md §23). A DAG node carries two (docs/dag.md "Memory").
#[derive(Clone, Copy, Debug)]
pub struct OptTime(f64);

impl OptTime {
    pub const NONE: OptTime = OptTime(f64::NAN);

    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }

    pub fn is_none(self) -> bool {
        self.0.is_nan()
    }

    pub fn is_some(self) -> bool {
        !self.is_none()
    }
}

impl From<Option<f64>> for OptTime {
    fn from(t: Option<f64>) -> Self {
        OptTime(t.unwrap_or(f64::NAN))
    }
}

impl PartialEq for OptTime {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

#[cfg(test)]
mod opt_time_tests {
    use super::OptTime;

    #[test]
    fn none_and_times_round_trip() {
        assert_eq!(OptTime::NONE.get(), None);
        assert_eq!(OptTime::from(None).get(), None);
        assert_eq!(OptTime::from(Some(0.0)).get(), Some(0.0));
        assert_eq!(OptTime::from(Some(-1.5)).get(), Some(-1.5));
        assert_eq!(OptTime::from(Some(f64::NAN)), OptTime::NONE);
        assert_eq!(std::mem::size_of::<OptTime>(), 8);
    }
}
