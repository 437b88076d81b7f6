// Softmax along one axis, numerically stable: exp(x - max) / sum. x is seen
// as [outer, len, inner]; row o (one of outer * inner) starts at
// (o / inner) * len * inner + o % inner and steps by inner.
//
// `softmax_threads` gives each row an invocation, for short rows; for long
// ones `softmax_groups` gives each row a workgroup. Each invocation keeps a
// running max and sum of exponentials over its share of the row (one read
// of x finds both), the workgroup combines the 256 pairs as a tree (which
// also keeps the f32 sum accurate), and a second read writes the row.

// [rows, len, inner, log]: with `log` (LogSoftmax) each entry point writes
// `x - max - log(sum)` in place of `exp(x - max) / sum`.
@tensors(x: f32 -> y: f32)
// As vectors, for `softmax_groups_x4`.
@tensors(x4: vec4<f32> -> y4: vec4<f32>)

var<workgroup> scratch: array<f32, 256>;

fn row_start(o: u32) -> u32 {
    let inner = param(2);
    return (o / inner) * param(1) * inner + o % inner;
}

@elementwise fn softmax_threads(o: u32) {
    let len = param(1);
    let step = param(2);
    let base = row_start(o);
    var top = bitcast<f32>(0xff800000u); // -inf
    for (var t = 0u; t < len; t++) {
        top = max(top, x[base + t * step]);
    }
    var sum = 0.0;
    for (var t = 0u; t < len; t++) {
        let e = exponential(x[base + t * step] - top);
        y[base + t * step] = e;
        sum += e;
    }
    if param(3) != 0u {
        let shift = top + log(sum);
        for (var t = 0u; t < len; t++) {
            y[base + t * step] = x[base + t * step] - shift;
        }
        return;
    }
    let scale = 1.0 / sum;
    for (var t = 0u; t < len; t++) {
        y[base + t * step] *= scale;
    }
}

var<workgroup> pairs: array<vec2<f32>, 256>;

// Row o's (max, sum) in every invocation of the workgroup, from each
// invocation's own pair, as a tree in workgroup memory.
fn row_total(t: u32, own: vec2<f32>) -> vec2<f32> {
    pairs[t] = own;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            pairs[t] = combine(pairs[t], pairs[t + s]);
        }
        workgroupBarrier();
    }
    return pairs[0];
}

@compute @workgroup_size(256)
fn softmax_groups(g: Workgroup) {
    let o = item(g);
    if o >= param(0) {
        return;
    }
    let len = param(1);
    let step = param(2);
    let base = row_start(o);
    var own = vec2<f32>(neg_inf(), 0.0);
    for (var i = g.t; i < len; i += 256u) {
        own = add_value(own, x[base + i * step]);
    }
    let total = row_total(g.t, own);
    if param(3) != 0u {
        let shift = total.x + log(total.y);
        for (var i = g.t; i < len; i += 256u) {
            y[base + i * step] = x[base + i * step] - shift;
        }
        return;
    }
    let scale = 1.0 / total.y;
    for (var i = g.t; i < len; i += 256u) {
        y[base + i * step] = exponential(x[base + i * step] - total.x) * scale;
    }
}

// `softmax_groups` for contiguous rows (inner 1) of a multiple of four:
// 16-byte loads and stores.
@compute @workgroup_size(256)
fn softmax_groups_x4(g: Workgroup) {
    let o = item(g);
    if o >= param(0) {
        return;
    }
    let quads = param(1) / 4u;
    let base = o * quads;
    var own = vec2<f32>(neg_inf(), 0.0);
    for (var i = g.t; i < quads; i += 256u) {
        let v = x4[base + i];
        own = add_value(add_value(add_value(add_value(own, v.x), v.y), v.z), v.w);
    }
    let total = row_total(g.t, own);
    if param(3) != 0u {
        let shift = vec4<f32>(total.x + log(total.y));
        for (var i = g.t; i < quads; i += 256u) {
            y4[base + i] = x4[base + i] - shift;
        }
        return;
    }
    let scale = 1.0 / total.y;
    for (var i = g.t; i < quads; i += 256u) {
        y4[base + i] = exponential4(x4[base + i] - vec4<f32>(total.x)) * scale;
    }
}

// LRN along the last axis: each element over (bias + alpha * s)^beta, s the
// sum of squares within `radius` channels, added in the cpu's order.
// params: [n, channels, radius, bias bits, alpha bits, beta bits]
@elementwise fn lrn(i: u32) {
    let c = param(1);
    let r = param(2);
    let ch = i % c;
    let row = i - ch;
    let last = min(c - 1u, ch + r);
    var s = 0.0;
    for (var j = select(0u, ch - r, ch >= r); j <= last; j++) {
        let v = x[row + j];
        s += v * v;
    }
    let d = bitcast<f32>(param(3)) + bitcast<f32>(param(4)) * s;
    // `power`, IEEE's pow: WGSL's is undefined at 0 and infinities, and
    // lavapipe's gives 0 for NaN.
    y[i] = x[i] * power(d, -bitcast<f32>(param(5)));
}
