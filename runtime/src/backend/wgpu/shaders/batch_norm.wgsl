// FusedBatchNorm: (x - mean) * scale / sqrt(variance + epsilon) + offset,
// each statistic broadcast against x. An offset or scale the call left out
// is bound as `mean` again and read as 0 or 1 instead (flags bit 0: there
// is an offset, bit 1: a scale).

// [n, rank, epsilon bits, flags, dims[rank], then the strides[rank] of
// mean, variance, offset and scale]
@tensors(x: f32, mean: f32, variance: f32, offset: f32, scale: f32 -> y: f32)

@elementwise fn batch_norm(i: u32) {
    let rank = param(1);
    let epsilon = bitcast<f32>(param(2));
    let flags = param(3);
    let mv = strided2(i, rank, 4u, 4u + rank, 4u + 2u * rank);
    let os = strided2(i, rank, 4u, 4u + 3u * rank, 4u + 4u * rank);
    var o = 0.0;
    if (flags & 1u) != 0u {
        o = offset[os.x];
    }
    var s = 1.0;
    if (flags & 2u) != 0u {
        s = scale[os.y];
    }
    y[i] = (x[i] - mean[mv.x]) * (s / sqrt(variance[mv.y] + epsilon)) + o;
}
