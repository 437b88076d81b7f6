// Convolution and pooling over NHWC images, one invocation per output
// element. Every entry binds two inputs, a and b (a pooling binds x as
// both), the output y and the geometry of one window (see conv.rs):
// [count, batch, height, width, channels, out height, out width, out
//  channels, window height, window width, stride h, stride w, dilation h,
//  dilation w, pad top, pad left, groups].
// A convolution is grouped: its c channels fall into `groups` groups of
// cg = c / groups, each convolved with its own kg = k / groups filters;
// the filter is [window height, window width, cg, k] (HWIO for one
// group; a depthwise filter [fh, fw, c, m] is c groups of one channel).

@tensors(a: f32, b: f32 -> y: f32)
// The output as words, for `pool_argmax`'s i32 indexes.
@tensors(_, _ -> indexes: i32)

struct Geometry {
    batch: u32, h: u32, w: u32, c: u32, oh: u32, ow: u32, k: u32,
    fh: u32, fw: u32, sh: u32, sw: u32, dh: u32, dw: u32, pt: u32, pl: u32,
    cg: u32, kg: u32,
}

fn geometry() -> Geometry {
    let groups = max(param(16), 1u);
    return Geometry(param(1), param(2), param(3), param(4), param(5), param(6), param(7), param(8), param(9),
        param(10), param(11), param(12), param(13), param(14), param(15), param(4) / groups, param(7) / groups);
}

// Element i of an NHWC tensor of `rows` x `cols` pixels of `channels`
// channels: its image, row, column and channel.
struct Nhwc {
    n: u32,
    row: u32,
    col: u32,
    c: u32,
}

fn nhwc(i: u32, rows: u32, cols: u32, channels: u32) -> Nhwc {
    let p = i / channels;
    return Nhwc(p / (cols * rows), (p / cols) % rows, p % cols, i % channels);
}

// The image row (or column) of tap t of window o, or -1 outside [0, len).
fn image_at(o: u32, t: u32, stride: u32, dilation: u32, pad: u32, len: u32) -> i32 {
    let at = i32(o * stride + t * dilation) - i32(pad);
    return select(-1, at, at >= 0 && at < i32(len));
}

// The window o whose tap t lands on image row i, or -1 if none does.
fn window_at(i: u32, t: u32, stride: u32, dilation: u32, pad: u32, windows: u32) -> i32 {
    let start = i32(i + pad) - i32(t * dilation);
    if start < 0 || start % i32(stride) != 0 {
        return -1;
    }
    let o = start / i32(stride);
    return select(-1, o, o < i32(windows));
}

// a: x [batch, h, w, c]; b: filter [fh, fw, cg, k]; y: [batch, oh, ow, k].
// Output channel k reads its group's cg channels. The padding is zeros, as
// the cpu's patches have it: a tap there adds nothing, unless its filter
// value is NaN or infinite, which makes 0 * it, and the sum, NaN (tested
// by its bits, which no driver folds away, unlike 0 * v).
@elementwise fn conv(i: u32) {
    let g = geometry();
    let o = nhwc(i, g.oh, g.ow, g.k);
    let first = o.c / g.kg * g.cg;
    var sum = 0.0;
    var padded_nan = false;
    for (var kh = 0u; kh < g.fh; kh++) {
        let h = image_at(o.row, kh, g.sh, g.dh, g.pt, g.h);
        for (var kw = 0u; kw < g.fw; kw++) {
            let w = image_at(o.col, kw, g.sw, g.dw, g.pl, g.w);
            let f0 = (kh * g.fw + kw) * g.cg * g.k + o.c;
            if h < 0 || w < 0 {
                for (var c = 0u; c < g.cg; c++) {
                    padded_nan = padded_nan || !is_finite(b[f0 + c * g.k]);
                }
                continue;
            }
            let x0 = ((o.n * g.h + u32(h)) * g.w + u32(w)) * g.c + first;
            for (var c = 0u; c < g.cg; c++) {
                sum += a[x0 + c] * b[f0 + c * g.k];
            }
        }
    }
    y[i] = select(sum, nan(), padded_nan);
}

