//! The one route registry: every path the server answers, with who answers it.
//!
//! Each front-door declaration (a `[[api.collection]]`, an `[[api]]`'s login and batch routes,
//! a script's route, the auto API) and each part of the server itself (health probes,
//! `/metrics`, `/openapi.json`, the account routes under `/auth/`, the admin page) claims its
//! paths here before it is built, and a claim that overlaps another is refused with a message
//! naming both sides. So no two parts can answer one request, and `serve`, `portico check` and
//! `portico routes` refuse the same configs with the same words (they all build the doors
//! through [`super::Doors::build_with`], which fills one registry).
//!
//! A claim is a [`Reach`]: one route (a path pattern, compared as the door matches it, so
//! `/a/:id` and `/a/:key` are one route) or an area (every path at or below a prefix). And it
//! has a [`Strength`]: the server's own parts are *fixed* (axum routes them before any door,
//! so they must not sit inside a door's area unseen), a door's are *door* claims (an `[[api]]`
//! answers every path below its base path, the auto API every path no `[[api]]` does).
//!
//! Two claims of different owners overlap when:
//! - both are routes with the same pattern;
//! - one is a fixed area and the other lies at or below it (a route, or any area);
//! - both are door areas at the same prefix (two `[[api]]` on one base path, an `[[api]]` at
//!   the root beside the auto API);
//! - a door route lies in another door's area that is narrower than its own door's (an auto
//!   API route under an `[[api]]`'s base path, which that API answers wholly).
//!
//! A fixed route inside a door's area is fine (`/healthz` beside an `[[api]]` at the root):
//! the server answers it, and the door cannot declare a route there without overlapping it.

use std::fmt;

use portico_edge::PathPattern;

use crate::config::ConfigError;

/// Who claims a path: a name in words for messages, and the config line and key to report
/// when the claim is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// What claims it, in words (`the [[api.collection]] "items" (line 5)`).
    pub name: String,
    /// The config line to report a refused claim at (1 for the server's own parts).
    pub line: usize,
    /// The config key to report a refused claim at.
    pub key: &'static str,
}

impl Owner {
    /// An owner named `name`, reported at `line` and `key`.
    pub fn new(name: impl Into<String>, line: usize, key: &'static str) -> Owner {
        Owner {
            name: name.into(),
            line,
            key,
        }
    }

    /// A part of the server itself (it has no config line).
    pub fn server(name: impl Into<String>) -> Owner {
        Owner::new(name, 1, "server")
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// What a claim covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// One route: a full path pattern from the root (`/api/items/:id`), or a door's regular
    /// expression (compared as written).
    Route(String),
    /// Every path at or below a prefix (`/auth/`, `/api/v1/`).
    Area(String),
}

/// Whether a claim is the server's own or a front door's (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strength {
    /// The server's own part: routed before any door.
    Fixed,
    /// A front door's declaration; `base` is the prefix of the area its door answers (`/` for
    /// the auto API), so a route in a narrower area of another door is shadowed by it.
    Door,
}

/// One claim: what it covers, how strongly, by whom, and (for a door route) its door's area.
#[derive(Debug, Clone)]
struct Claim {
    /// The reach in the form claims are compared in (see [`normal`]).
    reach: Reach,
    /// The path as the owner gave it, for messages.
    text: String,
    strength: Strength,
    /// For a door's route, the prefix of the area its own door answers.
    home: String,
    owner: OwnerId,
}

/// An owner as the registry knows it: two owners are two even when their names are alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerId(usize);

/// Two owners claiming one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    /// The owner whose claim was refused.
    pub owner: Owner,
    /// The message naming both sides.
    pub message: String,
}

impl Clash {
    /// The clash as a mistake in the config, at the refused owner's line and key.
    pub(crate) fn refusal(self) -> ConfigError {
        ConfigError {
            line: self.owner.line,
            column: 1,
            key: self.owner.key.to_owned(),
            message: self.message,
        }
    }
}

/// Every claim so far; see the module docs.
#[derive(Debug, Default)]
pub struct Registry {
    owners: Vec<Owner>,
    claims: Vec<Claim>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Makes `owner` known, for its claims.
    pub fn owner(&mut self, owner: Owner) -> OwnerId {
        self.owners.push(owner);
        OwnerId(self.owners.len() - 1)
    }

