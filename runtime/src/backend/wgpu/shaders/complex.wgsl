// complex64 arithmetic on `vec2<f32>` values, the real part first (a
// library: the host puts it before the shaders that name it, the rows'
// complex kernels and `spectral.wgsl`). A complex64 element is two words
// on the device, its real part's then its imaginary part's.

// `(ac - bd) + (ad + bc)i`, as num_complex and TF.js compute it.
fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// The conjugate, `re - im i`.
fn conj(a: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x, -a.y);
}

// `v` times a root of unity `w` (a twiddle): where `w` lies on an axis,
// a scaling or a quarter turn, with no product by its zero part, so that
// an infinite part stays infinite where `cmul` would make NaN (inf * 0),
// as the cpu's FFT butterflies compute; the same bits for finite `v`.
fn twiddled(v: vec2<f32>, w: vec2<f32>) -> vec2<f32> {
    if w.y == 0.0 {
        return v * w.x;
    }
    if w.x == 0.0 {
        return vec2<f32>(-v.y * w.y, v.x * w.y);
    }
    return cmul(v, w);
}
