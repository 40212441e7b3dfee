//! How the prelude's answer to a call of a script function is read back into Rust: a
//! [`MethodReply`], as a method defined in Rust gives.

use portico_platform::MethodReply;
use serde_json::Value;

use crate::error::CallError;

/// Reads `{"ok": value, "status": n}`, `{"portico": {...}}` or `{"failed": message}`.
pub(crate) fn parse(text: &str) -> Result<MethodReply, CallError> {
    let value: Value = serde_json::from_str(text).map_err(|e| CallError::Failed {
        message: format!("the script's answer is not JSON: {e}"),
    })?;
    if let Some(ok) = value.get("ok") {
        let status = value
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok());
        return Ok(MethodReply {
            value: ok.clone(),
            status,
        });
    }
    if let Some(e) = value.get("portico") {
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
        return Err(CallError::Portico {
            error: text("error").unwrap_or_else(|| "error".to_owned()),
            reason: text("reason"),
            details: e.get("details").filter(|d| !d.is_null()).cloned(),
            status: e
                .get("status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                .filter(|s| (100..=599).contains(s)),
        });
    }
    Err(CallError::Failed {
        message: value
            .get("failed")
            .and_then(Value::as_str)
            .unwrap_or("the script failed")
            .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read() {
        let ok = parse(r#"{"ok":{"a":12345678901234567890},"status":201}"#);
        assert_eq!(
            ok.map(|o| (o.value.to_string(), o.status)),
            Ok(("{\"a\":12345678901234567890}".to_owned(), Some(201)))
        );
        let e = parse(r#"{"portico":{"error":"nope","reason":"r","details":null,"status":null}}"#);
        assert!(
            matches!(e, Err(CallError::Portico { ref error, status: None, .. }) if error == "nope")
        );
        assert!(matches!(
            parse(r#"{"failed":"x"}"#),
            Err(CallError::Failed { .. })
        ));
    }
}
