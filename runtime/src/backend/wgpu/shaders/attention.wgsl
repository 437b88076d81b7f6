// Attention: each invocation one query's chunk of CHUNK output columns,
// walking the keys it sees with an online softmax: a running maximum `m`
// and sum `l`, the output rescaled when a key raises the maximum. NaN in
// a score poisons the query's row; -inf (a hidden key) adds nothing; a
// query that sees no key gives zeros and an lse of -inf, as the cpu.

@tensors(q: f32, k: f32, v: f32, mask: f32 -> y: f32, lse: f32)

@elementwise fn attention(i: u32) {
    let dv = param(5u);
    let chunks = max((dv + CHUNK - 1u) / CHUNK, 1u);
    let c0 = (i % chunks) * CHUNK;
    let row = i / chunks;
    let b = row / param(2u);
    let qi = row % param(2u);
    let width = min(CHUNK, dv - min(c0, dv));
    let base = mask_base(b);
    var acc: array<f32, CHUNK>;
    var m = neg_inf();
    var l = 0.0;
    var poisoned = false;
    for (var j = 0u; j < visible_end(qi); j++) {
        let s = score(b, qi, j, base);
        if is_nan(s) {
            poisoned = true;
            continue;
        }
        if is_neg_inf(s) {
            continue;
        }
        if s > m {
            var correction = 0.0;
            if !is_neg_inf(m) {
                correction = exp(m - s);
            }
            for (var t = 0u; t < width; t++) {
                acc[t] *= correction;
            }
            l *= correction;
            m = s;
        }
        let p = exp(s - m);
        l += p;
        let vs = (b * param(3u) + j) * dv + c0;
        for (var t = 0u; t < width; t++) {
            acc[t] += p * v[vs + t];
        }
    }
    let ys = row * dv + c0;
    for (var t = 0u; t < width; t++) {
        var out = 0.0;
        if poisoned {
            out = nan();
        } else if l != 0.0 {
            out = acc[t] / l;
        }
        y[ys + t] = out;
    }
    if c0 == 0u {
        var e = neg_inf();
        if poisoned {
            e = nan();
        } else if l != 0.0 {
            e = m + log(l);
        }
        lse[row] = e;
    }
}
