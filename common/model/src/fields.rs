//! Typed reads of optional JSON object fields, each failure naming the field.

use serde_json::{Map, Value};

use crate::Invalid;

/// A JSON object whose fields are read one by one with their types checked.
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
}

/// JSON type name for messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<'a> Fields<'a> {
    /// Reads `value` as an object; `what` names it in the error.
    pub(crate) fn of(value: &'a Value, what: &str) -> Result<Self, Invalid> {
        match value {
            Value::Object(map) => Ok(Self { map }),
            other => Err(Invalid::new(what, format!("must be an object, got {}", type_name(other)))),
        }
    }

    /// The raw value of `name`; JSON null counts as absent.
    pub(crate) fn raw(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// Whether `name` is present (null included).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub(crate) fn string(&self, name: &str) -> Result<Option<&'a str>, Invalid> {
        match self.raw(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(Invalid::new(name, format!("must be a string, got {}", type_name(other)))),
        }
    }

    pub(crate) fn bool(&self, name: &str) -> Result<Option<bool>, Invalid> {
        match self.raw(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(Invalid::new(name, format!("must be a boolean, got {}", type_name(other)))),
        }
    }

    /// An integer in `min..=max`.
    pub(crate) fn int(&self, name: &str, min: i64, max: i64) -> Result<Option<i64>, Invalid> {
        match self.raw(name) {
            None => Ok(None),
            Some(v) => int_in(v, min, max).map(Some).map_err(|m| Invalid::new(name, m)),
        }
    }

    /// A non-negative integer without upper bound: integers beyond `u64::MAX` (which JSON
    /// carries as large doubles) count as `u64::MAX`, the highest value there is.
    pub(crate) fn unbounded_uint(&self, name: &str) -> Result<Option<u64>, Invalid> {
        let Some(v) = self.raw(name) else { return Ok(None) };
        let n = match v {
            Value::Number(n) => n,
            other => return Err(Invalid::new(name, format!("must be an integer, got {}", type_name(other)))),
        };
        if let Some(n) = n.as_u64() {
            return Ok(Some(n));
        }
        match n.as_f64() {
            Some(f) if f < 0.0 => Err(Invalid::new(name, format!("must be 0 or more, got {n}"))),
            // `as` saturates: every integer past u64::MAX ranks as the highest.
            Some(f) if f.is_finite() && f.fract() == 0.0 => Ok(Some(f as u64)),
            _ => Err(Invalid::new(name, format!("must be an integer, got {n}"))),
        }
    }

    pub(crate) fn array(&self, name: &str) -> Result<Option<&'a Vec<Value>>, Invalid> {
        match self.raw(name) {
            None => Ok(None),
            Some(Value::Array(a)) => Ok(Some(a)),
            Some(other) => Err(Invalid::new(name, format!("must be an array, got {}", type_name(other)))),
        }
    }
}

/// An integer JSON value in `min..=max`, else the rule broken.
pub(crate) fn int_in(v: &Value, min: i64, max: i64) -> Result<i64, String> {
    let n = match v {
        Value::Number(n) => {
            n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15).map(|f| f as i64))
        }
        other => return Err(format!("must be an integer, got {}", type_name(other))),
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(n) => Err(format!("must be between {min} and {max}, got {n}")),
        None => Err(format!("must be an integer between {min} and {max}, got {v}")),
    }
}

/// A finite number in `min..=max`, else the rule broken.
pub(crate) fn number_in(v: &Value, min: f64, max: f64) -> Result<f64, String> {
    match v.as_f64() {
        Some(f) if f.is_finite() && (min..=max).contains(&f) => Ok(f),
        Some(f) => Err(format!("must be between {min} and {max}, got {f}")),
        None => Err(format!("must be a number, got {}", type_name(v))),
    }
}
