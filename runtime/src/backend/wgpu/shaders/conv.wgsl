// Convolution and pooling over NHWC images, one invocation per output
// element. Every entry binds two inputs, a and b (a pooling binds x as
// both), the output y and the geometry of one window (see conv.rs):
// [count, batch, height, width, channels, out height, out width, out
//  channels, window height, window width, stride h, stride w, dilation h,
//  dilation w, pad top, pad left].
// The filter is HWIO: [window height, window width, channels, out channels].

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: array<vec4<u32>, 32>;

struct Geometry {
    batch: u32, h: u32, w: u32, c: u32, oh: u32, ow: u32, k: u32,
    fh: u32, fw: u32, sh: u32, sw: u32, dh: u32, dw: u32, pt: u32, pl: u32,
}

fn geometry() -> Geometry {
    return Geometry(param(1), param(2), param(3), param(4), param(5), param(6), param(7), param(8), param(9),
        param(10), param(11), param(12), param(13), param(14), param(15));
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

// a: x [batch, h, w, c]; b: filter; y: [batch, oh, ow, k].
@compute @workgroup_size(256)
fn conv2d(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let k = i % g.k;
    let ow = (i / g.k) % g.ow;
    let oh = (i / (g.k * g.ow)) % g.oh;
    let n = i / (g.k * g.ow * g.oh);
    var sum = 0.0;
    for (var kh = 0u; kh < g.fh; kh++) {
        let h = image_at(oh, kh, g.sh, g.dh, g.pt, g.h);
        if h < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let w = image_at(ow, kw, g.sw, g.dw, g.pl, g.w);
            if w < 0 {
                continue;
            }
            let x0 = ((n * g.h + u32(h)) * g.w + u32(w)) * g.c;
            let f0 = (kh * g.fw + kw) * g.c * g.k + k;
            for (var c = 0u; c < g.c; c++) {
                sum += a[x0 + c] * b[f0 + c * g.k];
            }
        }
    }
    y[i] = sum;
}

// a: dy [batch, oh, ow, k]; b: filter; y: dx [batch, h, w, c].
@compute @workgroup_size(256)
fn conv2d_backprop_input(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let c = i % g.c;
    let w = (i / g.c) % g.w;
    let h = (i / (g.c * g.w)) % g.h;
    let n = i / (g.c * g.w * g.h);
    var sum = 0.0;
    for (var kh = 0u; kh < g.fh; kh++) {
        let oh = window_at(h, kh, g.sh, g.dh, g.pt, g.oh);
        if oh < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let ow = window_at(w, kw, g.sw, g.dw, g.pl, g.ow);
            if ow < 0 {
                continue;
            }
            let d0 = ((n * g.oh + u32(oh)) * g.ow + u32(ow)) * g.k;
            let f0 = ((kh * g.fw + kw) * g.c + c) * g.k;
            for (var k = 0u; k < g.k; k++) {
                sum += a[d0 + k] * b[f0 + k];
            }
        }
    }
    y[i] = sum;
}

// a: x [batch, h, w, c]; b: dy [batch, oh, ow, k]; y: dfilter.
@compute @workgroup_size(256)
fn conv2d_backprop_filter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let k = i % g.k;
    let c = (i / g.k) % g.c;
    let kw = (i / (g.k * g.c)) % g.fw;
    let kh = i / (g.k * g.c * g.fw);
    var sum = 0.0;
    for (var n = 0u; n < g.batch; n++) {
        for (var oh = 0u; oh < g.oh; oh++) {
            let h = image_at(oh, kh, g.sh, g.dh, g.pt, g.h);
            if h < 0 {
                continue;
            }
            for (var ow = 0u; ow < g.ow; ow++) {
                let w = image_at(ow, kw, g.sw, g.dw, g.pl, g.w);
                if w < 0 {
                    continue;
                }
                let x = a[((n * g.h + u32(h)) * g.w + u32(w)) * g.c + c];
                sum += x * b[((n * g.oh + oh) * g.ow + ow) * g.k + k];
            }
        }
    }
    y[i] = sum;
}

// The first largest element of window (oh, ow) of image n, channel c, of
// a = x: its flat index.
fn window_max(n: u32, oh: u32, ow: u32, c: u32, g: Geometry) -> u32 {
    var best = bitcast<f32>(0xff800000u);
    var at = 0u;
    var found = false;
    for (var kh = 0u; kh < g.fh; kh++) {
        let h = image_at(oh, kh, g.sh, 1u, g.pt, g.h);
        if h < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let w = image_at(ow, kw, g.sw, 1u, g.pl, g.w);
            if w < 0 {
                continue;
            }
            let idx = ((n * g.h + u32(h)) * g.w + u32(w)) * g.c + c;
            if !found || b[idx] > best {
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
    let h0 = i32(oh * g.sh) - i32(g.pt);
    let w0 = i32(ow * g.sw) - i32(g.pl);
    let rows = min(h0 + i32(g.fh), i32(g.h)) - max(h0, 0);
    let cols = min(w0 + i32(g.fw), i32(g.w)) - max(w0, 0);
    return f32(max(rows, 1) * max(cols, 1));
}

// a = b = x; y: [batch, oh, ow, c]. OP 0: max, 1: mean.
override OP: u32 = 0u;

@compute @workgroup_size(256)
fn pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let c = i % g.c;
    let ow = (i / g.c) % g.ow;
    let oh = (i / (g.c * g.ow)) % g.oh;
    let n = i / (g.c * g.ow * g.oh);
    var acc = select(bitcast<f32>(0xff800000u), 0.0, OP == 1u);
    for (var kh = 0u; kh < g.fh; kh++) {
        let h = image_at(oh, kh, g.sh, 1u, g.pt, g.h);
        if h < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let w = image_at(ow, kw, g.sw, 1u, g.pl, g.w);
            if w < 0 {
                continue;
            }
            let v = a[((n * g.h + u32(h)) * g.w + u32(w)) * g.c + c];
            if OP == 1u {
                acc += v;
            } else if v > acc {
                acc = v;
            }
        }
    }
    if OP == 1u {
        acc = acc / window_count(oh, ow, g);
    }
    y[i] = acc;
}