// a: dy [batch, oh, ow, k]; b: filter [fh, fw, cg, k]; y: dx [batch, h,
// w, c]. Input channel c gets the cotangents of its group's kg outputs.
@elementwise fn conv_backprop_input(i: u32) {
    let g = geometry();
    let p = nhwc(i, g.h, g.w, g.c);
    let first = p.c / g.cg * g.kg;
    var sum = 0.0;
    for (var kh = 0u; kh < g.fh; kh++) {
        let oh = window_at(p.row, kh, g.sh, g.dh, g.pt, g.oh);
        if oh < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let ow = window_at(p.col, kw, g.sw, g.dw, g.pl, g.ow);
            if ow < 0 {
                continue;
            }
            let d0 = ((p.n * g.oh + u32(oh)) * g.ow + u32(ow)) * g.k + first;
            let f0 = ((kh * g.fw + kw) * g.cg + p.c % g.cg) * g.k + first;
            for (var k = 0u; k < g.kg; k++) {
                sum += a[d0 + k] * b[f0 + k];
            }
        }
    }
    y[i] = sum;
}

// a: x [batch, h, w, c]; b: dy [batch, oh, ow, k]; y: dfilter [fh, fw,
// cg, k]. Filter (kh, kw, c, k) sums over the pixels of k's group's
// channel c. Where the tap falls in the padding, the pixel is a zero: a
// NaN or infinite dy there makes the sum NaN, as `conv` has it.
@elementwise fn conv_backprop_filter(i: u32) {
    let g = geometry();
    let k = i % g.k;
    let c = (i / g.k) % g.cg + k / g.kg * g.cg;
    let kw = (i / (g.k * g.cg)) % g.fw;
    let kh = i / (g.k * g.cg * g.fw);
    var sum = 0.0;
    var padded_nan = false;
    for (var n = 0u; n < g.batch; n++) {
        for (var oh = 0u; oh < g.oh; oh++) {
            let h = image_at(oh, kh, g.sh, g.dh, g.pt, g.h);
            for (var ow = 0u; ow < g.ow; ow++) {
                let w = image_at(ow, kw, g.sw, g.dw, g.pl, g.w);
                let dy = b[((n * g.oh + oh) * g.ow + ow) * g.k + k];
                if h < 0 || w < 0 {
                    padded_nan = padded_nan || !is_finite(dy);
                    continue;
                }
                sum += a[((n * g.h + u32(h)) * g.w + u32(w)) * g.c + c] * dy;
            }
        }
    }
    y[i] = select(sum, nan(), padded_nan);
}

// The taps [first, last) of window o along an axis of len rows that fall
// inside the image (a pooling has no dilation): however large the window,
// only those are walked.
fn inside(o: u32, size: u32, stride: u32, pad: u32, len: u32) -> vec2<u32> {
    let start = o * stride;
    let first = select(0u, pad - start, pad > start);
    let last = min(size, len + pad - start);
    return vec2<u32>(first, max(first, last));
}

// Whether v wins over best in a max pool: larger, or a NaN over a number,
// so that a NaN in a window gives NaN, as Max does.
fn beats(v: f32, best: f32) -> bool {
    return v > best || (is_nan(v) && !is_nan(best));
}

// The first largest element (the first NaN, if any) of window (oh, ow)
// of image n, channel c, of b = x: its flat index.
fn window_max(n: u32, oh: u32, ow: u32, c: u32, g: Geometry) -> u32 {
    var best = bitcast<f32>(0xff800000u);
    var at = 0u;
    var found = false;
    let rows = inside(oh, g.fh, g.sh, g.pt, g.h);
    let cols = inside(ow, g.fw, g.sw, g.pl, g.w);
    for (var kh = rows.x; kh < rows.y; kh++) {
        let h = oh * g.sh + kh - g.pt;
        for (var kw = cols.x; kw < cols.y; kw++) {
            let idx = ((n * g.h + h) * g.w + ow * g.sw + kw - g.pl) * g.c + c;
            if !found || beats(b[idx], best) {
                best = b[idx];
                at = idx;
                found = true;
            }
        }
    }
    return at;
}

