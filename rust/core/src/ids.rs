//! The core's one id module: the call graph's node ids (`n000001`, also the containment layer's) and
//! the DAG's UUIDv7 ids.
//!
//! UUIDv7 ids must sort in creation order within a process (ordering ties and version lists rely on
//! it), so the 12-bit `rand_a` field is a counter that keeps going when the clock stands still or steps
//! back. Wall time comes from the core's one clock (`crate::clock`).

use parking_lot::Mutex;

use crate::clock::now_ms;

/// A call-graph node id: `n` followed by the counter, zero-padded to six digits (`n000001`).
pub type NodeId = u64;

/// Formats `id` into `buf` and returns the ASCII bytes; no allocation on the hot path.
pub fn format_id_bytes(id: NodeId, buf: &mut [u8; 24]) -> &[u8] {
    let mut digits = itoa::Buffer::new();
    let d = digits.format(id).as_bytes();
    let pad = 6usize.saturating_sub(d.len());
    buf[0] = b'n';
    buf[1..1 + pad].fill(b'0');
    buf[1 + pad..1 + pad + d.len()].copy_from_slice(d);
    let len = 1 + pad + d.len();
    &buf[..len]
}

/// The length of [`format_id_bytes`]'s text for `id`, without formatting it.
pub fn id_len(id: NodeId) -> usize {
    1 + crate::json::decimal_len(id).max(6)
}

pub fn format_id(id: NodeId, buf: &mut [u8; 24]) -> &str {
    // Only ASCII digits and 'n' were written.
    std::str::from_utf8(format_id_bytes(id, buf)).unwrap_or_default()
}

pub fn id_string(id: NodeId) -> String {
    format_id(id, &mut [0; 24]).to_owned()
}

