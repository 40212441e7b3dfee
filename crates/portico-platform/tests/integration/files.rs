//! Files through the platform, as a method or a script uses them: attached and read under the
//! collection's update rules or as server code; and the sweep healing what a crash between an
//! upload's steps left behind.

use std::time::Duration;

use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use object_store::path::Path;
use portico_platform::files::{DownloadOptions, NewFile};
use portico_platform::{FileAccess, FileError, FileField, FileSlot, Files, FilesConfig, Rules};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::TestResult;

fn chunks(bytes: &'static [u8]) -> impl futures::Stream<Item = Result<bytes::Bytes, String>> {
    futures::stream::iter(bytes.chunks(3).map(|c| Ok(bytes::Bytes::from_static(c))))
}

#[tokio::test]
async fn methods_attach_and_read_files_under_the_rules() -> TestResult {
    let (dir, platform) = crate::common::sqlite().await?;
    let files = Files::open(FilesConfig::new(
        dir.path().join("files").display().to_string(),
    ))?;
    files.declare("notes", "att", FileField::new(2))?;
    platform.set_files(files.clone());
    let notes = platform.collection("notes");
    notes.allow(Rules::new().update(|user, doc, _, _| async move {
        user.is_some() && doc.get("owner").and_then(Value::as_str) == user.as_deref()
    }));
    let doc = json!({"owner": "ada"});
    let id = notes.insert(serde_json::from_value(doc)?).await?;
    let slot = FileSlot::new(&notes, &id, "att");

    let ada = FileAccess::Rules(Some("ada".into()));
    let meta = files
        .upload(
            slot,
            NewFile::new("a.txt", None),
            &ada,
            chunks(b"hello files"),
        )
        .await?;
    assert_eq!(meta.sha256, hex::encode(Sha256::digest(b"hello files")));
    let bob = FileAccess::Rules(Some("bob".into()));
    let refused = files
        .upload(slot, NewFile::new("b.txt", None), &bob, chunks(b"x"))
        .await;
    assert!(
        matches!(refused, Err(FileError::AccessDenied)),
        "{refused:?}"
    );
    files
        .upload(
            slot,
            NewFile::new("a.txt", None),
            &FileAccess::Server,
            chunks(b"server"),
        )
        .await?;
    let full = files
        .upload(
            slot,
            NewFile::new("c.txt", None),
            &FileAccess::Server,
            chunks(b"c"),
        )
        .await;
    assert!(matches!(full, Err(FileError::Invalid(_))), "max = 2");

    let stored = notes.get(&id).await?.ok_or("no document")?;
    let names: Vec<&str> = stored["att"]
        .as_array()
        .ok_or("no files")?
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert_eq!(names, ["a.txt", "a-2.txt"]);

    // A client write never changes the metadata, whatever the modifier; other fields it may.
    notes.allow(Rules::new().insert(|_, _| async { true }));
    for modifier in [
        json!({"$set": {"att": []}}),
        json!({"$unset": {"att": 1}}),
        json!({"$push": {"att": {"name": "forged.txt"}}}),
        json!({"$set": {"att.0.sha256": "0"}}),
    ] {
        let refused = notes.client_update(Some("ada"), &id, &modifier).await;
        assert!(
            matches!(refused, Err(portico_platform::Error::FileField(ref f)) if f == "att"),
            "{modifier}: {refused:?}"
        );
    }
    let repeated = json!({"$set": {"title": "t", "att": stored["att"].clone()}});
    assert_eq!(notes.client_update(Some("ada"), &id, &repeated).await?, 1);
    let inserted = notes
        .client_insert(
            Some("ada"),
            serde_json::from_value(json!({"owner": "ada", "att": []}))?,
        )
        .await;
    assert!(
        matches!(inserted, Err(portico_platform::Error::FileField(_))),
        "{inserted:?}"
    );
    assert_eq!(notes.get(&id).await?.ok_or("gone")?["att"], stored["att"]);
    let read = files
        .download(slot, "a-2.txt", &ada, DownloadOptions::default())
        .await?;
    let bytes: Vec<bytes::Bytes> = read.body.try_collect().await?;
    assert_eq!(bytes.concat(), b"server");
    Ok(())
}

