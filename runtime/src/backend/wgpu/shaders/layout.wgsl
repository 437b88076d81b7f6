// Kernels that move or convert words: a strided gather (Transpose and
// BroadcastTo) and Cast; and, one pass per tensor into a shared output,
// Concat and Pack (`join_rows`) and AddN (`copy_words`, then `add_*`).
// Elements are raw 32-bit words, or two halves of one for f16 and bf16
// (`halves.wgsl`); the bindings x, y, x4 (for `convert_words_x4`) and y4,
// `params` and OP are words.wgsl's.
//
// OP, for the conversions: the source dtype times 5 plus the target dtype,
// with f32 = 0, i32 = 1, bool = 2, f16 = 3 and bf16 = 4 (see layout.rs).
// Unused by the gathers.
//
// params: gather: [n, rank, base, out_shape[rank], x_strides[rank]];
// gather_halves, gather_pairs: the same with output words for n; pad:
// [n, rank, value, out_shape[rank], x_shape[rank], before[rank],
// x_strides[rank]]; convert_words, widen_halves: [n]; convert_words_x4:
// [vector count]; narrow_halves: [output words]; join_rows: [n, width,
// row, at]; copy_words, add_f32, add_i32: [n]; remap: [n, rank,
// modes[rank], out_shape[rank], x_shape[rank], x_strides[rank],
// before[rank]]

// Output element i is input element base + sum(index[d] * x_strides[d]): a
// permutation of the strides transposes, a zero stride repeats, a base
// and the block's shape slice.
@elementwise fn gather(i: u32) {
    let rank = param(1);
    y[i] = x[param(2) + strided(i, rank, 3u, 3u + rank)];
}

// `gather` of a half type: two output elements to word i. The padding
// element of an odd-length output reads wherever its index points, kept
// inside `x` by WGSL's bounds checks, into the padding half.
@elementwise fn gather_halves(i: u32) {
    let rank = param(1);
    let s0 = param(2) + strided(2u * i, rank, 3u, 3u + rank);
    let s1 = param(2) + strided(2u * i + 1u, rank, 3u, 3u + rank);
    y[i] = half_pair(half_bits(x[s0 >> 1u], s0), half_bits(x[s1 >> 1u], s1));
}

// `gather` of complex64: word i of the output, the real (even i) or
// imaginary (odd i) part of its element.
@elementwise fn gather_pairs(i: u32) {
    let rank = param(1);
    let s = param(2) + strided(i >> 1u, rank, 3u, 3u + rank);
    y[i] = x[2u * s + (i & 1u)];
}

// Output element i is the input element `before` earlier along each axis,
// or the word `value` where that lies outside the input.
@elementwise fn pad(i: u32) {
    let rank = param(1);
    var rest = i;
    var at = 0u;
    var inside = true;
    for (var d = rank; d > 0u; d--) {
        let k = d - 1u;
        let index = rest % param(3u + k);
        rest = rest / param(3u + k);
        let before = param(3u + 2u * rank + k);
        inside = inside && index >= before && index - before < param(3u + rank + k);
        at += (index - before) * param(3u + 3u * rank + k);
    }
    if inside {
        y[i] = x[at];
    } else {
        y[i] = param(2);
    }
}

// Rust's `as`: toward zero, saturating, NaN to 0.
fn f32_to_i32(v: f32) -> i32 {
    if is_nan(v) {
        return 0i;
    }
    if v >= 2147483648.0 {
        return 2147483647i;
    }
    if v <= -2147483648.0 {
        return bitcast<i32>(0x80000000u);
    }
    return i32(v);
}

fn convert(w: u32) -> u32 {
    let src = OP / 5u;
    let dest = OP % 5u;
    if src == 0u {
        if dest == 1u {
            return bitcast<u32>(f32_to_i32(bitcast<f32>(w)));
        }
        // Nonzero, NaN included, is true; -0.0 is false.
        return select(0u, 1u, (w & 0x7fffffffu) != 0u);
    }
    if src == 1u {
        if dest == 0u {
            return bitcast<u32>(f32(bitcast<i32>(w)));
        }
        return select(0u, 1u, w != 0u);
    }
    // From bool: 0 or 1 in either type.
    if dest == 0u {
        return bitcast<u32>(f32(w));
    }
    return w;
}

@elementwise fn convert_words(i: u32) {
    y[i] = convert(x[i]);
}

@elementwise fn convert_words_x4(i: u32) {
    let v = x4[i];
    y4[i] = vec4<u32>(convert(v.x), convert(v.y), convert(v.z), convert(v.w));
}

