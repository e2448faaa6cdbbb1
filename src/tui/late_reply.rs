//! A terminal's answer to a query that comes after the interface stopped waiting for it —
//! the background colour (OSC 11, asked at start with a 150 ms timeout) from a slow terminal,
//! or over ssh — arrives as input. crossterm reads `ESC ] 11 ; rgb:… ESC \` as keys: alt+],
//! then the text, then alt+\ (or ctrl+g for a BEL ending). This module recognises such an
//! answer in the events read together, so that it is dropped instead of typed into the
//! composer. (Late cursor-position and device-attribute answers are CSI sequences that
//! crossterm keeps to itself.)

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// The longest answer looked for, in events (an OSC 11 answer is about 30).
const LONGEST: usize = 128;

/// What the events read so far are.
#[derive(Debug, PartialEq, Eq)]
pub enum Scan {
    /// A whole answer: these first events are it.
    Answer(usize),
    /// The start of one, if more events follow.
    Partial,
    /// Input from the user.
    Keys,
}

/// Whether `event` may start an answer (alt+], as crossterm reads `ESC ]`).
pub fn may_start(event: &Event) -> bool {
    key(event).is_some_and(|k| k.code == KeyCode::Char(']') && k.modifiers == KeyModifiers::ALT)
}

/// Look at `events`, which start with what `may_start` accepted: `ESC ] <digits> ; <text>`
/// ended by `ESC \` or BEL.
pub fn scan(events: &[Event]) -> Scan {
    let Some((first, rest)) = events.split_first() else {
        return Scan::Partial;
    };
    if !may_start(first) {
        return Scan::Keys;
    }
    let mut digits = 0;
    let mut separated = false;
    for (at, event) in rest.iter().enumerate() {
        let Some(key) = key(event) else {
            return Scan::Keys;
        };
        let ends = (key.code == KeyCode::Char('\\') && key.modifiers == KeyModifiers::ALT)
            || (key.code == KeyCode::Char('g') && key.modifiers == KeyModifiers::CONTROL);
        if ends {
            return if separated {
                Scan::Answer(at + 2)
            } else {
                Scan::Keys
            };
        }
        let KeyCode::Char(c) = key.code else {
            return Scan::Keys;
        };
        if !(key.modifiers - KeyModifiers::SHIFT).is_empty() || c.is_control() {
            return Scan::Keys;
        }
        if separated {
            continue;
        }
        match c {
            '0'..='9' => digits += 1,
            ';' if digits > 0 => separated = true,
            _ => return Scan::Keys,
        }
    }
    if events.len() >= LONGEST {
        Scan::Keys
    } else {
        Scan::Partial
    }
}

fn key(event: &Event) -> Option<&KeyEvent> {
    match event {
        Event::Key(key) if key.kind == KeyEventKind::Press => Some(key),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<Event> {
        text.chars()
            .map(|c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)))
            .collect()
    }

    fn alt(c: char) -> Event {
        Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT))
    }

    fn answer(body: &str, end: Event) -> Vec<Event> {
        let mut events = vec![alt(']')];
        events.extend(keys(body));
        events.push(end);
        events
    }

    #[test]
    fn an_osc_answer_is_recognised_whole_with_either_ending() {
        let st = answer("11;rgb:ffff/ffff/ffff", alt('\\'));
        assert_eq!(scan(&st), Scan::Answer(st.len()));
        let bel = Event::Key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::CONTROL));
        let mut typed = answer("11;rgb:0000/0000/0000", bel);
        let length = typed.len();
        typed.extend(keys("abc"));
        assert_eq!(scan(&typed), Scan::Answer(length));
        assert_eq!(scan(&st[..5]), Scan::Partial);
    }

    #[test]
    fn keys_a_person_types_are_not_an_answer() {
        assert_eq!(scan(&[alt(']')]), Scan::Partial);
        let mut typed = vec![alt(']')];
        typed.extend(keys("hello"));
        assert_eq!(scan(&typed), Scan::Keys);
        assert_eq!(scan(&answer("11", alt('\\'))), Scan::Keys);
        assert_eq!(scan(&keys("11;x")), Scan::Keys);
        assert!(!may_start(&keys("]")[0]));
    }
}
