// What the passes tiled by queries share (attention.wgsl's
// `attention_tiled`, attention_dq.wgsl's `attention_dq_tiled`): a
// workgroup of 64 queries of one matrix walks the keys in stages of
// STAGE, each stage's keys and their values read once into `staged`
// (the values from VALUES) and met by all 64 queries there.
const STAGE: u32 = 32u;
const VALUES: u32 = STAGE * TILE_VECS;
var<workgroup> staged: array<vec4<f32>, 1024>;

// Query t of a workgroup of 64 in the passes tiled by queries: qi of
// matrix at.b, whether it is one (`live`), its row (clamped, so that an
// invocation past the queries reads a real row), where its mask starts
// and where the keys it sees end (at 0 where it is not live).
struct Query {
    qi: u32,
    live: bool,
    row: u32,
    base: u32,
    end: u32,
}

fn query_of(at: Tile, t: u32) -> Query {
    let queries = param(2u);
    let qi = at.first + t;
    let live = qi < queries;
    let row = at.b * queries + min(qi, queries - 1u);
    return Query(qi, live, row, mask_base(at.b), select(0u, visible_end(qi), live));
}

// Where the keys any of the 64 queries from `first` sees end (uniform).
fn keys_seen(first: u32) -> u32 {
    if (param(7u) & 1u) != 0u {
        return min(param(3u), first + 64u);
    }
    return param(3u);
}

// One stage of the passes tiled by queries: keys k0..k0 + STAGE of
// matrix at.b staged with their values (from VALUES), between
// barriers; how many of them query `me` meets.
fn stage_keys(at: Tile, me: Query, k0: u32, t: u32) -> u32 {
    workgroupBarrier();
    stage_rows(ROW_K, ROW_V, at.b, k0, param(3u), STAGE, t);
    workgroupBarrier();
    return min(STAGE, max(me.end, k0) - k0);
}
