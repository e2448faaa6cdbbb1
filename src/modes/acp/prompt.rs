//! What an editor sends as a prompt, as our user message: text as the session expands it
//! (its `@path`s attached); images as images;
//! a resource link (a file the user mentioned) as a reference the model can read with its
//! tools; an embedded resource (file contents the editor attached) as that text, marked
//! with where it came from; what the model cannot take (audio, binary blobs) as a note
//! saying it was left out.

use crate::protocol::command::{InputPart, UserInput};
use crate::protocol::message::Content;
use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource, ResourceLink};

/// The blocks as the engine's input, stamped `timestamp`: each text block as text the
/// engine expands (a leading `/command`, its `@path`s attached: `agent::mentions`), every
/// other block as content.
pub fn input(blocks: &[ContentBlock], timestamp: i64) -> UserInput {
    let parts = blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => InputPart::Text {
                text: text.text.clone(),
            },
            other => InputPart::Content {
                content: content(other),
            },
        })
        .collect();
    UserInput {
        parts,
        timestamp: Some(timestamp),
    }
}

fn content(block: &ContentBlock) -> Content {
    match block {
        ContentBlock::Text(text) => Content::text(&text.text),
        ContentBlock::Image(image) => Content::Image {
            data: image.data.clone(),
            mime_type: image.mime_type.clone(),
        },
        ContentBlock::ResourceLink(link) => Content::text(reference(link)),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            EmbeddedResourceResource::TextResourceContents(text) => Content::text(format!(
                "<context ref=\"{}\">\n{}\n</context>",
                text.uri, text.text
            )),
            EmbeddedResourceResource::BlobResourceContents(blob) => {
                match blob.mime_type.as_deref() {
                    Some(mime) if mime.starts_with("image/") => Content::Image {
                        data: blob.blob.clone(),
                        mime_type: mime.to_string(),
                    },
                    mime => Content::text(format!(
                        "[The attachment {} ({}) is binary and was left out.]",
                        blob.uri,
                        mime.unwrap_or("unknown type")
                    )),
                }
            }
            _ => Content::text("[An attachment of a kind this agent does not know was left out.]"),
        },
        ContentBlock::Audio(audio) => Content::text(format!(
            "[An audio attachment ({}) was left out: this agent does not take audio.]",
            audio.mime_type
        )),
        _ => Content::text("[An attachment of a kind this agent does not know was left out.]"),
    }
}

/// A mentioned file or resource, as markdown the model reads as a reference.
fn reference(link: &ResourceLink) -> String {
    format!("[@{}]({})", link.name, link.uri)
}

/// A prompt that names one of our commands: `/name rest` as its first text.
pub fn command_of(blocks: &[ContentBlock]) -> Option<(String, String)> {
    let ContentBlock::Text(first) = blocks.first()? else {
        return None;
    };
    let line = first.text.trim_start().strip_prefix('/')?;
    let (name, rest) = match line.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (line.trim_end(), ""),
    };
    (!name.is_empty()).then(|| (name.to_string(), rest.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        AudioContent, BlobResourceContents, EmbeddedResource, ImageContent, TextResourceContents,
    };

    #[test]
    fn every_kind_of_block_becomes_content_the_model_takes() {
        let blocks = vec![
            ContentBlock::from("fix the bug"),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///repo/src/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///repo/src/lib.rs",
                )),
            )),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::BlobResourceContents(
                    BlobResourceContents::new("AAAA", "file:///repo/a.bin")
                        .mime_type("application/octet-stream".to_string()),
                ),
            )),
            ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav")),
        ];
        let input = input(&blocks, 7);
        assert_eq!(input.timestamp, Some(7));
        let message = crate::protocol::message::UserMessage {
            content: input
                .parts
                .into_iter()
                .map(|part| match part {
                    InputPart::Text { text } => Content::text(text),
                    InputPart::Content { content } => content,
                    InputPart::Chip { label, .. } => Content::text(label),
                })
                .collect(),
            timestamp: 7,
        };
        assert_eq!(message.content[0], Content::text("fix the bug"));
        assert_eq!(
            message.content[1],
            Content::Image {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into()
            }
        );
        assert_eq!(
            message.content[2],
            Content::text("[@main.rs](file:///repo/src/main.rs)")
        );
        assert_eq!(
            message.content[3],
            Content::text("<context ref=\"file:///repo/src/lib.rs\">\nfn main() {}\n</context>")
        );
        let text = message.plain_text();
        assert!(
            text.contains("file:///repo/a.bin (application/octet-stream) is binary"),
            "{text}"
        );
        assert!(
            text.contains("audio attachment (audio/wav) was left out"),
            "{text}"
        );
    }

    #[test]
    fn commands_are_a_slash_name_at_the_start() {
        let command = |text: &str| command_of(&[ContentBlock::from(text)]);
        assert_eq!(
            command("/compact keep the API notes"),
            Some(("compact".into(), "keep the API notes".into()))
        );
        assert_eq!(command("  /new"), Some(("new".into(), String::new())));
        assert_eq!(command("fix /etc/hosts"), None);
        assert_eq!(command("/"), None);
    }
}
