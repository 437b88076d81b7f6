// ResizeBilinearGrad and ResizeNearestNeighborGrad: dx = A_h^T dy A_w, one
// axis a pass. `src` is [outer, k, inner] (k the resized axis), `y` is
// [outer, m, inner]; `taps` holds [first, second, weight bits] per
// resized row and `spans` [lo, hi) per input row, the outputs whose taps
// read it (`shape::rules::resize_spans`). Each element sums its span in
// order by `tap_weight`, as the cpu's `resize_grad_pass` does.

// [count, k, m, inner]
@tensors(src: u32, taps: u32, spans: u32 -> y: u32)

// `shape::rules::tap_weight`: how much of resized row j input row x gives.
fn tap_weight(j: u32, x: u32) -> f32 {
    var w = 0.0;
    if taps[3u * j] == x {
        w = w + (1.0 - bitcast<f32>(taps[3u * j + 2u]));
    }
    if taps[3u * j + 1u] == x {
        w = w + bitcast<f32>(taps[3u * j + 2u]);
    }
    return w;
}

@elementwise fn resize_grad(i: u32) {
    let k = param(1);
    let m = param(2);
    let inner = param(3);
    let e = i % inner;
    let r = i / inner;
    let x = r % m;
    let o = r / m;
    var acc = 0.0;
    for (var j = spans[2u * x]; j < spans[2u * x + 1u]; j = j + 1u) {
        acc = acc + bitcast<f32>(src[(o * k + j) * inner + e]) * tap_weight(j, x);
    }
    y[i] = bitcast<u32>(acc);
}
