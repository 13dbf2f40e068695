//! Wall-clock milliseconds since the Unix epoch, read twice per recorded call.

/// `time.time() * 1000` truncated, as the reference records timestamps.
#[cfg(unix)]
pub fn now_ms() -> i64 {
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
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

#[cfg(not(unix))]
pub fn now_ms() -> i64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
    }
}
