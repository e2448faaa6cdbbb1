//! Building the keymap from the defaults and `[keys]`: a configured action replaces its
//! default chords; what cannot be used (an unknown action, a chord that does not parse, a
//! plain character where text is typed, two configured actions on one chord where both
//! work) is a problem reported with its line, and the rest of the keymap still works.
//!
//! Who gets a chord claimed twice in contexts that are active together: ctrl+c stays
//! `app.interrupt`'s (a user can always stop and leave); a configured chord beats a default
//! one (the default's action loses it, with a note); of two configured ones the earlier line
//! wins. A default of a narrower context shadowing a wider one (esc in the history search)
//! is by design.

use super::action::{ACTIONS, Action};
use super::chord::KeyChord;
use crate::config::keys::KeyBinding;

/// A chord an action has, and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Claim {
    pub action: Action,
    pub chord: KeyChord,
    /// The `[keys]` line it was configured on; `None`: a default.
    pub line: Option<usize>,
}

/// Something said about `[keys]` at start: `line` in the config file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub line: Option<usize>,
    pub text: String,
    /// A problem (a line that could not be used) rather than a note (a default given up).
    pub problem: bool,
}

/// The claims that stand, and the reports.
pub(super) struct Outcome {
    pub claims: Vec<Claim>,
    /// The action's configured line, for each action configured (`/keys` shows it).
    pub configured: Vec<(Action, Option<usize>)>,
    pub reports: Vec<Report>,
}

const STOP: (crossterm::event::KeyCode, crossterm::event::KeyModifiers) = (
    crossterm::event::KeyCode::Char('c'),
    crossterm::event::KeyModifiers::CONTROL,
);

pub(super) fn resolve(bindings: &[KeyBinding]) -> Outcome {
    let mut reports = Vec::new();
    let mut configured: Vec<(Action, Vec<KeyChord>, Option<usize>)> = Vec::new();
    for binding in bindings {
        if let Some((action, chords)) = configured_binding(binding, &mut reports) {
            configured.retain(|(a, _, _)| *a != action);
            configured.push((action, chords, binding.line));
        }
    }
    let stop = KeyChord::new(STOP.0, STOP.1);
    let mut wanted: Vec<Claim> = Vec::new();
    // ctrl+c first: nothing takes it from app.interrupt.
    wanted.push(Claim {
        action: Action::AppInterrupt,
        chord: stop,
        line: None,
    });
    let mut by_line = configured.clone();
    by_line.sort_by_key(|(_, _, line)| line.unwrap_or(usize::MAX));
    for (action, chords, line) in &by_line {
        for chord in chords {
            wanted.push(Claim {
                action: *action,
                chord: *chord,
                line: Some(line.unwrap_or(0)),
            });
        }
    }
    for spec in ACTIONS {
        if configured.iter().any(|(a, _, _)| *a == spec.action) {
            continue;
        }
        for chord in spec.defaults.iter().filter_map(|d| KeyChord::parse(d).ok()) {
            wanted.push(Claim {
                action: spec.action,
                chord,
                line: None,
            });
        }
    }
    let mut claims: Vec<Claim> = Vec::new();
    for claim in wanted {
        if claims
            .iter()
            .any(|c| c.action == claim.action && c.chord == claim.chord)
        {
            continue;
        }
        match claims
            .iter()
            .find(|held| held.chord == claim.chord && overlap(held, &claim))
        {
            None => claims.push(claim),
            Some(held) => {
                if let Some(report) = settle(held, &claim, stop) {
                    reports.push(report);
                }
                if keeps_both(held, &claim) {
                    claims.push(claim);
                }
            }
        }
    }
    // Said in the order of the file.
    reports.sort_by_key(|report| report.line.unwrap_or(usize::MAX));
    Outcome {
        claims,
        configured: configured.iter().map(|(a, _, l)| (*a, *l)).collect(),
        reports,
    }
}

/// The action and chords of one `[keys]` line, reporting what cannot be used.
fn configured_binding(
    binding: &KeyBinding,
    reports: &mut Vec<Report>,
) -> Option<(Action, Vec<KeyChord>)> {
    let mut problem = |text: String| {
        reports.push(Report {
            line: binding.line,
            text,
            problem: true,
        })
    };
    let Some(action) = Action::named(&binding.action) else {
        let hint = Action::closest(&binding.action)
            .map(|name| format!(" (did you mean `{name}`?)"))
            .unwrap_or_default();
        problem(format!(
            "`{}` is not an action{hint}; /keys lists them",
            binding.action
        ));
        return None;
    };
    let texts = match &binding.chords {
        Ok(texts) => texts,
        Err(why) => {
            problem(format!("`{}`: {why}", binding.action));
            return None;
        }
    };
    let mut chords = Vec::new();
    for text in texts {
        match KeyChord::parse(text) {
            Err(why) => problem(format!("`{}` = \"{text}\": {why}", binding.action)),
            Ok(chord) if chord.is_text() && action.context().types_text() => problem(format!(
                "`{}` = \"{text}\": that key types text there; use a chord with ctrl or alt",
                binding.action
            )),
            Ok(chord) if !chords.contains(&chord) => chords.push(chord),
            Ok(_) => {}
        }
    }
    Some((action, chords))
}

/// Whether the two claims are on one chord where both work.
fn overlap(a: &Claim, b: &Claim) -> bool {
    a.action.context().overlaps(b.action.context())
}

/// A narrower context's claim shadows a wider one's without removing it: both stand when
/// the one that came later is a default in a wider context than a configured one (it keeps
/// the chord elsewhere), or both are defaults.
fn keeps_both(held: &Claim, claim: &Claim) -> bool {
    let (held_context, context) = (held.action.context(), claim.action.context());
    if held_context == context {
        return false;
    }
    match (held.line, claim.line) {
        (None, None) => true,
        // A configured claim in a narrower context: the default keeps the chord elsewhere.
        (Some(_), None) => held_context.chain().any(|c| c == context),
        _ => false,
    }
}

/// What to say when `claim` meets `held` on one chord.
fn settle(held: &Claim, claim: &Claim, stop: KeyChord) -> Option<Report> {
    let chord = claim.chord;
    let (a, b) = (held.action, claim.action);
    match (held.line, claim.line) {
        (None, None) => None,
        (None, Some(line)) if chord == stop && a == Action::AppInterrupt => Some(Report {
            line: Some(line),
            text: format!(
                "ctrl+c always stops the agent and quits (app.interrupt): `{b}` does not get it"
            ),
            problem: true,
        }),
        (Some(line), Some(later)) => Some(Report {
            line: Some(later),
            text: format!("{chord} is already `{a}` (line {line}): `{b}` does not get it"),
            problem: true,
        }),
        (Some(line), None) if keeps_both(held, claim) => Some(Report {
            line: Some(line),
            text: format!(
                "{chord} is `{a}` in the {}, and stays `{b}` elsewhere",
                a.context().title().to_lowercase()
            ),
            problem: false,
        }),
        (Some(line), None) => Some(Report {
            line: Some(line),
            text: format!("{chord} is now `{a}`, no longer `{b}`"),
            problem: false,
        }),
        // Configured claims come before the defaults.
        (None, Some(_)) => None,
    }
}
