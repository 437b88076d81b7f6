//! `opforge::image`: TF.js's `FromPixels` and `Draw` as a PNG and JPEG
//! codec. Decoding is checked against PNGs written byte by byte here (not
//! by the encoder under test), encoding by reading its files back.

use opforge::image::{decode, encode, ImageFormat};
use opforge::{BackendId, DType, Tensor};

/// A 2x2 RGB PNG, 8 bits: (10, 20, 30) (40, 50, 60) / (70, 80, 90) (200, 210, 220).
const RGB_2X2: [u8; 79] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 2, 0, 0, 0, 2, 8, 2, 0, 0, 0, 253, 212, 154,
    115, 0, 0, 0, 22, 73, 68, 65, 84, 120, 156, 99, 224, 18, 145, 211, 48, 178, 97, 112, 11, 136, 58, 113, 233, 14, 0,
    17, 112, 4, 57, 63, 188, 115, 242, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// A 2x1 gray-and-alpha PNG, 16 bits: (0x8000, 0xFFFF) (0x0101, 0x0000).
const GRAY_ALPHA_16: [u8; 74] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 2, 0, 0, 0, 1, 16, 4, 0, 0, 0, 14, 187, 107,
    66, 0, 0, 0, 17, 73, 68, 65, 84, 120, 156, 99, 104, 96, 248, 255, 159, 145, 145, 129, 1, 0, 15, 5, 2, 129, 73, 30,
    48, 27, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

#[test]
fn decoding_keeps_the_first_channels_of_rgba_as_from_pixels_does() {
    let rgb = decode(&RGB_2X2, 3).unwrap();
    assert_eq!((rgb.shape(), rgb.dtype(), rgb.backend()), (&[2, 2, 3][..], DType::U8, BackendId::Cpu));
    assert_eq!(rgb.to_vec::<u8>().unwrap(), [10, 20, 30, 40, 50, 60, 70, 80, 90, 200, 210, 220]);
    let rgba = decode(&RGB_2X2, 4).unwrap().to_vec::<u8>().unwrap();
    assert_eq!(rgba[..8], [10, 20, 30, 255, 40, 50, 60, 255], "an image without alpha is opaque");
    assert_eq!(decode(&RGB_2X2, 1).unwrap().to_vec::<u8>().unwrap(), [10, 40, 70, 200], "one channel is red");
    assert_eq!(decode(&RGB_2X2, 2).unwrap().shape(), &[2, 2, 2]);
}

#[test]
fn a_16_bit_gray_image_is_scaled_to_8_bits_in_every_color() {
    let t = decode(&GRAY_ALPHA_16, 4).unwrap();
    assert_eq!(t.shape(), &[1, 2, 4]);
    assert_eq!(t.to_vec::<u8>().unwrap(), [128, 128, 128, 255, 1, 1, 1, 0]);
}

#[test]
fn png_round_trips_every_channel_count_and_dtype_rule() {
    let bytes: Vec<u8> = (0..5 * 3 * 4).map(|i| (i * 37 % 256) as u8).collect();
    for channels in [1, 3, 4] {
        let n = 5 * 3 * channels;
        let t = Tensor::from_vec(bytes[..n].to_vec(), &[5, 3, channels]).unwrap();
        let back = decode(&encode(&t, ImageFormat::Png).unwrap(), channels).unwrap();
        assert_eq!(back.shape(), &[5, 3, channels]);
        assert_eq!(back.to_vec::<u8>().unwrap(), bytes[..n], "{channels} channels");
    }
    // [height, width] is gray; an integer tensor is read as bytes, a float
    // one scaled by 255 and rounded half up.
    let ints = Tensor::from_vec(vec![0i64, 1, 254, 255], &[2, 2]).unwrap();
    let back = decode(&encode(&ints, ImageFormat::Png).unwrap(), 1).unwrap();
    assert_eq!(back.to_vec::<u8>().unwrap(), [0, 1, 254, 255]);
    let floats = Tensor::from_vec(vec![0.0f64, 0.5 / 255.0, 0.49 / 255.0, 1.0], &[2, 2, 1]).unwrap();
    let back = decode(&encode(&floats, ImageFormat::Png).unwrap(), 1).unwrap();
    assert_eq!(back.to_vec::<u8>().unwrap(), [0, 1, 0, 255]);
    let halves = Tensor::from_vec(vec![opforge::dtype::f16::from_f32(0.5)], &[1, 1]).unwrap();
    assert_eq!(decode(&encode(&halves, ImageFormat::Png).unwrap(), 1).unwrap().to_vec::<u8>().unwrap(), [128]);
}

