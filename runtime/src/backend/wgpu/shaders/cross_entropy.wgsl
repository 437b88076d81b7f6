// Softmax cross-entropy of each contiguous row of `len` classes: the loss
// sum(labels * (lse - features)), with lse = max + log(sum(exp(features -
// max))), and backprop = softmax(features) * sum(labels) - labels.
//
// The cpu adds the loss in f64, so a row of finite terms near f32::MAX
// whose f32 sum would overflow (to inf, or to NaN as inf - inf) still has
// a finite loss there. Here each term is also added scaled by 2^-63 (with
// lse - features halved, which cannot overflow), and where the plain sum is
// not finite but the scaled one is, the loss is the scaled sum times 2^63
// (inf if it is still too large, as the cpu's f64 to f32 gives it).
//
// `cross_entropy_threads` gives each row an invocation, for short rows;
// `cross_entropy_groups` gives each long row a workgroup, which combines
// its invocations' running (max, sum of exponentials, label mass) as a
// tree, writes the backprop, and sums the loss as a second tree (row_sum.wgsl).

// [rows, len]
@tensors(features: f32, labels: f32 -> loss: f32, backprop: f32)

// 2^-63 and 2^63.
const DOWN: f32 = 1.0842021724855044e-19;
const UP: f32 = 9.223372036854775808e18;

// A row's term l * (lse - f), scaled by 2^-63 without overflowing.
fn scaled_term(l: f32, lse: f32, f: f32) -> f32 {
    return (l * (2.0 * DOWN)) * (lse * 0.5 - f * 0.5);
}

// The loss from the plain sum and the scaled one (see the top).
fn loss_of(total: f32, scaled: f32) -> f32 {
    return select(total, scaled * UP, !is_finite(total) && is_finite(scaled));
}

@elementwise fn cross_entropy_threads(o: u32) {
    let len = param(1);
    let base = o * len;
    var acc = vec2<f32>(neg_inf(), 0.0);
    var mass = 0.0;
    for (var t = 0u; t < len; t++) {
        acc = add_value(acc, features[base + t]);
        mass += labels[base + t];
    }
    let lse = acc.x + log(acc.y);
    let scale = mass / acc.y;
    var total = 0.0;
    var scaled = 0.0;
    for (var t = 0u; t < len; t++) {
        let f = features[base + t];
        let l = labels[base + t];
        total += l * (lse - f);
        scaled += scaled_term(l, lse, f);
        backprop[base + t] = exponential(f - acc.x) * scale - l;
    }
    loss[o] = loss_of(total, scaled);
}

var<workgroup> stats: array<vec3<f32>, 256>;

// The row's (max, sum of exponentials, label mass) in every invocation of
// the workgroup, from each invocation's own.
fn row_stats(t: u32, own: vec3<f32>) -> vec3<f32> {
    stats[t] = own;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            let p = stats[t];
            let q = stats[t + s];
            stats[t] = vec3<f32>(combine(p.xy, q.xy), p.z + q.z);
        }
        workgroupBarrier();
    }
    return stats[0];
}

@compute @workgroup_size(256)
fn cross_entropy_groups(g: Workgroup) {
    let o = item(g);
    if o >= param(0) {
        return;
    }
    let len = param(1);
    let base = o * len;
    var own = vec3<f32>(neg_inf(), 0.0, 0.0);
    for (var i = g.t; i < len; i += 256u) {
        own = vec3<f32>(add_value(own.xy, features[base + i]), own.z + labels[base + i]);
    }
    let row = row_stats(g.t, own);
    let lse = row.x + log(row.y);
    let scale = row.z / row.y;
    // The loss's plain and scaled sums, as one tree (row_sum.wgsl).
    var part = vec2<f32>(0.0);
    for (var i = g.t; i < len; i += 256u) {
        let f = features[base + i];
        let l = labels[base + i];
        part += vec2<f32>(l * (lse - f), scaled_term(l, lse, f));
        backprop[base + i] = exponential(f - row.x) * scale - l;
    }
    let sums = row_sum2(g.t, part);
    if g.t == 0u {
        loss[o] = loss_of(sums.x, sums.y);
    }
}
