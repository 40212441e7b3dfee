//! A file's type, judged by its content (magic bytes), and how a browser may be shown it.

/// How many leading bytes the type is judged from.
pub(super) const SNIFF_BYTES: usize = 8192;

/// The type of a file whose content starts with `head`, declared as `declared` by the client:
/// the type its magic bytes show; for content without known magic bytes, the declared type
/// when it is one that has none (text, JSON, CSV...), else `application/octet-stream`. A
/// declaration is never believed for a type that has magic bytes (a `.exe` declared as
/// `image/png` is `application/x-msdownload`; a text declared as `image/png` is not an image).
pub fn detect(head: &[u8], declared: Option<&str>) -> String {
    if let Some(kind) = infer::get(head) {
        return kind.mime_type().to_owned();
    }
    let declared = declared
        .map(|d| {
            d.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|d| !d.is_empty() && valid_mime(d));
    match declared {
        Some(d) if !has_magic(&d) => d,
        _ if looks_like_text(head) => "text/plain".to_owned(),
        _ => "application/octet-stream".to_owned(),
    }
}

/// True for `type/subtype` made of token characters.
fn valid_mime(s: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    matches!(s.split_once('/'), Some((a, b)) if token(a) && token(b))
}

/// True for a type whose files [`infer`] recognises by their first bytes.
fn has_magic(mime: &str) -> bool {
    infer::is_mime_supported(mime)
}

/// True when `head` is UTF-8 without NUL bytes (a cut multi-byte character at the end aside).
fn looks_like_text(head: &[u8]) -> bool {
    if head.contains(&0) {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && head.len() - e.valid_up_to() < 4,
    }
}

/// True when a browser may show a file of type `mime` inline on the server's origin: images
/// other than SVG, audio, video, PDF and plain text. Anything else (HTML, SVG, XML, scripts,
/// unknown bytes) is sent as an attachment, so it never runs as a page of the server.
pub fn inline_safe(mime: &str) -> bool {
    matches!(
        mime,
        "image/png"
            | "image/jpeg"
            | "image/gif"
            | "image/webp"
            | "image/avif"
            | "image/bmp"
            | "application/pdf"
            | "text/plain"
    ) || mime.starts_with("audio/")
        || mime.starts_with("video/")
}

/// The `Content-Disposition` of a download of `name` of type `mime`.
pub fn disposition(name: &str, mime: &str) -> String {
    let kind = if inline_safe(mime) {
        "inline"
    } else {
        "attachment"
    };
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded = percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC);
    format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn content_wins_over_the_declaration() {
        assert_eq!(detect(PNG, Some("text/plain")), "image/png");
        assert_eq!(detect(b"hello", Some("image/png")), "text/plain");
        assert_eq!(detect(b"a,b\n1,2\n", Some("text/csv")), "text/csv");
        assert_eq!(
            detect(b"<html></html>", Some("text/html; charset=utf-8")),
            "text/html"
        );
        assert_eq!(detect(b"\0\x01\x02", None), "application/octet-stream");
        assert_eq!(
            detect(b"\0\x01\x02", Some("nonsense")),
            "application/octet-stream"
        );
    }

    #[test]
    fn runnable_types_are_attachments() {
        assert!(disposition("a.html", "text/html").starts_with("attachment"));
        assert!(disposition("a.svg", "image/svg+xml").starts_with("attachment"));
        assert!(disposition("a.png", "image/png").starts_with("inline"));
        assert_eq!(
            disposition("é\"x.txt", "text/plain"),
            "inline; filename=\"__x.txt\"; filename*=UTF-8''%C3%A9%22x%2Etxt"
        );
    }
}
