// LayerNorm: each row of x (its last axis, n long) normalized by its own
// mean and variance, then scaled by gamma and shifted by beta. A workgroup
// per row: one read of the row finds its mean, a second its variance from
// the values less it (as the cpu, rows.wgsl's row_of), a third
// writes it.

// [rows, n, epsilon bits, gamma's step, beta's step] (a step is 0 where
// the parameter is one value for the whole row)
@tensors(x: f32, gamma: f32, beta: f32 -> y: f32)

@compute @workgroup_size(256)
fn layer_norm(g: Workgroup) {
    let r = item(g);
    if r >= param(0) {
        return;
    }
    let row = row_of(g.t, r);
    let rstd = row.moments.z;
    for (var i = g.t; i < row.n; i += 256u) {
        let j = row.base + i;
        y[j] = centered(x[j], row.moments) * rstd * gamma[i * param(3)] + beta[i * param(4)];
    }
}