/// Parses an id produced by [`format_id`]; any other spelling (`n1`, `n0000001`) is unknown.
pub fn parse_id(s: &str) -> Option<NodeId> {
    let b = s.as_bytes();
    // Hot path: every id below a million has exactly this shape.
    if b.len() == 7 && b[0] == b'n' {
        let mut v: u64 = 0;
        for &c in &b[1..] {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + u64::from(d);
        }
        return (v > 0).then_some(v);
    }
    if b.len() < 7 || b.len() > 21 || b[0] != b'n' {
        return None;
    }
    let digits = &b[1..];
    if digits.len() > 6 && digits[0] == b'0' {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    (v > 0).then_some(v)
}

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

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn uuid7() -> String {
    uuid7_bytes(wall_ms())
        .iter()
        .map(|&b| char::from(b))
        .collect()
}

/// An id as the DAG holds it: a 36-byte text (a UUID, what the graph mints and nearly every caller gives)
/// inline, so a new node or edge allocates nothing for its id and a copy counts nothing up; any other text
/// shared. Reads as the `str` it was made from (docs/dag.md "Memory").
#[derive(Clone)]
pub enum Id {
    Inline([u8; UUID_LEN]),
    Shared(std::sync::Arc<str>),
}

const UUID_LEN: usize = 36;

impl std::ops::Deref for Id {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        match self {
            // SAFETY: `Inline` is made only from a `str` (`From<&str>`) or from `uuid_text`'s ASCII.
            Id::Inline(bytes) => unsafe { std::str::from_utf8_unchecked(bytes) },
            Id::Shared(s) => s,
        }
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Id {
        match <[u8; UUID_LEN]>::try_from(s.as_bytes()) {
            Ok(bytes) => Id::Inline(bytes),
            Err(_) => Id::Shared(std::sync::Arc::from(s)),
        }
    }
}

impl From<String> for Id {
    fn from(s: String) -> Id {
        if s.len() == UUID_LEN {
            Id::from(&*s)
        } else {
            Id::Shared(std::sync::Arc::from(s))
        }
    }
}

impl std::borrow::Borrow<str> for Id {
    fn borrow(&self) -> &str {
        self
    }
}

impl AsRef<str> for Id {
    fn as_ref(&self) -> &str {
        self
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Id) -> bool {
        **self == **other
    }
}

impl Eq for Id {}

impl PartialOrd for Id {
    fn partial_cmp(&self, other: &Id) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Id {
    fn cmp(&self, other: &Id) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

/// Hashes as its text, so a map keyed by `Id` is searched with a `&str` (`Borrow`).
impl std::hash::Hash for Id {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl std::fmt::Debug for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self)
    }
}

/// A new UUIDv7 as an [`Id`].
pub fn uuid7_id() -> Id {
    uuid7_keyed_at(crate::clock::now()).0
}

/// A new UUIDv7 for an object created at `at` (`clock::now()` seconds, read once by the caller for its
/// `created_at` too: a second clock read per node was a few percent of a DAG build), and the id's value as
/// [`parse_uuid`] reads it back: the DAG indexes the ids it mints by value (docs/dag.md "Ids and indexes"),
/// and reading the text it just wrote was a tenth of a build call. The id stays monotonic whatever `at`
/// is: a time before the last id's continues its counter.
// Always inline: returned through memory, its 36 bytes sit one byte off (the enum's tag) and were read
// back before the copy settled (docs/dag.md "Memory").
#[inline(always)]
pub fn uuid7_keyed_at(at: f64) -> (Id, u128) {
    // A UUIDv7 holds 48 bits of milliseconds: a time outside them (NaN, infinite, negative) is not a
    // creation time, and the clock is read instead.
    let ms = at * 1000.0;
    let wall = if (0.0..MAX_MS).contains(&ms) {
        ms as u64
    } else {
        wall_ms()
    };
    let key = uuid7_value(wall);
    (Id::Inline(uuid_text(key)), key)
}

const MAX_MS: f64 = (1u64 << 48) as f64;

fn wall_ms() -> u64 {
    u64::try_from(now_ms()).unwrap_or(0)
}

fn uuid7_bytes(wall: u64) -> [u8; 36] {
    uuid_text(uuid7_value(wall))
}

/// The next UUIDv7 of the process as a number: 48 bits of milliseconds, the version, a 12-bit counter that
/// keeps the order within a millisecond (RFC 9562 §6.2, method 1), the variant and 62 random bits.
fn uuid7_value(wall: u64) -> u128 {
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
    (u128::from(hi) << 64) | u128::from(lo)
}

/// `x` as a lowercase 8-4-4-4-12 UUID, written into a fixed buffer (uuid7 is on the DAG's build path;
/// `format!` twice per id cost more than the rest of the id).
#[inline]
fn uuid_text(x: u128) -> [u8; 36] {
    let h = hex32(x);
    let mut out = [b'-'; 36];
    out[0..8].copy_from_slice(&h[0..8]);
    out[9..13].copy_from_slice(&h[8..12]);
    out[14..18].copy_from_slice(&h[12..16]);
    out[19..23].copy_from_slice(&h[16..20]);
    out[24..36].copy_from_slice(&h[20..32]);
    out
}

/// The 32 lowercase hex digits of `x`, most significant first: sixteen bytes at once in SSE2 registers
/// (every x86_64 CPU has them), a third of the instructions of the word-wise way below.
#[cfg(target_arch = "x86_64")]
#[inline]
fn hex32(x: u128) -> [u8; 32] {
    use core::arch::x86_64::*;
    let bytes = x.to_be_bytes();
    let mut out = [0u8; 32];
    // SAFETY: SSE2 is part of x86_64; the loads and stores are unaligned ones within `bytes` and `out`.
    #[allow(unused_unsafe)]
    unsafe {
        let v = _mm_loadu_si128(bytes.as_ptr().cast());
        let low = _mm_set1_epi8(0x0F);
        let high_nibbles = _mm_and_si128(_mm_srli_epi16(v, 4), low);
        let low_nibbles = _mm_and_si128(v, low);
        // Per nibble: '0' + n, and 'a' - '0' - 10 more when n > 9.
        let ascii = |n: __m128i| {
            let letter = _mm_cmpgt_epi8(n, _mm_set1_epi8(9));
            let digit = _mm_add_epi8(n, _mm_set1_epi8(b'0' as i8));
            _mm_add_epi8(
                digit,
                _mm_and_si128(letter, _mm_set1_epi8((b'a' - b'0' - 10) as i8)),
            )
        };
        // A byte's high digit comes before its low one.
        let first = ascii(_mm_unpacklo_epi8(high_nibbles, low_nibbles));
        let second = ascii(_mm_unpackhi_epi8(high_nibbles, low_nibbles));
        _mm_storeu_si128(out.as_mut_ptr().cast(), first);
        _mm_storeu_si128(out.as_mut_ptr().add(16).cast(), second);
    }
    out
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn hex32(x: u128) -> [u8; 32] {
    hex32_words(x)
}

/// [`hex32`] eight digits at a time in plain words: each 32-bit word's nibbles spread one to a byte, then
/// turned into ASCII digits in the same word (the portable way, and the SSE2 way's check).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn hex32_words(x: u128) -> [u8; 32] {
    const fn every_byte(b: u8) -> u64 {
        b as u64 * 0x0101_0101_0101_0101
    }
    let digits = |word: u32| -> [u8; 8] {
        let w = u64::from(word);
        let w = (w | w << 16) & 0x0000_FFFF_0000_FFFF;
        let w = (w | w << 8) & 0x00FF_00FF_00FF_00FF;
        let nibbles = (w | w << 4) & every_byte(0x0F);
        // Per byte: 1 when the nibble is 10 or more (adding 6 carries into bit 4), then 'a' - '0' - 10 more.
        let letters = ((nibbles + every_byte(6)) >> 4) & every_byte(1);
        (nibbles + every_byte(b'0') + letters * u64::from(b'a' - b'0' - 10)).to_be_bytes()
    };
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_exact_mut(8).enumerate() {
        chunk.copy_from_slice(&digits((x >> (96 - 32 * i)) as u32));
    }
    out
}

/// The value of an id written as [`uuid_text`] writes UUIDs (lowercase 8-4-4-4-12 hex), None for any
/// other text. The two orders agree: for such ids, comparing the values is comparing the text, so the DAG
/// indexes the ids it generates by value, in creation order, without hashing them (`dag/index.rs`).
pub fn parse_uuid(s: &str) -> Option<u128> {
    let b: &[u8; 36] = s.as_bytes().try_into().ok()?;
    if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
        return None;
    }
    let eight = |at: usize| u64::from_be_bytes(b[at..at + 8].try_into().unwrap_or_default());
    let four = |at: usize| {
        u64::from(u32::from_be_bytes(
            b[at..at + 4].try_into().unwrap_or_default(),
        ))
    };
    // The 32 digits as four words of eight, the dashes left out.
    let words = [
        eight(0),
        four(9) << 32 | four(14),
        four(19) << 32 | four(24),
        eight(28),
    ];
    let mut bad = 0;
    let mut half = |a: u64, b: u64| {
        let (a, a_bad) = hex8(a);
        let (b, b_bad) = hex8(b);
        bad |= a_bad | b_bad;
        u64::from(a) << 32 | u64::from(b)
    };
    let value = u128::from(half(words[0], words[1])) << 64 | u128::from(half(words[2], words[3]));
    (bad == 0).then_some(value)
}

