//! What a [`super::Files`] service is configured with: where files go, the size limit, and
//! each collection's file fields.

use std::fmt;
use std::str::FromStr;

/// The default per-file size limit, in megabytes (`[files] max_size_mb`).
pub const DEFAULT_MAX_SIZE_MB: u64 = 20;

/// The default limit on an image's pixels (`[files] max_pixels`): 50 megapixels, a 48 MP
/// phone photo (8064 x 6048) but not a 12,000 x 12,000 image whose few compressed bytes decode
/// to hundreds of megabytes.
pub const DEFAULT_MAX_PIXELS: u64 = 50_000_000;

/// Settings of the files service (`[files]`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilesConfig {
    /// Where files are kept: a directory, or `s3://bucket/prefix` (endpoint, region and keys
    /// from the `AWS_*` environment variables).
    pub store: String,
    /// The largest file accepted, in bytes.
    pub max_size: u64,
    /// The most pixels (width x height) of a PNG, JPEG or WebP image accepted, read from its
    /// header at upload (the images the server decodes, for thumbnails).
    pub max_pixels: u64,
}

impl FilesConfig {
    /// Files kept at `store`, with the default size limit.
    pub fn new(store: impl Into<String>) -> FilesConfig {
        FilesConfig {
            store: store.into(),
            max_size: DEFAULT_MAX_SIZE_MB * 1024 * 1024,
            max_pixels: DEFAULT_MAX_PIXELS,
        }
    }

    /// The same with a size limit of `bytes` per file.
    pub fn max_size(mut self, bytes: u64) -> FilesConfig {
        self.max_size = bytes;
        self
    }

    /// The same with a limit of `pixels` per image.
    pub fn max_pixels(mut self, pixels: u64) -> FilesConfig {
        self.max_pixels = pixels;
        self
    }

    /// True when `store` names an S3-compatible store rather than a directory.
    pub fn is_s3(&self) -> bool {
        self.store.starts_with("s3://")
    }
}

impl Default for FilesConfig {
    fn default() -> Self {
        FilesConfig::new("./portico-files")
    }
}

/// One file field of a collection (`files = { cover = { types = [...], max = 1 } }`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileField {
    /// Accepted types (`image/png`, or `image/*`), judged by the file's content; empty: any.
    pub types: Vec<String>,
    /// How many files the field holds: 1 keeps one file object (a new upload replaces it),
    /// more keeps an array.
    pub max: usize,
    /// The thumbnail sizes a download may ask for (`?thumb=`).
    pub thumbs: Vec<ThumbSize>,
}

impl FileField {
    /// A field holding at most `max` files of any type, without thumbnails.
    pub fn new(max: usize) -> FileField {
        FileField {
            types: Vec::new(),
            max: max.max(1),
            thumbs: Vec::new(),
        }
    }

    /// The same accepting only `types`.
    pub fn types(mut self, types: Vec<String>) -> FileField {
        self.types = types;
        self
    }

    /// The same allowing the thumbnail sizes `thumbs`.
    pub fn thumbs(mut self, thumbs: Vec<ThumbSize>) -> FileField {
        self.thumbs = thumbs;
        self
    }

    /// True when a file of type `mime` may be stored in the field.
    pub fn accepts(&self, mime: &str) -> bool {
        self.types.is_empty()
            || self.types.iter().any(|t| match t.strip_suffix("/*") {
                Some(family) => mime.split('/').next() == Some(family),
                None => t.eq_ignore_ascii_case(mime),
            })
    }
}

impl Default for FileField {
    fn default() -> Self {
        FileField::new(1)
    }
}

/// A thumbnail size: `WxH` (cropped to fill exactly; 0 for one side keeps the proportions) or
/// `WxHf` (fitted inside the box).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThumbSize {
    /// Width in pixels (0: from the height and the proportions).
    pub width: u32,
    /// Height in pixels (0: from the width and the proportions).
    pub height: u32,
    /// Fit inside the box instead of filling it.
    pub fit: bool,
}

/// The largest thumbnail side.
pub const MAX_THUMB_SIDE: u32 = 4000;

impl FromStr for ThumbSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("`{s}` is not a thumbnail size; expected WxH or WxHf, as in 100x100");
        let (body, fit) = match s.strip_suffix('f') {
            Some(body) => (body, true),
            None => (s, false),
        };
        let (w, h) = body.split_once('x').ok_or_else(bad)?;
        let side = |v: &str| -> Result<u32, String> {
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            v.parse::<u32>()
                .ok()
                .filter(|n| *n <= MAX_THUMB_SIDE)
                .ok_or_else(bad)
        };
        let (width, height) = (side(w)?, side(h)?);
        if width == 0 && height == 0 {
            return Err(bad());
        }
        Ok(ThumbSize { width, height, fit })
    }
}

impl fmt::Display for ThumbSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}{}",
            self.width,
            self.height,
            if self.fit { "f" } else { "" }
        )
    }
}

/// True for a name usable as a file field (letters, digits, `_`, not starting with `_` or a
/// digit).
pub(super) fn valid_field_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumb_sizes_parse_and_print() {
        for s in ["100x100", "600x0", "0x80", "64x64f"] {
            let t: ThumbSize = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
        }
        for s in [
            "", "x", "0x0", "10", "10x", "-1x5", "5000x1", "10x10ff", "1e2x3",
        ] {
            assert!(s.parse::<ThumbSize>().is_err(), "{s}");
        }
    }

    #[test]
    fn types_match_exactly_or_by_family() {
        let f = FileField::new(1).types(vec!["image/*".into(), "application/pdf".into()]);
        assert!(f.accepts("image/png") && f.accepts("application/pdf"));
        assert!(!f.accepts("text/html") && !f.accepts("imagex/png"));
        assert!(FileField::new(3).accepts("anything/else"));
    }

    #[test]
    fn field_names() {
        assert!(valid_field_name("cover") && valid_field_name("a_1"));
        assert!(!valid_field_name("_x") && !valid_field_name("1a") && !valid_field_name("a.b"));
        assert!(!valid_field_name("") && !valid_field_name("a/b"));
    }
}