    /// Claims a route or area for a part of the server itself.
    ///
    /// # Errors
    /// [`Clash`] when it overlaps a claim of another owner; nothing is claimed then.
    pub fn server(&mut self, reach: Reach, owner: OwnerId) -> Result<(), Clash> {
        self.claim(reach, Strength::Fixed, "/", owner)
    }

    /// Claims a route or area for a front door whose own area is `home` (its base path).
    ///
    /// # Errors
    /// [`Clash`] when it overlaps a claim of another owner; nothing is claimed then.
    pub fn door(&mut self, reach: Reach, home: &str, owner: OwnerId) -> Result<(), Clash> {
        self.claim(reach, Strength::Door, home, owner)
    }

    fn claim(
        &mut self,
        reach: Reach,
        strength: Strength,
        home: &str,
        owner: OwnerId,
    ) -> Result<(), Clash> {
        let text = match &reach {
            Reach::Route(p) | Reach::Area(p) => p.clone(),
        };
        let claim = Claim {
            reach: normal(reach),
            text,
            strength,
            home: area_key(home),
            owner,
        };
        if let Some(message) = self
            .claims
            .iter()
            .filter(|c| c.owner != claim.owner)
            .find_map(|c| overlap(c, &claim, &self.owners))
        {
            return Err(Clash {
                owner: self.owners[claim.owner.0].clone(),
                message,
            });
        }
        self.claims.push(claim);
        Ok(())
    }
}

/// A reach in the form claims are compared in: a route by its pattern's key (parameter names
/// dropped), an area by its prefix without a trailing slash (`/` is the empty prefix).
fn normal(reach: Reach) -> Reach {
    match reach {
        Reach::Route(path) => match PathPattern::parse(&path) {
            Ok(pattern) => Reach::Route(pattern.key().to_owned()),
            // A door refuses a pattern it cannot parse itself; compare it as written.
            Err(_) => Reach::Route(path),
        },
        Reach::Area(prefix) => Reach::Area(area_key(&prefix)),
    }
}

fn area_key(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
}

