//! Checking a call's arguments against its tool's JSON Schema before the tool runs. Each
//! schema is compiled once, when the registry is built; a failed check becomes a message
//! that names every problem and its place, so the model can send a corrected call.

use serde_json::Value;

pub struct ArgumentSchema {
    validator: jsonschema::Validator,
}

impl ArgumentSchema {
    pub fn compile(tool: &str, schema: &Value) -> Result<ArgumentSchema, String> {
        jsonschema::validator_for(schema)
            .map(|validator| ArgumentSchema { validator })
            .map_err(|e| format!("internal error: the schema of `{tool}` does not compile: {e}"))
    }

    /// `Err` with the text the model is told when `args` do not fit.
    pub fn check(&self, tool: &str, args: &Value) -> Result<(), String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .take(5)
            .map(|error| {
                let at = error.instance_path().to_string();
                if at.is_empty() {
                    error.to_string()
                } else {
                    format!("at {at}: {error}")
                }
            })
            .collect();
        if problems.is_empty() {
            return Ok(());
        }
        Err(format!(
            "Invalid arguments for `{tool}`, so it was not run: {}. Check the tool's parameters \
             and call it again.",
            problems.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(error.contains("colour"), "{error}");
        assert!(ArgumentSchema::compile("x", &json!({"type": 12})).is_err());
    }
}
