// The fused convolutions' epilogue, one invocation per output element:
// y[i] = activate(x[src] + bias[at], activation, slope), x the NHWC
// convolution and y the output in its data format, each index the
// output's (rank 4) by its own strides: x's permute NCHW back, the bias's
// and the PReLU weights' broadcast (0 along an axis they do not span).
// params: [count, activation (activation.wgsl's number), bias given,
// leakyrelu_alpha bits, the output's dims (4), x's strides (4), the
// bias's (4), the weights' (4)]. Without a bias or weights, x is bound in
// their place, unread.

@tensors(x: f32, bias: f32, weights: f32 -> y: f32)

@elementwise fn epilogue(i: u32) {
    var rest = i;
    var at = vec3<u32>(0u);
    for (var d = 4u; d > 0u; d--) {
        let k = rest % param(3u + d);
        rest /= param(3u + d);
        at += k * vec3<u32>(param(7u + d), param(11u + d), param(15u + d));
    }
    var v = x[at.x];
    if param(2) == 1u {
        v += bias[at.y];
    }
    var slope = bitcast<f32>(param(3));
    if param(1) == 6u {
        slope = weights[at.z];
    }
    y[i] = activate(vec4<f32>(v), param(1), vec4<f32>(slope)).x;
}
