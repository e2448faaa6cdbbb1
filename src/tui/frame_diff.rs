//! What to write to turn one frame into the next: ratatui's cell diff, plus the columns a
//! wide grapheme covered in the last frame when that grapheme changed.
//!
//! ratatui counts on the terminal erasing a wide character whole when its first column is
//! overwritten. Terminals that draw a grapheme as several narrower characters (a flag as
//! two regional-indicator letters in xterm and vt100, an emoji ZWJ sequence as its parts)
//! keep the rest on screen, so deleting `🇫🇷` from the composer would leave `🇷` behind.
//! Writing those columns again costs a few cells and only when a wide grapheme changes.

use ratatui::buffer::{Buffer, Cell, CellWidth};

/// The cells to write, row by row and left to right (each once).
pub fn frame_updates<'a>(previous: &Buffer, next: &'a Buffer) -> Vec<(u16, u16, &'a Cell)> {
    let mut updates = previous.diff(next);
    if previous.area != next.area {
        return updates;
    }
    let width = usize::from(next.area.width);
    if width == 0 {
        return updates;
    }
    let mut extra = Vec::new();
    for (row, (before, after)) in previous
        .content
        .chunks(width)
        .zip(next.content.chunks(width))
        .enumerate()
    {
        let covered = covered_columns(after);
        for (x, cell) in before.iter().enumerate() {
            let span = usize::from(cell.cell_width());
            if span < 2 || cell == &after[x] {
                continue;
            }
            let behind = (x + 1..(x + span).min(width)).filter(|column| !covered[*column]);
            extra.extend(behind.map(|column| (column, row)));
        }
    }
    if extra.is_empty() {
        return updates;
    }
    for (column, row) in extra {
        // Both fit: they index cells of `next`, whose area is at most u16 × u16.
        let (Ok(dx), Ok(dy)) = (u16::try_from(column), u16::try_from(row)) else {
            continue;
        };
        let (x, y) = (
            next.area.x.saturating_add(dx),
            next.area.y.saturating_add(dy),
        );
        updates.push((x, y, &next[(x, y)]));
    }
    updates.sort_by_key(|(x, y, _)| (*y, *x));
    updates.dedup_by_key(|(x, y, _)| (*x, *y));
    updates
}

/// Which columns of a row are the right-hand part of a wide grapheme (drawn by it).
fn covered_columns(row: &[Cell]) -> Vec<bool> {
    let mut covered = vec![false; row.len()];
    let mut x = 0;
    while x < row.len() {
        let span = usize::from(row[x].cell_width()).max(1);
        for slot in covered
            .iter_mut()
            .take((x + span).min(row.len()))
            .skip(x + 1)
        {
            *slot = true;
        }
        x += span;
    }
    covered
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;

    fn row(text: &str) -> Buffer {
        let mut buffer = Buffer::empty(Rect::new(0, 3, 6, 1));
        buffer.set_string(0, 3, text, ratatui::style::Style::default());
        buffer
    }

    fn written(previous: &Buffer, next: &Buffer) -> Vec<(u16, String)> {
        frame_updates(previous, next)
            .into_iter()
            .map(|(x, _, cell)| (x, cell.symbol().to_string()))
            .collect()
    }

    #[test]
    fn a_deleted_flag_is_erased_in_both_of_its_columns() {
        let updates = written(&row("x🇫🇷y"), &row("xy"));
        assert_eq!(
            updates,
            [(1, "y".into()), (2, " ".into()), (3, " ".into())],
            "ratatui alone writes column 1 and 3, leaving `🇷` in column 2"
        );
    }

    #[test]
    fn nothing_more_when_no_wide_grapheme_changed() {
        assert_eq!(written(&row("一a"), &row("一b")), [(2, "b".into())]);
        // A wide grapheme drawn over a narrow one covers its own right column.
        assert_eq!(written(&row("ab"), &row("一")), [(0, "一".into())]);
    }
}
