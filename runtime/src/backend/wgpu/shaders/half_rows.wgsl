// The entry points of a half type's row that find each element by its
// index (see `elementwise.rs`): `value(j)`, which the host writes, is the
// row on output element j, as 16 bits or as a bool's 0 or 1. The padding
// element of an odd-length output reads past its inputs, which WGSL's
// bounds checks keep inside them, and lands in the padding half.
//
// params: the unary or binary template's, the count first: output words
// for `pairs`, elements for `singles`.

// Two half results to a word.
@elementwise fn pairs(i: u32) {
    y[i] = half_pair(value(2u * i), value(2u * i + 1u));
}

// One bool result (a word) per element.
@elementwise fn singles(i: u32) {
    y[i] = value(i);
}
