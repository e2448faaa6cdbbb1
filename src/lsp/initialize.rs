//! The `initialize` handshake: what we tell a server we can do (documents synced in full,
//! versioned diagnostics, progress, configuration requests, the navigation requests the
//! `lsp` tool makes), and what we keep of what it answers.

use super::location::{Encoding, uri_of};
use super::server::Capabilities;
use crate::config::lsp::ServerSpec;
use lsp_types::{
    ClientCapabilities, ClientInfo, GeneralClientCapabilities, GotoCapability,
    HoverClientCapabilities, InitializeParams, MarkupKind, OneOf, PositionEncodingKind,
    PublishDiagnosticsClientCapabilities, ServerCapabilities, TextDocumentClientCapabilities,
    TextDocumentSyncCapability, TextDocumentSyncClientCapabilities, TextDocumentSyncSaveOptions,
    WindowClientCapabilities, WorkspaceClientCapabilities, WorkspaceFolder,
};
use std::path::Path;

/// What the agent says of itself to a server rooted at `root`.
pub fn params(spec: &ServerSpec, root: &Path) -> InitializeParams {
    let folder = uri_of(root).map(|uri| WorkspaceFolder {
        uri,
        name: root
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_else(|| "/".to_string()),
    });
    let capabilities = ClientCapabilities {
        general: Some(GeneralClientCapabilities {
            position_encodings: Some(vec![
                PositionEncodingKind::UTF8,
                PositionEncodingKind::UTF16,
            ]),
            ..GeneralClientCapabilities::default()
        }),
        text_document: Some(TextDocumentClientCapabilities {
            synchronization: Some(TextDocumentSyncClientCapabilities {
                did_save: Some(true),
                ..TextDocumentSyncClientCapabilities::default()
            }),
            publish_diagnostics: Some(PublishDiagnosticsClientCapabilities {
                version_support: Some(true),
                code_description_support: Some(true),
                ..PublishDiagnosticsClientCapabilities::default()
            }),
            definition: Some(GotoCapability {
                link_support: Some(true),
                ..GotoCapability::default()
            }),
            references: Some(Default::default()),
            hover: Some(HoverClientCapabilities {
                content_format: Some(vec![MarkupKind::PlainText, MarkupKind::Markdown]),
                ..HoverClientCapabilities::default()
            }),
            document_symbol: Some(lsp_types::DocumentSymbolClientCapabilities {
                hierarchical_document_symbol_support: Some(true),
                ..Default::default()
            }),
            ..TextDocumentClientCapabilities::default()
        }),
        workspace: Some(WorkspaceClientCapabilities {
            configuration: Some(true),
            workspace_folders: Some(true),
            symbol: Some(Default::default()),
            ..WorkspaceClientCapabilities::default()
        }),
        window: Some(WindowClientCapabilities {
            work_done_progress: Some(true),
            ..WindowClientCapabilities::default()
        }),
        ..ClientCapabilities::default()
    };
    #[allow(deprecated)] // `rootUri`: older servers know only it.
    InitializeParams {
        process_id: Some(std::process::id()),
        root_uri: folder.as_ref().map(|f| f.uri.clone()),
        workspace_folders: folder.map(|f| vec![f]),
        initialization_options: spec.initialization_options.clone(),
        capabilities,
        client_info: Some(ClientInfo {
            name: "agent".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        }),
        ..InitializeParams::default()
    }
}

fn provides<T>(option: &Option<OneOf<bool, T>>) -> bool {
    match option {
        Some(OneOf::Left(yes)) => *yes,
        Some(OneOf::Right(_)) => true,
        None => false,
    }
}

/// What we use of a server's capabilities.
pub fn capabilities(server: &ServerCapabilities) -> Capabilities {
    let save = match &server.text_document_sync {
        Some(TextDocumentSyncCapability::Options(options)) => match &options.save {
            Some(TextDocumentSyncSaveOptions::Supported(true)) => Some(false),
            Some(TextDocumentSyncSaveOptions::SaveOptions(save)) => {
                Some(save.include_text.unwrap_or(false))
            }
            _ => None,
        },
        _ => None,
    };
    Capabilities {
        encoding: Encoding::from_kind(server.position_encoding.as_ref()),
        save,
        definition: provides(&server.definition_provider),
        references: provides(&server.references_provider),
        hover: !matches!(
            server.hover_provider,
            None | Some(lsp_types::HoverProviderCapability::Simple(false))
        ),
        document_symbol: provides(&server.document_symbol_provider),
        workspace_symbol: provides(&server.workspace_symbol_provider),
    }
}
