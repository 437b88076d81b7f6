// AttentionGrad's `dq`: each invocation one query's chunk of CHUNK
// columns, walking the keys it sees: `p = exp(s - lse)`, `ds = p * (dy .
// v - delta) * scale`, `dq += ds * k`.

@tensors(dy: f32, q: f32, k: f32, v: f32, mask: f32, stats: f32 -> dq: f32)

@elementwise fn attention_dq(i: u32) {
    let d = param(4u);
    let dv = param(5u);
    let chunks = max((d + CHUNK - 1u) / CHUNK, 1u);
    let c0 = (i % chunks) * CHUNK;
    let row = i / chunks;
    let b = row / param(2u);
    let qi = row % param(2u);
    let width = min(CHUNK, d - min(c0, d));
    let base = mask_base(b);
    let lse = stats[2u * row];
    let delta = stats[2u * row + 1u];
    let scale = bitcast<f32>(param(6u));
    var acc: array<f32, CHUNK>;
    for (var j = 0u; j < visible_end(qi); j++) {
        let p = probability(score(b, qi, j, base), lse);
        let vs = (b * param(3u) + j) * dv;
        var dp = 0.0;
        for (var t = 0u; t < dv; t++) {
            dp += dy[row * dv + t] * v[vs + t];
        }
        let ds = p * (dp - delta) * scale;
        let ks = (b * param(3u) + j) * d + c0;
        for (var t = 0u; t < width; t++) {
            acc[t] += ds * k[ks + t];
        }
    }
    for (var t = 0u; t < width; t++) {
        dq[row * d + c0 + t] = acc[t];
    }
}
