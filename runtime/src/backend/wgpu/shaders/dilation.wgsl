// Dilation2D and its two gradients over NHWC images, one invocation per
// output element. x: [batch, h, w, c]; strel, the filter (a structuring
// element; `filter` is a WGSL keyword): [fh, fw, c]; dy: [batch,
// oh, ow, c]. Elements are 32-bit words, f32 (OP 0) or i32 (OP 1, whose
// sums wrap). The geometry is conv.rs's: [count, batch, h, w, c, oh, ow,
// k, fh, fw, stride h, stride w, dilation h, dilation w, pad top, pad
// left, groups]. The gradients gather what the cpu kernels scatter, in the
// cpu's order (windows by row, then column), so the sums are its bits.

@tensors(x: u32, strel: u32, dy: u32 -> y: u32)

override OP: u32 = 0u;

fn add(a: u32, b: u32) -> u32 {
    if OP == 1u {
        return bitcast<u32>(bitcast<i32>(a) + bitcast<i32>(b));
    }
    return bitcast<u32>(bitcast<f32>(a) + bitcast<f32>(b));
}

// a > b in the element type: false for NaN, as the cpu's `>`.
fn greater(a: u32, b: u32) -> bool {
    if OP == 1u {
        return bitcast<i32>(a) > bitcast<i32>(b);
    }
    return bitcast<f32>(a) > bitcast<f32>(b);
}

// The window's winning tap: its value, image row and column, filter row
// and column; `found` is false for a window with no tap inside the image.
struct Winner {
    value: u32,
    h: u32,
    w: u32,
    kh: u32,
    kw: u32,
    found: bool,
}

// The first largest x + filter of window (oh, ow) of image n, channel c
// (NaN never wins), or, where nothing beats the lowest finite value, the
// first tap inside the image, with that value: the cpu's
// `dilation_winner`, tap for tap.
fn winner(n: u32, oh: u32, ow: u32, c: u32) -> Winner {
    let lowest = select(0xff7fffffu, 0x80000000u, OP == 1u);
    var best = Winner(lowest, 0u, 0u, 0u, 0u, false);
    for (var kh = 0u; kh < param(8); kh++) {
        let h = i32(oh * param(10) + kh * param(12)) - i32(param(14));
        if h < 0 || h >= i32(param(2)) {
            continue;
        }
        for (var kw = 0u; kw < param(9); kw++) {
            let w = i32(ow * param(11) + kw * param(13)) - i32(param(15));
            if w < 0 || w >= i32(param(3)) {
                continue;
            }
            let at = ((n * param(2) + u32(h)) * param(3) + u32(w)) * param(4) + c;
            let v = add(x[at], strel[(kh * param(9) + kw) * param(4) + c]);
            if greater(v, best.value) {
                best = Winner(v, u32(h), u32(w), kh, kw, true);
            } else if !best.found {
                best = Winner(best.value, u32(h), u32(w), kh, kw, true);
            }
        }
    }
    return best;
}

@elementwise fn dilation(i: u32) {
    let c = param(4);
    let o = i / c;
    y[i] = winner(o / (param(5) * param(6)), o / param(6) % param(5), o % param(6), i % c).value;
}

// dx: each element sums the dy of the windows it wins. The windows that
// can hold it are those with a tap on it, by row then column: filter rows
// from the last (the earliest window) to the first.
@elementwise fn dilation_backprop_input(i: u32) {
    let c = param(4);
    let p = i / c;
    let n = p / (param(2) * param(3));
    let row = p / param(3) % param(2);
    let col = p % param(3);
    var sum = 0u;
    for (var th = param(8); th > 0u; th--) {
        let reach_h = i32(row + param(14)) - i32((th - 1u) * param(12));
        if reach_h < 0 || reach_h % i32(param(10)) != 0 || u32(reach_h) / param(10) >= param(5) {
            continue;
        }
        let oh = u32(reach_h) / param(10);
        for (var tw = param(9); tw > 0u; tw--) {
            let reach_w = i32(col + param(15)) - i32((tw - 1u) * param(13));
            if reach_w < 0 || reach_w % i32(param(11)) != 0 || u32(reach_w) / param(11) >= param(6) {
                continue;
            }
            let ow = u32(reach_w) / param(11);
            let won = winner(n, oh, ow, i % c);
            if won.found && won.h == row && won.w == col {
                sum = add(sum, dy[((n * param(5) + oh) * param(6) + ow) * c + i % c]);
            }
        }
    }
    y[i] = sum;
}

// dfilter: each tap sums the dy of the windows it wins, in output order.
@elementwise fn dilation_backprop_filter(i: u32) {
    let c = param(4);
    let tap = i / c;
    let kh = tap / param(9);
    let kw = tap % param(9);
    var sum = 0u;
    for (var n = 0u; n < param(1); n++) {
        for (var oh = 0u; oh < param(5); oh++) {
            for (var ow = 0u; ow < param(6); ow++) {
                let won = winner(n, oh, ow, i % c);
                if won.found && won.kh == kh && won.kw == kw {
                    sum = add(sum, dy[((n * param(5) + oh) * param(6) + ow) * c + i % c]);
                }
            }
        }
    }
    y[i] = sum;
}
