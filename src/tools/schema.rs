//! Checking a call's arguments against its tool's JSON Schema before the tool runs. Each
//! schema is compiled once, when the registry is built; a failed check becomes a message
//! that names every problem and its place, so the model can send a corrected call.
//!
//! Schemas come from MCP servers too, so compiling one reads nothing but the schema itself:
//! a `$ref` to anything outside it (`http://…`, `file://…`, a relative name) is an error,
//! never a fetch. `format` is checked as JSON Schema's drafts say by default: an annotation
//! in 2019-09 and 2020-12 (the draft of a schema without `$schema`), an assertion in
//! draft 7 and earlier.

use boon::{CompileError, Compiler, Draft, ErrorKind, SchemaIndex, Schemas, UrlLoader};
use serde_json::Value;

/// The most problems one message names.
const MOST_PROBLEMS: usize = 5;

/// Where a tool's schema is placed while it compiles: its own `$ref`s resolve against it,
/// and anything else it names is refused by `NoFetching`.
const SCHEMA_LOCATION: &str = "urn:agent:tool-schema";

pub struct ArgumentSchema {
    schemas: Schemas,
    index: SchemaIndex,
}

/// The loader for every schema a tool's schema names outside itself: none is read.
struct NoFetching;

impl UrlLoader for NoFetching {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("a reference outside the schema ({url}) is not followed").into())
    }
}

impl ArgumentSchema {
    pub fn compile(tool: &str, schema: &Value) -> Result<ArgumentSchema, String> {
        let fail = |error: CompileError| {
            let why = match &error {
                CompileError::ValidationError { src, .. } => {
                    format!(
                        "it is not a valid JSON Schema: {}",
                        problems(src, schema).join("; ")
                    )
                }
                other => format!("{other:#}"),
            };
            // One line: a regex's parse error comes with a drawing of where it failed.
            let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
            format!("internal error: the schema of `{tool}` does not compile: {why}")
        };
        let mut compiler = Compiler::new();
        compiler.set_default_draft(Draft::V2020_12);
        compiler.use_loader(Box::new(NoFetching));
        compiler
            .add_resource(SCHEMA_LOCATION, schema.clone())
            .map_err(fail)?;
        let mut schemas = Schemas::new();
        let index = compiler
            .compile(SCHEMA_LOCATION, &mut schemas)
            .map_err(fail)?;
        // `{"$ref": "#"}` and the like compile, then refuse every value; found here, on a
        // value that cannot enter a subschema, so it is a schema that does not compile.
        if let Err(error) = schemas.validate(&Value::Null, index)
            && has_reference_cycle(&error)
        {
            return Err(format!(
                "internal error: the schema of `{tool}` does not compile: its references \
                 form a cycle"
            ));
        }
        Ok(ArgumentSchema { schemas, index })
    }

    /// `Err` with the text the model is told when `args` do not fit.
    pub fn check(&self, tool: &str, args: &Value) -> Result<(), String> {
        // `index` came from `schemas`, so `validate` (which panics on a foreign index)
        // cannot panic here.
        let Err(error) = self.schemas.validate(args, self.index) else {
            return Ok(());
        };
        Err(format!(
            "Invalid arguments for `{tool}`, so it was not run: {}. Check the tool's parameters \
             and call it again.",
            problems(&error, args).join("; ")
        ))
    }
}

fn has_reference_cycle(error: &boon::ValidationError) -> bool {
    matches!(error.kind, ErrorKind::RefCycle { .. }) || error.causes.iter().any(has_reference_cycle)
}

/// The first few problems of a failed check of `instance`, each with its place in it (a
/// JSON pointer; none for the whole). The validator's error is a tree: the problems are its
/// leaves, except that a failed `anyOf`, `oneOf`, `not` or `propertyNames` is one problem
/// (what each alternative missed would bury the others).
fn problems(error: &boon::ValidationError, instance: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect(error, instance, &mut found);
    found
}

