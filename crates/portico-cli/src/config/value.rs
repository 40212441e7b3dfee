//! TOML values (publication selectors, sorts, projections) as the JSON the store reads.

use serde_json::{Map, Number, Value};

/// A TOML table as a JSON object. Dates and times become their RFC 3339 text, which is how
/// Portico stores dates.
pub(crate) fn table_to_json(table: &toml::Table) -> Value {
    Value::Object(
        table
            .iter()
            .map(|(k, v)| (k.clone(), to_json(v)))
            .collect::<Map<String, Value>>(),
    )
}

pub(crate) fn to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::Number((*i).into()),
        toml::Value::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        toml::Value::Table(table) => table_to_json(table),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_nested_values() {
        let table: toml::Table = toml::from_str(
            "a = 1\nb = { \"$in\" = [\"x\", 2.5, true] }\nc = 1979-05-27T07:32:00Z\n",
        )
        .unwrap_or_default();
        assert_eq!(
            table_to_json(&table),
            serde_json::json!({"a": 1, "b": {"$in": ["x", 2.5, true]}, "c": "1979-05-27T07:32:00Z"})
        );
    }
}
