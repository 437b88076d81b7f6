// The entry points of a row's complex64 kernel (see `elementwise.rs`):
// `value(j)`, which the host writes, is the row on output element j,
// each input's element found by its index (a binary row broadcasts as
// `binary.wgsl` does, with the same parameters).
//
// params: [element count, then a binary row's layout (rank, dims,
// strides), then the row's attributes as f32 bits]

// One complex result, two words, per element.
@elementwise fn complex_elements(j: u32) {
    let v = value(j);
    y[2u * j] = bitcast<u32>(v.x);
    y[2u * j + 1u] = bitcast<u32>(v.y);
}

