//! What the user sends, made into a message and delivered (`Prompt`): a custom `/command` or
//! `/skill:` at the start expanded (with the command's own model for the run it starts),
//! `@path`s and image chips attached, content passed as it is, then delivered as the
//! command says. `expand` is also what a front end calls to check a prompt before it has an
//! engine (`-p`), and `ExpandCommand` shows an expansion without sending it.

use super::models::{self, Chosen, Models};
use crate::agent::Agent;
use crate::agent::mentions::{Attached, LabelledImage};
use crate::extensions::{Extensions, Invocation, slash_word};
use crate::protocol::command::{Delivery, InputPart, UserInput};
use crate::protocol::event::SkippedFile;
use crate::protocol::message::{UserMessage, now_millis};
use crate::protocol::outcome::{CommandError, Outcome};

/// A text as it is sent: a command expanded, or the text as it was.
pub struct Expanded {
    pub text: String,
    /// The custom command or skill it invoked (`review`, `skill:pdf`).
    pub command: Option<String>,
    /// The command's model, ready to call.
    pub model: Option<Chosen>,
}

/// `text` expanded when it starts with `/name` (`//text` sends `/text`): an unknown name is
/// an error naming the known ones, never text for the model; a command's model that cannot
/// be used is an error too. `current_provider` is the provider a bare model id belongs to.
pub fn expand(
    text: &str,
    extensions: &Extensions,
    models: Option<&dyn Models>,
    current_provider: &str,
) -> Result<Expanded, CommandError> {
    match extensions.invoke(text) {
        Invocation::Text(text) => Ok(Expanded {
            text,
            command: None,
            model: None,
        }),
        Invocation::Unknown(message) => Err(match slash_word(text) {
            Some((name, _)) if !extensions.knows(name) => CommandError::UnknownCommand {
                name: name.to_string(),
                known: extensions.known_names(),
                message,
            },
            _ => CommandError::Extension(message),
        }),
        Invocation::Prompt { name, text, model } => {
            let model = match model {
                None => None,
                Some(model) => {
                    let chosen = match models {
                        Some(models) => models::choose(&model, current_provider, models),
                        None => Err("models cannot be chosen here".to_string()),
                    };
                    Some(chosen.map_err(|e| {
                        CommandError::Model(format!("the command's model `{model}`: {e}"))
                    })?)
                }
            };
            Ok(Expanded {
                text,
                command: Some(name),
                model,
            })
        }
    }
}

impl Agent {
    fn expand_text(&self, text: &str) -> Result<Expanded, CommandError> {
        let current = self.shared.settings().provider.settings().name.clone();
        expand(
            text,
            &self.shared.extensions,
            self.shared.models.as_deref(),
            &current,
        )
    }

    /// `ExpandCommand`.
    pub(super) fn expand_command(&self, text: &str) -> Result<Outcome, CommandError> {
        let expanded = self.expand_text(text)?;
        Ok(Outcome::Expanded {
            text: expanded.text,
            command: expanded.command,
            model: expanded
                .model
                .map(|(provider, model)| format!("{}/{}", provider.settings().name, model.id)),
        })
    }

    /// `Prompt`: the input as a user message, delivered.
    pub(super) fn send_input(
        &self,
        input: UserInput,
        delivery: Delivery,
    ) -> Result<Outcome, CommandError> {
        let mut parts = input.parts;
        let (mut command, mut model) = (None, None);
        if let Some(InputPart::Text { text }) = parts.first_mut() {
            let expanded = self.expand_text(text)?;
            *text = expanded.text;
            command = expanded.command;
            model = expanded.model;
        }
        let chips: Vec<LabelledImage> = parts
            .iter()
            .filter_map(|part| match part {
                InputPart::Chip { label, path } => Some(LabelledImage {
                    label: label.clone(),
                    path: path.clone(),
                }),
                _ => None,
            })
            .collect();
        let mut content = Vec::with_capacity(parts.len());
        let mut attached_all = Vec::new();
        for part in parts {
            match part {
                InputPart::Text { text } => {
                    let (message, attached) = self
                        .user_message_with(&text, &chips)
                        .map_err(|e| CommandError::Mention(e.to_string()))?;
                    content.extend(message.content);
                    attached_all.extend(attached);
                }
                InputPart::Chip { .. } => {}
                InputPart::Content { content: part } => content.push(part),
            }
        }
        let message = UserMessage {
            content,
            timestamp: input.timestamp.unwrap_or_else(now_millis),
        };
        let started = self.deliver(message, model, delivery)?;
        let skipped = attached_all
            .iter()
            .filter_map(|a| match a {
                Attached::Skipped { path, why } => Some(SkippedFile {
                    path: path.clone(),
                    reason: why.clone(),
                }),
                _ => None,
            })
            .collect();
        Ok(Outcome::Accepted {
            attached: attached_all,
            skipped,
            command,
            started,
        })
    }
}
