// LRNGrad: with d each element's divisor, bias + alpha * (its window's sum
// of squares), dx = dy * d^-beta - 2 * alpha * beta * x * W(dy * y / d),
// W the window sum (an element is in the windows of those in its own).
// One invocation per element, in the cpu kernel's order.

// [count, channels, radius, bias, alpha, beta], the last three f32 bits.
@tensors(x: f32, y: f32, dy: f32 -> dx: f32)

// The first and last channel of channel ch's window.
fn window(ch: u32) -> vec2<u32> {
    let r = param(2);
    return vec2<u32>(select(0u, ch - r, ch >= r), min(param(1) - 1u, ch + r));
}

fn divisor(row: u32, ch: u32) -> f32 {
    let w = window(ch);
    var s = 0.0;
    for (var j = w.x; j <= w.y; j++) {
        let v = x[row + j];
        s += v * v;
    }
    return bitcast<f32>(param(3)) + bitcast<f32>(param(4)) * s;
}

@elementwise fn lrn_grad(i: u32) {
    let ch = i % param(1);
    let row = i - ch;
    let w = window(ch);
    var spread = 0.0;
    for (var d = w.x; d <= w.y; d++) {
        spread += dy[row + d] * y[row + d] / divisor(row, d);
    }
    let beta = bitcast<f32>(param(5));
    let two_alpha_beta = 2.0 * bitcast<f32>(param(4)) * beta;
    // `power`, IEEE's pow (see normalization.wgsl's lrn).
    dx[i] = dy[i] * power(divisor(row, ch), -beta) - two_alpha_beta * x[i] * spread;
}
