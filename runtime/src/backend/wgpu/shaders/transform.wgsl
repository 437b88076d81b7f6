// Transform, one invocation per output element. `samples` holds, per row
// of transforms and output pixel, six words (`shape::rules::Sample`): its
// four pixels (row * width + column, 0xffffffff for the fill) and the
// fractions along the columns and rows, as the cpu kernel reads them.
// params: [count, image plane, channels, output plane, transform rows,
// fill bits, nearest].

@tensors(image: u32, samples: u32 -> y: u32)

fn value(n: u32, pixel: u32, c: u32) -> f32 {
    if pixel == 0xffffffffu {
        return bitcast<f32>(param(5));
    }
    return bitcast<f32>(image[(n * param(1) + pixel) * param(2) + c]);
}

@elementwise fn transform(i: u32) {
    let channels = param(2);
    let plane = param(3);
    let c = i % channels;
    let p = (i / channels) % plane;
    let n = i / (channels * plane);
    var row = n;
    if param(4) == 1u {
        row = 0u;
    }
    let s = 6u * (row * plane + p);
    if param(6) == 1u {
        y[i] = bitcast<u32>(value(n, samples[s], c));
        return;
    }
    let wx = bitcast<f32>(samples[s + 4u]);
    let wy = bitcast<f32>(samples[s + 5u]);
    let top = (1.0 - wx) * value(n, samples[s], c) + wx * value(n, samples[s + 1u], c);
    let bottom = (1.0 - wx) * value(n, samples[s + 2u], c) + wx * value(n, samples[s + 3u], c);
    y[i] = bitcast<u32>((1.0 - wy) * top + wy * bottom);
}
