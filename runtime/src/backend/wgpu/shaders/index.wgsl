// Index kernels: ArgMax and ArgMin along one axis, OneHot, and Diag. Elements
// are raw 32-bit words (see unary.wgsl).

// 0: ArgMax, 1: ArgMin
override OP: u32 = 0u;

// argmax: [n, len, inner] for x seen as [outer, len, inner]
// one_hot: [n, depth, on_value bits, off_value bits]
// diag: [n * n, n] for x of n elements
// multinomial: [n, classes, samples, normalized, key 0, key 1]
@tensors(x: u32 -> y: u32)

// Whether v beats best, the larger for OP 0 (ArgMax), the smaller for OP 1
// (ArgMin): NaN beats every number either way, and a tie keeps the earlier.
fn beats_f32(v: f32, best: f32) -> bool {
    if is_nan(best) {
        return false;
    }
    return is_nan(v) || select(v > best, v < best, OP == 1u);
}

fn beats(v: u32, best: u32, float: bool) -> bool {
    if float {
        return beats_f32(bitcast<f32>(v), bitcast<f32>(best));
    }
    let a = bitcast<i32>(v);
    let b = bitcast<i32>(best);
    return select(a > b, a < b, OP == 1u);
}

// One invocation per output walks its axis; `float` is a constant in each
// entry point, so each pipeline keeps only its own dtype's comparison.
fn argmax(o: u32, float: bool) {
    let len = param(1);
    let inner = param(2);
    let base = (o / inner) * len * inner + o % inner;
    var best = x[base];
    var index = 0u;
    for (var t = 1u; t < len; t++) {
        let v = x[base + t * inner];
        if beats(v, best, float) {
            best = v;
            index = t;
        }
    }
    y[o] = index;
}

@elementwise fn argmax_f32(o: u32) {
    argmax(o, true);
}

@elementwise fn argmax_i32(o: u32) {
    argmax(o, false);
}

// An index outside 0..depth gives a row of off_value, as in TF.js.
@elementwise fn one_hot(i: u32) {
    let depth = param(1);
    let index = bitcast<i32>(x[i / depth]);
    let hot = index >= 0i && u32(index) == i % depth;
    y[i] = select(param(3), param(2), hot);
}

// Draw i: the first class of its row whose running weight passes u times
// the row's total, the weights exp(l - max) (or the probabilities), summed
// in order as the cpu kernel sums them; a row without weight gives its last.
@elementwise fn multinomial(i: u32) {
    let classes = param(1);
    let base = (i / param(2)) * classes;
    let normalized = param(3) != 0u;
    var top = 0.0;
    if !normalized {
        top = bitcast<f32>(0xff800000u);
        for (var k = 0u; k < classes; k++) {
            top = max(top, bitcast<f32>(x[base + k]));
        }
    }
    var total = 0.0;
    for (var k = 0u; k < classes; k++) {
        let l = bitcast<f32>(x[base + k]);
        total += select(exp(l - top), l, normalized);
    }
    let goal = random_unit(i, param(4), param(5)) * total;
    var running = 0.0;
    var pick = classes - 1u;
    for (var k = 0u; k < classes; k++) {
        let l = bitcast<f32>(x[base + k]);
        running += select(exp(l - top), l, normalized);
        if goal < running {
            pick = k;
            break;
        }
    }
    y[i] = pick;
}

// Diag: x on the diagonal of an n x n output, zero words elsewhere.
@elementwise fn diag(o: u32) {
    let n = param(1);
    let i = o / n;
    y[o] = select(0u, x[i], o % n == i);
}
