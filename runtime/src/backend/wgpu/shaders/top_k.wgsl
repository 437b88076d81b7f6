// TopK: the k highest-ranked entries of each row, with their indices.
// Entries rank by the cpu's key (NaN on top, -0 tied with +0), then by
// the lower index, a total order. One invocation per row makes k passes
// over it, each taking the best entry that ranks below the previous pick:
// no scratch memory, and k * n reads per row.

// [rows, n (row length), k]
@tensors(x: u32 -> values: u32, indices: u32)

// An entry's rank as an i32 whose order is the ranking; `float` is a
// constant in each entry point.
fn key(bits: u32, float: bool) -> i32 {
    if !float {
        return bitcast<i32>(bits);
    }
    if is_nan(bitcast<f32>(bits)) {
        return 0x7fffffff;
    }
    // -0 as +0, then sign-magnitude to two's complement (f32::total_cmp).
    let b = bitcast<i32>(select(bits, 0u, (bits & 0x7fffffffu) == 0u));
    return b ^ ((b >> 31u) & 0x7fffffff);
}

// Whether (ka, ia) ranks above (kb, ib).
fn above(ka: i32, ia: u32, kb: i32, ib: u32) -> bool {
    return ka > kb || (ka == kb && ia < ib);
}

fn top_k(row: u32, float: bool) {
    let n = param(1);
    let k = param(2);
    let base = row * n;
    // The previous pick; the first pass takes the best of all.
    var last_key = 0;
    var last = 0xffffffffu;
    for (var j = 0u; j < k; j++) {
        var best_key = 0;
        var best = 0xffffffffu;
        for (var i = 0u; i < n; i++) {
            let ki = key(x[base + i], float);
            let below_last = last == 0xffffffffu || above(last_key, last, ki, i);
            if below_last && (best == 0xffffffffu || above(ki, i, best_key, best)) {
                best_key = ki;
                best = i;
            }
        }
        values[row * k + j] = x[base + best];
        indices[row * k + j] = best;
        last_key = best_key;
        last = best;
    }
}

@elementwise fn top_k_f32(row: u32) {
    top_k(row, true);
}

@elementwise fn top_k_i32(row: u32) {
    top_k(row, false);
}
