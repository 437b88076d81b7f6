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

// The moments of the row of x at `base`, n long, in every invocation, as
// the cpu computes them (`moments` in cpu/normalization.rs), epsilon's bits in
// param(2): the mean in two parts, the row's first value (the pivot) and
// `shift`, the mean of the values less it (one read), then the variance
// from the values less the mean (a second). Returns (pivot, shift, 1 /
// sqrt(variance + epsilon)); a value less the row's mean is
// `centered(x, moments)`.
fn row_moments(t: u32, base: u32, n: u32) -> vec3<f32> {
    let pivot = x[base];
    var own = 0.0;
    for (var i = t; i < n; i += 256u) {
        own += x[base + i] - pivot;
    }
    let shift = row_sum2(t, vec2<f32>(own, 0.0)).x / f32(n);
    let moments = vec3<f32>(pivot, shift, 0.0);
    own = 0.0;
    for (var i = t; i < n; i += 256u) {
        let d = centered(x[base + i], moments);
        own += d * d;
    }
    let variance = row_sum2(t, vec2<f32>(own, 0.0)).x / f32(n);
    return vec3<f32>(pivot, shift, 1.0 / sqrt(variance + bitcast<f32>(param(2))));
}

// v less its row's mean, by row_moments' (pivot, shift, rstd).
fn centered(v: f32, moments: vec3<f32>) -> f32 {
    return (v - moments.x) - moments.y;
}
