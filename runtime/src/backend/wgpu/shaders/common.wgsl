// Helpers every opforge shader gets: the host prepends this file to each
// (see `shader!` in mod.rs). Each shader declares its own `params`, a
// uniform `array<vec4<u32>, 32>`; WGSL resolves module-scope names in any
// order.

// Word i of the parameters (a uniform array's elements are 16 bytes).
fn param(i: u32) -> u32 {
    return params[i >> 2u][i & 3u];
}

// The element of an invocation in a grid of 256-wide workgroups, laid out
// in 2D once a 1D grid would pass the 65535 limit.
fn element(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
    return gid.y * groups.x * 256u + gid.x;
}

// NaN by its bits: a driver may fold `v != v` away.
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}
