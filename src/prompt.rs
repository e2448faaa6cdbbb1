//! The system prompt: the template in `assets/` filled with the tools, working directory
//! and date, or the user's replacement, plus anything appended.

use std::path::Path;

const TEMPLATE: &str = include_str!("../assets/system_prompt.md");

pub fn system_prompt(
    replacement: Option<&str>,
    append: Option<&str>,
    tools: &[&str],
    cwd: &Path,
) -> String {
    let mut prompt = match replacement {
        Some(text) => text.to_string(),
        None => TEMPLATE
            .replace(
                "{tools}",
                &if tools.is_empty() {
                    "none".to_string()
                } else {
                    tools.join(", ")
                },
            )
            .replace("{cwd}", &cwd.display().to_string())
            .replace("{date}", &utc_date(crate::agent::message::now_millis())),
    };
    if let Some(extra) = append.filter(|a| !a.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(extra.trim());
    }
    prompt
}

/// `YYYY-MM-DD` (UTC) of a Unix timestamp in milliseconds. Hand-written (the civil-from-days
/// algorithm) because a date crate would be a whole dependency for this one line.
pub fn utc_date(millis: i64) -> String {
    let days = millis.div_euclid(86_400_000);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_dates() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400_000), "2000-02-29");
        assert_eq!(utc_date(1_795_219_200_000), "2026-11-21");
    }

    #[test]
    fn fills_the_template() {
        let prompt = system_prompt(
            None,
            Some("Be brief."),
            &["read", "bash"],
            Path::new("/repo"),
        );
        assert!(prompt.contains("Tools available: read, bash"));
        assert!(prompt.contains("Working directory: /repo"));
        assert!(prompt.ends_with("Be brief."));
        assert_eq!(
            system_prompt(Some("Custom"), None, &[], Path::new("/")),
            "Custom"
        );
    }
}
