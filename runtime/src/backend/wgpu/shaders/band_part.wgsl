// MatrixBandPart: the innermost matrices with everything outside the band
// set to zero, one invocation per element. Elements are raw 32-bit words
// (see unary.wgsl): a zero word is 0 in f32, i32 and bool alike.

// [count, rows, cols] of each matrix
@tensors(x: u32, num_lower: i32, num_upper: i32 -> y: u32)

@elementwise fn band_part(o: u32) {
    let cols = param(2);
    let i = i32((o / cols) % param(1));
    let j = i32(o % cols);
    let lower = num_lower[0];
    let upper = num_upper[0];
    let keep = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
    y[o] = select(0u, x[o], keep);
}
