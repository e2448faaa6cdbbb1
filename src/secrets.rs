//! API keys, kept where nothing else can read them and masked wherever text leaves the
//! agent: provider errors, the log and session files, tool results (before the model, an
//! event or a session sees them), every event front ends write (`--mode json`, RPC, ACP,
//! `-p`'s answer) and every provider request body.
//!
//! At startup the provider key variables are taken out of the process environment (value
//! copied here, bytes in the environment block overwritten, variable removed), so a tool
//! reading `/proc/<agent pid>/environ` finds nothing; a key given with `--api-key` is
//! overwritten in the process's argument block (`scrub_from_args`), so
//! `/proc/<agent pid>/cmdline` shows `x`s in its place. Providers read the keys back with
//! `env_key`. Every key the agent learns — taken from the environment, given with
//! `--api-key`, printed by an `api_key_command` — is registered and replaced by
//! `[REDACTED]` in whatever passes through `redact`.
//!
//! Keys shorter than `MIN_SECRET_LEN` are not masked: they are placeholders ("none",
//! "ollama") that local servers accept, and masking them would garble ordinary words.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{OnceLock, PoisonError, RwLock};

pub const REDACTED: &str = "[REDACTED]";
pub const MIN_SECRET_LEN: usize = 8;

/// Values of the key variables taken from the environment at startup.
static TAKEN: OnceLock<HashMap<String, String>> = OnceLock::new();
/// Every key to mask, longest first (so a key that contains another is masked whole).
static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Take the variables `names` out of the environment: their values are kept for
/// `env_key` and registered for redaction, and the process environment no longer holds
/// them. Call once, before any other thread exists. A second call does nothing.
///
/// # Safety
///
/// No other thread may read or write the environment while this runs (edition 2024 makes
/// `remove_var` unsafe for that reason): call it from `main` before the async runtime, the
/// logger or anything else starts a thread.
pub unsafe fn take_from_env(names: &[String]) {
    if TAKEN.get().is_some() {
        return;
    }
    let mut taken = HashMap::new();
    for name in names {
        if name.is_empty() || name.contains(['=', '\0']) {
            continue;
        }
        let Ok(value) = std::env::var(name) else {
            continue;
        };
        // SAFETY: single-threaded by this function's contract, so nothing reads the
        // environment while its bytes are overwritten and the variable removed.
        unsafe {
            wipe_value(name);
            std::env::remove_var(name);
        }
        register(&value);
        taken.insert(name.clone(), value);
    }
    let _ = TAKEN.set(taken);
}

/// Overwrite the value of `name` where the environment block holds it. Removing the
/// variable alone only unlinks it from `environ`: the original bytes stay in the block
/// the kernel shows in `/proc/<pid>/environ`.
///
/// # Safety
///
/// No other thread may touch the environment meanwhile.
unsafe fn wipe_value(name: &str) {
    let Ok(name) = std::ffi::CString::new(name) else {
        return;
    };
    // SAFETY: `name` is a valid C string; `getenv` returns null or a pointer to the
    // NUL-terminated value inside the (writable) environment block or a copy `setenv`
    // allocated, and no other thread can change it meanwhile (the caller's contract).
    // Exactly the value's own bytes are overwritten, its terminator is kept.
    unsafe {
        let value = libc::getenv(name.as_ptr());
        if !value.is_null() {
            let length = libc::strlen(value);
            std::ptr::write_bytes(value, b'x', length);
        }
    }
}

/// Overwrite `key` wherever the process's argument block holds it (`--api-key KEY`,
/// `--api-key=KEY`), so `/proc/<pid>/cmdline` — readable by any process of the same user,
/// sandboxed commands included — no longer shows it. The block is the one the kernel set
/// up at exec and reports in `/proc/self/stat` (`arg_start`, `arg_end`); the bytes are
/// overwritten in place, their length and the NUL separators kept. Does nothing where that
/// block cannot be found (not Linux).
///
/// # Safety
///
/// No other thread may read the arguments meanwhile (the standard library reads
/// `std::env::args` from that block): call it from `main`, after the command line was
/// parsed and before any thread starts.
pub unsafe fn scrub_from_args(key: &str) {
    let Some((start, end)) = argument_block() else {
        return;
    };
    if key.is_empty() || end <= start {
        return;
    }
    // SAFETY: [start, end) is this process's argument block, mapped and writable (it lies
    // on the initial stack); no other thread reads it (the caller's contract).
    let block = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
    let key = key.as_bytes();
    let mut at = 0;
    while let Some(found) = block[at..].windows(key.len()).position(|w| w == key) {
        let from = at + found;
        block[from..from + key.len()].fill(b'x');
        at = from + key.len();
    }
}

