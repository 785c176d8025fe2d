//! Reading raw Redis replies (stream entries, script results), which the
//! protocol's commands return as nested arrays.

use redis::Value;

/// The items of an array (or set) reply; nothing for any other reply.
pub fn array(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) | Value::Set(items) => items,
        _ => &[],
    }
}

/// A string, status or integer reply as text.
pub fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

/// An integer reply, or a string one that holds an integer.
pub fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => text(other)?.parse().ok(),
    }
}
