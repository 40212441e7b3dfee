//! File names as clients send them, made safe to store and show; and the keys files are
//! stored under, which are never built from a client's name alone.

use sha2::{Digest, Sha256};

/// The longest stored name, in bytes.
const MAX_NAME_BYTES: usize = 200;

/// A client's file name made safe: the last path component only (no `/` or `\`), no control
/// characters, none of `"*:<>?|`, no leading or trailing dots and spaces, at most 200 bytes.
/// An empty result (or `.`/`..`) becomes `file`.
pub fn sanitize(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_control() || matches!(c, '"' | '*' | ':' | '<' | '>' | '?' | '|') {
                '_'
            } else {
                c
            }
        })
        .collect();
    let trimmed = cleaned.trim_matches(|c: char| c == '.' || c.is_whitespace());
    let mut out = String::new();
    for c in trimmed.chars() {
        if out.len() + c.len_utf8() > MAX_NAME_BYTES {
            break;
        }
        out.push(c);
    }
    if out.is_empty() {
        "file".to_owned()
    } else {
        out
    }
}

/// `name` when no file of `taken` has it, else `stem-2.ext`, `stem-3.ext`...
pub(super) fn unique(name: &str, taken: &[&str]) -> String {
    if !taken.contains(&name) {
        return name.to_owned();
    }
    let (stem, ext) = match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    };
    (2..)
        .map(|n| format!("{stem}-{n}{ext}"))
        .find(|candidate| !taken.contains(&candidate.as_str()))
        .unwrap_or_else(|| name.to_owned())
}

/// One segment of a stored key: kept as is when it is made of `A-Za-z0-9_-` only, otherwise
/// `x.` and its bytes in hex (a plain segment never holds a `.`, so the two never meet).
pub(super) fn segment(s: &str) -> String {
    if !s.is_empty()
        && s.len() <= 100
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        s.to_owned()
    } else {
        format!("x.{}", hex::encode(s.as_bytes()))
    }
}

/// The text a [`segment`] was made from.
pub(super) fn unsegment(s: &str) -> Option<String> {
    match s.strip_prefix("x.") {
        Some(h) => String::from_utf8(hex::decode(h).ok()?).ok(),
        None if !s.contains('.') => Some(s.to_owned()),
        None => None,
    }
}

/// Where the files of one document live: `f/<collection>/<id>/`.
pub(super) fn document_prefix(collection: &str, id: &str) -> String {
    format!("f/{}/{}", segment(collection), segment(id))
}

/// The final key of a file: `f/<collection>/<id>/<field>/<sha256>-<hash of the name>`; the
/// name is unique within its field, the content hash tells two versions of one name apart.
pub(super) fn final_key(
    collection: &str,
    id: &str,
    field: &str,
    name: &str,
    sha256: &str,
) -> String {
    let name_hash = hex::encode(&Sha256::digest(name.as_bytes())[..8]);
    format!(
        "{}/{}/{sha256}-{name_hash}",
        document_prefix(collection, id),
        segment(field)
    )
}

/// The key of a file's thumbnail of `size`.
pub(super) fn thumb_key(final_key: &str, size: &str) -> String {
    format!("{final_key}.thumb-{size}")
}

/// The temporary key an upload is written to before its metadata is committed:
/// `tmp/<collection>/<id>/<field>/<random>`.
pub(super) fn temp_key(collection: &str, id: &str, field: &str, random: &str) -> String {
    format!(
        "tmp/{}/{}/{}/{random}",
        segment(collection),
        segment(id),
        segment(field)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_lose_paths_and_control_characters() {
        assert_eq!(sanitize("../../etc/passwd"), "passwd");
        assert_eq!(sanitize("..\\..\\boot.ini"), "boot.ini");
        assert_eq!(sanitize("a\u{0}b\nc.txt"), "a_b_c.txt");
        assert_eq!(sanitize(".."), "file");
        assert_eq!(sanitize("  .hidden. "), "hidden");
        assert_eq!(sanitize("x:y<z>?.png"), "x_y_z__.png");
        assert_eq!(sanitize("ünï cödé.txt"), "ünï cödé.txt");
        assert!(sanitize(&"é".repeat(300)).len() <= 200);
    }

    #[test]
    fn unique_names_get_a_counter() {
        assert_eq!(unique("a.png", &[]), "a.png");
        assert_eq!(unique("a.png", &["a.png"]), "a-2.png");
        assert_eq!(unique("a.png", &["a.png", "a-2.png"]), "a-3.png");
        assert_eq!(unique("README", &["README"]), "README-2");
    }

    #[test]
    fn segments_round_trip_and_never_hold_paths() {
        for s in ["abc", "A-b_9", "../x", "a/b", "", "a.b", "x.41"] {
            let seg = segment(s);
            assert!(!seg.contains('/') && seg != ".." && !seg.is_empty());
            assert_eq!(unsegment(&seg).as_deref(), Some(s));
        }
        let key = final_key("posts", "../..", "cover", "../../x", "ab");
        assert!(key.starts_with("f/posts/x.2e2e2f2e2e/cover/ab-"));
        assert!(!key.contains(".."));
    }
}
