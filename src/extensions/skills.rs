//! Skills in the open Agent Skills format: a folder holding `SKILL.md` (front matter `name`
//! and `description`, body = instructions) and whatever files it needs. Found in
//! `.agent/skills/`, `.claude/skills/` and `$AGENT_HOME/skills/`. Only names, descriptions
//! and paths go into the system prompt; the model reads a body with `read` when it needs it.

use super::front_matter;
use super::sources::{Origin, SearchDir};
use std::path::{Path, PathBuf};

/// The format's limits on a name and a description.
const MAX_NAME: usize = 64;
const MAX_DESCRIPTION: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
    pub origin: Origin,
}

impl Skill {
    /// The instructions (the file without its front matter), read now.
    pub fn body(&self) -> Result<String, String> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        let document = front_matter::parse(&text)
            .map_err(|e| format!("{}:{}: {}", self.path.display(), e.line, e.message))?;
        Ok(document.body.trim().to_string())
    }

    /// The prompt of `/skill:NAME text`: the skill's instructions, then the user's text.
    pub fn prompt(&self, text: &str) -> Result<String, String> {
        let body = self.body()?;
        let folder = self
            .path
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut prompt = format!(
            "Use the skill `{}` (its folder: {folder}). Its instructions:\n\n{body}",
            self.name
        );
        if !text.trim().is_empty() {
            prompt.push_str("\n\n");
            prompt.push_str(text.trim());
        }
        Ok(prompt)
    }
}

/// Every skill under `dirs` (first definition of a name wins); problems go to `problems`.
pub fn discover(dirs: &[SearchDir], problems: &mut Vec<String>) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir.path) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        folders.sort();
        for folder in folders {
            let path = folder.join("SKILL.md");
            let skill = match read_skill(&folder, &path, dir.origin) {
                Ok(skill) => skill,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            if let Some(winner) = skills.iter().find(|s| s.name == skill.name) {
                problems.push(format!(
                    "skill `{}`: {} is ignored; {} defines it first",
                    skill.name,
                    path.display(),
                    winner.path.display()
                ));
                continue;
            }
            skills.push(skill);
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

fn read_skill(folder: &Path, path: &Path, origin: Origin) -> Result<Skill, String> {
    let at = |line: usize, message: &str| format!("{}:{line}: {message}", path.display());
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let document = front_matter::parse(&text).map_err(|e| at(e.line, &e.message))?;
    if !document.has_front_matter {
        return Err(at(
            1,
            "no front matter: a SKILL.md starts with `---`, `name: …`, `description: …`, `---`",
        ));
    }
    let name = document
        .value("name")
        .ok_or_else(|| at(1, "the front matter has no `name`"))?;
    let name_line = document.get("name").map_or(1, |f| f.line);
    if name.len() > MAX_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(at(
            name_line,
            &format!(
                "`name: {name}`: use at most {MAX_NAME} lowercase letters, digits and hyphens"
            ),
        ));
    }
    let description = document
        .value("description")
        .ok_or_else(|| at(1, "the front matter has no `description`"))?;
    if description.len() > MAX_DESCRIPTION {
        let line = document.get("description").map_or(1, |f| f.line);
        return Err(at(
            line,
            &format!("the description is longer than {MAX_DESCRIPTION} characters"),
        ));
    }
    let folder_name = folder.file_name().map(|n| n.to_string_lossy().to_string());
    if folder_name.as_deref() != Some(name.as_str()) {
        tracing::debug!(%name, folder = ?folder_name, "skill name differs from its folder");
    }
    Ok(Skill {
        name,
        description: description.replace('\n', " "),
        path: path.to_path_buf(),
        origin,
    })
}

/// The system prompt's section listing the skills (empty without any).
pub fn prompt_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "# Skills\n\nSkills are folders of instructions for particular tasks. When a task \
         matches a skill's description, read its SKILL.md with the read tool before you start \
         and follow it; paths in it are relative to the skill's folder.\n",
    );
    for skill in skills {
        text.push_str(&format!(
            "\n- {}: {} ({})",
            skill.name,
            skill.description,
            skill.path.display()
        ));
    }
    text
}
