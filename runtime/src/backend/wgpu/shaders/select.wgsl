// Select: `t` where the condition holds, `e` elsewhere, with NumPy
// broadcasting of all three. Elements are raw 32-bit words; a bool is 0 or 1.

@group(0) @binding(0) var<storage, read> condition: array<u32>;
@group(0) @binding(1) var<storage, read> t: array<u32>;
@group(0) @binding(2) var<storage, read> e: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<u32>;
// [n, rank, dims[rank], condition strides[rank], t strides[rank], e strides[rank]]
@group(0) @binding(4) var<uniform> params: array<vec4<u32>, 32>;

@elementwise fn select_words(i: u32) {
    let rank = param(1);
    let pick = condition[strided(i, rank, 2u, 2u + rank)] != 0u;
    let ct = strided2(i, rank, 2u, 2u + 2u * rank, 2u + 3u * rank);
    y[i] = select(e[ct.y], t[ct.x], pick);
}
