// Kernels of an input and its indices: GatherV2 and UnsortedSegmentSum.
// Elements are raw 32-bit words (see unary.wgsl); the host has checked
// every index against its range before these run.

// gather: [count, inner, n, outer, len] for x as [batch, outer, len, inner]
//   and the output as [batch, outer, n, inner]
// segment_*: [count, inner] for x as [ids, inner]; zero: [count]
@tensors(x: u32, indices: i32 -> y: u32)
// The same output as atomics, for the segment sums.
@tensors(_, _ -> sums: atomic<u32>)

@elementwise fn gather(o: u32) {
    let inner = param(1);
    let n = param(2);
    let i = o % inner;
    let row = o / inner;
    let bo = row / n;
    let b = bo / param(3);
    let index = u32(indices[b * n + row % n]);
    y[o] = x[(bo * param(4) + index) * inner + i];
}

// The output zeroed, before a segment sum adds into it.
@compute @workgroup_size(256)
fn zero(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let o = element(gid, groups);
    if o < param(0) {
        atomicStore(&sums[o], 0u);
    }
}

// One invocation per element of x, added into its segment's row.
@elementwise fn segment_i32(j: u32) {
    let inner = param(1);
    let at = u32(indices[j / inner]) * inner + j % inner;
    atomicAdd(&sums[at], x[j]);
}

// f32 has no atomic add in WGSL: a compare-exchange loop on the bits.
@elementwise fn segment_f32(j: u32) {
    let inner = param(1);
    let at = u32(indices[j / inner]) * inner + j % inner;
    let v = bitcast<f32>(x[j]);
    var old = atomicLoad(&sums[at]);
    loop {
        let r = atomicCompareExchangeWeak(&sums[at], old, bitcast<u32>(bitcast<f32>(old) + v));
        if r.exchanged {
            break;
        }
        old = r.old_value;
    }
}
