//! The loop guard: notices a model going round in circles — the same call (tool and
//! arguments) several times in a row, or two calls alternating with unchanged results —
//! tells it once, in the tool result, and stops the run (status `limit`) if it carries on.

use crate::protocol::message::{Content, ToolCall, join_text};
use crate::tools::ToolOutput;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardSettings {
    pub enabled: bool,
    /// How many times a cycle (one call, or a pair of calls) may repeat before the model is
    /// warned; at least 2.
    pub repeat_threshold: u32,
}

impl Default for GuardSettings {
    fn default() -> Self {
        GuardSettings {
            enabled: true,
            repeat_threshold: 3,
        }
    }
}

/// What the guard says about a finished call.
#[derive(Debug, PartialEq)]
pub enum GuardAction {
    Fine,
    /// The model was warned (the text was appended to the result).
    Warned,
    /// The run must stop; the text says why.
    Stop(String),
}

struct Seen {
    /// Tool name and canonical arguments.
    call: String,
    tool: String,
    result: u64,
}

/// A detected cycle: its period (1 or 2 calls) and how often it repeated.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cycle {
    period: usize,
    repeats: usize,
}

pub struct LoopGuard {
    settings: GuardSettings,
    history: Vec<Seen>,
    /// The cycle the model was warned about, while it lasts.
    warned: Option<Cycle>,
}

impl LoopGuard {
    pub fn new(settings: GuardSettings) -> Self {
        LoopGuard {
            settings,
            history: Vec::new(),
            warned: None,
        }
    }

    /// Before a call runs: why it must not, when it continues a cycle the model was already
    /// warned about.
    pub fn before(&self, call: &ToolCall) -> Option<String> {
        let cycle = self.warned?;
        let earlier = self.history.len().checked_sub(cycle.period)?;
        (self.history[earlier].call == key(call)).then(|| self.stop_reason(cycle, call))
    }

    /// After a call finished (calls are observed in their order): records it, appends the
    /// warning to `output` when a cycle first reaches the threshold.
    pub fn after(&mut self, call: &ToolCall, output: &mut ToolOutput) -> GuardAction {
        if !self.settings.enabled {
            return GuardAction::Fine;
        }
        self.history.push(Seen {
            call: key(call),
            tool: call.name.clone(),
            result: fingerprint(output),
        });
        let Some(cycle) = self.cycle() else {
            self.warned = None;
            return GuardAction::Fine;
        };
        if self.warned.is_some_and(|w| w.period == cycle.period) {
            return GuardAction::Stop(self.stop_reason(cycle, call));
        }
        self.warned = Some(cycle);
        append_text(output, &self.warning(cycle, call));
        GuardAction::Warned
    }

    fn threshold(&self) -> usize {
        self.settings.repeat_threshold.max(2) as usize
    }

    /// The cycle the latest calls form, if it repeated at least `repeat_threshold` times.
    fn cycle(&self) -> Option<Cycle> {
        let h = &self.history;
        let last = h.last()?;
        let same_call = h.iter().rev().take_while(|s| s.call == last.call).count();
        if same_call >= self.threshold() {
            return Some(Cycle {
                period: 1,
                repeats: same_call,
            });
        }
        // A-B-A-B…: each call equals, with the same result, the call two before it.
        if h.len() < 4 || h[h.len() - 1].call == h[h.len() - 2].call {
            return None;
        }
        let alternating = (2..h.len())
            .rev()
            .take_while(|&i| h[i].call == h[i - 2].call && h[i].result == h[i - 2].result)
            .count()
            + 2;
        let repeats = alternating / 2;
        (repeats >= self.threshold()).then_some(Cycle { period: 2, repeats })
    }

    fn warning(&self, cycle: Cycle, call: &ToolCall) -> String {
        let what = match cycle.period {
            1 => format!(
                "you have made this same `{}` call {} times in a row",
                call.name, cycle.repeats
            ),
            _ => format!(
                "you have alternated between the same two calls ({}) {} times with unchanged \
                 results",
                self.pair_names(),
                cycle.repeats
            ),
        };
        format!(
            "\n\n[Loop guard: {what}. Repeating it will not tell you anything new: change \
             approach (other arguments, another tool) or answer the user with what you know. \
             If you repeat it again, the run will be stopped.]"
        )
    }

