// Sums over a row held by one 256-wide workgroup, for the kernels that
// give each row a workgroup (layer_norm.wgsl, layer_norm_grad.wgsl, which
// bind the `x` that `row_moments` reads).

var<workgroup> row_sums: array<vec2<f32>, 256>;

// The sum of every invocation's `own`, in every invocation of the
// workgroup: a tree in workgroup memory (which also keeps an f32 sum of
// many terms accurate). Every invocation must call it; it may be called
// again right after.
fn row_sum2(t: u32, own: vec2<f32>) -> vec2<f32> {
    // The last call's readers of row_sums[0] are done.
    workgroupBarrier();
    row_sums[t] = own;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            row_sums[t] += row_sums[t + s];
        }
        workgroupBarrier();
    }
    return row_sums[0];
}

// The mean of the row of x at `base`, n long, and 1 / sqrt(variance +
// epsilon), epsilon's bits in param(2), in every invocation: one read
// finds the mean, a second the variance from the centered values, as the
// cpu computes them.
fn row_moments(t: u32, base: u32, n: u32) -> vec2<f32> {
    var own = 0.0;
    for (var i = t; i < n; i += 256u) {
        own += x[base + i];
    }
    let mean = row_sum2(t, vec2<f32>(own, 0.0)).x / f32(n);
    own = 0.0;
    for (var i = t; i < n; i += 256u) {
        let d = x[base + i] - mean;
        own += d * d;
    }
    return vec2<f32>(mean, 1.0 / sqrt(row_sum2(t, vec2<f32>(own, 0.0)).x / f32(n) + bitcast<f32>(param(2))));
}
