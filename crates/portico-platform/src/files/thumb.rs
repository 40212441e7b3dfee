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

/// How many bytes of an image's start an upload reads, at most, to find its width and height
/// (a JPEG's size comes after its metadata segments, which may be long).
pub(super) const HEADER_BYTES: usize = 256 * 1024;

/// The image format of `mime`, for the types the server decodes (PNG, JPEG, WebP).
fn format_of(mime: &str) -> Option<ImageFormat> {
    match mime {
        "image/jpeg" => Some(ImageFormat::Jpeg),
        "image/png" => Some(ImageFormat::Png),
        "image/webp" => Some(ImageFormat::WebP),
        _ => None,
    }
}

/// True for the types the server decodes (for thumbnails): their pixels are limited.
pub(super) fn decoded(mime: &str) -> bool {
    format_of(mime).is_some()
}

/// The width and height of the image of type `mime` whose first bytes are `head`, read from its
/// header alone; `None` when `head` does not hold the header (yet), or for another type.
pub(super) fn dimensions(head: &[u8], mime: &str) -> Option<(u32, u32)> {
    let format = format_of(mime)?;
    ImageReader::with_format(Cursor::new(head), format)
        .into_dimensions()
        .ok()
}

/// About how many bytes making a thumbnail of `size` of a `width` x `height` image of
/// `compressed` bytes holds at its peak: the compressed bytes, the decoded pixels (counted at 4
/// bytes each, RGBA), and the resize's intermediate rows (16 bytes a pixel, the source's width
/// by the thumbnail's height).
pub(super) fn decode_cost(width: u32, height: u32, size: ThumbSize, compressed: u64) -> u64 {
    let pixels = u64::from(width) * u64::from(height);
    let rows = u64::from(size.height.max(size.width).max(1));
    compressed + pixels * 4 + u64::from(width) * rows * 16
}

/// The thumbnail of `size` of the image `bytes` of type `mime`, encoded.
pub(super) fn make(bytes: &[u8], mime: &str, size: ThumbSize) -> Result<Vec<u8>, FileError> {
    let Some(format) = format_of(mime) else {
        return Err(FileError::Invalid(format!("no thumbnails of {mime}")));
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
    fn dimensions_come_from_the_header_alone() {
        let src = png(1200, 700);
        // A PNG's size is in its first chunk; the decoder reads up to the first pixel data.
        assert_eq!(dimensions(&src[..64], "image/png"), Some((1200, 700)));
        assert_eq!(dimensions(&src[..12], "image/png"), None);
        assert_eq!(dimensions(&src, "text/plain"), None);
        let mut jpeg = Cursor::new(Vec::new());
        DynamicImage::new_rgb8(640, 480)
            .write_to(&mut jpeg, ImageFormat::Jpeg)
            .unwrap();
        let jpeg = jpeg.into_inner();
        assert_eq!(
            dimensions(&jpeg[..jpeg.len().min(2048)], "image/jpeg"),
            Some((640, 480))
        );
        let cost = decode_cost(12_000, 12_000, "100x100".parse().unwrap(), 140_000);
        assert!(cost > 576_000_000, "{cost}");
    }

    #[test]
    fn not_an_image_is_refused() {
        assert!(make(b"not a png", "image/png", "10x10".parse().unwrap()).is_err());
        assert_eq!(output_type("image/svg+xml"), None);
    }
}
