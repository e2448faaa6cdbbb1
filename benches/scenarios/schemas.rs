//! The tools' argument schemas, in process: compiling every built-in tool's schema (what
//! building the tool registry costs at start), and checking one `edit` call's arguments
//! that fit and one whose don't (the message the model is told included).

use agent::tools::{ALL_TOOLS, Tools};
use serde_json::json;
use std::time::{Duration, Instant};

pub fn run(runs: usize) -> anyhow::Result<()> {
    let rounds = runs.max(1) * 100;
    let mut builds = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let tools = Tools::from_names(ALL_TOOLS).map_err(anyhow::Error::msg)?;
        builds.push(started.elapsed());
        std::hint::black_box(tools);
    }
    let tools = Tools::from_names(ALL_TOOLS).map_err(anyhow::Error::msg)?;
    let fits = json!({"path": "src/main.rs", "edits": [
        {"oldText": "fn main() {}", "newText": "fn main() { println!(\"hi\"); }"}
    ]});
    let does_not = json!({"edits": [{"newText": 1}], "colour": 1});
    anyhow::ensure!(
        tools.validate("edit", &fits).is_ok(),
        "the fitting call failed"
    );
    anyhow::ensure!(
        tools.validate("edit", &does_not).is_err(),
        "the wrong call passed"
    );
    let per_call = |args: &serde_json::Value| {
        let mut samples = Vec::new();
        for _ in 0..rounds {
            let started = Instant::now();
            for _ in 0..100 {
                std::hint::black_box(tools.validate("edit", std::hint::black_box(args))).ok();
            }
            samples.push(started.elapsed() / 100);
        }
        samples
    };
    let fitting = per_call(&fits);
    let failing = per_call(&does_not);
    let micros =
        |samples: &[Duration]| crate::measure::median_duration(samples).as_secs_f64() * 1_000_000.0;
    println!(
        "| compiling the {} built-in tools' schemas (in process) | {:.1} µs | | |",
        ALL_TOOLS.len(),
        micros(&builds)
    );
    println!(
        "| checking one `edit` call's arguments: fitting / not (with the message) | {:.2} / {:.2} µs | | |",
        micros(&fitting),
        micros(&failing)
    );
    Ok(())
}
