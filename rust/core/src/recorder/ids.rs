//! Node ids: `n` followed by the counter, zero-padded to six digits (`n000001`).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
