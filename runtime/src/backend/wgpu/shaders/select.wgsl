// Select: `t` where the condition holds, `e` elsewhere, with NumPy
// broadcasting of all three. Elements are raw 32-bit words; a bool is 0 or 1.

// [n, rank, dims[rank], condition strides[rank], t strides[rank], e strides[rank]]
@tensors(condition: u32, t: u32, e: u32 -> y: u32)

@elementwise fn select_words(i: u32) {
    let rank = param(1);
    let pick = condition[strided(i, rank, 2u, 2u + rank)] != 0u;
    let ct = strided2(i, rank, 2u, 2u + 2u * rank, 2u + 3u * rank);
    y[i] = select(e[ct.y], t[ct.x], pick);
}
