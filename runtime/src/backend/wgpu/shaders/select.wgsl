// Select: `t` where the condition holds, `e` elsewhere, with NumPy
// broadcasting of all three. Elements are raw 32-bit words; a bool is 0 or 1.

@group(0) @binding(0) var<storage, read> condition: array<u32>;
@group(0) @binding(1) var<storage, read> t: array<u32>;
@group(0) @binding(2) var<storage, read> e: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<u32>;
// [n, rank, dims[rank], condition strides[rank], t strides[rank], e strides[rank]]
@group(0) @binding(4) var<uniform> params: array<vec4<u32>, 32>;

@compute @workgroup_size(256)
fn select_words(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let rank = param(1);
    let pick = condition[strided(i, rank, 2u, 2u + rank)] != 0u;
    let ct = strided2(i, rank, 2u, 2u + 2u * rank, 2u + 3u * rank);
    y[i] = select(e[ct.y], t[ct.x], pick);
}
