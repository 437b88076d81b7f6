//! The conformance kit on the collectives, in a world of one process
//! (the test binary is not started by `mpiexec`): registration, shape
//! rules, examples, bad input, special values, 1 thread against 4, parity
//! of `wgpu` with the cpu, and gradients of first and second order.

opforge::spec_tests!("collectives.toml");
