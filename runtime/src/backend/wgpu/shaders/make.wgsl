// Kernels with no tensor input: Range, Fill and RandomUniform. Elements are raw 32-bit
// words (see unary.wgsl). With no inputs, the output is binding 0.

// fill: [count, word]; range_f32 and range_i32: [count, start, step] as
// f32 or i32 bits; random_uniform: [count, low bits, high bits, key 0, key 1].
@tensors(-> y: u32)

@elementwise fn fill(i: u32) {
    y[i] = param(1);
}

@elementwise fn range_f32(i: u32) {
    y[i] = bitcast<u32>(bitcast<f32>(param(1)) + f32(i) * bitcast<f32>(param(2)));
}

@elementwise fn range_i32(i: u32) {
    y[i] = bitcast<u32>(bitcast<i32>(param(1)) + i32(i) * bitcast<i32>(param(2)));
}

// low + (high - low) * u, kept below high where rounding would reach it, as
// the cpu kernel computes it.
@elementwise fn random_uniform(i: u32) {
    let low = bitcast<f32>(param(1));
    let high = bitcast<f32>(param(2));
    let v = low + (high - low) * random_unit(i, param(3), param(4));
    y[i] = bitcast<u32>(select(v, max(low, high - (high - low) * 1.1920929e-7), v >= high && high > low));
}
