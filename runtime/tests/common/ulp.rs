//! Distance between f32 values in units in the last place, shared by the
//! accuracy tests of `vmath` (its unit tests include this file by path) and
//! `tests/suite/vmath_accuracy.rs`.

/// Position of `x` among f32 values in order, ±0 both at 0.
pub fn ordinal(x: f32) -> i64 {
    let b = x.to_bits();
    let mag = i64::from(b & 0x7fff_ffff);
    if b >> 31 == 1 {
        -mag
    } else {
        mag
    }
}

/// ULPs between `got` and `want`: 0 for two NaNs, `u64::MAX` for one.
pub fn ulps(got: f32, want: f32) -> u64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0,
        (false, false) => ordinal(got).abs_diff(ordinal(want)),
        _ => u64::MAX,
    }
}
