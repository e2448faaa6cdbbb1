//! Cutting markdown source into units: the pieces the stream renders one at a time. A unit is a
//! top-level block, except that a top-level list is cut into its items, so a long list streams
//! item by item. Each unit runs from the start of its first line to the end of its block, so it
//! can be parsed on its own; blank lines and link reference definitions between blocks belong
//! to no unit (a unit never sees a definition that comes after it, however it was streamed).
//! The parse that finds the units also reports the definitions, so later units can use them.

use pulldown_cmark::{Event, Options, Parser, Tag};

pub(crate) fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An item of a top-level list: `list` counts the lists of this parse, `number` is the
    /// item's number (ordered lists; bullets count too, unused).
    Item {
        list: usize,
        number: u64,
    },
    Fence,
    Heading,
    Rule,
    Paragraph,
    Quote,
    Table,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unit {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

impl Unit {
    /// Whether this unit is an item of the same list as `prev` (then no blank line between).
    pub(crate) fn continues(&self, prev: &Unit) -> bool {
        matches!((prev.kind, self.kind), (Kind::Item { list: a, .. }, Kind::Item { list: b, .. }) if a == b)
    }
}

/// A link reference definition: normalized label, destination, title, and where it ends.
#[derive(Clone, Debug)]
pub(crate) struct RefDef {
    pub label: String,
    pub dest: String,
    pub title: String,
    pub end: usize,
}

pub(crate) struct Segments {
    pub units: Vec<Unit>,
    pub refdefs: Vec<RefDef>,
}

/// Finds the units of `src`. `continued` is the number the first list's first item takes when
/// `src` starts in the middle of a list whose earlier items were already rendered.
pub(crate) fn segment(src: &str, continued: Option<u64>) -> Segments {
    let parser = Parser::new_ext(src, options());
    let mut iter = parser.into_offset_iter();
    let mut units: Vec<Unit> = Vec::new();
    let mut depth = 0usize;
    let mut lists = 0usize;
    let mut list_number: Option<u64> = None; // the next number in the current top-level list
    let push = |units: &mut Vec<Unit>, range: std::ops::Range<usize>, kind: Kind| {
        let start = line_start(src, range.start);
        match units.last_mut() {
            // Two units on one line cannot be cut apart: keep them as one.
            Some(last) if start <= last.start => last.end = last.end.max(range.end),
            _ => units.push(Unit {
                start,
                end: range.end.max(start),
                kind,
            }),
        }
    };
    for (event, range) in iter.by_ref() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    match tag {
                        Tag::List(first) => {
                            let first = if lists == 0 {
                                continued.or(first)
                            } else {
                                first
                            };
                            list_number = Some(first.unwrap_or(1));
                            lists += 1;
                        }
                        Tag::CodeBlock(pulldown_cmark::CodeBlockKind::Fenced(_)) => {
                            push(&mut units, range.clone(), Kind::Fence)
                        }
                        Tag::Heading { .. } => push(&mut units, range.clone(), Kind::Heading),
                        Tag::Paragraph => push(&mut units, range.clone(), Kind::Paragraph),
                        Tag::BlockQuote(_) => push(&mut units, range.clone(), Kind::Quote),
                        Tag::Table(_) => push(&mut units, range.clone(), Kind::Table),
                        _ => push(&mut units, range.clone(), Kind::Other),
                    }
                } else if depth == 1
                    && let (Tag::Item, Some(number)) = (&tag, list_number)
                {
                    let list = lists.saturating_sub(1);
                    push(&mut units, range.clone(), Kind::Item { list, number });
                    list_number = Some(number.saturating_add(1));
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    list_number = None;
                }
            }
            Event::Rule if depth == 0 => push(&mut units, range.clone(), Kind::Rule),
            _ if depth == 0 => push(&mut units, range.clone(), Kind::Other),
            _ => {}
        }
    }
    let mut refdefs: Vec<RefDef> = iter
        .reference_definitions()
        .iter()
        .map(|(label, def)| RefDef {
            label: normalize_label(label),
            dest: def.dest.to_string(),
            title: def.title.as_deref().unwrap_or("").to_string(),
            end: def.span.end,
        })
        .collect();
    refdefs.sort_by_key(|d| d.end);
    Segments { units, refdefs }
}

/// Link labels match case-insensitively, with runs of whitespace as one space.
pub(crate) fn normalize_label(label: &str) -> String {
    label
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn line_start(src: &str, at: usize) -> usize {
    src.get(..at)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(String, Kind)> {
        segment(src, None)
            .units
            .into_iter()
            .map(|u| (src[u.start..u.end].to_string(), u.kind))
            .collect()
    }

    #[test]
    fn top_level_blocks_and_list_items_are_units() {
        let units = kinds("# T\npara\ntext\n\n- a\n- b\n  c\n\n3. x\n4. y\n---\n```\ncode\n```\n");
        let expected = [
            ("# T\n", Kind::Heading),
            ("para\ntext\n", Kind::Paragraph),
            ("- a\n", Kind::Item { list: 0, number: 1 }),
            ("- b\n  c\n\n", Kind::Item { list: 0, number: 2 }),
            ("3. x\n", Kind::Item { list: 1, number: 3 }),
            ("4. y\n", Kind::Item { list: 1, number: 4 }),
            ("---\n", Kind::Rule),
            ("```\ncode\n```", Kind::Fence),
        ];
        let expected: Vec<_> = expected.iter().map(|(s, k)| (s.to_string(), *k)).collect();
        assert_eq!(units, expected);
    }

    #[test]
    fn a_continued_list_keeps_counting() {
        let seg = segment("1. c\n1. d\n\npara\n", Some(7));
        let numbers: Vec<_> = seg.units.iter().map(|u| u.kind).collect();
        assert_eq!(
            numbers,
            [
                Kind::Item { list: 0, number: 7 },
                Kind::Item { list: 0, number: 8 },
                Kind::Paragraph
            ]
        );
    }

    #[test]
    fn reference_definitions_are_reported() {
        let seg = segment("[Foo  Bar]: /url 'T'\n\ntext\n", None);
        assert_eq!(seg.refdefs.len(), 1);
        assert_eq!(seg.refdefs[0].label, "foo bar");
        assert_eq!(seg.refdefs[0].dest, "/url");
        assert_eq!(seg.refdefs[0].title, "T");
        assert_eq!(seg.units.len(), 1);
    }
}
