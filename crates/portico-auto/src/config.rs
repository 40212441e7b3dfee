//! The spec's `AutoApi.configure` options.

/// Which collections get write endpoints, and which use object ids.
///
/// ```
/// use portico_auto::AutoConfig;
///
/// // Endpoints for `todos` and `lists` only; `lists` ids are 24-hex object ids.
/// let config = AutoConfig::default()
///     .collections(vec!["todos".into(), "lists".into()])
///     .object_id_collections(["lists"]);
/// assert!(config.is_object_id_collection("lists"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AutoConfig {
    /// Names of the collections that get `POST /<name>`, `PATCH /<name>/:_id` and
    /// `DELETE /<name>/:_id`. `None` (the default) means every declared collection, including
    /// ones declared after the router was built; `Some(vec![])` means none.
    pub collections: Option<Vec<String>>,
    /// Names of the collections whose ids are object ids (24 hexadecimal characters): an id in
    /// the path that is not one is refused with 400, and inserts without an `_id` get a new
    /// object id. Collections declared on the platform with `IdKind::ObjectId` are treated so
    /// whether listed here or not.
    pub object_id_collections: Vec<String>,
    /// Who may read the documents of each collection when a publication's reply expands a
    /// relation into it (`?expand=`): collection -> rules, any one passing
    /// (`owner:FIELD` reads only the caller's documents). A collection not listed is never
    /// expanded on this door; the collection's field rules apply to what is shown.
    pub read: Vec<(String, Vec<portico_platform::ReadRule>)>,
    /// Collections whose write endpoints refuse a request with 401 when its login token finds
    /// no user (unknown, expired, logged out, or another user than its `X-User-Id`), instead of
    /// running it anonymous as they do by default (`auth = "optional"` in the server's config).
    /// A request without a token is anonymous either way; a valid one is always its user's.
    pub auth_optional_collections: Vec<String>,
    /// The same for publications, by name.
    pub auth_optional_publications: Vec<String>,
}

impl AutoConfig {
    /// Sets [`collections`](AutoConfig::collections): names of the collections that get `POST
    /// /<name>`, `PATCH /<name>/:_id` and `DELETE /<name>/:_id` (to `Some`).
    pub fn collections(mut self, collections: Vec<String>) -> Self {
        self.collections = Some(collections);
        self
    }

    /// Sets [`object_id_collections`](AutoConfig::object_id_collections): names of the collections
    /// whose ids are object ids (24 hexadecimal characters).
    pub fn object_id_collections<S: Into<String>>(
        mut self,
        object_id_collections: impl IntoIterator<Item = S>,
    ) -> Self {
        self.object_id_collections = object_id_collections.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`read`](AutoConfig::read): who may read the documents of each collection when a
    /// publication's reply expands a relation into it (`?expand=`).
    pub fn read(mut self, read: Vec<(String, Vec<portico_platform::ReadRule>)>) -> Self {
        self.read = read;
        self
    }

    /// Sets [`auth_optional_collections`](AutoConfig::auth_optional_collections): collections whose
    /// write endpoints refuse a request with 401 when its login token finds no user (unknown,
    /// expired, logged out, or another user than its `X-User-Id`), instead of running it anonymous
    /// as they do by default (`auth = "optional"` in the server's config).
    pub fn auth_optional_collections<S: Into<String>>(
        mut self,
        auth_optional_collections: impl IntoIterator<Item = S>,
    ) -> Self {
        self.auth_optional_collections = auth_optional_collections
            .into_iter()
            .map(Into::into)
            .collect();
        self
    }

    /// Sets [`auth_optional_publications`](AutoConfig::auth_optional_publications): the same for
    /// publications, by name.
    pub fn auth_optional_publications<S: Into<String>>(
        mut self,
        auth_optional_publications: impl IntoIterator<Item = S>,
    ) -> Self {
        self.auth_optional_publications = auth_optional_publications
            .into_iter()
            .map(Into::into)
            .collect();
        self
    }
}

impl AutoConfig {
    /// The read rules of `collection` (see [`AutoConfig::read`]); empty when it has none.
    pub fn read_rules(&self, collection: &str) -> &[portico_platform::ReadRule] {
        self.read
            .iter()
            .find(|(name, _)| name == collection)
            .map_or(&[], |(_, rules)| rules.as_slice())
    }

    /// True when `name` is listed in [`AutoConfig::object_id_collections`].
    pub fn is_object_id_collection(&self, name: &str) -> bool {
        self.object_id_collections.iter().any(|n| n == name)
    }

    /// Of the `declared` collections, those that get endpoints, in declaration-list order.
    pub(crate) fn collections_with_endpoints(&self, declared: &[String]) -> Vec<String> {
        match &self.collections {
            None => declared.to_vec(),
            Some(wanted) => declared
                .iter()
                .filter(|name| wanted.contains(name))
                .cloned()
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collections_option_filters_declared_ones() {
        let declared = vec!["a".to_owned(), "b".to_owned()];
        let all = AutoConfig::default();
        assert_eq!(all.collections_with_endpoints(&declared), declared);
        let none = AutoConfig {
            collections: Some(vec![]),
            ..AutoConfig::default()
        };
        assert!(none.collections_with_endpoints(&declared).is_empty());
        let some = AutoConfig {
            collections: Some(vec!["b".into(), "zzz".into()]),
            ..AutoConfig::default()
        };
        assert_eq!(
            some.collections_with_endpoints(&declared),
            vec!["b".to_owned()]
        );
    }
}
