// AttentionGrad's `dq`: each invocation one query's chunk of CHUNK
// columns, walking the keys it sees: `p = exp(s - lse)`, `ds = p * (dy .
// v - delta) * scale`, `dq += ds * k`.

@tensors(dy: f32, q: f32, k: f32, v: f32, mask: f32, stats: f32 -> dq: f32)
@row4(q, k, v, dy)

@elementwise fn attention_dq(i: u32) {
    let d = param(4u);
    let dv = param(5u);
    let at = chunk_of(i, d, param(2u));
    let width = columns(at.c0, d);
    let base = mask_base(at.b);
    let lse = stats[2u * at.row];
    let delta = stats[2u * at.row + 1u];
    let scale = bitcast<f32>(param(6u));
    var acc: array<f32, CHUNK>;
    for (var j = 0u; j < visible_end(at.r); j++) {
        let p = probability(score(at.b, at.r, j, base), lse);
        let vs = (at.b * param(3u) + j) * dv;
        var dp = 0.0;
        for (var t = 0u; t < dv; t++) {
            dp += dy[at.row * dv + t] * v[vs + t];
        }
        let ds = p * (dp - delta) * scale;
        let ks = (at.b * param(3u) + j) * d + at.c0;
        for (var t = 0u; t < width; t++) {
            acc[t] += ds * k[ks + t];
        }
    }
    for (var t = 0u; t < width; t++) {
        dq[at.row * d + at.c0 + t] = acc[t];
    }
}

// The tiled form (depths of at most TILE_DEPTH), laid out as
// `attention_tiled`: 64 queries a workgroup, each with its rows of q and
// dy and its dq in registers, the keys and values staged STAGE at a time.

@compute @workgroup_size(64)
fn attention_dq_tiled(g: Workgroup) {
    if item(g) >= param(0u) {
        return;
    }
    let d = param(4u);
    let at = tile(item(g), param(2u), 64u);
    let me = query_of(at, g.t);
    let scale = bitcast<f32>(param(6u));
    let lse = stats[2u * me.row];
    let delta = stats[2u * me.row + 1u];
    var qr = register_row(ROW_Q, me.row * d, d);
    var dyr = register_row(ROW_DY, me.row * param(5u), param(5u));
    var acc: Row;
    for (var k0 = 0u; k0 < keys_seen(at.first); k0 += STAGE) {
        let stop = stage_keys(at, me, k0, g.t);
        for (var j4 = 0u; j4 < stop; j4 += UNROLL) {
            let dots = staged_dots(&qr, j4 * TILE_VECS);
            let dps = staged_dots(&dyr, VALUES + j4 * TILE_VECS);
            for (var u = 0u; u < min(UNROLL, stop - j4); u++) {
                let jj = j4 + u;
                let p = probability(scored(dots[u], at.b, me.qi, k0 + jj, me.base), lse);
                add_staged(&acc, p * (dps[u] - delta) * scale, jj * TILE_VECS);
            }
        }
    }
    if !me.live {
        return;
    }
    for (var c = 0u; c < TILE_VECS; c++) {
        for (var e = 0u; e < 4u; e++) {
            if 4u * c + e < d {
                dq[me.row * d + 4u * c + e] = acc[c][e];
            }
        }
    }
}
