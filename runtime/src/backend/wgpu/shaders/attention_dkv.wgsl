// AttentionGrad's `dk` and `dv`: each invocation one key's chunk of CHUNK
// columns of both, walking the queries that see it: `p = exp(s - lse)`,
// `dv += p * dy`, `ds = p * (dy . v - delta) * scale`, `dk += ds * q`.

@tensors(dy: f32, q: f32, k: f32, v: f32, mask: f32, stats: f32 -> dk: f32, dvs: f32)

@elementwise fn attention_dkv(i: u32) {
    let d = param(4u);
    let dv = param(5u);
    let chunks = max((max(d, dv) + CHUNK - 1u) / CHUNK, 1u);
    let c0 = (i % chunks) * CHUNK;
    let key = i / chunks;
    let b = key / param(3u);
    let j = key % param(3u);
    let wk = min(CHUNK, d - min(c0, d));
    let wv = min(CHUNK, dv - min(c0, dv));
    let base = mask_base(b);
    let scale = bitcast<f32>(param(6u));
    let vs = key * dv;
    var first = 0u;
    if (param(7u) & 1u) != 0u {
        first = j;
    }
    var ak: array<f32, CHUNK>;
    var av: array<f32, CHUNK>;
    for (var qi = first; qi < param(2u); qi++) {
        let row = b * param(2u) + qi;
        let p = probability(score(b, qi, j, base), stats[2u * row]);
        var dp = 0.0;
        for (var t = 0u; t < dv; t++) {
            dp += dy[row * dv + t] * v[vs + t];
        }
        let ds = p * (dp - stats[2u * row + 1u]) * scale;
        for (var t = 0u; t < wv; t++) {
            av[t] += p * dy[row * dv + c0 + t];
        }
        for (var t = 0u; t < wk; t++) {
            ak[t] += ds * q[row * d + c0 + t];
        }
    }
    for (var t = 0u; t < wk; t++) {
        dk[key * d + c0 + t] = ak[t];
    }
    for (var t = 0u; t < wv; t++) {
        dvs[key * dv + c0 + t] = av[t];
    }
}