/// Eight lowercase hex digits (big-endian in `x`, the first digit in its top byte) as a number, eight
/// bytes at a time (a UUID is parsed per DAG lookup), and a word that is not zero when one of the bytes
/// is not such a digit.
fn hex8(x: u64) -> (u32, u64) {
    const fn every_byte(b: u8) -> u64 {
        b as u64 * 0x0101_0101_0101_0101
    }
    const HIGH: u64 = every_byte(0x80);
    // Per byte, for bytes below 0x80: `c + (0x80 - k)` has its high bit set when c >= k, and
    // `(0x80 + k) - c` when c <= k; neither carries into the next byte. A byte from 0x80 up is refused by
    // its own high bit, whatever the sums did.
    let ascii = x & !HIGH;
    let digit = (ascii + every_byte(0x80 - b'0')) & (every_byte(0x80 + b'9') - ascii);
    let letter = (ascii + every_byte(0x80 - b'a')) & (every_byte(0x80 + b'f') - ascii);
    let bad = (x | !(digit | letter)) & HIGH;
    // '0'..'9' keep their low nibble; 'a'..'f' (0x61..) gain 9 on it.
    let nibbles = (x & every_byte(0x0F)) + ((x & every_byte(0x40)) >> 6) * 9;
    let pairs = (nibbles | (nibbles >> 4)) & 0x00FF_00FF_00FF_00FF;
    let quads = (pairs | (pairs >> 8)) & 0x0000_FFFF_0000_FFFF;
    (((quads | (quads >> 16)) & 0xFFFF_FFFF) as u32, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_inline_at_36_bytes_and_read_as_their_text() {
        use std::collections::hash_map::DefaultHasher;
        use std::hash::{Hash, Hasher};
        assert_eq!(std::mem::size_of::<Id>(), 40);
        let hash = |h: &dyn Fn(&mut DefaultHasher)| {
            let mut s = DefaultHasher::new();
            h(&mut s);
            s.finish()
        };
        let uuid = uuid7();
        for (text, inline) in [
            (uuid.as_str(), true),
            ("t1", false),
            ("", false),
            ("é".repeat(18).as_str(), true),
            (&*"x".repeat(37), false),
        ]
        .map(|(t, i)| (t.to_owned(), i))
        {
            for id in [Id::from(text.as_str()), Id::from(text.clone())] {
                assert_eq!(matches!(id, Id::Inline(_)), inline, "{text}");
                assert_eq!(
                    (&*id, id.to_string(), format!("{id:?}")),
                    (text.as_str(), text.clone(), format!("{text:?}"))
                );
                assert_eq!(hash(&|s| id.hash(s)), hash(&|s| text.as_str().hash(s)));
            }
        }
        let (a, b) = (Id::from("a"), Id::from(uuid.as_str()));
        assert_eq!(a.cmp(&b), "a".cmp(uuid.as_str()));
        assert!(a != b && a == Id::from("a"));
    }

    #[test]
    fn uuid_text_matches_format() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut values: Vec<u128> = vec![0, u128::MAX, 1, 1 << 127];
        for _ in 0..10_000 {
            let hi = splitmix(&mut state);
            let lo = splitmix(&mut state);
            values.push((u128::from(hi) << 64) | u128::from(lo));
        }
        for x in values {
            let h = format!("{x:032x}");
            let want = format!(
                "{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            );
            assert_eq!(std::str::from_utf8(&uuid_text(x)), Ok(want.as_str()));
            assert_eq!(hex32_words(x), hex32(x), "{x:032x}");
        }
    }

    #[test]
    fn round_trip_and_rejects_other_spellings() {
        for id in [1, 42, 999_999, 1_000_000, 123_456_789] {
            let s = id_string(id);
            assert_eq!(parse_id(&s), Some(id), "{s}");
        }
        assert_eq!(id_string(1), "n000001");
        assert_eq!(id_string(1_000_000), "n1000000");
        for bad in [
            "", "n", "n1", "n00001", "x000001", "n0000001", "n00000a", "n000000", "n 00001",
        ] {
            assert_eq!(parse_id(bad), None, "{bad:?}");
        }
    }

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
        let minted = uuid7_id();
        assert!(*minted > *prev && minted.len() == 36 && &minted[14..15] == "7");
        assert!(matches!(minted, Id::Inline(_)));
        // A creation time from the past, or none at all, continues the order instead of going back.
        let mut prev = minted;
        for at in [
            crate::clock::now(),
            1.0,
            -5.0,
            f64::NAN,
            f64::INFINITY,
            crate::clock::now(),
        ] {
            let next = uuid7_keyed_at(at).0;
            assert!(*next > *prev, "{next} <= {prev} (at {at})");
            prev = next;
        }
    }

    #[test]
    fn parse_uuid_reads_exactly_what_uuid_text_writes() {
        let mut state = 0x0bad_cafe_u64;
        for _ in 0..10_000 {
            let x = (u128::from(splitmix(&mut state)) << 64) | u128::from(splitmix(&mut state));
            let text = uuid_text(x);
            assert_eq!(parse_uuid(std::str::from_utf8(&text).unwrap()), Some(x));
        }
        let id = uuid7();
        assert!(parse_uuid(&id).is_some());
        // Other spellings of a UUID, and anything else, are not canonical: their order is the text's.
        for other in [
            id.to_uppercase(),
            id.replace('-', ""),
            format!("{{{id}}}"),
            format!("{id} "),
            id.replacen('-', "_", 1),
            id[..35].to_owned() + "g",
            id[..35].to_owned() + "G",
            id[..35].to_owned() + "/",
            id[..35].to_owned() + ":",
            id[..35].to_owned() + "`",
            id[..34].to_owned() + "\u{e9}",
            String::new(),
            "t1".to_owned(),
        ] {
            assert_eq!(parse_uuid(&other), None, "{other}");
        }
        // Every byte at every digit position: accepted exactly when it is a lowercase hex digit.
        let zero = "00000000-0000-0000-0000-000000000000";
        for at in (0..36).filter(|i| ![8, 13, 18, 23].contains(i)) {
            for c in 0..=255u8 {
                let mut bytes = zero.as_bytes().to_vec();
                bytes[at] = c;
                let Ok(text) = std::str::from_utf8(&bytes) else {
                    continue;
                };
                let digit = (c as char).to_digit(16).filter(|_| !c.is_ascii_uppercase());
                let shift = 4 * (31 - (at - [8, 13, 18, 23].iter().filter(|&&d| d < at).count()));
                let want = digit.map(|d| u128::from(d) << shift);
                assert_eq!(parse_uuid(text), want, "{text:?}");
            }
        }
        // Value order is text order.
        let (a, b) = (uuid7(), uuid7());
        assert!(a < b && parse_uuid(&a) < parse_uuid(&b));
    }
}
