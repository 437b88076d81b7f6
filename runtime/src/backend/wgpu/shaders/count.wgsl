// Bincount and DenseBincount: one invocation per bin of each row scans its
// row of x in order and adds as the cpu kernel does, so the sums are the
// cpu's, bit for bit. The host has checked that no value is negative.

// [count, size, len, weighted, binary, f32]: the output as [rows, size], x
// (and weights, when weighted) as [rows, len]; the output f32 or i32.
@tensors(x: i32, weights: u32 -> y: u32)

@elementwise fn bincount(o: u32) {
    let size = param(1);
    let len = param(2);
    let weighted = param(3) != 0u;
    let is_f32 = param(5) != 0u;
    let bin = i32(o % size);
    let row = (o / size) * len;
    let one = select(1u, bitcast<u32>(1.0), is_f32);
    var found = false;
    var sum_f = 0.0;
    var sum_i = 0i;
    for (var j = 0u; j < len; j++) {
        if x[row + j] == bin {
            found = true;
            let w = select(one, weights[row + j], weighted);
            sum_f += bitcast<f32>(w);
            sum_i += bitcast<i32>(w);
        }
    }
    if param(4) != 0u {
        y[o] = select(0u, one, found);
    } else {
        y[o] = select(bitcast<u32>(sum_i), bitcast<u32>(sum_f), is_f32);
    }
}
