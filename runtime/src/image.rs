//! Images in and out: TF.js's two DOM kernels without a DOM.
//!
//! TF.js reads pixels from a canvas, an `<img>` or a video frame with
//! `tf.browser.fromPixels` (kernel `FromPixels`) and paints a tensor on a
//! canvas with `tf.browser.toPixels` / `tf.browser.draw` (kernel `Draw`).
//! A Rust program has image files instead of a page, so opforge maps the
//! two kernels to a codec: [`decode`] turns PNG or JPEG bytes into the
//! `u8` tensor `fromPixels` gives (`[height, width, channels]`, the first
//! `channels` of red, green, blue and alpha), and [`encode`] writes a
//! tensor as `toPixels` reads one (`u8`, integers in `[0, 255]` or floats
//! in `[0, 1]`) into a PNG or JPEG file's bytes. The codecs are the
//! `image` crate's. A decoded image is a cpu tensor (`wgpu` holds 32-bit
//! words only: cast it to `f32` and move it there); [`encode`] reads a
//! tensor back from any backend.
//!
//! ```
//! use opforge::{image::{self, ImageFormat}, Tensor};
//! let pixels = Tensor::from_vec(vec![0.0f32, 0.5, 1.0, 0.25], &[2, 2, 1])?;
//! let png = image::encode(&pixels, ImageFormat::Png)?;
//! let back = image::decode(&png, 1)?;
//! assert_eq!(back.shape(), &[2, 2, 1]);
//! assert_eq!(back.to_vec::<u8>()?, vec![0, 128, 255, 64]);
//! # Ok::<(), opforge::Error>(())
//! ```

use std::io::Cursor;

use ::image::codecs::{jpeg::JpegEncoder, png::PngEncoder};
use ::image::{ExtendedColorType, ImageEncoder, ImageReader};

use crate::backend::BackendId;
use crate::dtype::{for_dtype, DType, Element};
use crate::error::{Error, InputDesc, Result};
use crate::tensor::Tensor;

/// The file formats [`encode`] writes ([`decode`] reads both, telling
/// them apart by their first bytes).
///
/// ```
/// use opforge::image::ImageFormat;
/// assert_ne!(ImageFormat::Png, ImageFormat::Jpeg { quality: 90 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// PNG: lossless; gray, RGB or RGBA.
    Png,
    /// Baseline JPEG at a quality from 1 (smallest) to 100 (best); gray or
    /// RGB, since JPEG has no alpha channel.
    Jpeg {
        /// 1 to 100.
        quality: u8,
    },
}

/// Decodes a PNG or JPEG image into a `u8` tensor of shape
/// `[height, width, channels]`: `tf.browser.fromPixels(image, channels)`
/// (kernel `FromPixels`) for an image file. The pixels are read as red,
/// green, blue and alpha (a gray image's three colors are its gray, an
/// image without alpha is opaque), and the first `channels` (1 to 4) are
/// kept, as `fromPixels` keeps them: 3 drops alpha, 1 keeps red. 16-bit
/// PNGs are scaled to 8 bits. The tensor is on the cpu. The decoder's own limits (512 MiB of
/// pixels) bound what a hostile file can make it allocate.
///
/// ```
/// use opforge::image::{decode, encode, ImageFormat};
/// use opforge::Tensor;
/// let rgba = Tensor::from_vec(vec![255u8, 0, 0, 255, 0, 0, 255, 128], &[1, 2, 4])?;
/// let png = encode(&rgba, ImageFormat::Png)?;
/// assert_eq!(decode(&png, 3)?.to_vec::<u8>()?, vec![255, 0, 0, 0, 0, 255]);
/// assert!(decode(b"not an image", 3).unwrap_err().to_string().contains("FromPixels"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn decode(bytes: &[u8], channels: usize) -> Result<Tensor> {
    let fail = |message: String| Error::InvalidArgument {
        op: "image::decode".into(),
        kernel: "FromPixels",
        backend: BackendId::Cpu,
        inputs: Vec::new(),
        message,
    };
    if !(1..=4).contains(&channels) {
        return Err(fail(format!("an image has 1 to 4 channels (red, green, blue, alpha), not {channels}")));
    }
    let reader = ImageReader::new(Cursor::new(bytes)).with_guessed_format().map_err(|e| fail(e.to_string()))?;
    match reader.format() {
        Some(::image::ImageFormat::Png | ::image::ImageFormat::Jpeg) => {}
        Some(other) => return Err(fail(format!("a {other:?} image: opforge reads PNG and JPEG"))),
        None => return Err(fail(format!("{} bytes that are neither a PNG nor a JPEG image", bytes.len()))),
    }
    let rgba = reader.decode().map_err(|e| fail(format!("cannot decode the image: {e}")))?.into_rgba8();
    let (width, height) = (rgba.width() as usize, rgba.height() as usize);
    let data = match channels {
        4 => rgba.into_raw(),
        _ => rgba.into_raw().chunks_exact(4).flat_map(|pixel| pixel[..channels].iter().copied()).collect(),
    };
    crate::backend::with_default_backend(BackendId::Cpu, || Tensor::from_vec(data, &[height, width, channels]))?
}

