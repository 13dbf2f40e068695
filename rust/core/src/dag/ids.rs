//! UUIDv7 generation and wall-clock time.
//!
//! Ids must sort in creation order within a process (ordering ties and version lists rely on it), so the
//! 12-bit `rand_a` field is a counter that keeps going when the clock stands still or steps back.

use parking_lot::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

struct Clock {
    last_ms: u64,
    counter: u16,
    rng: u64,
}

static CLOCK: Mutex<Clock> = Mutex::new(Clock {
    last_ms: 0,
    counter: 0,
    rng: 0,
});

pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn uuid7() -> String {
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut c = CLOCK.lock();
    if c.rng == 0 {
        c.rng = wall ^ (u64::from(std::process::id()) << 32) ^ 0x5DEE_CE66_D1CE_5EED;
    }
    if wall > c.last_ms {
        c.last_ms = wall;
        c.counter = 0;
    } else if c.counter >= 0x0FFF {
        // Counter exhausted within one millisecond: borrow from the future to stay monotonic.
        c.last_ms += 1;
        c.counter = 0;
    } else {
        c.counter += 1;
    }
    let ms = c.last_ms;
    let counter = c.counter;
    let rand = splitmix(&mut c.rng);
    drop(c);
    let hi: u64 = (ms << 16) | 0x7000 | u64::from(counter);
    let lo: u64 = (rand & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
    let x = (u128::from(hi) << 64) | u128::from(lo);
    let h = format!("{x:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version7_and_strictly_increasing() {
        let mut prev = uuid7();
        for _ in 0..10_000 {
            let next = uuid7();
            assert!(next > prev, "{next} <= {prev}");
            assert_eq!(next.len(), 36);
            assert_eq!(&next[14..15], "7");
            prev = next;
        }
    }
}