fn collect(error: &boon::ValidationError, instance: &Value, found: &mut Vec<String>) {
    if found.len() >= MOST_PROBLEMS {
        return;
    }
    let whole = matches!(
        error.kind,
        ErrorKind::AnyOf | ErrorKind::OneOf(_) | ErrorKind::Not | ErrorKind::PropertyName { .. }
    );
    if !whole && !error.causes.is_empty() {
        for cause in &error.causes {
            collect(cause, instance, found);
        }
        return;
    }
    let at = error.instance_location.to_string();
    let what = describe(&error.kind, instance.pointer(&at));
    found.push(if at.is_empty() {
        what
    } else {
        format!("at {at}: {what}")
    });
}

/// What is wrong, for the model: the wording of the common problems as the model has seen
/// it from other JSON Schema validators, the validator's own for the rest.
fn describe(kind: &ErrorKind, value: Option<&Value>) -> String {
    match kind {
        ErrorKind::Required { want } => match want.as_slice() {
            [one] => format!("{} is a required property", quoted(one)),
            many => format!("{} are required properties", quoted_list(many)),
        },
        ErrorKind::AdditionalProperties { got } => {
            let names: Vec<&str> = got.iter().map(|name| name.as_ref()).collect();
            let verb = if names.len() == 1 { "was" } else { "were" };
            format!(
                "Additional properties are not allowed ({} {verb} unexpected)",
                quoted_list(&names)
            )
        }
        ErrorKind::Type { want, .. } => {
            let types: Vec<String> = want.iter().map(|t| quoted(&t.to_string())).collect();
            let value = value.map_or_else(|| "the value".to_string(), snippet);
            format!("{value} is not of type {}", types.join(" or "))
        }
        ErrorKind::AnyOf => "matches none of the alternatives its schema allows (anyOf)".into(),
        ErrorKind::OneOf(None) => {
            "matches none of the alternatives its schema allows (oneOf)".into()
        }
        ErrorKind::OneOf(Some((first, second))) => format!(
            "matches more than one of the alternatives its schema allows (oneOf: {first} and \
             {second}) and must match exactly one"
        ),
        ErrorKind::Not => "matches a schema it must not match (not)".into(),
        ErrorKind::FalseSchema => "is not allowed here".into(),
        other => other.to_string(),
    }
}

fn quoted(name: &str) -> String {
    Value::from(name).to_string()
}

fn quoted_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| quoted(name)).collect();
    quoted.join(", ")
}