// a: dy [batch, oh, ow, c]; b: x; y: dx [batch, h, w, c]. Each
// window that holds this element gives it its cotangent: OP 0, when the
// element is the window's first largest; OP 1, divided by its tap count.
@compute @workgroup_size(256)
fn pool_grad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let c = i % g.c;
    let w = (i / g.c) % g.w;
    let h = (i / (g.c * g.w)) % g.h;
    let n = i / (g.c * g.w * g.h);
    var sum = 0.0;
    for (var kh = 0u; kh < g.fh; kh++) {
        let oh = window_at(h, kh, g.sh, 1u, g.pt, g.oh);
        if oh < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let ow = window_at(w, kw, g.sw, 1u, g.pl, g.ow);
            if ow < 0 {
                continue;
            }
            let dy = a[((n * g.oh + u32(oh)) * g.ow + u32(ow)) * g.c + c];
            if OP == 1u {
                sum += dy / window_count(u32(oh), u32(ow), g);
            } else if window_max(n, u32(oh), u32(ow), c, g) == i {
                sum += dy;
            }
        }
    }
    y[i] = sum;
}

// Depthwise: every channel c against its own filters, out channel
// k = c * m + q for multiplier m = k / c. a: x; b: filter [fh, fw, c, m];
// y: [batch, oh, ow, k].
@compute @workgroup_size(256)
fn depthwise(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let k = i % g.k;
    let ow = (i / g.k) % g.ow;
    let oh = (i / (g.k * g.ow)) % g.oh;
    let n = i / (g.k * g.ow * g.oh);
    let c = k / (g.k / g.c);
    var sum = 0.0;
    for (var kh = 0u; kh < g.fh; kh++) {
        let h = image_at(oh, kh, g.sh, g.dh, g.pt, g.h);
        if h < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let w = image_at(ow, kw, g.sw, g.dw, g.pl, g.w);
            if w < 0 {
                continue;
            }
            sum += a[((n * g.h + u32(h)) * g.w + u32(w)) * g.c + c] * b[(kh * g.fw + kw) * g.k + k];
        }
    }
    y[i] = sum;
}

// a: dy [batch, oh, ow, k]; b: filter [fh, fw, c, m]; y: dx [batch, h, w, c].
@compute @workgroup_size(256)
fn depthwise_backprop_input(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let m = g.k / g.c;
    let c = i % g.c;
    let w = (i / g.c) % g.w;
    let h = (i / (g.c * g.w)) % g.h;
    let n = i / (g.c * g.w * g.h);
    var sum = 0.0;
    for (var kh = 0u; kh < g.fh; kh++) {
        let oh = window_at(h, kh, g.sh, g.dh, g.pt, g.oh);
        if oh < 0 {
            continue;
        }
        for (var kw = 0u; kw < g.fw; kw++) {
            let ow = window_at(w, kw, g.sw, g.dw, g.pl, g.ow);
            if ow < 0 {
                continue;
            }
            let d0 = ((n * g.oh + u32(oh)) * g.ow + u32(ow)) * g.k + c * m;
            let f0 = (kh * g.fw + kw) * g.k + c * m;
            for (var q = 0u; q < m; q++) {
                sum += a[d0 + q] * b[f0 + q];
            }
        }
    }
    y[i] = sum;
}

// a: x [batch, h, w, c]; b: dy [batch, oh, ow, k]; y: dfilter [fh, fw, c, m].
@compute @workgroup_size(256)
fn depthwise_backprop_filter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i >= param(0) {
        return;
    }
    let g = geometry();
    let k = i % g.k;
    let c = k / (g.k / g.c);
    let kw = (i / g.k) % g.fw;
    let kh = i / (g.k * g.fw);
    var sum = 0.0;
    for (var n = 0u; n < g.batch; n++) {
        for (var oh = 0u; oh < g.oh; oh++) {
            let h = image_at(oh, kh, g.sh, g.dh, g.pt, g.h);
            if h < 0 {
                continue;
            }
            for (var ow = 0u; ow < g.ow; ow++) {
                let w = image_at(ow, kw, g.sw, g.dw, g.pl, g.w);
                if w < 0 {
                    continue;
                }
                sum += a[((n * g.h + u32(h)) * g.w + u32(w)) * g.c + c] * b[((n * g.oh + oh) * g.ow + ow) * g.k + k];
            }
        }
    }
    y[i] = sum;
}
