// The `wgpu` kernel of `MySquare`: one invocation per element, in
// workgroups of 256 (opforge's `Grid::Elements`). Elements arrive as raw
// 32-bit words; each entry point reads them as its dtype.

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
// [element count, unused, unused, unused]
@group(0) @binding(2) var<uniform> params: vec4<u32>;

fn element(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.y * groups.x * 256u + gid.x;
}

@compute @workgroup_size(256)
fn square_f32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i < params.x {
        let v = bitcast<f32>(x[i]);
        y[i] = bitcast<u32>(v * v);
    }
}

// i32 multiplication wraps in WGSL, as the cpu kernel's `wrapping_mul`.
@compute @workgroup_size(256)
fn square_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i < params.x {
        let v = bitcast<i32>(x[i]);
        y[i] = bitcast<u32>(v * v);
    }
}
