// ApplyAdam: one Adam step, each element's var, m, v and grad read once and
// its new var, m and v written once. The formula and its rounding are the
// cpu kernel's (binary.rs): m' = b1 * m + g * (1 - b1),
// v' = b2 * v + g * g * (1 - b2),
// var' = -lr * ((m' / c1) / (sqrt(v' / c2) + epsilon)) + var,
// where [lr, p1, p2] = schedule, c1 = 1 - p1 and c2 = 1 - p2, in f32.

// [n (vectors for `_x4`), then five f32 words: b1, b2, 1 - b1, 1 - b2,
// epsilon]
@tensors(w: f32, m: f32, v: f32, g: f32, schedule: f32 -> new_w: f32, new_m: f32, new_v: f32)
// The same bindings as vectors, for `apply_adam_x4`: four elements per
// invocation, the last vector running into the buffers' slack.
@tensors(w4: vec4<f32>, m4: vec4<f32>, v4: vec4<f32>, g4: vec4<f32>, _ -> new_w4: vec4<f32>, new_m4: vec4<f32>, new_v4: vec4<f32>)

struct Step {
    w: vec4<f32>,
    m: vec4<f32>,
    v: vec4<f32>,
}

fn constant(i: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<f32>(param(1u + i)));
}

fn adam(w: vec4<f32>, m: vec4<f32>, v: vec4<f32>, g: vec4<f32>) -> Step {
    let step = vec4<f32>(-schedule[0]);
    let c1 = vec4<f32>(1.0 - schedule[1]);
    let c2 = vec4<f32>(1.0 - schedule[2]);
    let new_m = constant(0u) * m + g * constant(2u);
    let new_v = constant(1u) * v + g * g * constant(3u);
    let update = (new_m / c1) / (sqrt(new_v / c2) + constant(4u));
    return Step(step * update + w, new_m, new_v);
}

@elementwise fn apply_adam(i: u32) {
    let s = adam(vec4<f32>(w[i]), vec4<f32>(m[i]), vec4<f32>(v[i]), vec4<f32>(g[i]));
    new_w[i] = s.w.x;
    new_m[i] = s.m.x;
    new_v[i] = s.v.x;
}

@elementwise fn apply_adam_x4(i: u32) {
    let s = adam(w4[i], m4[i], v4[i], g4[i]);
    new_w4[i] = s.w;
    new_m4[i] = s.m;
    new_v4[i] = s.v;
}