/// Encodes `image` as a PNG or JPEG file's bytes: what
/// `tf.browser.toPixels` (kernel `Draw`) paints, written to a file instead
/// of a canvas. `image` is `[height, width]` (gray) or `[height, width,
/// channels]` with 1 (gray), 3 (RGB) or 4 (RGBA) channels, as `toPixels`
/// takes it: `u8`; an integer dtype with values in `[0, 255]`; or a float
/// dtype with values in `[0, 1]`, scaled by 255 and rounded half up
/// (JavaScript's `Math.round`). A value outside its range, a NaN, `bool`,
/// another shape, or alpha in a JPEG is an error naming `Draw`, the
/// backend and the tensor.
///
/// ```
/// use opforge::image::{encode, ImageFormat};
/// use opforge::Tensor;
/// let gray = Tensor::from_vec(vec![0i32, 64, 128, 255], &[2, 2])?;
/// let jpeg = encode(&gray, ImageFormat::Jpeg { quality: 90 })?;
/// assert_eq!(&jpeg[..2], &[0xFF, 0xD8]);
/// let too_bright = Tensor::from_vec(vec![1.5f32], &[1, 1])?;
/// assert!(encode(&too_bright, ImageFormat::Png).unwrap_err().to_string().contains("[0, 1]"));
/// # Ok::<(), opforge::Error>(())
/// ```
pub fn encode(image: &Tensor, format: ImageFormat) -> Result<Vec<u8>> {
    let fail = |message: String| Error::InvalidArgument {
        op: "image::encode".into(),
        kernel: "Draw",
        backend: image.backend(),
        inputs: vec![InputDesc { name: "image".into(), dtype: image.dtype(), shape: image.shape().into() }],
        message,
    };
    let (height, width, channels) = match *image.shape() {
        [h, w] => (h, w, 1),
        [h, w, c @ (1 | 3 | 4)] => (h, w, c),
        _ => {
            return Err(fail("an image is [height, width] or [height, width, channels] with 1, 3 or 4 channels".into()))
        }
    };
    let color = match (format, channels) {
        (ImageFormat::Jpeg { .. }, 4) => return Err(fail("a JPEG has no alpha channel: keep the first 3".into())),
        (_, 1) => ExtendedColorType::L8,
        (_, 3) => ExtendedColorType::Rgb8,
        _ => ExtendedColorType::Rgba8,
    };
    let side = |n: usize| u32::try_from(n).ok().filter(|&n| n > 0);
    let (Some(w), Some(h)) = (side(width), side(height)) else {
        return Err(fail("an image needs a height and a width from 1 to 2^32 - 1".into()));
    };
    let pixels = pixels(image).map_err(fail)?;
    let mut out = Vec::new();
    let written = match format {
        ImageFormat::Png => PngEncoder::new(&mut out).write_image(&pixels, w, h, color),
        ImageFormat::Jpeg { quality: q @ 1..=100 } => {
            JpegEncoder::new_with_quality(&mut out, q).write_image(&pixels, w, h, color)
        }
        ImageFormat::Jpeg { quality } => return Err(fail(format!("a JPEG quality is 1 to 100, not {quality}"))),
    };
    written.map_err(|e| fail(format!("cannot encode the image: {e}")))?;
    Ok(out)
}

/// `image`'s values as bytes, by `toPixels`' rule for its dtype.
fn pixels(image: &Tensor) -> std::result::Result<Vec<u8>, String> {
    let dtype = image.dtype();
    if dtype == DType::U8 {
        return image.to_vec::<u8>().map_err(|e| e.to_string());
    }
    if dtype == DType::Bool {
        return Err("a bool tensor is not an image: cast it to u8, or to a float in [0, 1]".into());
    }
    let (top, scale) = if dtype.is_float() { (1.0, 255.0) } else { (255.0, 1.0) };
    let byte = |v: f64| match v {
        v if (0.0..=top).contains(&v) => Ok((v * scale + 0.5).floor() as u8),
        v => Err(format!("a {dtype} image's values are in [0, {top}], and one is {v}")),
    };
    for_dtype!(dtype, T => image.to_vec::<T>().map_err(|e| e.to_string())?.into_iter().map(|v| byte(v.to_f64())).collect(),
        string => Err("a string tensor is not an image: decode its bytes with `image::decode`".into()))
}
