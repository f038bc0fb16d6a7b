//! "Did you mean": a misspelt field or value named back with the nearest valid one.
//!
//! serde words an unknown key as "unknown field `allow_fallback`, expected one of `order`, …"
//! (and an unknown enum value as "unknown variant …"). [`explain`] rewrites that line so it
//! leads with the nearest valid spelling and lists the valid ones once.

/// The closest of `candidates` to `word`, if close enough to be a typo: an edit distance of at
/// most a third of the word (at least 1, at most 3), or one being a prefix of the other.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    let limit = (word.chars().count() / 3).clamp(1, 3);
    candidates
        .iter()
        .map(|&c| (edit_distance(&word, &c.to_ascii_lowercase()), c))
        .filter(|&(d, c)| {
            let c = c.to_ascii_lowercase();
            d <= limit || (word.len() >= 3 && (c.starts_with(&word) || word.starts_with(&c)))
        })
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters (also ranks the closest model ids to an unknown one).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The field names a struct's derived `Deserialize` accepts (serde hands them to
/// `deserialize_struct`), for structs that do not refuse unknown fields themselves; empty for
/// anything else.
pub fn field_names<'de, T: serde::Deserialize<'de>>() -> &'static [&'static str] {
    use serde::de::{Error, Visitor};
    struct Fields<'a>(&'a mut &'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for Fields<'_> {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// serde's own words for an unknown field, run through [`explain`].
pub fn unknown_field(field: &str, valid: &[&str]) -> String {
    let list: Vec<String> = valid.iter().map(|f| format!("`{f}`")).collect();
    explain(&format!(
        "unknown field `{field}`, expected one of {}",
        list.join(", ")
    ))
}

/// `message` with each serde "unknown field/variant `x`, expected …" line rewritten as
/// "unknown field `x`: did you mean `y`? (valid: a, b, c)"; other lines unchanged.
pub fn explain(message: &str) -> String {
    message
        .lines()
        .map(|line| explain_line(line).unwrap_or_else(|| line.to_string()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn explain_line(line: &str) -> Option<String> {
    let (head, rest) = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|lead| {
            let at = line.find(lead)? + lead.len();
            Some((&line[..at], &line[at..]))
        })?;
    let (word, after) = rest.split_once('`')?;
    let (valid, tail) = expected_list(after.strip_prefix(", expected ")?);
    if valid.is_empty() {
        return None;
    }
    let hint = match nearest(word, &valid) {
        Some(best) => format!(": did you mean `{best}`?"),
        None => String::new(),
    };
    Some(format!(
        "{head}{word}`{hint} (valid: {}){tail}",
        valid.join(", ")
    ))
}

/// serde's "one of `a`, `b`" / "`a` or `b`" / "`a`": the names, and the rest of the line.
fn expected_list(text: &str) -> (Vec<&str>, &str) {
    let mut rest = text.strip_prefix("one of ").unwrap_or(text);
    let mut names = Vec::new();
    while let Some(item) = rest.strip_prefix('`') {
        let Some((name, after)) = item.split_once('`') else {
            break;
        };
        names.push(name);
        rest = after;
        match [", `", " or `"].iter().find(|sep| rest.starts_with(**sep)) {
            Some(sep) => rest = &rest[sep.len() - 1..],
            None => break,
        }
    }
    (names, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_letter_finds_its_field() {
        let fields = ["order", "only", "allow_fallbacks", "require_parameters"];
        assert_eq!(nearest("allow_fallback", &fields), Some("allow_fallbacks"));
        assert_eq!(
            nearest("requre_parameters", &fields),
            Some("require_parameters")
        );
        assert_eq!(nearest("temperature", &fields), None);
    }

    #[test]
    fn a_structs_fields_are_read_from_its_derived_deserialize() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Two {
            alpha: u32,
            #[serde(default)]
            beta: Option<String>,
            #[serde(skip)]
            hidden: bool,
        }
        assert_eq!(field_names::<Two>(), &["alpha", "beta"]);
        assert!(field_names::<u32>().is_empty());
        assert_eq!(
            unknown_field("alpa", field_names::<Two>()),
            "unknown field `alpa`: did you mean `alpha`? (valid: alpha, beta)"
        );
    }

    #[test]
    fn serde_lines_are_rewritten_with_the_list_once() {
        let line =
            "unknown field `allow_fallback`, expected one of `order`, `only`, `allow_fallbacks`";
        assert_eq!(
            explain(line),
            "unknown field `allow_fallback`: did you mean `allow_fallbacks`? (valid: order, only, allow_fallbacks)"
        );
        let two = "unknown field `ma`, expected `max` or `min` at line 3 column 1";
        assert_eq!(
            explain(two),
            "unknown field `ma`: did you mean `max`? (valid: max, min) at line 3 column 1"
        );
        assert_eq!(explain("TOML parse error"), "TOML parse error");
    }
}
