//! Providers that exist without any config, so a user only names one and a model.

use crate::llm::provider::Api;

pub struct BuiltinProvider {
    pub name: &'static str,
    pub api: Api,
    pub base_url: &'static str,
    /// Env var that overrides the base URL, as the provider's own SDK does.
    pub base_url_env: Option<&'static str>,
    pub api_key_env: Option<&'static str>,
    pub default_model: Option<&'static str>,
}

pub const BUILTIN_PROVIDERS: &[BuiltinProvider] = &[
    BuiltinProvider {
        name: "openai",
        api: Api::OpenaiChat,
        base_url: "https://api.openai.com/v1",
        base_url_env: Some("OPENAI_BASE_URL"),
        api_key_env: Some("OPENAI_API_KEY"),
        default_model: Some("gpt-4.1"),
    },
    BuiltinProvider {
        name: "anthropic",
        api: Api::Anthropic,
        base_url: "https://api.anthropic.com",
        base_url_env: Some("ANTHROPIC_BASE_URL"),
        api_key_env: Some("ANTHROPIC_API_KEY"),
        default_model: Some("claude-sonnet-4-5"),
    },
    // OpenAI through the Responses API: reasoning models keep their (encrypted) reasoning
    // across tool calls, which Chat Completions cannot carry.
    BuiltinProvider {
        name: "openai-responses",
        api: Api::OpenaiResponses,
        base_url: "https://api.openai.com/v1",
        base_url_env: Some("OPENAI_BASE_URL"),
        api_key_env: Some("OPENAI_API_KEY"),
        default_model: Some("gpt-5"),
    },
    // Accounts signed in with `agent login` (src/auth, docs/auth.md): no key variable.
    BuiltinProvider {
        name: "chatgpt",
        api: Api::OpenaiResponses,
        base_url: "https://chatgpt.com/backend-api/codex",
        base_url_env: None,
        api_key_env: None,
        default_model: Some("gpt-5"),
    },
    BuiltinProvider {
        name: "copilot",
        api: Api::OpenaiChat,
        base_url: "https://api.githubcopilot.com",
        base_url_env: None,
        api_key_env: None,
        default_model: Some("gpt-4.1"),
    },
    BuiltinProvider {
        name: "openrouter",
        api: Api::OpenaiChat,
        base_url: "https://openrouter.ai/api/v1",
        base_url_env: None,
        api_key_env: Some("OPENROUTER_API_KEY"),
        default_model: None,
    },
    BuiltinProvider {
        name: "ollama",
        api: Api::OpenaiChat,
        base_url: "http://127.0.0.1:11434/v1",
        base_url_env: None,
        api_key_env: None,
        default_model: None,
    },
    BuiltinProvider {
        name: "lmstudio",
        api: Api::OpenaiChat,
        base_url: "http://127.0.0.1:1234/v1",
        base_url_env: None,
        api_key_env: None,
        default_model: None,
    },
    BuiltinProvider {
        name: "llama.cpp",
        api: Api::OpenaiChat,
        base_url: "http://127.0.0.1:8080/v1",
        base_url_env: None,
        api_key_env: None,
        default_model: None,
    },
    BuiltinProvider {
        name: "vllm",
        api: Api::OpenaiChat,
        base_url: "http://127.0.0.1:8000/v1",
        base_url_env: None,
        api_key_env: None,
        default_model: None,
    },
];

pub fn builtin(name: &str) -> Option<&'static BuiltinProvider> {
    BUILTIN_PROVIDERS.iter().find(|p| p.name == name)
}