    fn stop_reason(&self, cycle: Cycle, call: &ToolCall) -> String {
        let what = match cycle.period {
            1 => format!("kept repeating the same `{}` call", call.name),
            _ => format!(
                "kept alternating between the same two calls ({})",
                self.pair_names()
            ),
        };
        format!(
            "the loop guard stopped the run: the model {what} after being warned \
             (guard.repeat_threshold = {})",
            self.threshold()
        )
    }

    fn pair_names(&self) -> String {
        let n = self.history.len();
        if n < 2 {
            return String::new();
        }
        format!(
            "`{}` and `{}`",
            self.history[n - 2].tool,
            self.history[n - 1].tool
        )
    }
}

fn key(call: &ToolCall) -> String {
    // serde_json keeps object keys sorted, so equal arguments give equal text.
    format!("{}\u{0}{}", call.name, call.arguments)
}

fn fingerprint(output: &ToolOutput) -> u64 {
    let mut hasher = DefaultHasher::new();
    output.is_error.hash(&mut hasher);
    join_text(&output.content).hash(&mut hasher);
    hasher.finish()
}

/// Append `text` to the output's last text block (or add one).
pub fn append_text(output: &mut ToolOutput, text: &str) {
    match output
        .content
        .iter_mut()
        .rev()
        .find_map(|block| match block {
            Content::Text { text } => Some(text),
            _ => None,
        }) {
        Some(last) => {
            last.truncate(last.trim_end().len());
            last.push_str(text);
        }
        None => output.content.push(Content::text(text.trim_start())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, path: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: json!({"path": path}),
            invalid_arguments: None,
        }
    }

    fn observe(guard: &mut LoopGuard, call: &ToolCall, result: &str) -> GuardAction {
        let mut output = ToolOutput::text(result);
        guard.after(call, &mut output)
    }

    #[test]
    fn warns_at_the_threshold_then_stops() {
        let mut guard = LoopGuard::new(GuardSettings::default());
        let a = call("read", "a");
        assert_eq!(observe(&mut guard, &a, "x"), GuardAction::Fine);
        assert_eq!(observe(&mut guard, &a, "x"), GuardAction::Fine);
        let mut output = ToolOutput::text("x");
        assert_eq!(guard.after(&a, &mut output), GuardAction::Warned);
        assert!(join_text(&output.content).contains("same `read` call 3 times in a row"));
        let reason = guard.before(&a).unwrap();
        assert!(
            reason.contains("kept repeating the same `read` call"),
            "{reason}"
        );
        assert_eq!(guard.before(&call("read", "b")), None);
        assert!(matches!(observe(&mut guard, &a, "x"), GuardAction::Stop(_)));
    }

    #[test]
    fn a_different_call_resets_the_warning() {
        let mut guard = LoopGuard::new(GuardSettings::default());
        let a = call("read", "a");
        for _ in 0..3 {
            observe(&mut guard, &a, "x");
        }
        assert_eq!(
            observe(&mut guard, &call("ls", "."), "y"),
            GuardAction::Fine
        );
        assert_eq!(guard.before(&a), None);
        assert_eq!(observe(&mut guard, &a, "x"), GuardAction::Fine);
    }

    #[test]
    fn alternation_counts_only_with_unchanged_results() {
        let mut guard = LoopGuard::new(GuardSettings::default());
        let (a, b) = (call("read", "a"), call("grep", "b"));
        for round in 0..3 {
            observe(&mut guard, &a, "same");
            // The result of b changes each time: progress, not a loop.
            assert_eq!(
                observe(&mut guard, &b, &format!("r{round}")),
                GuardAction::Fine
            );
        }
        let mut guard = LoopGuard::new(GuardSettings::default());
        let mut actions = Vec::new();
        for _ in 0..3 {
            actions.push(observe(&mut guard, &a, "same"));
            actions.push(observe(&mut guard, &b, "same too"));
        }
        assert_eq!(
            actions[..5],
            [
                GuardAction::Fine,
                GuardAction::Fine,
                GuardAction::Fine,
                GuardAction::Fine,
                GuardAction::Fine
            ]
        );
        assert_eq!(actions[5], GuardAction::Warned);
        assert!(
            guard
                .before(&a)
                .unwrap()
                .contains("alternating between the same two calls (`read` and `grep`)")
        );
    }

    #[test]
    fn can_be_switched_off() {
        let mut guard = LoopGuard::new(GuardSettings {
            enabled: false,
            repeat_threshold: 3,
        });
        let a = call("read", "a");
        for _ in 0..10 {
            assert_eq!(observe(&mut guard, &a, "x"), GuardAction::Fine);
        }
        assert_eq!(guard.before(&a), None);
    }
}
