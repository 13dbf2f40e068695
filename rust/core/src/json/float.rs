//! Floats spelled like Python's `float.__repr__`, the one float writer of both JSON layouts.

use super::sink::Sink;

/// Appends `v` formatted like Python's `float.__repr__` (shortest round-trip digits,
/// exponent form when the decimal exponent is < -4 or >= 16).
pub fn write_f64<S: Sink + ?Sized>(out: &mut S, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(v);
    // Common case: ryu and Python agree on fixed notation in this range (shortest digits,
    // ".0" on integral values), so the text is copied as is.
    let abs = v.abs();
    if (abs == 0.0 || (1e-4..1e16).contains(&abs)) && !text.contains('e') {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    write_f64_python_layout(out, v.is_sign_negative(), text);
}

fn write_f64_python_layout<S: Sink + ?Sized>(out: &mut S, negative: bool, ryu_text: &str) {
    let mut digits = [0u8; 32];
    let (n, exp10) = shortest_digits(ryu_text, &mut digits);
    let digits = &digits[..n];
    let n = n as i32;
    if negative {
        out.push(b'-');
    }
    // `exp10` is the position of the decimal point relative to the digit string:
    // value = 0.d1d2d3... * 10^exp10.
    if (-3..=16).contains(&exp10) {
        if exp10 <= 0 {
            out.extend_from_slice(b"0.");
            out.fill(b'0', (-exp10) as usize);
            out.extend_from_slice(digits);
        } else if exp10 >= n {
            out.extend_from_slice(digits);
            out.fill(b'0', (exp10 - n) as usize);
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..exp10 as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[exp10 as usize..]);
        }
    } else {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = exp10 - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        let abs = e.unsigned_abs();
        if abs < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(abs).as_bytes());
    }
}

/// Splits ryu's output into significant digits (no leading/trailing zeros) written to `buf`
/// and the decimal point position, so that the value is `0.DIGITS * 10^pos`.
fn shortest_digits(s: &str, buf: &mut [u8; 32]) -> (usize, i32) {
    let s = s.strip_prefix('-').unwrap_or(s);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (s, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut n = 0;
    let mut point = int_part.len() as i32 + exp;
    let mut leading = true;
    for &d in int_part.as_bytes().iter().chain(frac_part.as_bytes()) {
        if leading && d == b'0' {
            point -= 1;
            continue;
        }
        leading = false;
        // Shortest round-trip output has at most 17 significant digits.
        buf[n] = d;
        n += 1;
    }
    while n > 0 && buf[n - 1] == b'0' {
        n -= 1;
    }
    if n == 0 {
        // Zero: Python prints "0.0".
        buf[0] = b'0';
        return (1, 1);
    }
    (n, point)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v);
        String::from_utf8(out).unwrap()
    }
    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.0042, "0.0042"),
            (0.95, "0.95"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (-2.5e-7, "-2.5e-07"),
            (123.456, "123.456"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (0.1 + 0.2, "0.30000000000000004"),
            (100.0, "100.0"),
            (1e-4, "0.0001"),
            (9.999e-5, "9.999e-05"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e22, "1e+22"),
            (123456789.125, "123456789.125"),
            (-1e-7, "-1e-07"),
        ];
        for (v, want) in cases {
            assert_eq!(f(v), want, "repr of {v:e}");
        }
    }
}
