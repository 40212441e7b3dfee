//! Opening the object store a `[files] store` value names.

use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::prefix::PrefixStore;

use super::FileError;

/// A local directory (created when missing; writes are synced to disk before they count), or
/// `s3://bucket/prefix` with the endpoint, region and keys of the `AWS_*` environment
/// variables (`AWS_ENDPOINT`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_ALLOW_HTTP`...).
pub(crate) fn open(store: &str) -> Result<Arc<dyn ObjectStore>, FileError> {
    if let Some(rest) = store.strip_prefix("s3://") {
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(FileError::Invalid(format!(
                "`{store}` names no bucket: write s3://bucket or s3://bucket/prefix"
            )));
        }
        let s3 = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map_err(|e| FileError::Invalid(format!("the S3 store {store}: {e}")))?;
        let prefix = prefix.trim_matches('/');
        return Ok(if prefix.is_empty() {
            Arc::new(s3)
        } else {
            Arc::new(PrefixStore::new(s3, prefix))
        });
    }
    if store.contains("://") {
        return Err(FileError::Invalid(format!(
            "`{store}`: a files store is a directory or s3://bucket/prefix"
        )));
    }
    std::fs::create_dir_all(store).map_err(|e| {
        FileError::Invalid(format!(
            "the files directory {store} cannot be created: {e}"
        ))
    })?;
    let local = LocalFileSystem::new_with_prefix(store)
        .map_err(|e| FileError::Invalid(format!("the files directory {store}: {e}")))?
        .with_automatic_cleanup(true)
        .with_fsync(true);
    Ok(Arc::new(local))
}