#[test]
fn jpeg_round_trips_a_smooth_image_closely() {
    let (h, w) = (16, 24);
    let rgb: Vec<f32> =
        (0..h * w * 3).map(|i| ((i / 3) % w) as f32 / (w - 1) as f32 * (1 + i % 3) as f32 / 3.0).collect();
    let t = Tensor::from_vec(rgb.clone(), &[h, w, 3]).unwrap();
    for (quality, tolerance) in [(95, 6.0), (50, 16.0)] {
        let jpeg = encode(&t, ImageFormat::Jpeg { quality }).unwrap();
        assert_eq!(jpeg[..2], [0xFF, 0xD8], "a JPEG starts with SOI");
        let back = decode(&jpeg, 3).unwrap().to_vec::<u8>().unwrap();
        let mean_error: f32 =
            rgb.iter().zip(&back).map(|(a, b)| (a * 255.0 - *b as f32).abs()).sum::<f32>() / rgb.len() as f32;
        assert!(mean_error < tolerance, "quality {quality}: mean error {mean_error}");
    }
    let gray = Tensor::from_vec(vec![7u8; 64], &[8, 8, 1]).unwrap();
    let back = decode(&encode(&gray, ImageFormat::Jpeg { quality: 90 }).unwrap(), 1).unwrap();
    assert!(back.to_vec::<u8>().unwrap().iter().all(|&v| v.abs_diff(7) <= 1));
}

#[test]
fn bad_images_and_bad_tensors_are_errors_that_name_the_kernel_and_tensor() {
    let message = |r: opforge::Result<Vec<u8>>| r.unwrap_err().to_string();
    for (bytes, channels, wanted) in [
        (&b"GIF89a..."[..], 3, "a Gif image: opforge reads PNG and JPEG"),
        (&b"plain text"[..], 3, "neither a PNG nor a JPEG"),
        (&RGB_2X2[..40], 3, "cannot decode"),
        (&RGB_2X2[..], 0, "1 to 4 channels"),
        (&RGB_2X2[..], 5, "not 5"),
    ] {
        let e = decode(bytes, channels).unwrap_err().to_string();
        assert!(e.contains("FromPixels") && e.contains("image::decode") && e.contains(wanted), "{e}");
    }
    let png = ImageFormat::Png;
    let cases = [
        (Tensor::from_vec(vec![1.5f32], &[1, 1]).unwrap(), png, "in [0, 1], and one is 1.5"),
        (Tensor::from_vec(vec![f32::NAN], &[1, 1]).unwrap(), png, "one is NaN"),
        (Tensor::from_vec(vec![256i32], &[1, 1]).unwrap(), png, "in [0, 255], and one is 256"),
        (Tensor::from_vec(vec![-1i32], &[1, 1]).unwrap(), png, "one is -1"),
        (Tensor::from_vec(vec![true], &[1, 1]).unwrap(), png, "bool tensor is not an image"),
        (Tensor::from_vec(vec![0u8; 2], &[1, 1, 2]).unwrap(), png, "1, 3 or 4 channels"),
        (Tensor::from_vec(vec![0u8; 2], &[2]).unwrap(), png, "[height, width]"),
        (Tensor::from_vec(Vec::<u8>::new(), &[0, 3, 3]).unwrap(), png, "height and a width"),
        (Tensor::from_vec(vec![0u8; 4], &[1, 1, 4]).unwrap(), ImageFormat::Jpeg { quality: 90 }, "no alpha"),
        (Tensor::from_vec(vec![0u8; 3], &[1, 1, 3]).unwrap(), ImageFormat::Jpeg { quality: 0 }, "not 0"),
    ];
    for (t, format, wanted) in cases {
        let e = message(encode(&t, format));
        let described = format!("image: {}{:?}", t.dtype(), t.shape());
        assert!(e.contains("kernel `Draw`") && e.contains("backend `cpu`") && e.contains(&described), "{e}");
        assert!(e.contains(wanted), "{e} lacks {wanted}");
    }
}

#[test]
fn a_wgpu_tensor_is_read_back_and_encoded() {
    if !opforge::backend::wgpu::adapter_or_skip("a_wgpu_tensor_is_read_back_and_encoded") {
        return;
    }
    let values = vec![0.0f32, 0.25, 0.5, 1.0];
    let t = Tensor::from_vec(values, &[2, 2]).unwrap().to_backend(BackendId::Wgpu).unwrap();
    let back = decode(&encode(&t, ImageFormat::Png).unwrap(), 1).unwrap();
    assert_eq!(back.to_vec::<u8>().unwrap(), [0, 64, 128, 255]);
    let bad = Tensor::from_vec(vec![2.0f32], &[1, 1]).unwrap().to_backend(BackendId::Wgpu).unwrap();
    assert!(encode(&bad, ImageFormat::Png).unwrap_err().to_string().contains("backend `wgpu`"));
}
