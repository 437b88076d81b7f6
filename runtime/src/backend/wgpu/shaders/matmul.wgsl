// Batched matrix product, tiled: each workgroup of 16x16 invocations
// computes a 64x64 block of one output matrix, stepping through k in
// slices of 16 staged in workgroup memory; each invocation accumulates a
// 4x4 set of outputs in registers. Transposes are strides, so op(a) and
// op(b) are read in place; loads pick the thread order along whichever
// axis is contiguous, so both layouts read memory in runs.

const TILE: u32 = 64u;
const DEPTH: u32 = 16u;
// Row stride of the staged tiles: one word of padding, so that invocations
// storing down a column (p varying fastest) hit different memory banks.
const ROW: u32 = 65u;

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// [m, n, k, a_row, a_col, b_row, b_col, batch_rank, batch_dims,
//  a_batch_strides, b_batch_strides]: element (i, p) of op(a) is at
// i * a_row + p * a_col, element (p, j) of op(b) at p * b_row + j * b_col.
@group(0) @binding(3) var<uniform> params: array<vec4<u32>, 32>;

// op(a) tile as [DEPTH][ROW] (p, i) and op(b) tile as [DEPTH][ROW] (p, j).
var<workgroup> ta: array<f32, 1040>;
var<workgroup> tb: array<f32, 1040>;

// Offsets of batch `z`'s matrices in a and b.
fn batch_offsets(z: u32) -> vec2<u32> {
    let rank = param(7);
    return strided2(z, rank, 8u, 8u + rank, 8u + 2u * rank);
}

@compute @workgroup_size(16, 16)
fn matmul(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let m = param(0);
    let n = param(1);
    let k = param(2);
    let a_row = param(3);
    let a_col = param(4);
    let b_row = param(5);
    let b_col = param(6);
    let base = batch_offsets(wid.z);
    let row0 = wid.y * TILE;
    let col0 = wid.x * TILE;

    var acc: array<f32, 16>;
    for (var p0 = 0u; p0 < k; p0 += DEPTH) {
        // 1024 elements of each tile, four per invocation.
        for (var l = 0u; l < 4u; l++) {
            let e = t + l * 256u;
            // Along p when a's rows are contiguous, else along i.
            var i = e / DEPTH;
            var p = e % DEPTH;
            if a_col != 1u {
                i = e % TILE;
                p = e / TILE;
            }
            var v = 0.0;
            if row0 + i < m && p0 + p < k {
                v = a[base.x + (row0 + i) * a_row + (p0 + p) * a_col];
            }
            ta[p * ROW + i] = v;

            var j = e % TILE;
            var q = e / TILE;
            if b_col != 1u {
                j = e / DEPTH;
                q = e % DEPTH;
            }
            var w = 0.0;
            if col0 + j < n && p0 + q < k {
                w = b[base.y + (p0 + q) * b_row + (col0 + j) * b_col];
            }
            tb[q * ROW + j] = w;
        }
        workgroupBarrier();
        for (var p = 0u; p < DEPTH; p++) {
            var ra: array<f32, 4>;
            var rb: array<f32, 4>;
            for (var r = 0u; r < 4u; r++) {
                ra[r] = ta[p * ROW + lid.y + 16u * r];
                rb[r] = tb[p * ROW + lid.x + 16u * r];
            }
            for (var r = 0u; r < 4u; r++) {
                for (var c = 0u; c < 4u; c++) {
                    acc[r * 4u + c] = fma(ra[r], rb[c], acc[r * 4u + c]);
                }
            }
        }
        workgroupBarrier();
    }
    let out = wid.z * m * n;
    for (var r = 0u; r < 4u; r++) {
        let i = row0 + lid.y + 16u * r;
        for (var c = 0u; c < 4u; c++) {
            let j = col0 + lid.x + 16u * c;
            if i < m && j < n {
                y[out + i * n + j] = acc[r * 4u + c];
            }
        }
    }
}
