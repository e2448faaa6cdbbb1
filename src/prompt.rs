//! The system prompt: the template in `assets/` filled with the tools, working directory
//! and date (or the user's replacement), then the project's context files, the skills
//! (names, descriptions and paths only), then anything appended.

use std::path::Path;

const TEMPLATE: &str = include_str!("../assets/system_prompt.md");

pub fn system_prompt(
    replacement: Option<&str>,
    append: Option<&str>,
    tools: &[&str],
    cwd: &Path,
    context_files: &[crate::context_files::ContextFile],
    skills: &[crate::extensions::skills::Skill],
) -> String {
    let mut prompt = match replacement {
        Some(text) => text.to_string(),
        None => TEMPLATE
            .replace(
                "{tools}",
                &if tools.is_empty() {
                    "none".to_string()
                } else {
                    tools.join(", ")
                },
            )
            .replace("{cwd}", &cwd.display().to_string())
            .replace(
                "{date}",
                &crate::time::utc_date(crate::protocol::message::now_millis()),
            ),
    };
    if !context_files.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&crate::context_files::render(context_files));
    }
    if !skills.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&crate::extensions::skills::prompt_section(skills));
    }
    if let Some(extra) = append.filter(|a| !a.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(extra.trim());
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_the_template() {
        let prompt = system_prompt(
            None,
            Some("Be brief."),
            &["read", "bash"],
            Path::new("/repo"),
            &[],
            &[],
        );
        assert!(prompt.contains("Tools available: read, bash"));
        assert!(prompt.contains("Working directory: /repo"));
        assert!(prompt.ends_with("Be brief."));
        assert_eq!(
            system_prompt(Some("Custom"), None, &[], Path::new("/"), &[], &[]),
            "Custom"
        );
    }
}
