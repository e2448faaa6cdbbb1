//! The keymap: which action each chord means in each context (`action`), built once at
//! start from the defaults and `[keys]` (`config`), with what was wrong in `[keys]` reported
//! as start-up notices naming the config file's path and line.
//!
//! The router asks `translate` for every key: a chord bound to an action becomes the key the
//! action's handler recognises (its first default chord), a default chord whose action was
//! moved elsewhere is swallowed, and anything else (text being typed, editing keys) goes on
//! as it came. With the defaults, every key goes on unchanged.

pub mod action;
pub mod chord;
mod config;
pub mod render;

pub use action::{ACTIONS, Action, Context};
pub use chord::KeyChord;
pub use config::Report;

use crate::config::keys::KeyBinding;
use crossterm::event::KeyEvent;
use std::collections::{HashMap, HashSet};
use std::path::Path;

pub struct Keymap {
    map: HashMap<(Context, KeyChord), Action>,
    /// Every default chord, where its action works: swallowed when nothing has it now.
    reserved: HashSet<(Context, KeyChord)>,
    /// Each action's chords (in `ACTIONS` order), and the `[keys]` line that set them.
    bindings: Vec<Binding>,
    /// Each action's default chords (in `ACTIONS` order); the first is its handler's key.
    defaults: Vec<Vec<KeyChord>>,
}

/// An action's effective chords.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub action: Action,
    pub chords: Vec<KeyChord>,
    /// The `[keys]` line that set them; `None`: the defaults.
    pub line: Option<usize>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::new(&[]).0
    }
}

impl Keymap {
    /// The defaults with `[keys]` applied, and what there is to say about `[keys]`.
    pub fn new(bindings: &[KeyBinding]) -> (Keymap, Vec<Report>) {
        let outcome = config::resolve(bindings);
        let defaults: Vec<Vec<KeyChord>> = ACTIONS
            .iter()
            .map(|spec| {
                spec.defaults
                    .iter()
                    .filter_map(|text| KeyChord::parse(text).ok())
                    .collect()
            })
            .collect();
        let reserved = ACTIONS
            .iter()
            .zip(&defaults)
            .flat_map(|(spec, chords)| chords.iter().map(|chord| (spec.context, *chord)))
            .collect();
        let mut map = HashMap::new();
        let mut bindings: Vec<Binding> = ACTIONS
            .iter()
            .map(|spec| Binding {
                action: spec.action,
                chords: Vec::new(),
                line: outcome
                    .configured
                    .iter()
                    .find(|(action, _)| *action == spec.action)
                    .and_then(|(_, line)| *line),
            })
            .collect();
        for claim in &outcome.claims {
            map.insert((claim.action.context(), claim.chord), claim.action);
            if let Some(binding) = bindings.get_mut(claim.action as usize) {
                binding.chords.push(claim.chord);
            }
        }
        let keymap = Keymap {
            map,
            reserved,
            bindings,
            defaults,
        };
        (keymap, outcome.reports)
    }

    /// The keymap of `[keys]`, and its reports as lines naming `file:line`.
    pub fn from_config(bindings: &[KeyBinding], file: &Path) -> (Keymap, Vec<Report>) {
        let (keymap, mut reports) = Keymap::new(bindings);
        for report in &mut reports {
            let place = match report.line {
                Some(line) => format!("{}:{line}", file.display()),
                None => file.display().to_string(),
            };
            report.text = format!("{place}: [keys] {}", report.text);
        }
        (keymap, reports)
    }

    /// The action a chord means in `context` (or the contexts it falls back to).
    pub fn action(&self, context: Context, chord: KeyChord) -> Option<Action> {
        context
            .chain()
            .find_map(|context| self.map.get(&(context, chord)).copied())
    }

    /// The key the handlers should see for `key` in `context`; `None`: nothing (a default
    /// chord whose action has moved, or been unbound).
    pub fn translate(&self, context: Context, key: KeyEvent) -> Option<KeyEvent> {
        let chord = KeyChord::of(&key);
        match self.action(context, chord) {
            Some(action) => {
                let defaults = self.defaults.get(action as usize)?;
                if defaults.contains(&chord) {
                    return Some(key);
                }
                let mut event = defaults.first()?.event();
                event.kind = key.kind;
                event.state = key.state;
                Some(event)
            }
            None if context
                .chain()
                .any(|context| self.reserved.contains(&(context, chord))) =>
            {
                None
            }
            None => Some(key),
        }
    }

