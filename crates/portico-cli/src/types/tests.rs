use serde_json::json;

use super::*;

fn tasks_app() -> AppShape {
    let tasks = CollectionShape {
        name: "tasks".to_owned(),
        schema: Some(json!({
            "type": "object",
            "required": ["title"],
            "properties": {
                "title": {"type": "string"},
                "done": {"type": "boolean"},
                "priority": {"enum": ["low", "high"]},
                "estimate": {"type": ["number", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "project": {"type": "string"},
                "meta": {"$ref": "#/$defs/meta"},
                "created-by": {"type": "string"}
            },
            "$defs": {"meta": {"type": "object", "properties": {"n": {"type": "integer"}}}}
        })),
        relations: vec![("project".to_owned(), "projects".to_owned())],
        files: vec![
            ("cover".to_owned(), false),
            ("attachments".to_owned(), true),
        ],
        owner_field: Some("ownerId".to_owned()),
        timestamps: true,
    };
    let projects = CollectionShape {
        name: "projects".to_owned(),
        timestamps: false,
        ..CollectionShape::default()
    };
    AppShape {
        collections: vec![projects, tasks],
        methods: vec!["tasks.add".to_owned()],
        publications: vec!["openTasks".to_owned()],
        routes: [(
            "/api/tasks/:id".to_owned(),
            ["GET".to_owned(), "PATCH".to_owned()].into(),
        )]
        .into(),
    }
}

#[test]
fn typescript_types_each_field_from_the_schema_and_the_config() {
    let text = typescript(&tasks_app(), "portico.toml");
    for line in [
        "export interface Tasks {",
        "  _id: string;",
        "  title: string;",
        "  done?: boolean;",
        "  priority?: \"low\" | \"high\";",
        "  estimate?: number | null;",
        "  tags?: string[];",
        "  project?: string;",
        "  \"created-by\"?: string;",
        "    n?: number;",
        "  ownerId?: string;",
        "  cover?: PorticoFile;",
        "  attachments?: PorticoFile[];",
        "  createdAt: string;",
        "    project?: Projects;",
        "    tasks: Tasks;",
        "    \"tasks.add\": unknown;",
        "    openTasks: unknown;",
        "    \"/api/tasks/:id\": \"GET\" | \"PATCH\";",
        "declare module 'portico-client' {",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in\n{text}"
        );
    }
    // A schema closes the document (a misspelt field is an error); no schema leaves it open.
    let tasks = text
        .split("export interface Tasks")
        .nth(1)
        .unwrap_or_default();
    let tasks = tasks.split("\n}\n").next().unwrap_or_default();
    assert!(!tasks.contains("[key: string]"), "{tasks}");
    let projects = text
        .split("export interface Projects")
        .nth(1)
        .unwrap_or_default();
    let projects = projects.split("\n}\n").next().unwrap_or_default();
    assert!(projects.contains("[key: string]: unknown;"), "{projects}");
    assert!(!projects.contains("createdAt"), "{projects}");
}

#[test]
fn python_types_are_typed_dicts_any_key_can_name() {
    let text = python(&tasks_app(), "portico.toml");
    for line in [
        "Tasks = TypedDict(",
        "        \"_id\": NotRequired[str],",
        "        \"title\": Required[str],",
        "        \"done\": NotRequired[bool],",
        "        \"priority\": NotRequired[Literal[\"low\"] | Literal[\"high\"]],",
        "        \"estimate\": NotRequired[float | None],",
        "        \"tags\": NotRequired[list[str]],",
        "        \"created-by\": NotRequired[str],",
        "        \"meta\": NotRequired[dict[str, Any]],",
        "        \"cover\": NotRequired[\"PorticoFile\"],",
        "        \"attachments\": NotRequired[\"list[PorticoFile]\"],",
        "        \"expand\": NotRequired[\"TasksExpand\"],",
        "        \"project\": NotRequired[\"Projects\"],",
        "    \"tasks\": Tasks,",
        "    \"tasks.add\",",
        "    \"/api/tasks/:id\": (\"GET\", \"PATCH\",),",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in\n{text}"
        );
    }
}

#[test]
fn type_names_stay_unique_and_valid() {
    let mut taken = BTreeSet::from(["PorticoFile".to_owned()]);
    assert_eq!(type_name("blog-posts", &mut taken), "BlogPosts");
    assert_eq!(type_name("blog_posts", &mut taken), "BlogPosts2");
    assert_eq!(type_name("9lives", &mut taken), "C9lives");
    assert_eq!(type_name("PorticoFile", &mut taken), "PorticoFile2");
    assert_eq!(type_name("---", &mut taken), "C");
}

#[test]
fn a_self_referencing_schema_ends_in_unknown() {
    let schema = json!({"$ref": "#"});
    assert_eq!(
        schema::from_schema(&schema, &schema, 0),
        schema::Ty::Unknown
    );
}
