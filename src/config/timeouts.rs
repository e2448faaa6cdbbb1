//! The request timeouts of config.toml: positive numbers of seconds, fractions allowed.

use super::file::FileConfig;
use crate::llm::timeouts::Timeouts;
use std::time::Duration;

/// The `*_timeout_secs` keys over the defaults; each must be a positive number of seconds.
pub fn from_file(file: &FileConfig) -> Result<Timeouts, (&'static str, String)> {
    let defaults = Timeouts::default();
    let seconds = |key: &'static str, value: Option<f64>, default: Duration| match value {
        None => Ok(default),
        Some(secs) if secs > 0.0 => Duration::try_from_secs_f64(secs)
            .map_err(|_| (key, format!("{secs} is not a number of seconds"))),
        Some(secs) => Err((key, format!("must be more than 0 seconds, not {secs}"))),
    };
    Ok(Timeouts {
        connect: seconds(
            "connect_timeout_secs",
            file.connect_timeout_secs,
            defaults.connect,
        )?,
        response: seconds(
            "response_timeout_secs",
            file.response_timeout_secs,
            defaults.response,
        )?,
        idle: seconds(
            "stream_idle_timeout_secs",
            file.stream_idle_timeout_secs,
            defaults.idle,
        )?,
        content: seconds(
            "stream_content_timeout_secs",
            file.stream_content_timeout_secs,
            defaults.content,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_positive_seconds() {
        let file = crate::config::file::parse(
            "response_timeout_secs = 0.25\nstream_idle_timeout_secs = 30",
        )
        .unwrap();
        let parsed = from_file(&file).unwrap();
        assert_eq!(parsed.response, Duration::from_millis(250));
        assert_eq!(parsed.idle, Duration::from_secs(30));
        assert_eq!(parsed.content, Timeouts::default().content);
        let file = crate::config::file::parse("stream_content_timeout_secs = 0").unwrap();
        let (key, message) = from_file(&file).unwrap_err();
        assert_eq!(key, "stream_content_timeout_secs");
        assert!(message.contains("more than 0"), "{message}");
    }
}
