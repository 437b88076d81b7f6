// LayerNormGrad, in three passes over the same bindings. `rows`, a
// workgroup per row: the row's mean and rstd again (as layer_norm.wgsl),
// then m1 = mean(g) and m2 = mean(g * xhat) with g = dy * gamma, and dx =
// (g - m1 - xhat * m2) * rstd; it keeps the row's statistics at the
// row's two places in `scratch`. dgamma[j] = sum(dy * xhat) and dbeta[j] = sum(dy) over the rows
// then take two passes, so that no invocation walks every row (a chain of
// dependent loads, milliseconds on a GPU): `chunks`, an invocation per
// column and chunk of 64 rows, writes both sums of its chunk to `scratch`
// past the rows' statistics; `columns`, an invocation per column, adds the
// chunks'.

// Elements 2r and 2r + 1: row r's (pivot, shift) and (rstd, 0) (see
// row_of in rows.wgsl); element 2 * rows + c * n + j: column j's two sums over
// chunk c.
// rows: [rows, n, epsilon bits, gamma's step]; chunks: [chunks * n, n,
// rows]; columns: [n, chunks, rows]
@tensors(dy: f32, x: f32, gamma: f32 -> dx: f32, dgamma: f32, dbeta: f32, scratch: vec2<f32>)

// Rows per chunk of the column sums.
const CHUNK: u32 = 64u;

@compute @workgroup_size(256)
fn layer_norm_grad_rows(g: Workgroup) {
    let r = item(g);
    if r >= param(0) {
        return;
    }
    let row = row_of(g.t, r);
    let rstd = row.moments.z;
    var own = vec2<f32>(0.0);
    for (var i = g.t; i < row.n; i += 256u) {
        let j = row.base + i;
        let gi = dy[j] * gamma[i * param(3)];
        own += vec2<f32>(gi, gi * (centered(x[j], row.moments) * rstd));
    }
    let m = row_sum2(g.t, own) / f32(row.n);
    for (var i = g.t; i < row.n; i += 256u) {
        let j = row.base + i;
        let gi = dy[j] * gamma[i * param(3)];
        dx[j] = (gi - m.x - centered(x[j], row.moments) * rstd * m.y) * rstd;
    }
    if g.t == 0u {
        scratch[2u * r] = row.moments.xy;
        scratch[2u * r + 1u] = vec2<f32>(rstd, 0.0);
    }
}

@elementwise fn layer_norm_grad_chunks(i: u32) {
    let n = param(1);
    let j = i % n;
    let first = (i / n) * CHUNK;
    var sums = vec2<f32>(0.0);
    for (var r = first; r < min(first + CHUNK, param(2)); r++) {
        let d = dy[r * n + j];
        let moments = vec3<f32>(scratch[2u * r], scratch[2u * r + 1u].x);
        sums += vec2<f32>(d * (centered(x[r * n + j], moments) * moments.z), d);
    }
    scratch[2u * param(2) + i] = sums;
}

@elementwise fn layer_norm_grad_columns(j: u32) {
    let n = param(0);
    var sums = vec2<f32>(0.0);
    for (var c = 0u; c < param(1); c++) {
        sums += scratch[2u * param(2) + c * n + j];
    }
    dgamma[j] = sums.x;
    dbeta[j] = sums.y;
}
