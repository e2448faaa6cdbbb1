//! Calendar dates from Unix timestamps, in UTC. Hand-written (the civil-from-days
//! algorithm) because a date crate would be a whole dependency for two formatting needs:
//! today's date in the system prompt and sortable session file names.

/// Whole milliseconds of a duration, saturating (a `u128` does not fit an event field).
pub fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// (year, month, day, seconds into the day) of a Unix timestamp in milliseconds.
fn civil(millis: i64) -> (i64, i64, i64, i64) {
    let days = millis.div_euclid(86_400_000);
    let seconds = millis.rem_euclid(86_400_000) / 1000;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, seconds)
}

/// How long ago `when` was, roughly: `just now`, `5 min ago`, `3 h ago`, `2 d ago`.
pub fn ago(when: std::time::SystemTime) -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(when)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    match seconds {
        0..60 => "just now".to_string(),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..86_400 => format!("{} h ago", seconds / 3600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// `YYYY-MM-DD`.
pub fn utc_date(millis: i64) -> String {
    let (year, month, day, _) = civil(millis);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `YYYY-MM-DDTHH-MM-SS-mmmZ`: sorts by time and is safe in file names.
pub fn file_stamp(millis: i64) -> String {
    let (year, month, day, seconds) = civil(millis);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}-{:02}-{:02}-{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        millis.rem_euclid(1000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
        assert_eq!(utc_date(1_795_219_200_000), "2026-11-21");
        assert_eq!(file_stamp(1_795_296_007_089), "2026-11-21T21-20-07-089Z");
    }
}
