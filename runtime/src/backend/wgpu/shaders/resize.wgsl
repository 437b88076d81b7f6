// ResizeBilinear and ResizeNearestNeighbor over NHWC images (and, below,
// CropAndResize and RotateWithOffset, which sample the same way), one invocation
// per output element. `taps` holds, per output row and then per output
// column, [first, second, weight bits]: the input rows (columns) it reads,
// as `shape::rules::resize_taps` gives them to the cpu kernels too.
// Elements are raw words: the images f32 or i32, the output f32 for a
// bilinear resize and the images' for a nearest one.

// [count, height, width, channels, out height, out width]
@tensors(images: u32, taps: u32 -> y: u32)

// Output element i: its image, its row's and column's tap (as indices
// into `taps`), and its channel.
struct Pixel {
    n: u32,
    row: u32,
    col: u32,
    c: u32,
}

fn pixel(i: u32) -> Pixel {
    let channels = param(3);
    let oh = param(4);
    let ow = param(5);
    let p = i / channels;
    let x = p % ow;
    let r = p / ow;
    return Pixel(r / oh, 3u * (r % oh), 3u * (oh + x), i % channels);
}

// Input pixel (row, col)'s element of channel c in image n.
fn at(n: u32, row: u32, col: u32, c: u32) -> u32 {
    return ((n * param(1) + row) * param(2) + col) * param(3) + c;
}

fn load(i: u32, ints: bool) -> f32 {
    if ints {
        return f32(bitcast<i32>(images[i]));
    }
    return bitcast<f32>(images[i]);
}

// Channel `c` of image `n` interpolated between the four pixels the row
// taps at `row` and the column taps at `col` name ([first, second, weight
// bits] each), along the columns first (TF.js's order): the one rule
// ResizeBilinear and CropAndResize share, as the cpu's `bilinear_pixel`.
fn bilerp(n: u32, row: u32, col: u32, c: u32, ints: bool) -> f32 {
    let r0 = taps[row];
    let r1 = taps[row + 1u];
    let rw = bitcast<f32>(taps[row + 2u]);
    let c0 = taps[col];
    let c1 = taps[col + 1u];
    let cw = bitcast<f32>(taps[col + 2u]);
    let tl = load(at(n, r0, c0, c), ints);
    let tr = load(at(n, r0, c1, c), ints);
    let bl = load(at(n, r1, c0, c), ints);
    let br = load(at(n, r1, c1, c), ints);
    let top = tl + (tr - tl) * cw;
    let bottom = bl + (br - bl) * cw;
    return top + (bottom - top) * rw;
}

fn bilinear(i: u32, ints: bool) -> f32 {
    let p = pixel(i);
    return bilerp(p.n, p.row, p.col, p.c, ints);
}

@elementwise fn resize_bilinear_f32(i: u32) {
    y[i] = bitcast<u32>(bilinear(i, false));
}

@elementwise fn resize_bilinear_i32(i: u32) {
    y[i] = bitcast<u32>(bilinear(i, true));
}

@elementwise fn resize_nearest(i: u32) {
    let p = pixel(i);
    y[i] = images[at(p.n, taps[p.row], taps[p.col], p.c)];
}

// CropAndResize, one invocation per output element: `taps` holds per box
// its image, then [first, second, weight bits] per crop row and per crop
// column (`shape::rules::crop_taps`; first = 0xffffffff outside the
// image). params: [count, height, width, channels, crop height, crop
// width, extrapolation bits, bilinear, i32 image].
@elementwise fn crop(i: u32) {
    let channels = param(3);
    let ch = param(4);
    let cw = param(5);
    let c = i % channels;
    let p = i / channels;
    let x = p % cw;
    let r = p / cw;
    let base = (r / ch) * (1u + 3u * (ch + cw));
    let row = base + 1u + 3u * (r % ch);
    let col = base + 1u + 3u * (ch + x);
    let n = taps[base];
    if taps[row] == 0xffffffffu || taps[col] == 0xffffffffu {
        y[i] = param(6);
        return;
    }
    let r0 = taps[row];
    let c0 = taps[col];
    if param(7) == 0u {
        y[i] = bitcast<u32>(load(at(n, r0, c0, c), param(8) == 1u));
        return;
    }
    y[i] = bitcast<u32>(bilerp(n, row, col, c, param(8) == 1u));
}

// RotateWithOffset, one invocation per output element: `taps` holds the
// source pixel of each pixel of an image (`shape::rules::rotation_map`,
// 0xffffffff outside), then each channel's fill bits. params: [count,
// height, width, channels].
@elementwise fn rotate(i: u32) {
    let channels = param(3);
    let plane = param(1) * param(2);
    let c = i % channels;
    let p = (i / channels) % plane;
    let n = i / (channels * plane);
    let source = taps[p];
    if source == 0xffffffffu {
        y[i] = taps[plane + c];
    } else {
        y[i] = images[(n * plane + source) * channels + c];
    }
}
