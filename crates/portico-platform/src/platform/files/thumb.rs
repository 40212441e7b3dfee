//! Thumbnails of PNG, JPEG and WebP images.

use std::io::Cursor;

use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};

use super::{FileError, ThumbSize};

/// The most memory one decoded image may take.
const MAX_DECODED_BYTES: u64 = 256 * 1024 * 1024;

/// The type of the thumbnails of a file of type `mime` (JPEG stays JPEG, PNG and WebP become
/// PNG); `None` when no thumbnail can be made of it.
pub(super) fn output_type(mime: &str) -> Option<&'static str> {
    match mime {
        "image/jpeg" => Some("image/jpeg"),
        "image/png" | "image/webp" => Some("image/png"),
        _ => None,
    }
}

/// The thumbnail of `size` of the image `bytes` of type `mime`, encoded.
pub(super) fn make(bytes: &[u8], mime: &str, size: ThumbSize) -> Result<Vec<u8>, FileError> {
    let format = match mime {
        "image/jpeg" => ImageFormat::Jpeg,
        "image/png" => ImageFormat::Png,
        "image/webp" => ImageFormat::WebP,
        other => return Err(FileError::Invalid(format!("no thumbnails of {other}"))),
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    reader.limits(limits);
    let image = reader
        .decode()
        .map_err(|e| FileError::Invalid(format!("the image cannot be read: {e}")))?;
    let resized = resize(&image, size);
    let mut out = Cursor::new(Vec::new());
    let written = if format == ImageFormat::Jpeg {
        DynamicImage::ImageRgb8(resized.to_rgb8()).write_to(&mut out, ImageFormat::Jpeg)
    } else {
        resized.write_to(&mut out, ImageFormat::Png)
    };
    written.map_err(|e| FileError::Store(format!("encoding a thumbnail: {e}")))?;
    Ok(out.into_inner())
}

/// `image` at `size`: cropped to fill `WxH`, fitted inside it with `f`, and with one side 0
/// scaled to the other keeping the proportions.
fn resize(image: &DynamicImage, size: ThumbSize) -> DynamicImage {
    let (w, h) = (image.width().max(1), image.height().max(1));
    let scaled = |a: u32, b: u32, c: u32| -> u32 {
        u32::try_from((u64::from(a) * u64::from(b)).div_ceil(u64::from(c)))
            .unwrap_or(u32::MAX)
            .max(1)
    };
    match (size.width, size.height) {
        (0, height) => image.resize_exact(scaled(height, w, h), height, FilterType::Lanczos3),
        (width, 0) => image.resize_exact(width, scaled(width, h, w), FilterType::Lanczos3),
        (width, height) if size.fit => image.resize(width, height, FilterType::Lanczos3),
        (width, height) => image.resize_to_fill(width, height, FilterType::Lanczos3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = DynamicImage::new_rgb8(w, h);
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    fn dims(bytes: &[u8]) -> (u32, u32) {
        let img = image::load_from_memory(bytes).unwrap();
        (img.width(), img.height())
    }

    #[test]
    fn sizes_fill_fit_and_keep_proportions() {
        let src = png(400, 200);
        let at = |s: &str| dims(&make(&src, "image/png", s.parse().unwrap()).unwrap());
        assert_eq!(at("100x100"), (100, 100));
        assert_eq!(at("100x100f"), (100, 50));
        assert_eq!(at("100x0"), (100, 50));
        assert_eq!(at("0x50"), (100, 50));
    }

    #[test]
    fn not_an_image_is_refused() {
        assert!(make(b"not a png", "image/png", "10x10".parse().unwrap()).is_err());
        assert_eq!(output_type("image/svg+xml"), None);
    }
}
