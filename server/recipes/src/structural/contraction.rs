//! SIMT register-tiled contractions (filled in below).

use crate::{Recipe, Rewrite};

pub struct TiledContraction;

impl Recipe for TiledContraction {
    fn name(&self) -> &'static str {
        "TiledContraction"
    }
    fn answers(&self) -> &'static [&'static str] {
        &["MissedReuse", "SharedMemTiling", "UncoalescedAccess"]
    }
    fn rewrite(&self, _text: &str, _kernel: &str) -> Vec<Rewrite> {
        Vec::new()
    }
}
