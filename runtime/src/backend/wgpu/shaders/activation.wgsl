// The fused kernels' activations (FusedMatMul, FusedConv2D,
// FusedDepthwiseConv2D), numbered as the spec's `Activation` values are
// ordered: 0 linear, 1 relu, 2 relu6, 3 elu, 4 sigmoid, 5 leakyrelu, 6
// prelu. `slope` is leaky relu's constant, or the PReLU weights over `x`.
// The one rule matmul.wgsl and epilogue.wgsl apply, as the cpu's
// `epilogue` applies it.
fn activate(x: vec4<f32>, activation: u32, slope: vec4<f32>) -> vec4<f32> {
    var v = x;
    let positive = v > vec4<f32>(0.0);
    // NaN told by its bits: NVIDIA's compiler turns the comparisons below
    // into max and clamp, which drop a NaN (WGSL leaves theirs to the
    // driver), unless the NaN is put back explicitly.
    let nan = (bitcast<vec4<u32>>(v) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
    switch activation {
        // Comparisons, not max and clamp: a NaN stays NaN, as in the Relu
        // and Relu6 kernels.
        case 1u: { v = select(select(v, vec4<f32>(0.0), v < vec4<f32>(0.0)), v, nan); }
        case 2u: {
            v = select(select(select(v, vec4<f32>(6.0), v > vec4<f32>(6.0)), vec4<f32>(0.0), v < vec4<f32>(0.0)), v, nan);
        }
        case 3u: { v = select(vec4<f32>(expm1(v.x), expm1(v.y), expm1(v.z), expm1(v.w)), v, positive); }
        case 4u: { v = 1.0 / (1.0 + exp(-v)); }
        case 5u, 6u: { v = select(v * slope, v, positive); }
        default: {}
    }
    return v;
}
