// TensorScatterUpdate (and SparseToDense): the tensor copied (the default
// value filled in), then each element of `updates` written over its slice. The host has checked every row of indices and
// kept only the last row naming each slice (the others are -1), as the
// cpu's in-order writes leave it, so no two invocations write one element.
// Elements are raw 32-bit words (see unary.wgsl).

// copy, fill: [count]; update: [count, inner, one] for updates as [rows,
// inner], or one value for every element when `one` is 1
@tensors(tensor: u32, rows: i32, updates: u32 -> y: u32)

@elementwise fn copy(o: u32) {
    y[o] = tensor[o];
}

@elementwise fn fill(o: u32) {
    y[o] = tensor[0];
}

@elementwise fn update(t: u32) {
    let inner = param(1);
    let row = rows[t / inner];
    if row >= 0 {
        y[u32(row) * inner + t % inner] = updates[select(t, 0u, param(2) != 0u)];
    }
}
