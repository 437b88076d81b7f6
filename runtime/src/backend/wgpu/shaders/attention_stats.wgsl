// AttentionGrad's first pass: per query, its lse and `delta = sum(dy * y)
// - dlse` (dlse where flag 4 of param(7) says it is bound) side by side,
// what the passes over keys and queries read.

@tensors(dy: f32, y: f32, lse: f32, dlse: f32 -> stats: f32)

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
