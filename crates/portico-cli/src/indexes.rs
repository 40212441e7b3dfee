//! Sorted indexes of the config (`indexes = [...]` of `[[api.collection]]`, `[auto.indexes]`):
//! made at start when missing, listed, and dropped only on request (`portico indexes drop`).

use portico_platform::Platform;
use portico_store::IndexSpec;

use crate::config::Config;

/// Makes every index the config declares that the database lacks (filling it from the stored
/// documents), logging each one made, and warns about each index the database has that the
/// config no longer declares (it is kept: `portico indexes drop` removes it).
///
/// # Errors
/// [`crate::Error::Setup`] naming the collection and index when one cannot be made (a unique
/// index over stored duplicates, a document with too many values for it, a store failure).
pub async fn ensure(config: &Config, platform: &Platform) -> crate::Result<()> {
    let store = platform.store();
    for (collection, specs) in &config.indexes {
        let present = store
            .sorted_indexes(collection)
            .await
            .map_err(|e| setup(collection, None, &e))?;
        for spec in specs {
            let had = present
                .iter()
                .any(|p| p.fields == spec.fields && (p.unique || !spec.unique));
            if had {
                continue;
            }
            let started = std::time::Instant::now();
            store
                .ensure_sorted_index(collection, spec)
                .await
                .map_err(|e| setup(collection, Some(spec), &e))?;
            tracing::info!(
                collection = collection.as_str(),
                index = %spec,
                ms = started.elapsed().as_millis() as u64,
                "index made"
            );
        }
    }
    for (collection, spec) in undeclared(config, platform).await? {
        tracing::warn!(
            collection = collection.as_str(),
            index = %spec,
            "the database has an index the config does not declare; it is kept and kept up \
             to date (writes pay for it). Drop it with: portico indexes drop --collection {} \
             '{}'",
            collection,
            spec.fields_name()
        );
    }
    Ok(())
}

/// The indexes of the database no `indexes` of the config declares, by collection.
///
/// # Errors
/// [`crate::Error::Setup`] when the database cannot be read.
pub async fn undeclared(
    config: &Config,
    platform: &Platform,
) -> crate::Result<Vec<(String, IndexSpec)>> {
    let mut out = Vec::new();
    for (collection, spec) in in_database(platform).await? {
        let declared = config
            .indexes
            .get(&collection)
            .is_some_and(|specs| specs.iter().any(|s| s.fields == spec.fields));
        if !declared {
            out.push((collection, spec));
        }
    }
    Ok(out)
}

/// Every sorted index of the database, by collection (sorted).
///
/// # Errors
/// [`crate::Error::Setup`] when the database cannot be read.
pub async fn in_database(platform: &Platform) -> crate::Result<Vec<(String, IndexSpec)>> {
    let store = platform.store();
    let collections = store
        .list_collections()
        .await
        .map_err(|e| crate::Error::Setup(format!("cannot list the collections: {e}")))?;
    let mut out = Vec::new();
    for collection in collections {
        let specs = store
            .sorted_indexes(&collection)
            .await
            .map_err(|e| setup(&collection, None, &e))?;
        out.extend(specs.into_iter().map(|s| (collection.clone(), s)));
    }
    Ok(out)
}

/// Drops the index over `fields` (`ownerId,-createdAt`, as `portico indexes list` prints it)
/// of `collection`; false when there was none.
///
/// # Errors
/// [`crate::Error::Usage`] for fields that are no index; store failures.
pub async fn drop(platform: &Platform, collection: &str, fields: &str) -> crate::Result<bool> {
    let spec = IndexSpec::new(fields.split(',').map(str::trim))
        .map_err(|e| crate::Error::Usage(format!("{fields:?} is not an index: {e}")))?;
    platform
        .store()
        .drop_sorted_index(collection, &spec)
        .await
        .map_err(|e| setup(collection, Some(&spec), &e))
}

fn setup(collection: &str, spec: Option<&IndexSpec>, e: &portico_store::Error) -> crate::Error {
    match spec {
        Some(spec) => crate::Error::Setup(format!(
            "collection {collection:?}: cannot make the index {spec}: {e}"
        )),
        None => crate::Error::Setup(format!(
            "collection {collection:?}: cannot read its indexes: {e}"
        )),
    }
}