// The number of window (oh, ow)'s taps inside the image.
fn window_count(oh: u32, ow: u32, g: Geometry) -> f32 {
    let rows = inside(oh, g.fh, g.sh, g.pt, g.h);
    let cols = inside(ow, g.fw, g.sw, g.pl, g.w);
    return f32(max(rows.y - rows.x, 1u) * max(cols.y - cols.x, 1u));
}

// a = b = x; y: [batch, oh, ow, c]. OP 0: max, 1: mean.
override OP: u32 = 0u;

@elementwise fn pool(i: u32) {
    let g = geometry();
    let o = nhwc(i, g.oh, g.ow, g.c);
    var acc = select(bitcast<f32>(0xff800000u), 0.0, OP == 1u);
    let rows = inside(o.row, g.fh, g.sh, g.pt, g.h);
    let cols = inside(o.col, g.fw, g.sw, g.pl, g.w);
    for (var kh = rows.x; kh < rows.y; kh++) {
        let h = o.row * g.sh + kh - g.pt;
        for (var kw = cols.x; kw < cols.y; kw++) {
            let v = a[((o.n * g.h + h) * g.w + o.col * g.sw + kw - g.pl) * g.c + o.c];
            if OP == 1u {
                acc += v;
            } else if beats(v, acc) {
                acc = v;
            }
        }
    }
    if OP == 1u {
        acc = acc / window_count(o.row, o.col, g);
    }
    y[i] = acc;
}

// a = b = x; indexes: [batch, oh, ow, c], where each window's first
// largest element is (`window_max`): its flat index in its image, or in
// the batch when param 17 is 1; -1 for a window with no tap inside.
@elementwise fn pool_argmax(i: u32) {
    let g = geometry();
    let o = nhwc(i, g.oh, g.ow, g.c);
    let rows = inside(o.row, g.fh, g.sh, g.pt, g.h);
    let cols = inside(o.col, g.fw, g.sw, g.pl, g.w);
    if rows.x == rows.y || cols.x == cols.y {
        indexes[i] = -1;
        return;
    }
    let at = window_max(o.n, o.row, o.col, o.c, g);
    indexes[i] = i32(select(at - o.n * g.h * g.w * g.c, at, param(17) != 0u));
}

// The windows [first, last) along an axis whose taps cover image row i:
// window o covers it when tap i + pad - o * stride lies in [0, size).
fn covering(i: u32, size: u32, stride: u32, pad: u32, windows: u32) -> vec2<u32> {
    let reach = i + pad;
    let first = select(0u, (reach - size + stride) / stride, reach >= size);
    let last = min(windows, reach / stride + 1u);
    return vec2<u32>(first, max(first, last));
}

// a: dy [batch, oh, ow, c]; b: x; y: dx [batch, h, w, c]. Each
// window that holds this element gives it its cotangent: OP 0, when the
// element is the window's first largest; OP 1, divided by its tap count.
@elementwise fn pool_grad(i: u32) {
    let g = geometry();
    let p = nhwc(i, g.h, g.w, g.c);
    var sum = 0.0;
    let rows = covering(p.row, g.fh, g.sh, g.pt, g.oh);
    let cols = covering(p.col, g.fw, g.sw, g.pl, g.ow);
    for (var oh = rows.x; oh < rows.y; oh++) {
        for (var ow = cols.x; ow < cols.y; ow++) {
            let dy = a[((p.n * g.oh + oh) * g.ow + ow) * g.c + p.c];
            if OP == 1u {
                sum += dy / window_count(oh, ow, g);
            } else if window_max(p.n, oh, ow, p.c, g) == i {
                sum += dy;
            }
        }
    }
    y[i] = sum;
}
