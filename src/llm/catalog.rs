//! The built-in model table: context window, output limit, list prices, reasoning support and
//! image input of common OpenAI and Anthropic models, so usage gets a cost and requests get the right
//! `max_tokens` without any config. Prices are the providers' public list prices in US
//! dollars per million tokens (Anthropic's cache write is the 5-minute rate; OpenAI does not
//! charge for cache writes). A model not listed here gets `ModelInfo::unknown`; a
//! `[providers.X.models.Y]` entry in config.toml overrides any of these fields.

use super::model::{ModelCost, ModelInfo};

struct Entry {
    /// The id and the aliases/snapshots that share its limits and prices.
    ids: &'static [&'static str],
    context_window: u64,
    max_output_tokens: u64,
    /// input, output, cache read, cache write
    prices: [f64; 4],
    reasoning: bool,
    images: bool,
}

const ENTRIES: &[Entry] = &[
    // OpenAI
    Entry {
        ids: &["gpt-4.1", "gpt-4.1-2025-04-14"],
        context_window: 1_047_576,
        max_output_tokens: 32_768,
        prices: [2.00, 8.00, 0.50, 0.0],
        reasoning: false,
        images: true,
    },
    Entry {
        ids: &["gpt-4.1-mini", "gpt-4.1-mini-2025-04-14"],
        context_window: 1_047_576,
        max_output_tokens: 32_768,
        prices: [0.40, 1.60, 0.10, 0.0],
        reasoning: false,
        images: true,
    },
    Entry {
        ids: &["gpt-4.1-nano", "gpt-4.1-nano-2025-04-14"],
        context_window: 1_047_576,
        max_output_tokens: 32_768,
        prices: [0.10, 0.40, 0.025, 0.0],
        reasoning: false,
        images: true,
    },
    Entry {
        ids: &["gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-2024-11-20"],
        context_window: 128_000,
        max_output_tokens: 16_384,
        prices: [2.50, 10.00, 1.25, 0.0],
        reasoning: false,
        images: true,
    },
    Entry {
        ids: &["gpt-4o-mini", "gpt-4o-mini-2024-07-18"],
        context_window: 128_000,
        max_output_tokens: 16_384,
        prices: [0.15, 0.60, 0.075, 0.0],
        reasoning: false,
        images: true,
    },
    Entry {
        ids: &["o3", "o3-2025-04-16"],
        context_window: 200_000,
        max_output_tokens: 100_000,
        prices: [2.00, 8.00, 0.50, 0.0],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["o4-mini", "o4-mini-2025-04-16"],
        context_window: 200_000,
        max_output_tokens: 100_000,
        prices: [1.10, 4.40, 0.275, 0.0],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["o3-mini", "o3-mini-2025-01-31"],
        context_window: 200_000,
        max_output_tokens: 100_000,
        prices: [1.10, 4.40, 0.55, 0.0],
        reasoning: true,
        images: false,
    },
    Entry {
        ids: &["gpt-5", "gpt-5-2025-08-07"],
        context_window: 400_000,
        max_output_tokens: 128_000,
        prices: [1.25, 10.00, 0.125, 0.0],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["gpt-5-mini", "gpt-5-mini-2025-08-07"],
        context_window: 400_000,
        max_output_tokens: 128_000,
        prices: [0.25, 2.00, 0.025, 0.0],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["gpt-5-nano", "gpt-5-nano-2025-08-07"],
        context_window: 400_000,
        max_output_tokens: 128_000,
        prices: [0.05, 0.40, 0.005, 0.0],
        reasoning: true,
        images: true,
    },
    // Anthropic
    Entry {
        ids: &["claude-sonnet-4-5", "claude-sonnet-4-5-20250929"],
        context_window: 200_000,
        max_output_tokens: 64_000,
        prices: [3.00, 15.00, 0.30, 3.75],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["claude-sonnet-4-0", "claude-sonnet-4-20250514"],
        context_window: 200_000,
        max_output_tokens: 64_000,
        prices: [3.00, 15.00, 0.30, 3.75],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219"],
        context_window: 200_000,
        max_output_tokens: 64_000,
        prices: [3.00, 15.00, 0.30, 3.75],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["claude-opus-4-5", "claude-opus-4-5-20251101"],
        context_window: 200_000,
        max_output_tokens: 64_000,
        prices: [5.00, 25.00, 0.50, 6.25],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["claude-opus-4-1", "claude-opus-4-1-20250805"],
        context_window: 200_000,
        max_output_tokens: 32_000,
        prices: [15.00, 75.00, 1.50, 18.75],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["claude-opus-4-0", "claude-opus-4-20250514"],
        context_window: 200_000,
        max_output_tokens: 32_000,
        prices: [15.00, 75.00, 1.50, 18.75],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["claude-haiku-4-5", "claude-haiku-4-5-20251001"],
        context_window: 200_000,
        max_output_tokens: 64_000,
        prices: [1.00, 5.00, 0.10, 1.25],
        reasoning: true,
        images: true,
    },
    Entry {
        ids: &["claude-3-5-haiku-latest", "claude-3-5-haiku-20241022"],
        context_window: 200_000,
        max_output_tokens: 8_192,
        prices: [0.80, 4.00, 0.08, 1.00],
        reasoning: false,
        images: false,
    },
];

