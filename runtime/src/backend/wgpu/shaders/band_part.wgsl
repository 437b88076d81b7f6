// MatrixBandPart: the innermost matrices with everything outside the band
// set to zero, one invocation per element. Elements are raw 32-bit words
// (see unary.wgsl): a zero word is 0 in f32, i32 and bool alike.

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> num_lower: array<i32>;
@group(0) @binding(2) var<storage, read> num_upper: array<i32>;
@group(0) @binding(3) var<storage, read_write> y: array<u32>;
// [count, rows, cols] of each matrix
@group(0) @binding(4) var<uniform> params: array<vec4<u32>, 32>;

@elementwise fn band_part(o: u32) {
    let cols = param(2);
    let i = i32((o / cols) % param(1));
    let j = i32(o % cols);
    let lower = num_lower[0];
    let upper = num_upper[0];
    let keep = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
    y[o] = select(0u, x[o], keep);
}
