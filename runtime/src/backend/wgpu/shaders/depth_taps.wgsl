// A 3-D convolution's depth taps (shape::rules::Conv3d), as the cpu's
// `depth_taps` and `depth_taps_grad`: `stack` gathers, for each output
// depth, the depth slices its taps read into the channels of one image,
// `[batch * out depth, plane, taps, channels]`, zeros for a tap in the
// padding; `unstack` is its adjoint, each depth slice of the volume
// `[batch, depth, plane, channels]` summing the taps that read it, taps
// in order. Elements are f32 words.

// [count, plane, channels, depth, out depth, taps, stride, dilation, pad]
@tensors(x: u32 -> y: u32)

@elementwise fn stack(i: u32) {
    let plane = param(1);
    let c = param(2);
    let taps = param(5);
    let ch = i % c;
    let t = i / c % taps;
    let p = i / (c * taps) % plane;
    let o = i / (c * taps * plane) % param(4);
    let n = i / (c * taps * plane * param(4));
    // Where tap t of window o falls in the padded depth.
    let at = o * param(6) + t * param(7);
    let pad = param(8);
    if at < pad || at - pad >= param(3) {
        y[i] = 0u;
        return;
    }
    y[i] = x[((n * param(3) + at - pad) * plane + p) * c + ch];
}

@elementwise fn unstack(i: u32) {
    let plane = param(1);
    let c = param(2);
    let taps = param(5);
    let stride = param(6);
    let ch = i % c;
    let p = i / c % plane;
    let slice = i / (c * plane) % param(3);
    let n = i / (c * plane * param(3));
    var sum = 0.0;
    for (var t = 0u; t < taps; t++) {
        // The window whose tap t reads this slice, if any.
        let reach = slice + param(8);
        let tap = t * param(7);
        if reach < tap {
            break;
        }
        let o = (reach - tap) / stride;
        if (reach - tap) % stride == 0u && o < param(4) {
            sum += bitcast<f32>(x[(((n * param(4) + o) * plane + p) * taps + t) * c + ch]);
        }
    }
    y[i] = bitcast<u32>(sum);
}
