// ResizeBilinear and ResizeNearestNeighbor over NHWC images, one invocation
// per output element. `taps` holds, per output row and then per output
// column, [first, second, weight bits]: the input rows (columns) it reads,
// as `shape::rules::resize_taps` gives them to the cpu kernels too.
// Elements are raw words: the images f32 or i32, the output f32 for a
// bilinear resize and the images' for a nearest one.

@group(0) @binding(0) var<storage, read> images: array<u32>;
@group(0) @binding(1) var<storage, read> taps: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
// [count, height, width, channels, out height, out width]
@group(0) @binding(3) var<uniform> params: array<vec4<u32>, 32>;

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

fn bilinear(i: u32, ints: bool) -> f32 {
    let p = pixel(i);
    let r0 = taps[p.row];
    let r1 = taps[p.row + 1u];
    let rw = bitcast<f32>(taps[p.row + 2u]);
    let c0 = taps[p.col];
    let c1 = taps[p.col + 1u];
    let cw = bitcast<f32>(taps[p.col + 2u]);
    let tl = load(at(p.n, r0, c0, p.c), ints);
    let tr = load(at(p.n, r0, c1, p.c), ints);
    let bl = load(at(p.n, r1, c0, p.c), ints);
    let br = load(at(p.n, r1, c1, p.c), ints);
    let top = tl + (tr - tl) * cw;
    let bottom = bl + (br - bl) * cw;
    return top + (bottom - top) * rw;
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
