// Small uploads as a kernel: word i of the output is word 1 + i of the
// parameters, for i below word 0. Queued among the other kernels, so that
// writing a buffer that queued kernels still read needs no submit.

@group(0) @binding(0) var<storage, read_write> y: array<u32>;
// [word count, words...]
@group(0) @binding(1) var<uniform> params: array<vec4<u32>, 32>;

@compute @workgroup_size(256)
fn upload(@builtin(local_invocation_index) i: u32) {
    if i < param(0) {
        y[i] = param(1u + i);
    }
}
