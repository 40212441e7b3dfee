//! Checking an ID token as OpenID Connect Core 1.0 (3.1.3.7) asks: signed by one of the
//! provider's keys with an asymmetric algorithm (never `none` or a shared secret), issued by the
//! configured issuer, for this client (`aud`, and `azp` when there are several audiences),
//! not expired (a minute of clock skew allowed), and carrying the nonce of this sign-in.

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

/// The signature algorithms accepted: RSA and ECDSA (RS256 is the one every provider offers).
const ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// Clock skew allowed on `exp` and `iat`, in seconds.
const LEEWAY_SECS: u64 = 60;

/// The claims of a verified ID token that Portico uses.
/// (An OAuth2 provider's user API reply is read into one too.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::accounts::lifecycle) struct Identity {
    /// The provider's stable id of the person.
    pub(in crate::accounts::lifecycle) sub: String,
    /// Their address, when the token (or the userinfo reply) has one.
    pub(in crate::accounts::lifecycle) email: Option<String>,
    /// True when the provider says it verified that address.
    pub(in crate::accounts::lifecycle) email_verified: bool,
}

impl Identity {
    /// `sub`, `email` and `email_verified` of a claims object (`email_verified` may be the
    /// string "true": some providers send it so).
    pub(super) fn of(claims: &Value) -> Option<Identity> {
        let sub = claims.get("sub").and_then(Value::as_str)?;
        if sub.is_empty() {
            return None;
        }
        let email = claims
            .get("email")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_owned);
        let email_verified = match claims.get("email_verified") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s == "true",
            _ => false,
        };
        Some(Identity {
            sub: sub.to_owned(),
            email,
            email_verified,
        })
    }
}

/// Why an ID token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Its key is not among the provider's keys (fetch them again, then refuse).
    UnknownKey,
    /// Anything else, said in words.
    Invalid(String),
}

