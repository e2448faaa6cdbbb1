//! The program's entry (`src/main.rs` only calls [`main`]): parse the command line, load the
//! settings, start logging, and hand over to the chosen front end. Exit codes: 0 completed,
//! 1 failed, 2 usage error, 130 interrupted.

use crate::cli::{Cli, FrontEnd, Subcommands};
use crate::modes;
use crate::startup;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

/// The command line, with `--help` naming every built-in provider (the list lives with the
/// config, so it never goes stale).
fn parse_command_line() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let names: Vec<&str> = crate::config::BUILTIN_PROVIDERS
        .iter()
        .map(|p| p.name)
        .collect();
    let command = Cli::command().mut_arg("provider", |arg| {
        arg.help(format!(
            "Provider from the config (built in: {})",
            names.join(", ")
        ))
    });
    let config_file = crate::config::paths().ok().map(|p| p.config_file);
    let command = command.after_help(crate::cli::after_help(config_file.as_deref()));
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Run a live-session subcommand (`agent attach`, `agent sessions`), which needs only the
/// agent's directories, on a small runtime of its own.
fn live_command<F, Fut>(run: F) -> u8
where
    F: FnOnce(crate::config::Paths) -> Fut,
    Fut: std::future::Future<Output = u8>,
{
    let paths = match crate::config::paths() {
        Ok(paths) => paths,
        Err(e) => {
            eprintln!("agent: {e}");
            return 1;
        }
    };
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run(paths)),
        Err(e) => {
            eprintln!("agent: cannot start the async runtime: {e}");
            1
        }
    }
}

/// Whether `agent attach` has a terminal to open the interface in.
fn attach_in_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// `agent attach [ID]` in a terminal: the interface as a client of the live session.
async fn attach_interface(
    home: &std::path::Path,
    id: Option<&str>,
    settings: crate::config::Settings,
) -> u8 {
    let socket = match crate::live::commands::choose(home, id).await {
        Ok(socket) => socket,
        Err(why) => {
            eprintln!("agent: {why}");
            return 2;
        }
    };
    // The messages a resumed session shows: a long session is not replayed whole.
    match crate::live::remote::RemoteEngine::attach(&socket, Some(crate::tui::REPLAY)).await {
        Ok((remote, events)) => crate::tui::attach(remote, events, settings).await,
        Err(e) => {
            eprintln!("agent: {e}");
            1
        }
    }
}

