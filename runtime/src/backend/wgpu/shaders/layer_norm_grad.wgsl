// LayerNormGrad, in two passes over the same bindings. `rows`, a workgroup
// per row: the row's mean and rstd again (as layer_norm.wgsl), then m1 =
// mean(g) and m2 = mean(g * xhat) with g = dy * gamma, and dx = (g - m1 -
// xhat * m2) * rstd; it keeps the row's mean and rstd in `stats`.
// `columns`, an invocation per column j: dgamma[j] = sum(dy * xhat) and
// dbeta[j] = sum(dy) over the rows, reading `stats`.

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> gamma: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;
@group(0) @binding(4) var<storage, read_write> dgamma: array<f32>;
@group(0) @binding(5) var<storage, read_write> dbeta: array<f32>;
@group(0) @binding(6) var<storage, read_write> stats: array<vec2<f32>>;
// rows: [rows, n, epsilon bits, gamma's step]; columns: [n, rows]
@group(0) @binding(7) var<uniform> params: array<vec4<u32>, 32>;

@compute @workgroup_size(256)
fn layer_norm_grad_rows(g: Workgroup) {
    let r = item(g);
    if r >= param(0) {
        return;
    }
    let n = param(1);
    let base = r * n;
    var own = 0.0;
    for (var i = g.t; i < n; i += 256u) {
        own += x[base + i];
    }
    let mean = row_sum2(g.t, vec2<f32>(own, 0.0)).x / f32(n);
    own = 0.0;
    for (var i = g.t; i < n; i += 256u) {
        let d = x[base + i] - mean;
        own += d * d;
    }
    let rstd = 1.0 / sqrt(row_sum2(g.t, vec2<f32>(own, 0.0)).x / f32(n) + bitcast<f32>(param(2)));
    var moments = vec2<f32>(0.0);
    for (var i = g.t; i < n; i += 256u) {
        let gi = dy[base + i] * gamma[i * param(3)];
        moments += vec2<f32>(gi, gi * ((x[base + i] - mean) * rstd));
    }
    let m = row_sum2(g.t, moments) / f32(n);
    for (var i = g.t; i < n; i += 256u) {
        let gi = dy[base + i] * gamma[i * param(3)];
        dx[base + i] = (gi - m.x - (x[base + i] - mean) * rstd * m.y) * rstd;
    }
    if g.t == 0u {
        stats[r] = vec2<f32>(mean, rstd);
    }
}

@elementwise fn layer_norm_grad_columns(j: u32) {
    let n = param(0);
    var sums = vec2<f32>(0.0);
    for (var r = 0u; r < param(1); r++) {
        let d = dy[r * n + j];
        sums += vec2<f32>(d * ((x[r * n + j] - stats[r].x) * stats[r].y), d);
    }
    dgamma[j] = sums.x;
    dbeta[j] = sums.y;
}
