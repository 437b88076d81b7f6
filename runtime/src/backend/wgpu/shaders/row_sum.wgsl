// A sum over a row held by one 256-wide workgroup, for the kernels that
// give each row a workgroup (cross_entropy.wgsl, and through rows.wgsl
// layer_norm.wgsl and layer_norm_grad.wgsl).

var<workgroup> row_sums: array<vec2<f32>, 256>;

// The sum of every invocation's `own`, in every invocation of the
// workgroup: a tree in workgroup memory (which also keeps an f32 sum of
// many terms accurate). Every invocation must call it; it may be called
// again right after. Two sums at once cost one tree.
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
