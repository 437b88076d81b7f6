// Uploads as a kernel: word i of the output is word `at + i` of the batch's
// upload arena, for i below `words`. Queued among the other kernels, so
// that writing a buffer that queued kernels still read needs no submit,
// and the data of a whole batch reaches the GPU in one write.

// [words, at]
@tensors(staged: u32 -> y: u32)

@compute @workgroup_size(256)
fn upload(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = element(gid, groups);
    if i < param(0) {
        y[i] = staged[param(1) + i];
    }
}
