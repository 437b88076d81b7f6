// Attention: each invocation one query's chunk of CHUNK output columns,
// walking the keys it sees with an online softmax (`Softmax`). NaN in a
// score poisons the query's row; -inf (a hidden key) adds nothing; a
// query that sees no key gives zeros and an lse of -inf, as the cpu.

@tensors(q: f32, k: f32, v: f32, mask: f32 -> y: f32, lse: f32)
@row4(q, k, v)

// One query's online softmax: the running maximum `m` of its scores and
// the sum `l` of `exp(score - m)`, its output accumulated unnormalized and
// rescaled when a key raises the maximum.
struct Softmax {
    m: f32,
    l: f32,
    poisoned: bool,
    // What `meet` last asks the accumulator to be scaled by first.
    rescale: f32,
}

// Meets score s: the weight its key's value adds to the accumulator, or
// -1 where it adds nothing (a hidden key, or NaN, which poisons the row);
// before adding, the accumulator is scaled by `rescale` where that is not
// 1 (the maximum rose).
fn meet(st: ptr<function, Softmax>, s: f32) -> f32 {
    (*st).rescale = 1.0;
    if is_nan(s) {
        (*st).poisoned = true;
        return -1.0;
    }
    if is_neg_inf(s) {
        return -1.0;
    }
    if s > (*st).m {
        var correction = 0.0;
        if !is_neg_inf((*st).m) {
            correction = exp((*st).m - s);
        }
        (*st).rescale = correction;
        (*st).l *= correction;
        (*st).m = s;
    }
    let p = exp(s - (*st).m);
    (*st).l += p;
    return p;
}

// The output from accumulated `a`, and the lse, once every key is met.
fn normalized(st: Softmax, a: f32) -> f32 {
    if st.poisoned {
        return nan();
    }
    return select(0.0, a / st.l, st.l != 0.0);
}

fn lse_of(st: Softmax) -> f32 {
    if st.poisoned {
        return nan();
    }
    if st.l == 0.0 {
        return neg_inf();
    }
    return st.m + log(st.l);
}

@elementwise fn attention(i: u32) {
    let dv = param(5u);
    let at = chunk_of(i, dv, param(2u));
    let width = columns(at.c0, dv);
    let base = mask_base(at.b);
    var acc: array<f32, CHUNK>;
    var sm = Softmax(neg_inf(), 0.0, false, 1.0);
    for (var j = 0u; j < visible_end(at.r); j++) {
        let p = meet(&sm, score(at.b, at.r, j, base));
        if p < 0.0 {
            continue;
        }
        if sm.rescale != 1.0 {
            for (var t = 0u; t < width; t++) {
                acc[t] *= sm.rescale;
            }
        }
        let vs = (at.b * param(3u) + j) * dv + at.c0;
        for (var t = 0u; t < width; t++) {
            acc[t] += p * v[vs + t];
        }
    }
    for (var t = 0u; t < width; t++) {
        y[at.row * dv + at.c0 + t] = normalized(sm, acc[t]);
    }
    if at.c0 == 0u {
        lse[at.row] = lse_of(sm);
    }
}

// The tiled form (depths of at most TILE_DEPTH; attention_queries.wgsl):
// a workgroup of 64 invocations takes 64 queries of one matrix, param(0)
// workgroups in all, and walks the keys in stages of STAGE: each stage's
// keys and values are read once into workgroup memory and met by all 64
// queries there.

@compute @workgroup_size(64)
fn attention_tiled(g: Workgroup) {
    if item(g) >= param(0u) {
        return;
    }
    let at = tile(item(g), param(2u), 64u);
    let me = query_of(at, g.t);
    let dv = param(5u);
    var qr = register_row(ROW_Q, me.row * param(4u), param(4u));
    var acc: Row;
    var sm = Softmax(neg_inf(), 0.0, false, 1.0);
    for (var k0 = 0u; k0 < keys_seen(at.first); k0 += STAGE) {
        let stop = stage_keys(at, me, k0, g.t);
        for (var j4 = 0u; j4 < stop; j4 += UNROLL) {
            let dots = staged_dots(&qr, j4 * TILE_VECS);
            for (var u = 0u; u < min(UNROLL, stop - j4); u++) {
                let jj = j4 + u;
                let p = meet(&sm, scored(dots[u], at.b, me.qi, k0 + jj, me.base));
                if p < 0.0 {
                    continue;
                }
                if sm.rescale != 1.0 {
                    for (var c = 0u; c < TILE_VECS; c++) {
                        acc[c] *= sm.rescale;
                    }
                }
                add_staged(&acc, p, VALUES + jj * TILE_VECS);
            }
        }
    }
    if !me.live {
        return;
    }
    for (var c = 0u; c < TILE_VECS; c++) {
        for (var e = 0u; e < 4u; e++) {
            if 4u * c + e < dv {
                y[me.row * dv + 4u * c + e] = normalized(sm, acc[c][e]);
            }
        }
    }
    lse[me.row] = lse_of(sm);
}
