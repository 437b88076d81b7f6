// The half types on the device: an f16 or bf16 tensor is stored two
// elements to a 32-bit word, element 2k in the low half of word k and
// element 2k + 1 in the high half (a tensor of odd length pads its last
// word), and computes in f32, as the cpu's half kernels do: each element
// widened exactly, the result rounded once to nearest even. The
// conversions are integer work on the bits, the `half` crate's rules, so
// they agree with the cpu's bit for bit on every adapter and never depend
// on `SHADER_F16` or on how a driver rounds `pack2x16float`. A library:
// the host puts it after `common.wgsl` in the shaders that move or
// compute half types (the rows, `Cast`, the gathers).

// Element j's 16 bits, from the word that holds it.
fn half_bits(w: u32, j: u32) -> u32 {
    return (w >> ((j & 1u) * 16u)) & 0xffffu;
}

// Two elements' 16 bits as one word, the first in the low half.
fn half_pair(lo: u32, hi: u32) -> u32 {
    return (lo & 0xffffu) | (hi << 16u);
}

// An f16's value, exactly (subnormals included). A NaN comes out quiet,
// as F16C's conversion and the `half` crate's give it on the cpu (so that
// `pow(NaN, 0)` is 1 for it there and here); bf16's widening is a shift on
// both, which keeps a signaling NaN signaling.
fn f16_to_f32(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let exp = (h >> 10u) & 0x1fu;
    let man = h & 0x3ffu;
    if exp == 0x1fu {
        let quiet = select(0u, 0x00400000u, man != 0u);
        return bitcast<f32>(sign | 0x7f800000u | quiet | (man << 13u));
    }
    if exp == 0u {
        // man * 2^-24: exact, and an f32 normal unless zero.
        let m = f32(man) * 5.9604645e-8;
        return bitcast<f32>(bitcast<u32>(m) | sign);
    }
    return bitcast<f32>(sign | ((exp + 112u) << 23u) | (man << 13u));
}

// The f16 nearest v, ties to even; NaN stays NaN (quiet), past 65504
// rounds to infinity as IEEE's rounding does.
fn f32_to_f16(v: f32) -> u32 {
    let x = bitcast<u32>(v);
    let sign = (x >> 16u) & 0x8000u;
    let exp = x & 0x7f800000u;
    let man = x & 0x007fffffu;
    if exp == 0x7f800000u {
        let quiet = select(0u, 0x0200u, man != 0u);
        return sign | 0x7c00u | quiet | (man >> 13u);
    }
    let e = i32(exp >> 23u) - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00u;
    }
    if e <= 0 {
        // A subnormal f16 (or zero): the significand shifted into place.
        if 14 - e > 24 {
            return sign;
        }
        let m = man | 0x00800000u;
        let shift = u32(14 - e);
        var half_man = m >> shift;
        let round = 1u << (shift - 1u);
        if (m & round) != 0u && (m & (3u * round - 1u)) != 0u {
            half_man += 1u;
        }
        return sign | half_man;
    }
    let bits = sign | (u32(e) << 10u) | (man >> 13u);
    let round = 0x00001000u;
    // A carry out of the significand steps the exponent, to infinity past 65504.
    return bits + select(0u, 1u, (man & round) != 0u && (man & (3u * round - 1u)) != 0u);
}

// A bf16's value: the high half of an f32.
fn bf16_to_f32(h: u32) -> f32 {
    return bitcast<f32>(h << 16u);
}

// The bf16 nearest v, ties to even; NaN stays NaN (quiet).
fn f32_to_bf16(v: f32) -> u32 {
    let x = bitcast<u32>(v);
    if (x & 0x7fffffffu) > 0x7f800000u {
        return (x >> 16u) | 0x0040u;
    }
    let round = 0x00008000u;
    return (x >> 16u) + select(0u, 1u, (x & round) != 0u && (x & (3u * round - 1u)) != 0u);
}
