// Einsum, one contraction of one or two operands (see `einsum` in
// matmul.rs): one invocation per output element, walking the letters
// summed over, the last fastest, as the cpu kernel does. Elements are
// 32-bit words, f32 or i32 bits (i32 products and sums wrap as u32's do).
// params: [count, output letters, summed letters, whether b is an operand,
// then per output letter and then per summed letter: its size, its stride
// in a, its stride in b]. Without a second operand b binds a, unread. A
// summed letter of length 0 makes every element 0, an empty sum (what
// the kernel dispatches when an operand is empty).

@tensors(a: u32, b: u32 -> y: u32)

// Letter j's size and strides in a and b.
fn letter(j: u32) -> vec3<u32> {
    let at = 4u + 3u * j;
    return vec3<u32>(param(at), param(at + 1u), param(at + 2u));
}

// Where output element i reads a and b: its output letters' offsets.
fn start(i: u32, outputs: u32) -> vec2<u32> {
    var rest = i;
    var at = vec2<u32>(0u, 0u);
    for (var j = outputs; j > 0u; j--) {
        let l = letter(j - 1u);
        at += (rest % l.x) * l.yz;
        rest = rest / l.x;
    }
    return at;
}

// The offsets in a and b of step t of the summed letters (after the outputs').
fn summed_at(t: u32, outputs: u32, summed: u32) -> vec2<u32> {
    var rest = t;
    var at = vec2<u32>(0u, 0u);
    for (var j = summed; j > 0u; j--) {
        let l = letter(outputs + j - 1u);
        at += (rest % l.x) * l.yz;
        rest = rest / l.x;
    }
    return at;
}

// How many steps the summed letters take.
fn steps(outputs: u32, summed: u32) -> u32 {
    var n = 1u;
    for (var j = 0u; j < summed; j++) {
        n *= letter(outputs + j).x;
    }
    return n;
}

@elementwise fn einsum_f32(i: u32) {
    let outputs = param(1);
    let summed = param(2);
    let base = start(i, outputs);
    var acc = 0.0;
    for (var t = 0u; t < steps(outputs, summed); t++) {
        let at = base + summed_at(t, outputs, summed);
        if param(3) == 1u {
            acc += bitcast<f32>(a[at.x]) * bitcast<f32>(b[at.y]);
        } else {
            acc += bitcast<f32>(a[at.x]);
        }
    }
    y[i] = bitcast<u32>(acc);
}

@elementwise fn einsum_i32(i: u32) {
    let outputs = param(1);
    let summed = param(2);
    let base = start(i, outputs);
    var acc = 0u;
    for (var t = 0u; t < steps(outputs, summed); t++) {
        let at = base + summed_at(t, outputs, summed);
        if param(3) == 1u {
            acc += a[at.x] * b[at.y];
        } else {
            acc += a[at.x];
        }
    }
    y[i] = acc;
}