#[tokio::test]
async fn the_sweep_heals_what_a_crash_left() -> TestResult {
    let (dir, platform) = crate::common::sqlite().await?;
    let files = Files::open(FilesConfig::new(
        dir.path().join("files").display().to_string(),
    ))?;
    files.declare("notes", "att", FileField::new(3))?;
    platform.set_files(files.clone());
    let notes = platform.collection("notes");
    let id = notes.insert(serde_json::Map::new()).await?;
    let store = files.store();

    // A crash after the metadata commit, before the rename: the bytes are at a temporary key.
    let bytes = b"committed, never made final";
    let sha = hex::encode(Sha256::digest(bytes));
    store
        .put(
            &Path::from(format!("tmp/notes/{id}/att/crashed")),
            bytes.to_vec().into(),
        )
        .await?;
    let meta = json!({"name": "c.txt", "size": bytes.len(), "type": "text/plain", "sha256": sha, "createdAt": "2026-01-01T00:00:00Z"});
    let set = json!({"att": [meta]});
    notes
        .update_by_id(
            &id,
            &portico_platform::Update::set(serde_json::from_value(set)?)?,
        )
        .await?;
    // A crash before the commit: bytes no document names; and a final object left by a
    // document whose removal was not followed by its files' deletion.
    store
        .put(
            &Path::from(format!("tmp/notes/{id}/att/orphan")),
            b"x".to_vec().into(),
        )
        .await?;
    store
        .put(
            &Path::from("f/notes/gone/att/abc-def"),
            b"y".to_vec().into(),
        )
        .await?;

    let slot = FileSlot::new(&notes, &id, "att");
    let before = files
        .download(
            slot,
            "c.txt",
            &FileAccess::Server,
            DownloadOptions::default(),
        )
        .await;
    assert!(matches!(before, Err(FileError::NotFound(_))), "{before:?}");
    let report = files.sweep(&platform, Duration::ZERO).await?;
    assert_eq!((report.finished, report.deleted), (1, 2), "{report:?}");
    let read = files
        .download(
            slot,
            "c.txt",
            &FileAccess::Server,
            DownloadOptions::default(),
        )
        .await?;
    let got: Vec<bytes::Bytes> = read.body.try_collect().await?;
    assert_eq!(got.concat(), bytes);
    let left: Vec<_> = store.list(None).try_collect().await?;
    assert_eq!(left.len(), 1, "{left:?}");
    Ok(())
}

/// The example of docs/platform-api.md ("Files"): a method attaches a file under the update
/// rules of its caller.
#[tokio::test]
async fn a_method_attaches_a_file_for_its_caller() -> TestResult {
    use portico_platform::{MethodError, arg};
    let (dir, platform) = crate::common::sqlite().await?;
    let files = Files::open(FilesConfig::new(
        dir.path().join("files").display().to_string(),
    ))?;
    files.declare("reports", "summary", FileField::new(1))?;
    platform.set_files(files);
    let reports = platform.collection("reports");
    reports.allow(Rules::new().update(|user, doc, _, _| async move {
        user.is_some() && doc.get("owner").and_then(Value::as_str) == user.as_deref()
    }));
    let id = reports
        .insert(serde_json::from_value(json!({"owner": "ada"}))?)
        .await?;

    platform.method("attachSummary", |inv, args| async move {
        let files = inv
            .platform()
            .files()
            .ok_or_else(|| MethodError::new("no-files", "no [files]"))?;
        let id: String = arg(&args, 0)?;
        let text: String = arg(&args, 1)?;
        let reports = inv.platform().collection("reports");
        let body =
            futures::stream::iter([Ok::<_, std::convert::Infallible>(bytes::Bytes::from(text))]);
        let access = FileAccess::Rules(inv.user_id().map(str::to_owned));
        let meta = files
            .upload(
                FileSlot::new(&reports, &id, "summary"),
                NewFile::new("summary.txt", None),
                &access,
                body,
            )
            .await?;
        Ok(meta.to_json())
    })?;

    let reply = platform
        .call(
            "attachSummary",
            Some("ada".into()),
            vec![json!(id), json!("all good")],
        )
        .await?;
    assert_eq!(reply.value["name"], "summary.txt");
    assert_eq!(reply.value["size"], 8);
    let refused = platform
        .call(
            "attachSummary",
            Some("bob".into()),
            vec![json!(id), json!("x")],
        )
        .await;
    assert!(
        matches!(&refused, Err(e) if e.error == "access-denied" && e.status == Some(403)),
        "{refused:?}"
    );
    Ok(())
}