/// True when `path` (a route key or area key) is at or below the area `prefix`.
fn within(path: &str, prefix: &str) -> bool {
    prefix.is_empty()
        || path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Why `new` overlaps `old`, or `None`.
fn overlap(old: &Claim, new: &Claim, owners: &[Owner]) -> Option<String> {
    use Reach::{Area, Route};
    use Strength::{Door, Fixed};
    let (o, n) = (&owners[old.owner.0], &owners[new.owner.0]);
    match (&old.reach, &new.reach) {
        (Route(a), Route(b)) => (a == b).then(|| {
            let alike = if old.text == new.text {
                String::new()
            } else {
                format!(" (as {})", old.text)
            };
            format!(
                "two routes on one path: {} of {n} is answered already by {o}{alike}",
                new.text
            )
        }),
        (Area(a), Area(b)) => {
            let nested = match (old.strength, new.strength) {
                (Fixed, Fixed) => within(a, b) || within(b, a),
                (Fixed, Door) => within(b, a),
                (Door, Fixed) => within(a, b),
                (Door, Door) => a == b,
            };
            nested.then(|| {
                format!(
                    "two routes on one path: {n} answers every path below {}, and {o} every path below {}",
                    new.text, old.text
                )
            })
        }
        (Area(_), Route(_)) => area_over_route(old, new, owners),
        (Route(_), Area(_)) => area_over_route(new, old, owners),
    }
}

/// Why the route of `route` lies in the area of `area`, or `None`: any route in the server's
/// own area; a door's route in another door's area narrower than its own door's (which
/// answers it first).
fn area_over_route(area: &Claim, route: &Claim, owners: &[Owner]) -> Option<String> {
    let (Reach::Area(prefix), Reach::Route(path)) = (&area.reach, &route.reach) else {
        return None;
    };
    if !within(path, prefix) {
        return None;
    }
    let (a, r) = (&owners[area.owner.0], &owners[route.owner.0]);
    match (area.strength, route.strength) {
        (Strength::Fixed, _) => Some(format!(
            "two routes on one path: {} of {r} is under {}, which {a} answers wholly",
            route.text, area.text
        )),
        (Strength::Door, Strength::Door) if prefix.len() > route.home.len() => Some(format!(
            "two routes on one path: {} of {r} is under the base path {} of {a}, which answers every path below it",
            route.text, area.text
        )),
        (Strength::Door, _) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry with owners of these names known, in that order.
    fn registry(names: &[&str]) -> (Registry, Vec<OwnerId>) {
        let mut r = Registry::new();
        let ids = names
            .iter()
            .map(|n| r.owner(Owner::new(*n, 7, "k")))
            .collect();
        (r, ids)
    }

    fn route(p: &str) -> Reach {
        Reach::Route(p.to_owned())
    }

    fn area(p: &str) -> Reach {
        Reach::Area(p.to_owned())
    }

    #[test]
    fn one_pattern_twice_is_refused_naming_both() {
        let (mut r, id) = registry(&["A", "B", "C"]);
        assert!(r.door(route("/api/a/:id"), "/api/", id[0]).is_ok());
        let Err(clash) = r.door(route("/api/a/:key"), "/api/", id[1]) else {
            panic!("accepted")
        };
        assert_eq!(clash.owner.name, "B");
        assert_eq!(
            clash.message,
            "two routes on one path: /api/a/:key of B is answered already by A (as /api/a/:id)"
        );
        // One owner may claim a path again (under another method).
        assert!(r.door(route("/api/a/:id"), "/api/", id[0]).is_ok());
        assert!(r.door(route("/api/a/count"), "/api/", id[2]).is_ok());
    }

    #[test]
    fn two_owners_of_one_name_are_two() {
        let (mut r, id) = registry(&["the [[api]] at line 1", "the [[api]] at line 1"]);
        assert!(r.door(area("/api/"), "/api/", id[0]).is_ok());
        assert!(r.door(area("/api/"), "/api/", id[1]).is_err());
    }

    #[test]
    fn a_fixed_area_refuses_everything_below_it() {
        let (mut r, id) = registry(&["auth", "auto", "api", "admin", "root api"]);
        assert!(r.server(area("/auth/"), id[0]).is_ok());
        let clash = r.door(route("/auth/:id"), "/", id[1]);
        assert!(
            clash.is_err_and(|c| c.message
                == "two routes on one path: /auth/:id of auto is under /auth/, which auth answers wholly")
        );
        assert!(r.door(route("/auth"), "/", id[1]).is_err());
        assert!(r.door(area("/auth/"), "/auth/", id[2]).is_err());
        assert!(r.server(area("/auth/x/"), id[3]).is_err());
        assert!(r.server(area("/"), id[3]).is_err());
        assert!(r.door(route("/authors"), "/", id[1]).is_ok());
        assert!(r.door(area("/"), "/", id[4]).is_ok());
    }

    #[test]
    fn door_areas_clash_only_on_one_prefix() {
        let (mut r, id) = registry(&["auto", "api", "root api", "api 2"]);
        assert!(r.door(area("/"), "/", id[0]).is_ok());
        assert!(r.door(area("/api/"), "/api/", id[1]).is_ok());
        let clash = r.door(area("/"), "/", id[2]);
        assert!(clash.is_err_and(|c| c.message.contains("root api answers every path below /,")));
        assert!(r.door(area("/api"), "/api/", id[3]).is_err());
        assert!(r.door(area("/api/v2/"), "/api/v2/", id[3]).is_ok());
    }

    #[test]
    fn a_door_route_in_a_narrower_door_area_is_refused() {
        let (mut r, id) = registry(&["auto", "api", "metrics"]);
        assert!(r.door(area("/"), "/", id[0]).is_ok());
        assert!(r.door(area("/api/"), "/api/", id[1]).is_ok());
        assert!(r.door(route("/api/things"), "/api/", id[1]).is_ok());
        let clash = r.door(route("/api/other"), "/", id[0]);
        assert!(clash.is_err_and(|c| c.message.contains("under the base path /api/ of api")));
        assert!(r.door(route("/other"), "/", id[0]).is_ok());
        // A fixed route in a door's area is the server's.
        assert!(r.server(route("/api/metrics"), id[2]).is_ok());
    }
}
