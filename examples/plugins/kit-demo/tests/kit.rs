//! Every test of the kernels of `kit.toml`, from one line: registration,
//! the shape rule on valid input and on each example, bad input, NaN and
//! infinities, 1 thread against 4, parity with every other backend that
//! has a kernel, and gradients of first and second order.

opforge::spec_tests!("kit.toml");
