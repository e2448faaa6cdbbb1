//! What users add to the agent without forking it: custom slash commands (prompt templates),
//! skills, and lifecycle hooks. Commands and skills are found once at start-up
//! (`Extensions::load`); hooks run inside the engine (`hooks`).

pub mod commands;
pub mod front_matter;
pub mod hooks;
pub mod skills;
pub mod sources;

use commands::CustomCommand;
use skills::Skill;
use std::path::Path;

/// The commands and skills of this project and user, and what was wrong with the files.
#[derive(Clone, Debug, Default)]
pub struct Extensions {
    /// Sorted by name.
    pub commands: Vec<CustomCommand>,
    /// Sorted by name.
    pub skills: Vec<Skill>,
    /// One line per problem (a file with bad front matter: `path:line: what`; a clash).
    pub problems: Vec<String>,
}

/// What a prompt that may start with `/name` turns into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invocation {
    /// Not a command: send the text as it is.
    Text(String),
    /// A command or skill, expanded.
    Prompt {
        /// `review`, `skill:pdf`.
        name: String,
        text: String,
        /// The command's `model` front matter.
        model: Option<String>,
    },
    /// `/name` names no command: say so rather than sending it to the model.
    Unknown(String),
}

impl Extensions {
    /// Find the commands and skills for a session in `cwd`, with the user's in `home`.
    pub fn load(home: &Path, cwd: &Path) -> Extensions {
        let mut problems = Vec::new();
        let commands =
            commands::discover(&sources::search_dirs(home, cwd, "commands"), &mut problems);
        let skills = skills::discover(&sources::search_dirs(home, cwd, "skills"), &mut problems);
        Extensions {
            commands,
            skills,
            problems,
        }
    }

    pub fn command(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Every name a prompt can start with: `/review`, `/skill:pdf`.
    pub fn known_names(&self) -> Vec<String> {
        self.commands
            .iter()
            .map(|c| format!("/{}", c.name))
            .chain(self.skills.iter().map(|s| format!("/skill:{}", s.name)))
            .collect()
    }

    /// The custom commands that a front end's own command of the same name hides, as
    /// problems to report once.
    pub fn shadowed(&self, builtins: &[&str]) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| builtins.contains(&c.name.as_str()))
            .map(|c| {
                format!(
                    "/{}: {} is hidden by the built-in command of the same name",
                    c.name,
                    c.path.display()
                )
            })
            .collect()
    }

    /// Expand a prompt for a front end without slash commands of its own (`-p`, json,
    /// RPC): `/name args` runs a custom command, `/skill:NAME text` a skill; `//text` sends
    /// `/text`; a first word with a `/` inside (`/etc/hosts …`) is text.
    pub fn invoke(&self, text: &str) -> Invocation {
        if let Some(rest) = text.trim_start().strip_prefix("//") {
            return Invocation::Text(format!("/{rest}"));
        }
        let Some((word, arguments)) = slash_word(text) else {
            return Invocation::Text(text.to_string());
        };
        match self.expand(word, arguments) {
            Some(Ok(invocation)) => invocation,
            Some(Err(problem)) => Invocation::Unknown(problem),
            None => Invocation::Unknown(self.unknown(word)),
        }
    }

    /// Whether `/word` names a custom command or skill.
    pub fn knows(&self, word: &str) -> bool {
        match word.strip_prefix("skill:") {
            Some(name) => self.skill(name).is_some(),
            None => self.command(word).is_some(),
        }
    }

    /// `/word arguments` as a command or skill; `None` when `word` names neither.
    pub fn expand(&self, word: &str, arguments: &str) -> Option<Result<Invocation, String>> {
        if let Some(name) = word.strip_prefix("skill:") {
            let skill = self.skill(name)?;
            return Some(skill.prompt(arguments).map(|text| Invocation::Prompt {
                name: word.to_string(),
                text,
                model: None,
            }));
        }
        let command = self.command(word)?;
        Some(Ok(Invocation::Prompt {
            name: word.to_string(),
            text: command.expand(arguments),
            model: command.model.clone(),
        }))
    }

    /// Why `/word` is refused, with the names that exist.
    pub fn unknown(&self, word: &str) -> String {
        let known = self.known_names();
        let list = if known.is_empty() {
            "there are no custom commands or skills".to_string()
        } else {
            format!("known: {}", known.join(", "))
        };
        format!(
            "unknown command /{word} ({list}); to send text that starts with a slash, begin it with //"
        )
    }
}

/// The `/word` a text starts with and the arguments after it, when it reads as a command:
/// `None` for text that does not start with `/`, for `//text`, and for a first word with a
/// `/` inside (`/etc/hosts …`) or that no command could be named.
pub fn slash_word(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    if rest.starts_with('/') {
        return None;
    }
    let (word, arguments) = match rest.split_once(char::is_whitespace) {
        Some((word, arguments)) => (word, arguments),
        None => (rest, ""),
    };
    (!word.is_empty() && !word.contains('/') && commands::is_valid_name(word))
        .then_some((word, arguments))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sources::Origin;

    fn sample() -> Extensions {
        Extensions {
            commands: vec![CustomCommand {
                name: "frontend:review".into(),
                description: Some("Review".into()),
                argument_hint: None,
                model: Some("gpt-x".into()),
                body: "Review $1 please".into(),
                path: "/p/.claude/commands/frontend/review.md".into(),
                origin: Origin::Project,
            }],
            ..Extensions::default()
        }
    }

    #[test]
    fn headless_prompts_expand_or_are_refused() {
        let ext = sample();
        assert_eq!(
            ext.invoke("/frontend:review src/app.tsx"),
            Invocation::Prompt {
                name: "frontend:review".into(),
                text: "Review src/app.tsx please".into(),
                model: Some("gpt-x".into()),
            }
        );
        assert_eq!(
            ext.invoke("/etc/hosts is odd"),
            Invocation::Text("/etc/hosts is odd".into())
        );
        assert_eq!(
            ext.invoke("//tmp is full"),
            Invocation::Text("/tmp is full".into())
        );
        assert_eq!(ext.invoke("hello /x"), Invocation::Text("hello /x".into()));
        let Invocation::Unknown(why) = ext.invoke("/reveiw now") else {
            panic!("a typo must not reach the model");
        };
        assert!(
            why.contains("/reveiw") && why.contains("/frontend:review"),
            "{why}"
        );
        let Invocation::Unknown(why) = ext.invoke("/skill:nope") else {
            panic!();
        };
        assert!(why.contains("unknown command /skill:nope"), "{why}");
    }
}
