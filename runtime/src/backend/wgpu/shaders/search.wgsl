// SearchSorted (and LowerBound and UpperBound, its two sides): one
// invocation per value, a binary search of its row, the cpu kernel's
// search step for step. Elements are raw 32-bit words (see unary.wgsl).

// [count, n (a row of sorted), m (a row of values), right (0 or 1)]
@tensors(sorted: u32, values: u32 -> y: i32)

// Whether the search goes past element e for value v: e < v (left), e <= v
// (right). A comparison with NaN is false, as on the cpu, written out so no
// driver may assume NaN away.
fn past_f32(e: f32, v: f32, right: bool) -> bool {
    if is_nan(e) || is_nan(v) {
        return false;
    }
    return e < v || (right && e == v);
}

fn past(e: u32, v: u32, float: bool, right: bool) -> bool {
    if float {
        return past_f32(bitcast<f32>(e), bitcast<f32>(v), right);
    }
    let a = bitcast<i32>(e);
    let b = bitcast<i32>(v);
    return a < b || (right && a == b);
}

fn search(o: u32, float: bool) {
    let n = param(1);
    let m = param(2);
    let right = param(3) == 1u;
    let base = (o / m) * n;
    let v = values[o];
    var lo = 0u;
    var hi = n;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if past(sorted[base + mid], v, float, right) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    y[o] = i32(hi);
}

@elementwise fn search_f32(o: u32) {
    search(o, true);
}

@elementwise fn search_i32(o: u32) {
    search(o, false);
}
