//! The provider's stack strips the whitespace at some boundaries of the text fields (the
//! reasoning's start or end, the content's start, its end before the tool calls or at the end):
//! `strips=reasoning_end+content_end` (or one `strips=` item per boundary). Its answers carry
//! the boundary quirks of `server/quirks/strips_boundary_whitespace.rs` on the provider's shape,
//! as tests/data/gen/make_provider_conventions.py's `strip_boundaries` strips them after the
//! parser.

use crate::server::quirks::{with_stripped, Boundary};
use crate::server::ServerShape;

/// The boundaries stripped, one bit per [`Boundary`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Strips(u8);

impl Strips {
    /// Add the boundaries of one `strips=` value (`+`-separated names).
    pub fn add(&mut self, value: &str) -> Result<(), String> {
        for name in value.split('+').map(str::trim) {
            let boundary = Boundary::ALL
                .into_iter()
                .find(|b| b.name() == name)
                .ok_or_else(|| {
                    format!(
                        "strips: unknown boundary {name:?} (expected {}, joined by +)",
                        Boundary::ALL.map(Boundary::name).join(", ")
                    )
                })?;
            self.0 |= 1 << boundary as u8;
        }
        Ok(())
    }

    pub fn any(self) -> bool {
        self.0 != 0
    }

    fn boundaries(self) -> impl Iterator<Item = Boundary> {
        Boundary::ALL
            .into_iter()
            .filter(move |b| self.0 & (1 << *b as u8) != 0)
    }

    /// `strips=a+b`, as a spec writes it.
    pub fn name(self) -> String {
        let names: Vec<&str> = self.boundaries().map(Boundary::name).collect();
        format!("strips={}", names.join("+"))
    }

    /// `shape` with each stripped boundary's quirk added.
    pub fn shape(self, shape: &'static ServerShape) -> &'static ServerShape {
        self.boundaries().fold(shape, with_stripped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::openrouter;

    #[test]
    fn boundaries_parse_and_become_quirks() {
        let mut s = Strips::default();
        assert!(s.add("reasoning_end+content_end").is_ok());
        assert!(s.add("content_start").is_ok());
        assert_eq!(s.name(), "strips=reasoning_end+content_start+content_end");
        assert!(s
            .add("middle")
            .unwrap_err()
            .contains("content_end_before_calls"));
        let names = s.shape(&openrouter::SHAPE).quirks.names();
        for q in [
            "strips_reasoning_end",
            "strips_content_start",
            "strips_content_end",
        ] {
            assert!(names.contains(&q), "{names:?}");
        }
        // Built once: the same shape each time.
        assert!(std::ptr::eq(
            s.shape(&openrouter::SHAPE),
            s.shape(&openrouter::SHAPE)
        ));
    }
}
