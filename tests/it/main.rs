//! The integration tests, in one binary so that the library is linked once (not once per
//! file): each module is one area, driven from outside as a user or a client would. Shared
//! helpers (the loopback model server, PTY driver, process helpers) are in tests/support.
//! Child processes the tests start are real targets of their own (tests/fixtures, built as
//! examples by `cargo test`). `tests/request_memory.rs` stays a binary of its own: it installs
//! a counting global allocator.

// Tests start their tasks plainly; the library goes through crate::tasks (clippy.toml).
#![allow(clippy::disallowed_methods)]

#[path = "../support/mod.rs"]
mod support;

mod acp;
mod acp_agents;
mod acp_extensions;
mod acp_mcp;
mod acp_node;
mod acp_tools;
mod allow_rule;
mod ask_user;
mod ask_user_a35;
mod auth;
mod auth_flows;
mod auth_mcp;
mod background;
mod budgets;
mod checkpoint_faults;
mod checkpoint_watch;
mod checkpoints;
mod cli;
mod cold_context;
mod cold_p32b;
mod cold_p32c;
mod commands_acp;
mod commands_rpc;
mod commands_tui;
mod compaction;
mod compaction_task;
mod conformance;
mod e2e;
mod engine;
mod engine_commands;
mod execution;
mod extensions;
mod hooks;
mod hooks_faults;
mod hooks_project;
mod hooks_sandbox;
mod live;
mod live_attach;
mod live_remote;
mod lsp;
mod lsp_real;
mod mcp;
mod mcp_cli;
mod mcp_real;
mod notify;
mod permissions;
mod processes;
mod profiles;
mod provider_bodies;
mod provider_faults;
mod provider_interop;
mod provider_requests;
mod provider_tasks;
mod provider_timeouts;
mod proxy;
mod proxy_conformance;
mod rounds_t32;
mod rpc;
mod rpc_agents;
mod rpc_parity;
mod rules_attacks;
mod sandbox;
mod sandbox_egress;
mod sandbox_egress_hosts;
mod sandbox_escape;
mod sandbox_loopback;
mod sandbox_secrets;
mod secrets;
mod serve;
mod session_faults;
mod sessions;
mod sessions_manage;
mod start_up_order;
mod states;
mod structure;
mod structure_tui;
mod subagent_faults;
mod subagents;
mod system_prompt;
mod time_travel;
mod todo_plan;
mod tools;
mod tui;
mod tui_agents;
mod tui_clipboard;
mod tui_everyday;
mod tui_extensions;
mod tui_f35;
mod tui_fixes35;
mod tui_fixes35b;
mod tui_goal;
mod tui_hangup;
mod tui_k35;
mod tui_keys;
mod tui_m35;
mod tui_notify;
mod tui_p32;
mod tui_q35;
mod tui_r35;
mod tui_r35d;
mod tui_render;
mod tui_s35;
mod tui_screen;
mod tui_sessions;
mod tui_t35;
mod tui_usage;
mod tui_welcome;
mod usage;
mod web_client;
mod web_fetch;
mod web_search;
