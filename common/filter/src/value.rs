//! The string and numeric views of a JSON value that `Match` is compared against.

use serde_json::Value;
use std::fmt::Write as _;

/// Calls `f` with the string form of `value`: strings as they are, numbers as serde_json prints
/// them, `true`/`false`, `null`, and objects and arrays as compact JSON.
///
/// Only objects and arrays allocate; numbers are printed into a stack buffer.
pub(crate) fn with_string_form<R>(value: &Value, f: impl FnOnce(&str) -> R) -> R {
    match value {
        Value::String(s) => f(s),
        Value::Bool(true) => f("true"),
        Value::Bool(false) => f("false"),
        Value::Null => f("null"),
        Value::Number(n) => {
            let mut buf = StackText::default();
            match write!(buf, "{n}").ok().and_then(|()| buf.as_str()) {
                Some(text) => f(text),
                None => f(&n.to_string()),
            }
        }
        Value::Array(_) | Value::Object(_) => f(&value.to_string()),
    }
}

/// The string form of `value` as an owned string (compile time only).
pub(crate) fn string_form(value: &Value) -> String {
    with_string_form(value, str::to_owned)
}

/// `value` as a number: a JSON number, or a string that parses as `f64`.
pub(crate) fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A fixed buffer long enough for any number serde_json prints (at most 24 bytes); longer text
/// (arbitrary-precision numbers) fails the write and falls back to a `String`.
struct StackText {
    buf: [u8; 40],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        Self { buf: [0; 40], len: 0 }
    }
}

impl StackText {
    fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(self.buf.get(..self.len)?).ok()
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let slot = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{as_number, string_form};
    use serde_json::json;

    #[test]
    fn string_forms() {
        assert_eq!(string_form(&json!("a b")), "a b");
        assert_eq!(string_form(&json!(true)), "true");
        assert_eq!(string_form(&json!(false)), "false");
        assert_eq!(string_form(&json!(null)), "null");
        assert_eq!(string_form(&json!(501)), "501");
        assert_eq!(string_form(&json!(-7)), "-7");
        assert_eq!(string_form(&json!(1.0)), "1.0");
        assert_eq!(string_form(&json!(2.5)), "2.5");
        assert_eq!(string_form(&json!([1, "a"])), r#"[1,"a"]"#);
        assert_eq!(string_form(&json!({"a": {"b": 1}})), r#"{"a":{"b":1}}"#);
    }

    #[test]
    fn number_string_forms_are_what_serde_json_prints() {
        for n in [
            json!(u64::MAX),
            json!(i64::MIN),
            json!(f64::MAX),
            json!(f64::MIN_POSITIVE),
            json!(-1.234_567_890_123_456_7e-300),
            json!(0.1),
            json!(1e21),
        ] {
            assert_eq!(string_form(&n), serde_json::to_string(&n).unwrap());
        }
    }

    #[test]
    fn numbers_and_numeric_strings() {
        assert_eq!(as_number(&json!(3)), Some(3.0));
        assert_eq!(as_number(&json!(-2.5)), Some(-2.5));
        assert_eq!(as_number(&json!("4.25")), Some(4.25));
        assert_eq!(as_number(&json!("1e3")), Some(1000.0));
        assert_eq!(as_number(&json!("four")), None);
        assert_eq!(as_number(&json!(" 4")), None);
        assert_eq!(as_number(&json!(true)), None);
        assert_eq!(as_number(&json!(null)), None);
        assert_eq!(as_number(&json!([1])), None);
    }
}
