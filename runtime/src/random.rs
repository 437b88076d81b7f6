//! A small seeded generator (xoshiro256++ seeded by SplitMix64): reproducible
//! across platforms and releases, which `rand`'s `StdRng` does not promise.
//! And a counter-based one for the random kernels: value `i` of a seed is a
//! hash of `i` and the seed, computed alike in Rust and in WGSL, so every
//! backend draws the same numbers in any order, in parallel.

pub(crate) struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in [0, 1) with 24 random bits, exactly representable in f32.
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    pub(crate) fn uniform(&mut self, low: f32, high: f32) -> f32 {
        between(low, high, self.unit())
    }

    /// Box-Muller; one value per call keeps the sequence simple to reason about.
    pub(crate) fn normal(&mut self) -> f32 {
        let u1 = 1.0 - ((self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64));
        let u2 = (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32
    }
}

/// `u` in [0, 1) mapped onto [low, high): rounding can land on `high`, so
/// the interval is kept half-open. make.wgsl's `random_uniform` does the same.
#[inline]
pub(crate) fn between(low: f32, high: f32, u: f32) -> f32 {
    let v = low + (high - low) * u;
    if v >= high && high > low {
        low.max(high - (high - low) * f32::EPSILON)
    } else {
        v
    }
}

/// Chris Wellons' `lowbias32` integer hash: every input bit affects every
/// output bit. common.wgsl has the same function.
#[inline]
pub(crate) fn hash32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// The two 32-bit keys of a 64-bit seed, as the kernels take them.
pub(crate) fn keys(seed: i64) -> [u32; 2] {
    let seed = seed as u64;
    [hash32(seed as u32), hash32((seed >> 32) as u32 ^ 0x85eb_ca6b)]
}

/// Word `i` of the stream of `keys`.
#[inline]
pub(crate) fn word(i: u32, [k0, k1]: [u32; 2]) -> u32 {
    hash32(hash32(i ^ k0).wrapping_add(k1))
}

/// Word `i` as a uniform value in [0, 1) with 24 random bits (exact in f32).
#[inline]
pub(crate) fn unit(i: u32, keys: [u32; 2]) -> f32 {
    (word(i, keys) >> 8) as f32 * (1.0 / (1u32 << 24) as f32)
}