/// A value as JSON, cut short if long (the model sent it; it needs to recognise it, not to
/// read it again).
fn snippet(value: &Value) -> String {
    const MOST_CHARS: usize = 60;
    let text = value.to_string();
    match text.char_indices().nth(MOST_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::ErrorKind as IoErrorKind;
    use std::net::TcpListener;

    fn compile_error(tool: &str, schema: &Value) -> String {
        match ArgumentSchema::compile(tool, schema) {
            Ok(_) => panic!("compiled: {schema}"),
            Err(error) => error,
        }
    }

    #[test]
    fn names_each_problem_and_where_it_is() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}},
                    "required": ["oldText"]
                }}
            },
            "required": ["path"],
            "additionalProperties": false
        });
        let schema = ArgumentSchema::compile("edit", &schema).unwrap();
        assert!(schema.check("edit", &json!({"path": "a"})).is_ok());
        let error = schema
            .check("edit", &json!({"edits": [{"newText": 1}], "colour": 1}))
            .unwrap_err();
        assert!(error.starts_with("Invalid arguments for `edit`"), "{error}");
        assert!(error.contains("\"path\" is a required property"), "{error}");
        assert!(
            error.contains("at /edits/0: \"oldText\" is a required property"),
            "{error}"
        );
        assert!(error.contains("(\"colour\" was unexpected)"), "{error}");
        let error = schema.check("edit", &json!({"path": 12})).unwrap_err();
        assert!(
            error.contains("at /path: 12 is not of type \"string\""),
            "{error}"
        );
    }

    #[test]
    fn names_at_most_five_problems() {
        let properties: serde_json::Map<String, Value> = (0..8)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let schema = ArgumentSchema::compile("many", &schema).unwrap();
        let args: serde_json::Map<String, Value> =
            (0..8).map(|i| (format!("p{i}"), json!(i))).collect();
        let error = schema.check("many", &Value::Object(args)).unwrap_err();
        assert_eq!(error.matches("is not of type").count(), 5, "{error}");
    }

    /// pydantic writes nested models as `$defs` and `$ref`s (draft 7's `definitions` in
    /// older versions); a problem inside one is placed where it is in the arguments.
    #[test]
    fn follows_references_inside_the_schema() {
        let pydantic = json!({
            "$defs": {
                "Item": {
                    "properties": {
                        "name": {"title": "Name", "type": "string"},
                        "size": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}
                    },
                    "required": ["name"],
                    "title": "Item",
                    "type": "object"
                }
            },
            "properties": {
                "items": {"items": {"$ref": "#/$defs/Item"}, "title": "Items", "type": "array"}
            },
            "required": ["items"],
            "title": "addArguments",
            "type": "object"
        });
        let schema = ArgumentSchema::compile("add", &pydantic).unwrap();
        assert!(
            schema
                .check(
                    "add",
                    &json!({"items": [{"name": "a", "size": 1}, {"name": "b"}]})
                )
                .is_ok()
        );
        let error = schema
            .check("add", &json!({"items": [{"name": "a"}, {"size": "big"}]}))
            .unwrap_err();
        assert!(
            error.contains("at /items/1: \"name\" is a required property"),
            "{error}"
        );
        assert!(error.contains("at /items/1/size: "), "{error}");

        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"Point": {"type": "object", "required": ["x"]}},
            "type": "object",
            "properties": {"at": {"$ref": "#/definitions/Point"}}
        });
        let schema = ArgumentSchema::compile("move", &draft7).unwrap();
        assert!(schema.check("move", &json!({"at": {"x": 1}})).is_ok());
        let error = schema.check("move", &json!({"at": {}})).unwrap_err();
        assert!(
            error.contains("at /at: \"x\" is a required property"),
            "{error}"
        );
    }

    /// `format` is what JSON Schema's drafts make it by default: an annotation in 2020-12
    /// (also for a schema without `$schema`) and 2019-09, an assertion in draft 7.
    #[test]
    fn format_is_asserted_only_where_the_draft_says_so() {
        let formats = json!({
            "email": "not an address",
            "date-time": "yesterday",
            "uri": "no uri",
            "ipv4": "1.2.3",
            "uuid": "nope"
        });
        let properties: serde_json::Map<String, Value> = formats
            .as_object()
            .unwrap()
            .keys()
            .map(|format| (format.clone(), json!({"type": "string", "format": format})))
            .collect();
        for (dialect, asserted) in [
            (None, false),
            (Some("https://json-schema.org/draft/2020-12/schema"), false),
            (Some("https://json-schema.org/draft/2019-09/schema"), false),
            (Some("http://json-schema.org/draft-07/schema#"), true),
        ] {
            let mut schema = json!({"type": "object", "properties": properties.clone()});
            if let Some(dialect) = dialect {
                schema["$schema"] = json!(dialect);
            }
            let schema = ArgumentSchema::compile("f", &schema).unwrap();
            let checked = schema.check("f", &formats);
            assert_eq!(checked.is_err(), asserted, "{dialect:?}: {checked:?}");
        }
    }

    /// A hostile MCP server's schema must not make us fetch anything: every reference out
    /// of the schema (and a meta-schema of its own) is an error, and nothing is connected
    /// to or read.
    #[test]
    fn a_reference_outside_the_schema_is_refused_not_fetched() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());

        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.json");
        std::fs::write(&target, r#"{"type": "string"}"#).unwrap();
        let file_url = url::Url::from_file_path(&target).unwrap().to_string();
        let dir_url = url::Url::from_directory_path(dir.path())
            .unwrap()
            .to_string();

        let hostile = [
            json!({"properties": {"a": {"$ref": format!("{base}/schema.json")}}}),
            json!({"$id": format!("{base}/root.json"), "properties": {"a": {"$ref": "other.json"}}}),
            json!({"$schema": format!("{base}/meta.json"), "type": "object"}),
            json!({"properties": {"a": {"$ref": file_url}}}),
            json!({"$id": format!("{dir_url}root.json"), "properties": {"a": {"$ref": "target.json"}}}),
            json!({"properties": {"a": {"$ref": "target.json"}}}),
        ];
        for schema in hostile {
            let error = compile_error("mcp__evil__x", &schema);
            assert!(
                error.contains("the schema of `mcp__evil__x` does not compile"),
                "{error}"
            );
        }
        match listener.accept() {
            Err(error) if error.kind() == IoErrorKind::WouldBlock => {}
            Err(error) => panic!("accept: {error}"),
            Ok((_, from)) => panic!("the validator connected to the schema's host from {from}"),
        }
    }

    #[test]
    fn a_schema_that_is_not_json_schema_is_an_error_naming_the_tool_and_the_problem() {
        let error = compile_error("broken", &json!({"type": 12}));
        assert!(
            error.contains("the schema of `broken` does not compile"),
            "{error}"
        );
        assert!(error.contains("/type"), "{error}");
        let error = compile_error(
            "broken",
            &json!({"properties": {"a": {"$ref": "#/$defs/none"}}}),
        );
        assert!(error.contains("`broken`"), "{error}");
        // References that go round in a circle without entering the value would refuse
        // every call; a reference back to the root through a property is recursion.
        for cycle in [
            json!({"$ref": "#"}),
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
        ] {
            let error = compile_error("circular", &cycle);
            assert!(error.contains("cycle"), "{error}");
        }
        let tree = json!({"type": "object", "properties": {"child": {"$ref": "#"}, "n": {"type": "integer"}}});
        let tree = ArgumentSchema::compile("tree", &tree).unwrap();
        assert!(
            tree.check("tree", &json!({"child": {"child": {"n": 1}}}))
                .is_ok()
        );
        let error = tree
            .check("tree", &json!({"child": {"child": {"n": "one"}}}))
            .unwrap_err();
        assert!(
            error.contains("at /child/child/n: \"one\" is not of type \"integer\""),
            "{error}"
        );
    }

    /// A tool declared by an MCP server, for the registration path.
    struct Declared(&'static str, Value);

    impl crate::tools::Tool for Declared {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "declared"
        }
        fn parameters(&self) -> Value {
            self.1.clone()
        }
        fn read_only(&self) -> bool {
            true
        }
        fn execute(
            &self,
            _: Value,
            _: crate::tools::ToolContext,
        ) -> futures_util::future::BoxFuture<'static, crate::tools::ToolOutput> {
            Box::pin(async { crate::tools::ToolOutput::error("not run in this test") })
        }
    }

    /// A server's tool whose schema does not compile (here: one that names a schema on
    /// the network) is kept, its calls unchecked (the server checks them); the others
    /// are checked as before. A tool of our own with such a schema is an error.
    #[test]
    fn a_schema_that_does_not_compile_affects_that_tool_only() {
        use crate::tools::{Tool, Tools};
        use std::sync::Arc;
        let declared: Vec<Arc<dyn Tool>> = vec![
            Arc::new(Declared("mcp__s__bad", json!({"type": 12}))),
            Arc::new(Declared(
                "mcp__s__remote",
                json!({"$ref": "http://127.0.0.1:9/schema.json"}),
            )),
            Arc::new(Declared(
                "mcp__s__good",
                json!({"type": "object", "required": ["x"]}),
            )),
        ];
        let tools = Tools::from_names(&["read"])
            .unwrap()
            .with_external(&declared);
        assert_eq!(
            tools.names(),
            ["read", "mcp__s__bad", "mcp__s__remote", "mcp__s__good"]
        );
        assert!(tools.validate("mcp__s__bad", &json!({"a": 1})).is_ok());
        assert!(tools.validate("mcp__s__remote", &json!({"a": 1})).is_ok());
        assert!(tools.validate("mcp__s__good", &json!({"x": 1})).is_ok());
        let error = tools.validate("mcp__s__good", &json!({})).unwrap_err();
        assert!(error.contains("\"x\" is a required property"), "{error}");
        assert!(tools.validate("read", &json!({})).is_err());

        let own = Tools::from_names(&["read"])
            .unwrap()
            .with_tool(Arc::new(Declared("mine", json!({"type": 12}))));
        match own {
            Ok(_) => panic!("a tool of our own with a broken schema was taken"),
            Err(error) => assert!(error.contains("`mine`"), "{error}"),
        }
    }
}
