// Softmax along one axis, numerically stable: exp(x - max) / sum. x is seen
// as [outer, len, inner]; row o (one of outer * inner) starts at
// (o / inner) * len * inner + o % inner and steps by inner.
//
// `softmax_threads` gives each row an invocation, for short rows; for long
// ones `softmax_groups` gives each row a workgroup, whose max and sum are
// trees over 256 partial values (which also keeps the f32 sum accurate).

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
// [rows, len, inner]
@group(0) @binding(2) var<uniform> params: array<vec4<u32>, 32>;

var<workgroup> scratch: array<f32, 256>;

fn row_start(o: u32) -> u32 {
    let inner = param(2);
    return (o / inner) * param(1) * inner + o % inner;
}

@compute @workgroup_size(256)
fn softmax_threads(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let o = gid.y * groups.x * 256u + gid.x;
    if o >= param(0) {
        return;
    }
    let len = param(1);
    let step = param(2);
    let base = row_start(o);
    var top = bitcast<f32>(0xff800000u); // -inf
    for (var t = 0u; t < len; t++) {
        top = max(top, x[base + t * step]);
    }
    var sum = 0.0;
    for (var t = 0u; t < len; t++) {
        let e = exp(x[base + t * step] - top);
        y[base + t * step] = e;
        sum += e;
    }
    let scale = 1.0 / sum;
    for (var t = 0u; t < len; t++) {
        y[base + t * step] *= scale;
    }
}

@compute @workgroup_size(256)
fn softmax_groups(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    // Uniform per workgroup, so returning keeps the barriers uniform.
    let o = wid.y * groups.x + wid.x;
    if o >= param(0) {
        return;
    }
    let len = param(1);
    let step = param(2);
    let base = row_start(o);
    var top = bitcast<f32>(0xff800000u);
    for (var i = t; i < len; i += 256u) {
        top = max(top, x[base + i * step]);
    }
    scratch[t] = top;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            scratch[t] = max(scratch[t], scratch[t + s]);
        }
        workgroupBarrier();
    }
    top = scratch[0];
    workgroupBarrier();
    var sum = 0.0;
    for (var i = t; i < len; i += 256u) {
        let e = exp(x[base + i * step] - top);
        y[base + i * step] = e;
        sum += e;
    }
    scratch[t] = sum;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if t < s {
            scratch[t] += scratch[t + s];
        }
        workgroupBarrier();
    }
    let scale = 1.0 / scratch[0];
    for (var i = t; i < len; i += 256u) {
        y[base + i * step] *= scale;
    }
}
