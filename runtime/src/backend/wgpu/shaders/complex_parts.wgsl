// The complex64 kernels of one tensor, and the steps of the real FFTs
// around the complex one (see `spectral.rs`). The bindings x, y and
// `params` are words.wgsl's; a complex64 element is two words, its real
// part's then its imaginary part's (`complex.wgsl`).
//
// params: real_part, imag_part, modulus, from_real: [elements];
// first_terms: [output elements, m (terms kept), n (the rows' length)];
// hermitian: [output elements, m (terms given), n (the rows' length)]

fn element_of(j: u32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(x[2u * j]), bitcast<f32>(x[2u * j + 1u]));
}

fn put(j: u32, v: vec2<f32>) {
    y[2u * j] = bitcast<u32>(v.x);
    y[2u * j + 1u] = bitcast<u32>(v.y);
}

@elementwise fn real_part(j: u32) {
    y[j] = x[2u * j];
}

@elementwise fn imag_part(j: u32) {
    y[j] = x[2u * j + 1u];
}

// C's `hypot` of two magnitudes: infinite beside a NaN, and no overflow
// or underflow in the squares (the larger scales the smaller).
fn hypot(a: f32, b: f32) -> f32 {
    let infinite = 0x7f800000u;
    if (bitcast<u32>(a) & 0x7fffffffu) == infinite || (bitcast<u32>(b) & 0x7fffffffu) == infinite {
        return inf();
    }
    if is_nan(a) || is_nan(b) {
        return nan();
    }
    let big = max(a, b);
    if big == 0.0 {
        return 0.0;
    }
    let r = min(a, b) / big;
    return big * sqrt(1.0 + r * r);
}

@elementwise fn modulus(j: u32) {
    let v = abs(element_of(j));
    y[j] = bitcast<u32>(hypot(v.x, v.y));
}

// A real element as a complex one, of imaginary part 0.
@elementwise fn from_real(j: u32) {
    y[2u * j] = x[j];
    y[2u * j + 1u] = 0u;
}

// `rfft`'s terms: the first m of each row of n.
@elementwise fn first_terms(j: u32) {
    let m = param(1);
    put(j, element_of((j / m) * param(2) + j % m));
}

// `irfft`'s whole spectrum of n terms from the first m: term k < m as it
// is, but for the imaginary parts of the first and last (which `irfft`
// ignores), and term k >= m the conjugate of term n - k.
@elementwise fn hermitian(j: u32) {
    let m = param(1);
    let n = param(2);
    let row = j / n;
    let k = j % n;
    if k < m {
        var v = element_of(row * m + k);
        if k == 0u || k == m - 1u {
            v.y = 0.0;
        }
        put(j, v);
    } else {
        put(j, conj(element_of(row * m + n - k)));
    }
}
