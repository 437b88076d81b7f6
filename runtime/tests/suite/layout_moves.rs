//! `Reverse`, `Tile`, `DepthToSpace` and `SpaceToDepth` against their
//! definitions on every backend, and their errors.

use crate::common;

use common::backends;
use opforge::{ops, Tensor};

#[test]
fn moves_match_their_definitions_on_every_backend() {
    let x: Vec<f32> = (0..6).map(|v| v as f32).collect();
    for b in backends("moves_match_their_definitions_on_every_backend") {
        let t = Tensor::from_vec(x.clone(), &[2, 3]).unwrap().to_backend(b).unwrap();
        assert_eq!(ops::reverse(&t, &[1]).unwrap().to_vec::<f32>().unwrap(), [2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
        assert_eq!(ops::reverse(&t, &[0, -1]).unwrap().to_vec::<f32>().unwrap(), [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]);
        assert_eq!(ops::reverse(&t, &[]).unwrap().to_vec::<f32>().unwrap(), x);
        let tiled = ops::tile(&t, &[2, 2]).unwrap();
        assert_eq!(tiled.shape(), &[4, 6]);
        let row = |r: usize| tiled.to_vec::<f32>().unwrap()[r * 6..(r + 1) * 6].to_vec();
        assert_eq!((row(0), row(3)), (vec![0.0, 1.0, 2.0, 0.0, 1.0, 2.0], vec![3.0, 4.0, 5.0, 3.0, 4.0, 5.0]));
        assert_eq!(ops::tile(&t, &[0, 1]).unwrap().shape(), &[0, 3]);

        // One pixel of 4 channels becomes a 2x2 patch of 1, row-major (TF's order).
        let pixel = Tensor::from_vec(vec![1i32, 2, 3, 4], &[1, 1, 1, 4]).unwrap().to_backend(b).unwrap();
        let patch = ops::depth_to_space(&pixel, 2).unwrap();
        assert_eq!((patch.shape(), patch.to_vec::<i32>().unwrap()), (&[1, 2, 2, 1][..], vec![1, 2, 3, 4]));
        let back = ops::space_to_depth(&patch, 2).unwrap();
        assert_eq!((back.shape(), back.to_vec::<i32>().unwrap()), (&[1, 1, 1, 4][..], vec![1, 2, 3, 4]));
        let image = Tensor::random_uniform(&[2, 4, 6, 3], -1.0, 1.0, 3).unwrap().to_backend(b).unwrap();
        let round = ops::depth_to_space(&ops::space_to_depth(&image, 2).unwrap(), 2).unwrap();
        assert_eq!(round.to_vec::<f32>().unwrap(), image.to_vec::<f32>().unwrap(), "a round trip on {b}");

        let e = ops::reverse(&t, &[1, -1]).unwrap_err().to_string();
        assert!(e.contains("Reverse") && e.contains(b.name()) && e.contains("twice"), "{e}");
        assert!(ops::tile(&t, &[2]).unwrap_err().to_string().contains("one count per axis"));
        assert!(ops::space_to_depth(&image, 4).unwrap_err().to_string().contains("must divide"));
        assert!(ops::depth_to_space(&t, 2).unwrap_err().to_string().contains("NHWC"));
    }
}

#[test]
fn mirror_pad_reflects_and_repeats_on_every_backend() {
    use opforge::kernels::MirrorPadMode::{Reflect, Symmetric};
    for b in backends("mirror_pad_reflects_and_repeats_on_every_backend") {
        let x = Tensor::from_vec(vec![1i32, 2, 3], &[3]).unwrap().to_backend(b).unwrap();
        let reflect = ops::mirror_pad(&x, &[vec![2, 2]], Reflect).unwrap().to_vec::<i32>().unwrap();
        assert_eq!(reflect, [3, 2, 1, 2, 3, 2, 1], "on {b}");
        let symmetric = ops::mirror_pad(&x, &[vec![2, 3]], Symmetric).unwrap().to_vec::<i32>().unwrap();
        assert_eq!(symmetric, [2, 1, 1, 2, 3, 3, 2, 1], "on {b}");
        let e = ops::mirror_pad(&x, &[vec![3, 0]], Reflect).unwrap_err().to_string();
        assert!(e.contains("MirrorPad") && e.contains(b.name()) && e.contains("at most 2"), "{e}");

        // The gradient adds each mirrored element's cotangent back to its source.
        let xf = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().to_backend(b).unwrap();
        let w = Tensor::from_vec((1..=7).map(|v| v as f32).collect::<Vec<_>>(), &[7]).unwrap().to_backend(b).unwrap();
        let g =
            opforge::grad(|x| ops::sum(&ops::mul(&ops::mirror_pad(x, &[vec![2, 2]], Reflect)?, &w)?, None, false))(&xf)
                .unwrap();
        // Output positions 0..7 read x[2, 1, 0, 1, 2, 1, 0] with weights 1..7.
        assert_eq!(g.to_vec::<f32>().unwrap(), [3.0 + 7.0, 2.0 + 4.0 + 6.0, 1.0 + 5.0], "on {b}");
    }
}
