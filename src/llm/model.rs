//! What the agent knows about a model: context window, output limit, prices, whether it
//! reasons and whether it sees images. Unknown models get generous defaults, no cost and no
//! image input (docs/protocol.md §6); the built-in table is `catalog`.

#[derive(Clone, Debug, PartialEq)]
pub struct ModelInfo {
    pub id: String,
    pub context_window: u64,
    pub max_output_tokens: u64,
    /// US dollars per million tokens.
    pub cost: ModelCost,
    /// Whether the model takes reasoning parameters: they are sent only when this is set and
    /// the thinking level is not `off` (a model known not to reason rejects them).
    pub reasoning: bool,
    /// Whether the model takes image input. Images sent to a model without it fail the
    /// request (and, kept in the history, every later one): they become a text placeholder.
    pub images: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelCost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 16_000;

impl ModelInfo {
    /// A model nobody described. It is assumed to reason, so `--thinking` reaches it and
    /// the server decides; `reasoning = false` in its config entry turns that off. It is
    /// not assumed to see images (most local models do not); `images = true` says it does.
    pub fn unknown(id: &str) -> Self {
        ModelInfo {
            id: id.to_string(),
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
            cost: ModelCost::default(),
            reasoning: true,
            images: false,
        }
    }

    /// Fill in the dollar cost of `usage` from this model's prices.
    pub fn price(&self, usage: &mut crate::protocol::message::Usage) {
        // No prices known here: keep what came with the usage (the proxy prices its answers).
        if self.cost == ModelCost::default() {
            return;
        }
        let per_token = |count: u64, price: f64| count as f64 * price / 1_000_000.0;
        usage.cost.input = per_token(usage.input, self.cost.input);
        usage.cost.output = per_token(usage.output, self.cost.output);
        usage.cost.cache_read = per_token(usage.cache_read, self.cost.cache_read);
        usage.cost.cache_write = per_token(usage.cache_write, self.cost.cache_write);
        usage.cost.total =
            usage.cost.input + usage.cost.output + usage.cost.cache_read + usage.cost.cache_write;
    }
}