    /// Every action's effective chords, in `ACTIONS` order.
    pub fn bindings(&self) -> &[Binding] {
        &self.bindings
    }

    /// An action's effective chords, as `[keys]` spells them ("ctrl+r, f3"); empty when
    /// unbound.
    pub fn chords_text(&self, action: Action) -> String {
        self.bindings
            .get(action as usize)
            .map(|b| {
                b.chords
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    fn bind(lines: &[(&str, &[&str], usize)]) -> (Keymap, Vec<Report>) {
        let bindings: Vec<KeyBinding> = lines
            .iter()
            .map(|(action, chords, line)| KeyBinding {
                action: action.to_string(),
                chords: Ok(chords.iter().map(ToString::to_string).collect()),
                line: Some(*line),
            })
            .collect();
        Keymap::new(&bindings)
    }

    fn chord(text: &str) -> KeyChord {
        KeyChord::parse(text).unwrap()
    }

    fn key(text: &str) -> KeyEvent {
        chord(text).event()
    }

    #[test]
    fn every_default_parses_and_the_defaults_have_no_conflict() {
        for spec in ACTIONS {
            for text in spec.defaults {
                KeyChord::parse(text).unwrap_or_else(|e| panic!("{}: {text}: {e}", spec.name));
            }
        }
        let (keymap, reports) = Keymap::new(&[]);
        assert_eq!(reports, []);
        // Every default chord is its action's in the action's context.
        for spec in ACTIONS {
            for text in spec.defaults {
                assert_eq!(
                    keymap.action(spec.context, chord(text)),
                    Some(spec.action),
                    "{} {text}",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn with_the_defaults_every_key_goes_on_unchanged() {
        let keymap = Keymap::default();
        for context in Context::ALL {
            for text in [
                "enter",
                "shift+enter",
                "ctrl+j",
                "esc",
                "ctrl+g",
                "x",
                "G",
                "shift+tab",
            ] {
                assert_eq!(keymap.translate(context, key(text)), Some(key(text)));
            }
        }
    }

    #[test]
    fn swapping_enter_and_shift_enter() {
        let (keymap, reports) = bind(&[
            ("composer.submit", &["shift+enter"], 3),
            ("composer.newline", &["enter"], 4),
        ]);
        assert_eq!(reports, []);
        let composer = Context::Composer;
        assert_eq!(
            keymap.action(composer, chord("enter")),
            Some(Action::ComposerNewline)
        );
        // enter reaches the composer as its newline key, shift+enter as its submit key.
        assert_eq!(
            keymap.translate(composer, key("enter")),
            Some(key("shift+enter"))
        );
        assert_eq!(
            keymap.translate(composer, key("shift+enter")),
            Some(key("enter"))
        );
        // ctrl+j was a default newline chord: the newline is enter now, so it does nothing.
        assert_eq!(keymap.translate(composer, key("ctrl+j")), None);
        // Other contexts keep their enter.
        assert_eq!(
            keymap.translate(Context::Menu, key("enter")),
            Some(key("enter"))
        );
        assert_eq!(keymap.chords_text(Action::ComposerSubmit), "shift+enter");
        assert_eq!(
            keymap.bindings()[Action::ComposerSubmit as usize].line,
            Some(3)
        );
    }

    #[test]
    fn unbinding_and_binding_a_function_key() {
        let (keymap, reports) = bind(&[
            ("view.agents", &[], 2),
            ("view.transcript", &["f2", "ctrl+o"], 3),
        ]);
        assert_eq!(reports, []);
        assert_eq!(keymap.translate(Context::Composer, key("ctrl+g")), None);
        assert_eq!(
            keymap.translate(Context::Composer, key("f2")),
            Some(key("ctrl+o"))
        );
        // The history search still leaves with ctrl+g (its own default).
        assert_eq!(
            keymap.translate(Context::HistorySearch, key("ctrl+g")),
            Some(key("ctrl+g"))
        );
        assert_eq!(keymap.chords_text(Action::AgentsOpen), "");
    }

    #[test]
    fn two_configured_actions_on_one_chord_the_later_line_loses() {
        let (keymap, reports) = bind(&[
            ("composer.submit", &["ctrl+j"], 12),
            ("composer.newline", &["ctrl+j", "shift+enter"], 13),
        ]);
        assert_eq!(
            keymap.action(Context::Composer, chord("ctrl+j")),
            Some(Action::ComposerSubmit)
        );
        assert_eq!(keymap.chords_text(Action::ComposerNewline), "shift+enter");
        let problems: Vec<_> = reports.iter().filter(|r| r.problem).collect();
        assert_eq!(problems.len(), 1, "{reports:?}");
        assert_eq!(problems[0].line, Some(13));
        assert!(
            problems[0]
                .text
                .contains("ctrl+j is already `composer.submit` (line 12)")
        );
        // A global action on a chord the composer binds is a conflict too, but an approval
        // key is not (the two are never active together).
        let (_, reports) = bind(&[
            ("composer.follow_up", &["ctrl+x"], 2),
            ("view.transcript", &["ctrl+x"], 3),
            ("approval.deny", &["ctrl+x"], 4),
        ]);
        let problems: Vec<_> = reports.iter().filter(|r| r.problem).collect();
        assert_eq!(problems.len(), 1, "{reports:?}");
        assert_eq!(problems[0].line, Some(3));
    }

    #[test]
    fn unknown_names_bad_chords_and_text_keys_are_problems_and_the_rest_works() {
        let (keymap, reports) = bind(&[
            ("composer.sumbit", &["ctrl+s"], 2),
            ("composer.newline", &["ctrl+enterr", "alt+j"], 3),
            ("composer.follow_up", &["x"], 4),
            ("approval.allow", &["Y"], 5),
        ]);
        let lines: Vec<_> = reports.iter().map(|r| (r.line, r.problem)).collect();
        assert_eq!(
            lines,
            [(Some(2), true), (Some(3), true), (Some(4), true)],
            "{reports:?}"
        );
        assert!(reports[0].text.contains("did you mean `composer.submit`"));
        assert!(reports[1].text.contains("enterr"));
        assert_eq!(keymap.chords_text(Action::ComposerNewline), "alt+j");
        assert_eq!(keymap.chords_text(Action::ComposerFollowUp), "");
        assert_eq!(keymap.chords_text(Action::ApprovalAllow), "Y");
        assert_eq!(
            keymap.action(Context::Composer, chord("enter")),
            Some(Action::ComposerSubmit)
        );
    }

    #[test]
    fn ctrl_c_always_stops() {
        let (keymap, reports) = bind(&[
            ("composer.submit", &["ctrl+c"], 2),
            ("app.interrupt", &["ctrl+q"], 3),
        ]);
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(reports[0].text.contains("ctrl+c always stops"));
        assert_eq!(
            keymap.action(Context::Composer, chord("ctrl+c")),
            Some(Action::AppInterrupt)
        );
        assert_eq!(keymap.chords_text(Action::AppInterrupt), "ctrl+c, ctrl+q");
        assert_eq!(keymap.chords_text(Action::ComposerSubmit), "");
    }

    #[test]
    fn a_configured_chord_takes_a_default_one_with_a_note() {
        let (keymap, reports) = bind(&[("composer.submit", &["shift+enter"], 7)]);
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert!(!reports[0].problem);
        assert!(
            reports[0].text.contains("no longer `composer.newline`"),
            "{reports:?}"
        );
        assert_eq!(
            keymap.chords_text(Action::ComposerNewline),
            "ctrl+enter, ctrl+j"
        );
        // enter, submit's default, now does nothing in the composer.
        assert_eq!(keymap.translate(Context::Composer, key("enter")), None);
        // A composer chord over a global default: the global keeps it elsewhere.
        let (keymap, reports) = bind(&[("composer.follow_up", &["ctrl+o"], 2)]);
        assert!(reports.iter().all(|r| !r.problem), "{reports:?}");
        assert_eq!(
            keymap.action(Context::Composer, chord("ctrl+o")),
            Some(Action::ComposerFollowUp)
        );
        assert_eq!(
            keymap.action(Context::Approval, chord("ctrl+o")),
            Some(Action::TranscriptOpen)
        );
        assert_eq!(
            keymap.translate(
                Context::Composer,
                KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL)
            ),
            Some(key("alt+enter"))
        );
    }

    #[test]
    fn reports_name_the_file_and_line() {
        let bindings = [KeyBinding {
            action: "nope".into(),
            chords: Ok(vec!["ctrl+x".into()]),
            line: Some(9),
        }];
        let (_, reports) = Keymap::from_config(&bindings, Path::new("/home/u/.agent/config.toml"));
        assert!(
            reports[0]
                .text
                .starts_with("/home/u/.agent/config.toml:9: [keys] `nope` is not an action"),
            "{reports:?}"
        );
    }
}