pub fn main() -> ExitCode {
    // The agent runs each command below a copy of itself (see tools::process).
    if let Some(code) = crate::tools::process::supervisor::run_if_asked() {
        return code;
    }
    // Under `ulimit -f` a write past the limit fails instead of killing the agent.
    crate::file_size_limit::catch_sigxfsz();
    let cli = parse_command_line();
    if let Some(key) = &cli.api_key {
        // A key on the command line leaves /proc/<pid>/cmdline at once (a sandboxed command
        // can read that file of its parent processes).
        // SAFETY: single-threaded still, and the command line has been parsed: nothing
        // reads the argument block while it is overwritten.
        unsafe { crate::secrets::scrub_from_args(key) };
        crate::secrets::register(key);
    }
    if let Some(Subcommands::Mcp(args)) = &cli.command {
        return ExitCode::from(crate::mcp_command::run(args, cli.config.as_deref()));
    }
    match &cli.command {
        Some(Subcommands::Login(args)) => return ExitCode::from(crate::auth::command::login(args)),
        Some(Subcommands::Logout(args)) => {
            return ExitCode::from(crate::auth::command::logout(args));
        }
        Some(Subcommands::Auth(args)) => {
            return ExitCode::from(crate::auth::command::auth(&args.action));
        }
        // In a terminal, `attach` opens the interface (below, once the config is read);
        // elsewhere it is a line bridge.
        Some(Subcommands::Attach(args)) if !attach_in_terminal() => {
            return ExitCode::from(live_command(|paths| async move {
                crate::live::commands::attach(
                    &paths.home,
                    args.id.as_deref(),
                    args.since.as_deref(),
                )
                .await
            }));
        }
        Some(Subcommands::Sessions(args)) => {
            return ExitCode::from(live_command(|paths| async move {
                let cwd = std::env::current_dir().unwrap_or_default();
                crate::sessions_command::run(&paths, &cwd, args).await
            }));
        }
        Some(Subcommands::Config(args)) => {
            return ExitCode::from(crate::config_command::run(
                &args.action,
                cli.config.as_deref(),
            ));
        }
        _ => {}
    }
    let mut settings = match crate::config::load(&cli) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("agent: {e}");
            return ExitCode::from(e.exit_code());
        }
    };
    // Whether this machine enforces the command sandbox: the probe forks, so it runs while
    // the process has one thread.
    settings.tool_settings.sandbox =
        crate::sandbox::Sandbox::start(&settings.sandbox, &settings.cwd);
    // So are the sandboxes of the other modes a profile may switch to (`/profile`).
    settings.prepare_profile_sandboxes();
    // The provider keys leave the process environment before any thread exists (so a tool
    // cannot read them from /proc/<pid>/environ) and are masked in everything written.
    // SAFETY: still single-threaded here: the logger, the async runtime and every task
    // start below, so nothing reads the environment while it changes.
    unsafe { crate::secrets::take_from_env(&settings.tool_settings.hidden_env) };
    crate::logging::init(&settings.paths.log_dir, &settings.log_level);
    if let Some(Subcommands::Proxy(args)) = &cli.command {
        return ExitCode::from(crate::proxy::run(settings, args));
    }
    if let Some(Subcommands::Attach(args)) = &cli.command {
        let id = args.id.clone();
        return ExitCode::from(live_command(|paths| async move {
            attach_interface(&paths.home, id.as_deref(), settings).await
        }));
    }

    let front_end = cli.front_end();
    #[cfg(not(feature = "acp"))]
    if front_end == FrontEnd::Acp {
        eprintln!("agent: {}", crate::features::ACP.missing());
        return ExitCode::from(2);
    }
    if let Some(given) = cli.acp_conflict() {
        eprintln!(
            "agent: {given} does not go with --mode acp: the editor opens the sessions and sends the prompts"
        );
        return ExitCode::from(2);
    }
    if front_end != FrontEnd::Interactive
        && cli.resume.as_deref().is_some_and(|id| id.trim().is_empty())
    {
        eprintln!(
            "agent: -r without an id picks a session in the interactive interface; here, give an id (a prefix is enough)"
        );
        return ExitCode::from(2);
    }
    let prompt = match front_end {
        FrontEnd::Print | FrontEnd::Json => match modes::read_prompt(&cli)
            .and_then(|prompt| modes::check_headless_prompt(&settings, &prompt).map(|()| prompt))
        {
            Ok(prompt) => Some(prompt),
            Err(e) => {
                eprintln!("agent: {e}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    // Commands' supervisors are forked by a small server forked now, while this process
    // still has one thread (tools::process::forkserver).
    #[cfg(target_os = "linux")]
    // SAFETY: single-threaded still: the async runtime starts below.
    unsafe {
        crate::tools::process::forkserver::start();
    }
    if let Some(Subcommands::Serve(args)) = &cli.command {
        return ExitCode::from(crate::live::serve::run(settings, args));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("agent: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(async move {
        #[cfg(feature = "acp")]
        if front_end == FrontEnd::Acp {
            // Sessions are opened by the editor, each in its own directory.
            return modes::acp::run(settings, cli.thinking.is_some()).await;
        }
        let mut settings = settings;
        let can_ask = matches!(front_end, FrontEnd::Rpc | FrontEnd::Interactive);
        // `-r` without an id picks a session in the interface, which starts on a new one.
        let pick_session = front_end == FrontEnd::Interactive
            && cli.resume.as_deref().is_some_and(|id| id.trim().is_empty());
        let mut cli = cli;
        if pick_session {
            cli.resume = None;
        }
        let prepared = match startup::prepare(&cli, &mut settings, can_ask).await {
            Ok(prepared) => prepared,
            Err(e) => {
                eprintln!("agent: {}", modes::one_line(&e.to_string()));
                return 1;
            }
        };
        let mcp = prepared.mcp.clone();
        let lsp = settings.tool_settings.lsp.clone();
        // The user's `notify` command hears when a run ends or waits for approval.
        let notifier = startup::notify::Notifier::start(
            &prepared.agent,
            settings.notify.as_deref(),
            settings.cwd.clone(),
        );
        // Every session can be attached from elsewhere while this process runs: in the
        // interface once it holds the session's history and hears its events (a prompt from
        // elsewhere before that would run unseen by it), in the other front ends now.
        let live: Arc<Mutex<Option<crate::live::LiveServer>>> = Arc::default();
        let serve_live = {
            let (agent, settings, mcp, live) = (
                prepared.agent.client_handle(),
                settings.clone(),
                mcp.clone(),
                live.clone(),
            );
            move || match crate::live::serve(&agent, &settings, mcp) {
                Ok(server) => *live.lock().unwrap_or_else(PoisonError::into_inner) = Some(server),
                Err(error) => tracing::warn!(%error, "the session is not served live"),
            }
        };
        let code = if front_end == FrontEnd::Interactive {
            let start = crate::tui::Start {
                prompt: Some(cli.prompt.join(" ")),
                pick_session,
                resumed: cli.continue_session || cli.resume.is_some(),
                notices: Vec::new(),
                when_ready: Some(Box::new(serve_live)),
            };
            crate::tui::run(prepared, settings, start).await
        } else {
            serve_live();
            mcp.launch();
            prepared.agent.count_earlier();
            for notice in &prepared.notices {
                eprintln!("agent: {notice}");
            }
            if let Some(project) = &prepared.untrusted_hooks {
                eprintln!("agent: {}", startup::untrusted_hooks_notice(project));
            }
            let startup::Prepared { agent, .. } = prepared;
            let verbose = cli.verbose;
            match (front_end, prompt) {
                (FrontEnd::Json, Some(prompt)) => {
                    modes::json::run(agent, prompt, &settings.cwd, verbose).await
                }
                (FrontEnd::Rpc, _) => modes::rpc::run(agent, settings, mcp.clone()).await,
                (_, Some(prompt)) => modes::print::run(agent, prompt, verbose).await,
                (_, None) => 2,
            }
        };
        if let Some(notifier) = notifier {
            notifier.finish().await;
        }
        let live = live.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(live) = live {
            live.shutdown("the session's process exited").await;
        }
        // Every MCP server ends with the agent, stdio servers' process groups included.
        mcp.shut_down().await;
        // So does every language server, with everything it started.
        if let Some(lsp) = lsp {
            lsp.shut_down().await;
        }
        code
    });
    // Don't wait for stray blocking work (e.g. a stdin read) on the way out.
    runtime.shutdown_background();
    // Long outputs of a conversation without a session file go with it.
    crate::tools::spill::clean_up_at_exit();
    ExitCode::from(code)
}