/// `arg_start` and `arg_end` of `/proc/self/stat` (fields 48 and 49).
fn argument_block() -> Option<(usize, usize)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: fields are counted after its `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(45);
    let start = fields.next()?.parse().ok()?;
    let end = fields.next()?.parse().ok()?;
    Some((start, end))
}

/// The value of a key variable: the one taken at startup, else the live environment
/// (variables nobody took, e.g. when the library is used without `main`).
pub fn env_key(name: &str) -> Option<String> {
    TAKEN
        .get()
        .and_then(|taken| taken.get(name).cloned())
        .or_else(|| std::env::var(name).ok())
}

/// Mask `key` from now on wherever `redact` is applied.
pub fn register(key: &str) {
    let key = key.trim();
    if key.len() < MIN_SECRET_LEN {
        return;
    }
    let is_known = |known: &[String]| known.iter().any(|k| k == key);
    // Called for every request: the common case (already known) only reads.
    if is_known(&KNOWN.read().unwrap_or_else(PoisonError::into_inner)) {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(PoisonError::into_inner);
    if !is_known(&known) {
        known.push(key.to_string());
        known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }
}

/// `text` with every registered key replaced by `[REDACTED]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    let mut text = Cow::Borrowed(text);
    for key in known.iter() {
        if text.contains(key.as_str()) {
            text = Cow::Owned(text.replace(key.as_str(), REDACTED));
        }
    }
    text
}

/// `redact` for text the caller owns: the same string back when it holds no key.
pub fn redact_string(text: String) -> String {
    match redact(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(masked) => masked,
    }
}

/// `redact` on every string in a JSON value (keys of objects included).
pub fn redact_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(text) => *text = redact_string(std::mem::take(text)),
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::Object(fields) => {
            let masked: serde_json::Map<String, Value> = std::mem::take(fields)
                .into_iter()
                .map(|(name, mut value)| {
                    redact_json(&mut value);
                    (redact_string(name), value)
                })
                .collect();
            *fields = masked;
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `redact` for text held as bytes (a session line, a log record); bytes that are not
/// UTF-8 are searched as they are.
pub fn redact_bytes(bytes: Vec<u8>) -> Vec<u8> {
    if KNOWN
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .is_empty()
    {
        return bytes;
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(not_utf8) => return redact_raw(not_utf8.into_bytes()),
    };
    match redact(&text) {
        Cow::Borrowed(_) => text.into_bytes(),
        Cow::Owned(masked) => masked.into_bytes(),
    }
}

fn redact_raw(mut bytes: Vec<u8>) -> Vec<u8> {
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    for key in known.iter() {
        let key = key.as_bytes();
        if bytes.windows(key.len()).any(|w| w == key) {
            bytes = replace_bytes(&bytes, key, REDACTED.as_bytes());
        }
    }
    bytes
}

fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while let Some(at) = rest.windows(needle.len()).position(|w| w == needle) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(with);
        rest = &rest[at + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_keys_are_masked_and_short_ones_ignored() {
        register("sk-unit-test-secret-0001");
        register("sk-unit-test-secret-0001-longer");
        register("none");
        let text = "key sk-unit-test-secret-0001 and sk-unit-test-secret-0001-longer, none";
        assert_eq!(
            redact(text),
            "key [REDACTED] and [REDACTED], none",
            "the longer key is masked whole"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
        assert_eq!(
            redact_bytes(b"{\"k\":\"sk-unit-test-secret-0001\"}\n".to_vec()),
            b"{\"k\":\"[REDACTED]\"}\n"
        );
        assert_eq!(
            redact_bytes(b"\xff sk-unit-test-secret-0001".to_vec()),
            b"\xff [REDACTED]"
        );
        let mut value =
            serde_json::json!({"a": ["x sk-unit-test-secret-0001"], "sk-unit-test-secret-0001": 1});
        redact_json(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"a": ["x [REDACTED]"], "[REDACTED]": 1})
        );
    }

    #[test]
    fn the_argument_block_is_found() {
        let (start, end) = argument_block().unwrap();
        assert!(end > start);
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
        assert_eq!(end - start, cmdline.len(), "the block /proc shows");
    }
}
