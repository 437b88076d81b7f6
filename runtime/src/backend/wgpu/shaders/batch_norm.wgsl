// FusedBatchNorm: (x - mean) * scale / sqrt(variance + epsilon) + offset,
// each statistic broadcast against x. An offset or scale the call left out
// is bound as `mean` again and read as 0 or 1 instead (flags bit 0: there
// is an offset, bit 1: a scale).

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> mean: array<f32>;
@group(0) @binding(2) var<storage, read> variance: array<f32>;
@group(0) @binding(3) var<storage, read> offset: array<f32>;
@group(0) @binding(4) var<storage, read> scale: array<f32>;
@group(0) @binding(5) var<storage, read_write> y: array<f32>;
// [n, rank, epsilon bits, flags, dims[rank], then the strides[rank] of
// mean, variance, offset and scale]
@group(0) @binding(6) var<uniform> params: array<vec4<u32>, 32>;

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