// The value of a half type's 16 bits (`src` is 3 or 4).
fn widen_from(h: u32, src: u32) -> f32 {
    if src == 4u {
        return bf16_to_f32(h);
    }
    return f16_to_f32(h);
}

// v rounded to a half type (`dest` is 3 or 4).
fn narrow_to(v: f32, dest: u32) -> u32 {
    if dest == 4u {
        return f32_to_bf16(v);
    }
    return f32_to_f16(v);
}

// An i32 rounded once to a half type. Every i32 past 2^24, where f32
// would round first, is past f16's largest value; bf16 keeps 8 bits,
// rounded here from the integer itself, ties to even.
fn i32_to_half(v: i32, dest: u32) -> u32 {
    if dest == 3u {
        return f32_to_f16(f32(v));
    }
    let sign = select(0u, 0x8000u, v < 0);
    let a = u32(abs(v)); // i32's least value keeps its bits: 2^31.
    if a < 256u {
        return sign | (bitcast<u32>(f32(a)) >> 16u);
    }
    let shift = firstLeadingBit(a) - 7u;
    let kept = a >> shift;
    let rest = a & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    let up = rest > half || (rest == half && (kept & 1u) == 1u);
    // At most 256 times a power of two: exact in f32.
    let rounded = f32(kept + select(0u, 1u, up)) * exp2(f32(shift));
    return sign | (bitcast<u32>(rounded) >> 16u);
}

// A half type's element i as a 32-bit word: f32, i32 (saturating) or bool
// (nonzero, NaN included, is true; -0 is false).
@elementwise fn widen_halves(i: u32) {
    let src = OP / 5u;
    let dest = OP % 5u;
    let h = half_bits(x[i >> 1u], i);
    if dest == 2u {
        y[i] = select(0u, 1u, (h & 0x7fffu) != 0u);
    } else if dest == 1u {
        y[i] = bitcast<u32>(f32_to_i32(widen_from(h, src)));
    } else {
        y[i] = bitcast<u32>(widen_from(h, src));
    }
}

// Element j in the target half type, from a 32-bit word or from the other
// half type (widened exactly, then rounded once).
fn to_half(j: u32) -> u32 {
    let src = OP / 5u;
    let dest = OP % 5u;
    if src >= 3u {
        return narrow_to(widen_from(half_bits(x[j >> 1u], j), src), dest);
    }
    let w = x[j];
    if src == 1u {
        return i32_to_half(bitcast<i32>(w), dest);
    }
    if src == 2u {
        return narrow_to(f32(w), dest);
    }
    return narrow_to(bitcast<f32>(w), dest);
}

// Two elements of a half type to word i.
@elementwise fn narrow_halves(i: u32) {
    y[i] = half_pair(to_half(2u * i), to_half(2u * i + 1u));
}

// Element i of an input of rows `width` long goes to column at + i % width
// of row i / width of an output of rows `row` long.
@elementwise fn join_rows(i: u32) {
    let width = param(1);
    y[(i / width) * param(2) + param(3) + i % width] = x[i];
}

@elementwise fn copy_words(i: u32) {
    y[i] = x[i];
}

// The output, already holding a sum, plus the input (i32 wraps).
@elementwise fn add_f32(i: u32) {
    y[i] = bitcast<u32>(bitcast<f32>(y[i]) + bitcast<f32>(x[i]));
}

@elementwise fn add_i32(i: u32) {
    y[i] = bitcast<u32>(bitcast<i32>(y[i]) + bitcast<i32>(x[i]));
}

// Output element i reads x at its coordinates, each remapped by its axis's
// mode: 0 the same, 1 from the end (Reverse), 2 modulo x's dim (Tile), 3
// and 4 shifted back by `before` and mirrored in about the edge (reflect)
// or repeating it (symmetric) (MirrorPad).
@elementwise fn remap(i: u32) {
    let rank = param(1);
    var rest = i;
    var offset = 0u;
    for (var d = rank; d > 0u; d--) {
        let dim = param(1u + rank + d);
        let k = rest % dim;
        rest = rest / dim;
        let size = param(1u + 2u * rank + d);
        var c = k;
        switch param(1u + d) {
            case 1u: { c = size - 1u - k; }
            case 2u: { c = k % size; }
            case 3u, 4u: {
                let s = select(0, 1, param(1u + d) == 4u);
                let j = i32(k) - i32(param(1u + 4u * rank + d));
                let n = i32(size);
                c = u32(select(select(j, 2 * n - 2 + s - j, j >= n), -j - s, j < 0));
            }
            default: {}
        }
        offset += c * param(1u + 3u * rank + d);
    }
    y[i] = x[offset];
}
