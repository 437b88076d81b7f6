// AttentionGrad's first pass: per query, its lse and `delta = sum(dy * y)
// - dlse` (dlse where flag 4 of param(7) says it is bound) side by side,
// what the passes over keys and queries read.

@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> lse: array<f32>;
@group(0) @binding(3) var<storage, read> dlse: array<f32>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;
@group(0) @binding(5) var<uniform> params: array<vec4<u32>, 32>;

@elementwise fn attention_stats(row: u32) {
    let dv = param(5u);
    var dot = 0.0;
    for (var t = 0u; t < dv; t++) {
        dot += dy[row * dv + t] * y[row * dv + t];
    }
    if (param(7u) & 4u) != 0u {
        dot -= dlse[row];
    }
    stats[2u * row] = lse[row];
    stats[2u * row + 1u] = dot;
}
