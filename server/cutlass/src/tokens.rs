//! C++ identifiers in a line of text.

pub fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

pub fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte ranges of the identifiers in `text` (tokens starting with a digit,
/// like `128x16`, are skipped whole).
pub fn identifiers(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let start = i;
            if is_ident_byte(bytes[i]) {
                while i < bytes.len() && is_ident_byte(bytes[i]) {
                    i += 1;
                }
                if is_ident_start(bytes[start]) {
                    return Some((start, i));
                }
            } else {
                i += 1;
            }
        }
        None
    })
}

/// Whether `query` is one identifier, optionally qualified (`cute::local_tile`);
/// returns its last segment.
pub fn as_identifier(query: &str) -> Option<&str> {
    let last = query.trim().rsplit("::").next()?;
    let bytes = last.as_bytes();
    let ok = !bytes.is_empty() && is_ident_start(bytes[0]) && bytes.iter().all(|&b| is_ident_byte(b));
    ok.then_some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_identifiers() {
        let line = "using Op = SM90_64x128x16_F32BF16BF16_SS<GMMA::Major::K>; // 128x16";
        let found: Vec<&str> = identifiers(line).map(|(s, e)| &line[s..e]).collect();
        assert_eq!(found, ["using", "Op", "SM90_64x128x16_F32BF16BF16_SS", "GMMA", "Major", "K"]);
    }

    #[test]
    fn recognizes_identifier_queries() {
        assert_eq!(as_identifier("cute::local_tile"), Some("local_tile"));
        assert_eq!(as_identifier(" make_tiled_mma "), Some("make_tiled_mma"));
        assert_eq!(as_identifier("tiled mma"), None);
        assert_eq!(as_identifier("128x16"), None);
    }
}