/// The main id of every model in the table (not the dated snapshots), for listings.
pub fn ids() -> impl Iterator<Item = &'static str> {
    ENTRIES
        .iter()
        .filter_map(|entry| entry.ids.first().copied())
}

/// The built-in facts about `id`, if it is a model this table knows.
/// Who serves a catalog model, to list it under that vendor's providers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    OpenAi,
    Anthropic,
}

/// The catalog's models, one id per entry (the first), with their vendor: Anthropic's are
/// exactly the `claude-*` ids.
pub fn models() -> impl Iterator<Item = (&'static str, Vendor)> {
    ENTRIES.iter().filter_map(|entry| {
        let id = *entry.ids.first()?;
        let vendor = if id.starts_with("claude") {
            Vendor::Anthropic
        } else {
            Vendor::OpenAi
        };
        Some((id, vendor))
    })
}

pub fn lookup(id: &str) -> Option<ModelInfo> {
    let entry = ENTRIES.iter().find(|entry| entry.ids.contains(&id))?;
    let [input, output, cache_read, cache_write] = entry.prices;
    Some(ModelInfo {
        id: id.to_string(),
        context_window: entry.context_window,
        max_output_tokens: entry.max_output_tokens,
        cost: ModelCost {
            input,
            output,
            cache_read,
            cache_write,
        },
        reasoning: entry.reasoning,
        images: entry.images,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_models_and_their_snapshots_share_an_entry() {
        let alias = lookup("claude-sonnet-4-5").unwrap();
        let snapshot = lookup("claude-sonnet-4-5-20250929").unwrap();
        assert_eq!(snapshot.id, "claude-sonnet-4-5-20250929");
        assert_eq!(alias.cost, snapshot.cost);
        assert_eq!(alias.max_output_tokens, 64_000);
        assert!(lookup("gpt-4.1").is_some_and(|m| !m.reasoning));
        assert!(lookup("o4-mini").is_some_and(|m| m.reasoning && m.images));
        assert!(lookup("o3-mini").is_some_and(|m| !m.images));
        assert_eq!(lookup("my-local-model"), None);
    }

    #[test]
    fn every_entry_is_plausible() {
        let mut seen = std::collections::HashSet::new();
        for entry in ENTRIES {
            for id in entry.ids {
                assert!(seen.insert(*id), "{id} is listed twice");
            }
            assert!(entry.max_output_tokens < entry.context_window);
            let [input, output, cache_read, _] = entry.prices;
            assert!(cache_read < input && input < output, "{:?}", entry.ids);
        }
    }
}
