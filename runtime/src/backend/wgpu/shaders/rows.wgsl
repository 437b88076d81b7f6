// A row's moments, for the kernels that give each row of `x` a 256-wide
// workgroup (layer_norm.wgsl, layer_norm_grad.wgsl, which bind the `x`
// these read, and come after row_sum.wgsl).

// Row r of x: where it starts, its length n (param(1)), and its moments
// as the cpu computes them (`moments` in cpu/normalization.rs), epsilon's
// bits in param(2): the mean in two parts, the row's first value (the
// pivot) and `shift`, the mean of the values less it (one read), then the
// variance from the values less the mean (a second). `moments` is (pivot,
// shift, 1 / sqrt(variance + epsilon)); a value less the row's mean is
// `centered(x, moments)`. Every invocation must call it.
struct Row {
    base: u32,
    n: u32,
    moments: vec3<f32>,
}

fn row_of(t: u32, r: u32) -> Row {
    let n = param(1);
    let base = r * n;
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
    return Row(base, n, vec3<f32>(pivot, shift, 1.0 / sqrt(variance + bitcast<f32>(param(2)))));
}

// v less its row's mean, by row_of's moments (pivot, shift, rstd).
fn centered(v: f32, moments: vec3<f32>) -> f32 {
    return (v - moments.x) - moments.y;
}
