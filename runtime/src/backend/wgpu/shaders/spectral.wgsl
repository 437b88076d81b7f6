// The kernels of two tensors on complex64 (see `spectral.rs`): `complex`
// joins real and imaginary parts, and the complex FFT's two programs read
// a signal `a` and a table `b` of the n twiddles `exp(-2 pi i k / n)`,
// made on the host in f64 and rounded once, as WGSL's `sin` and `cos`
// promise only 2^-11 absolutely. A complex64 element is two words, its
// real part's then its imaginary part's (`complex.wgsl`).
//
// params: complex: [elements]; stockham: [butterflies (rows * n / 2), n,
// span, twiddle step (n / (2 span)), sign (f32), divisor (f32)]; dft:
// [elements (rows * n), n, sign (f32), divisor (f32)]; chirp_in:
// [elements (rows * m), n, m]; spectrum_product: [elements, m]; chirp_out:
// [elements (rows * n), n, m, divisor (f32)]. The sign scales the
// twiddles' imaginary parts: 1 forward, -1 inverse (the conjugates; the
// chirp's table is the direction's own); each output is divided by the
// divisor (n in the inverse's last pass, else 1).

@tensors(a: u32, b: u32 -> y: u32)

fn signal(j: u32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(a[2u * j]), bitcast<f32>(a[2u * j + 1u]));
}

// Twiddle k of the table, conjugated for the inverse.
fn twiddle(k: u32, sign: f32) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(b[2u * k]), sign * bitcast<f32>(b[2u * k + 1u]));
}

fn put(j: u32, v: vec2<f32>) {
    y[2u * j] = bitcast<u32>(v.x);
    y[2u * j + 1u] = bitcast<u32>(v.y);
}

@elementwise fn complex(j: u32) {
    y[2u * j] = a[j];
    y[2u * j + 1u] = b[j];
}

// One radix-2 pass of Stockham's autosort FFT over rows of a power-of-two
// n: butterfly j of a row joins elements j and j + n/2 of the last pass,
// which hold the transforms of length `span` their positions start, into
// one of length 2 span, in order (no bit reversal).
@elementwise fn stockham(t: u32) {
    let n = param(1);
    let half = n >> 1u;
    let span = param(2);
    let base = (t / half) * n;
    let j = t % half;
    let k = j % span;
    let u = signal(base + j);
    let v = twiddled(signal(base + j + half), twiddle(k * param(3), bitcast<f32>(param(4))));
    let divisor = bitcast<f32>(param(5));
    let o = base + (j / span) * 2u * span + k;
    put(o, (u + v) / divisor);
    put(o + span, (u - v) / divisor);
}

// The DFT of any n, term by term (O(n) an element): term k of a row sums
// element j times twiddle j k mod n, the index kept below n exactly.
@elementwise fn dft(e: u32) {
    let n = param(1);
    let base = (e / n) * n;
    let k = e % n;
    let sign = bitcast<f32>(param(2));
    var sum = vec2<f32>(0.0, 0.0);
    var t = 0u;
    for (var j = 0u; j < n; j++) {
        sum += twiddled(signal(base + j), twiddle(t, sign));
        t += k;
        if t >= n {
            t -= n;
        }
    }
    put(e, sum / bitcast<f32>(param(3)));
}

// Bluestein's algorithm, for a long length n that is no power of two:
// with the chirp c_j = exp(-pi i j^2 / n) (table `b`; its conjugate for
// the inverse), the DFT is c_k times the circular convolution of x_j c_j
// with conj(c), which power-of-two FFTs of length m >= 2n - 1 compute (see
// `spectral.rs`).

// Row r of the convolution's input: x_j c_j for j < n, zeros to m.
@elementwise fn chirp_in(e: u32) {
    let n = param(1);
    let m = param(2);
    let j = e % m;
    if j < n {
        put(e, twiddled(signal((e / m) * n + j), twiddle(j, 1.0)));
    } else {
        put(e, vec2<f32>(0.0, 0.0));
    }
}

// The convolution's spectrum: the signal's times the chirp's (table `b`,
// one row of m), element by element.
@elementwise fn spectrum_product(e: u32) {
    let k = e % param(1);
    put(e, cmul(signal(e), vec2<f32>(bitcast<f32>(b[2u * k]), bitcast<f32>(b[2u * k + 1u]))));
}

// Term k < n of row r: the convolution's term k times c_k, divided.
@elementwise fn chirp_out(e: u32) {
    let n = param(1);
    let k = e % n;
    put(e, twiddled(signal((e / n) * param(2) + k), twiddle(k, 1.0)) / bitcast<f32>(param(3)));
}