/// Verifies `token` against the provider's `keys`, `issuer`, this `client_id` and the `nonce`
/// of the sign-in; the identity it names.
pub(super) fn verify(
    token: &str,
    keys: &JwkSet,
    issuer: &str,
    client_id: &str,
    nonce: &str,
) -> Result<Identity, Refusal> {
    let invalid = |why: String| Refusal::Invalid(why);
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| invalid(format!("malformed: {e}")))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(invalid(format!(
            "algorithm {:?} is not accepted",
            header.alg
        )));
    }
    let jwk = match &header.kid {
        Some(kid) => keys.find(kid),
        // No key id: acceptable only when the provider has exactly one key.
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or(Refusal::UnknownKey)?;
    // A key published for one algorithm is not used with another.
    if let Some(alg) = jwk.common.key_algorithm
        && format!("{alg:?}") != format!("{:?}", header.alg)
    {
        return Err(invalid("the key is for another algorithm".into()));
    }
    let key = DecodingKey::from_jwk(jwk).map_err(|e| invalid(format!("unusable key: {e}")))?;
    let mut validation = Validation::new(header.alg);
    // A multi-tenant template is checked below, against the token's own tenant.
    let template = issuer.contains(super::discovery::TENANT_PLACEHOLDER);
    if !template {
        validation.set_issuer(&[issuer]);
    }
    validation.set_audience(&[client_id]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.leeway = LEEWAY_SECS;
    let data = jsonwebtoken::decode::<Value>(token, &key, &validation)
        .map_err(|e| invalid(format!("{e}")))?;
    let claims = data.claims;
    if template {
        let tenant = claims
            .get("tid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let expected = issuer.replace(super::discovery::TENANT_PLACEHOLDER, tenant);
        if tenant.is_empty()
            || !super::discovery::issuer_matches(issuer, &expected)
            || claims.get("iss").and_then(Value::as_str) != Some(expected.as_str())
        {
            return Err(invalid(
                "the issuer is not the one of its tenant (tid)".into(),
            ));
        }
    }
    if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
        return Err(invalid("the nonce is not this sign-in's".into()));
    }
    let audiences = match claims.get("aud") {
        Some(Value::Array(list)) => list.len(),
        _ => 1,
    };
    match claims.get("azp").and_then(Value::as_str) {
        Some(azp) if azp != client_id => {
            return Err(invalid("it was issued to another party (azp)".into()));
        }
        None if audiences > 1 => {
            return Err(invalid("several audiences and no azp".into()));
        }
        _ => {}
    }
    let now = chrono::Utc::now().timestamp();
    match claims.get("iat").and_then(Value::as_i64) {
        Some(iat) if iat <= now.saturating_add(LEEWAY_SECS as i64) => {}
        Some(_) => return Err(invalid("it was issued in the future (iat)".into())),
        None => return Err(invalid("it has no iat".into())),
    }
    Identity::of(&claims).ok_or_else(|| invalid("it has no sub".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use jsonwebtoken::{EncodingKey, Header};
    use serde_json::json;

    const ISSUER: &str = "https://id.example.com";

    /// A fresh P-256 key: the signing key and the key set a provider would publish.
    fn key(kid: &str) -> (EncodingKey, JwkSet) {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
        let point = pair.public_key().as_ref();
        let (x, y) = point[1..].split_at(32);
        let set = serde_json::from_value(json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y)
        }]}))
        .unwrap();
        (EncodingKey::from_ec_der(pkcs8.as_ref()), set)
    }

    fn sign(key: &EncodingKey, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(&header, claims, key).unwrap()
    }

    fn claims() -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({
            "iss": ISSUER, "aud": "portico", "sub": "u1", "nonce": "n1",
            "iat": now, "exp": now + 300,
            "email": "ann@example.org", "email_verified": true
        })
    }

    fn refused(token: &str, keys: &JwkSet) -> String {
        match verify(token, keys, ISSUER, "portico", "n1") {
            Err(Refusal::Invalid(why)) => why,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_good_token_names_the_identity() {
        let (signing, keys) = key("k1");
        let identity = verify(
            &sign(&signing, "k1", &claims()),
            &keys,
            ISSUER,
            "portico",
            "n1",
        )
        .unwrap();
        assert_eq!(identity.sub, "u1");
        assert_eq!(identity.email.as_deref(), Some("ann@example.org"));
        assert!(identity.email_verified);
    }

    #[test]
    fn issuer_audience_expiry_nonce_and_signature_are_checked() {
        let (signing, keys) = key("k1");
        let with = |field: &str, value: Value| {
            let mut c = claims();
            c[field] = value;
            sign(&signing, "k1", &c)
        };
        assert!(refused(&with("iss", json!("https://evil.example.com")), &keys).contains("Issuer"));
        assert!(refused(&with("aud", json!("someone-else")), &keys).contains("Audience"));
        let past = chrono::Utc::now().timestamp() - 3600;
        assert!(refused(&with("exp", json!(past)), &keys).contains("Expired"));
        assert!(refused(&with("nonce", json!("n2")), &keys).contains("nonce"));
        assert!(refused(&with("azp", json!("other")), &keys).contains("azp"));
        let future = chrono::Utc::now().timestamp() + 3600;
        assert!(refused(&with("iat", json!(future)), &keys).contains("iat"));
        let many = with("aud", json!(["portico", "other"]));
        assert!(refused(&many, &keys).contains("azp"));

        // Signed by a key the provider does not publish under this id.
        let (other, _) = key("k1");
        assert!(
            refused(&sign(&other, "k1", &claims()), &keys).contains("Signature"),
            "a forged signature"
        );
        assert_eq!(
            verify(
                &sign(&other, "k9", &claims()),
                &keys,
                ISSUER,
                "portico",
                "n1"
            ),
            Err(Refusal::UnknownKey)
        );
        // One byte of the payload changed.
        let token = sign(&signing, "k1", &claims());
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut payload = URL_SAFE_NO_PAD.decode(&parts[1]).unwrap();
        let at = payload.iter().position(|b| *b == b'u').unwrap();
        payload[at] = b'v';
        parts[1] = URL_SAFE_NO_PAD.encode(payload);
        assert!(refused(&parts.join("."), &keys).contains("Signature"));
    }

    #[test]
    fn a_tenant_template_takes_the_tokens_own_tenant_only() {
        let template = "https://login.microsoftonline.com/{tenantid}/v2.0";
        let (signing, keys) = key("k1");
        let token = |iss: &str, tid: Option<&str>| {
            let mut c = claims();
            c["iss"] = json!(iss);
            if let Some(tid) = tid {
                c["tid"] = json!(tid);
            }
            sign(&signing, "k1", &c)
        };
        let tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
        let iss = format!("https://login.microsoftonline.com/{tenant}/v2.0");
        let good = verify(&token(&iss, Some(tenant)), &keys, template, "portico", "n1");
        assert_eq!(good.map(|i| i.sub), Ok("u1".to_owned()));
        for (iss, tid) in [
            (iss.as_str(), Some("another-tenant")),
            (iss.as_str(), None),
            ("https://evil.example.com/x/v2.0", Some("x")),
            ("https://login.microsoftonline.com/a/b/v2.0", Some("a/b")),
        ] {
            let refusal = verify(&token(iss, tid), &keys, template, "portico", "n1");
            assert!(
                matches!(&refusal, Err(Refusal::Invalid(why)) if why.contains("tid")),
                "{iss} {tid:?}: {refusal:?}"
            );
        }
    }

    #[test]
    fn unsigned_and_shared_secret_tokens_are_refused() {
        let (_, keys) = key("k1");
        let body = URL_SAFE_NO_PAD.encode(claims().to_string());
        let none = format!(
            "{}.{body}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"k1"}"#)
        );
        assert!(matches!(
            verify(&none, &keys, ISSUER, "portico", "n1"),
            Err(Refusal::Invalid(_))
        ));
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let hs = jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(b"x")).unwrap();
        assert!(refused(&hs, &keys).contains("not accepted"));
    }
}
