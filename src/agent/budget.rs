//! Budgets that stop: dollars per run and per session, output tokens per run. Every agent
//! has a `Purse`; a sub-agent's purse points to its parent's, so what a child spends is
//! spent by every ancestor too, and a child may only spend what each of them has left.
//! Before each request the engine reserves what the request may cost at most (its input,
//! estimated, at the full input price, plus its output limit at the output price) in every
//! purse up the chain; a request that would cross a budget is not sent, and the output limit
//! of one that is sent is cut to what the budgets still allow. The reservation becomes the
//! real cost when the response reports its usage. Reservations make children running at once
//! unable to overspend together.

use super::state::Shared;
use crate::llm::model::ModelInfo;
use crate::protocol::event::{AgentEvent, NoticeLevel};
use crate::protocol::message::Usage;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A request is not sent with room for fewer output tokens than this (or the model's limit,
/// if smaller): an answer cut at a handful of tokens is money spent for nothing.
pub const MIN_OUTPUT_TOKENS: u64 = 256;

/// The budgets of `[limits]` / `--max-budget-usd`; `None` means none.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budgets {
    /// US dollars one run may spend (its sub-agents included).
    pub run_usd: Option<f64>,
    /// US dollars the session may spend, what it spent before a resume included.
    pub session_usd: Option<f64>,
    /// Output tokens one run may produce (its sub-agents included): works without prices.
    pub run_output_tokens: Option<u64>,
}

impl Budgets {
    pub fn in_dollars(&self) -> bool {
        self.run_usd.is_some() || self.session_usd.is_some()
    }
}

/// Where a budget comes from, for messages.
const RUN_USD: &str = "run budget (--max-budget-usd, limits.budget_usd)";
const SESSION_USD: &str = "session budget (limits.session_budget_usd)";
const RUN_OUTPUT: &str = "output-token budget of the run (limits.max_output_tokens)";
const TASK_USD: &str = "budget its `task` call gave it (budget_usd)";

#[derive(Default)]
struct Ledger {
    budgets: Budgets,
    /// The `task` call's own budget for a sub-agent (on top of its ancestors').
    task_usd: Option<f64>,
    run_usd: f64,
    session_usd: f64,
    run_output: u64,
    reserved_usd: f64,
    reserved_output: u64,
    /// Budgets already warned about at 80 % (by label).
    warned: Vec<&'static str>,
}

/// One agent's spending.
#[derive(Default)]
pub(crate) struct Purse {
    parent: OnceLock<Arc<Purse>>,
    /// Told when a budget of this purse passes 80 %.
    owner: OnceLock<Weak<Shared>>,
    /// Which agent this is, for messages (`None`: the user's own).
    label: OnceLock<String>,
    ledger: Mutex<Ledger>,
}

/// What one request may spend, held in every purse up the chain until it is settled.
pub(crate) struct Reservation {
    chain: Vec<Arc<Purse>>,
    usd: f64,
    output: u64,
    /// The output limit the request is sent with, when a budget cuts it.
    pub max_output_tokens: Option<u64>,
    settled: bool,
}

impl Purse {
    pub fn new() -> Arc<Purse> {
        Arc::new(Purse::default())
    }

    pub fn set_owner(&self, owner: &Arc<Shared>) {
        let _ = self.owner.set(Arc::downgrade(owner));
    }

    /// Make this the purse of a sub-agent of `parent`, named `label` in messages, with
    /// its `task` call's own budget if it gave one.
    pub fn link(&self, parent: Arc<Purse>, label: String, task_usd: Option<f64>) {
        let _ = self.parent.set(parent);
        let _ = self.label.set(label);
        lock(&self.ledger).task_usd = task_usd;
    }

    /// A run starts: its budgets are these, its spending starts at 0.
    pub fn start_run(&self, budgets: &Budgets) {
        let mut ledger = lock(&self.ledger);
        ledger.budgets = budgets.clone();
        ledger.run_usd = 0.0;
        ledger.run_output = 0;
        ledger.warned.clear();
    }

    /// What the session spent before (a resumed or switched-to session).
    pub fn set_session_spent(&self, usd: f64) {
        lock(&self.ledger).session_usd = usd;
    }

    /// The purse and its ancestors, nearest first.
    fn chain(self: &Arc<Self>) -> Vec<Arc<Purse>> {
        let mut chain = vec![self.clone()];
        while let Some(parent) = chain.last().and_then(|p| p.parent.get()).cloned() {
            chain.push(parent);
        }
        chain
    }

    /// Refuse to start a run that has a budget in dollars (its own or an ancestor's) when
    /// the model has no prices: it could not be kept.
    pub fn check_prices(self: &Arc<Self>, model: &ModelInfo) -> Result<(), String> {
        if model.cost != Default::default() {
            return Ok(());
        }
        let dollars = self.chain().iter().any(|purse| {
            let ledger = lock(&purse.ledger);
            ledger.budgets.in_dollars() || ledger.task_usd.is_some()
        });
        if dollars {
            return Err(format!(
                "a budget in dollars cannot be kept: the model `{}` has no prices (give it \
                 `cost_input` and `cost_output` in [providers.NAME.models.{}], or use a budget in \
                 tokens, limits.max_output_tokens)",
                model.id, model.id
            ));
        }
        Ok(())
    }

    /// Reserve what the next request may cost at most: `input_tokens` (estimated) at the
    /// input price and the model's output limit at the output price, cut to what every
    /// budget up the chain still allows. `Err` says which budget the request would cross.
    pub fn reserve(
        self: &Arc<Self>,
        model: &ModelInfo,
        input_tokens: u64,
    ) -> Result<Reservation, String> {
        let chain = self.chain();
        let per_token = |price: f64| price / 1_000_000.0;
        let input_usd = input_tokens as f64 * per_token(model.cost.input);
        let output_price = per_token(model.cost.output);
        let mut max_output = model.max_output_tokens;
        let mut cut = false;
        let minimum = MIN_OUTPUT_TOKENS.min(model.max_output_tokens).max(1);
        // Hold every ledger while deciding, so two children cannot both take the last dollar.
        let mut ledgers: Vec<_> = chain.iter().map(|p| lock(&p.ledger)).collect();
        for (ledger, purse) in ledgers.iter().zip(&chain) {
            let who = purse.who();
            let mut dollars = |limit: Option<f64>, spent: f64, what: &'static str| {
                let Some(limit) = limit else {
                    return Ok(());
                };
                let left = limit - spent - ledger.reserved_usd - input_usd;
                let affordable = if output_price > 0.0 {
                    whole_tokens(left.max(0.0) / output_price)
                } else {
                    u64::MAX
                };
                if left <= 0.0 || affordable < minimum {
                    return Err(format!(
                        "the next request would cross the {who}{what} of ${limit:.4}: ${:.4} \
                         spent, ${:.4} held by requests under way, and this one may cost ${:.4} \
                         or more",
                        spent,
                        ledger.reserved_usd,
                        input_usd + minimum as f64 * output_price
                    ));
                }
                if affordable < max_output {
                    max_output = affordable;
                    cut = true;
                }
                Ok(())
            };
            dollars(ledger.budgets.run_usd, ledger.run_usd, RUN_USD)?;
            dollars(ledger.budgets.session_usd, ledger.session_usd, SESSION_USD)?;
            dollars(ledger.task_usd, ledger.run_usd, TASK_USD)?;
            if let Some(limit) = ledger.budgets.run_output_tokens {
                let left = limit
                    .saturating_sub(ledger.run_output)
                    .saturating_sub(ledger.reserved_output);
                if left < minimum {
                    return Err(format!(
                        "the next request would cross the {who}{RUN_OUTPUT} of {limit} tokens: \
                         {} produced, {} held by requests under way",
                        ledger.run_output, ledger.reserved_output
                    ));
                }
                if left < max_output {
                    max_output = left;
                    cut = true;
                }
            }
        }
        let usd = input_usd + max_output as f64 * output_price;
        for ledger in &mut ledgers {
            ledger.reserved_usd += usd;
            ledger.reserved_output = ledger.reserved_output.saturating_add(max_output);
        }
        drop(ledgers);
        Ok(Reservation {
            chain,
            usd,
            output: max_output,
            max_output_tokens: cut.then_some(max_output),
            settled: false,
        })
    }

    /// "" for the user's agent, "parent's " style prefixes for others.
    fn who(&self) -> String {
        match self.label.get() {
            Some(label) => format!("{label}'s "),
            None => String::new(),
        }
    }
}

impl Reservation {
    /// The request is over: what it really cost replaces what was held, in every purse up
    /// the chain; a budget passing 80 % is announced once per run to its agent.
    pub fn settle(mut self, usage: &Usage) {
        self.release(usage);
    }

    fn release(&mut self, usage: &Usage) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        for purse in &self.chain {
            let warnings = {
                let mut ledger = lock(&purse.ledger);
                ledger.reserved_usd = (ledger.reserved_usd - self.usd).max(0.0);
                ledger.reserved_output = ledger.reserved_output.saturating_sub(self.output);
                ledger.run_usd += usage.cost.total;
                ledger.session_usd += usage.cost.total;
                ledger.run_output = ledger.run_output.saturating_add(usage.output);
                warnings(&mut ledger)
            };
            if let Some(owner) = purse.owner.get().and_then(Weak::upgrade) {
                for message in warnings {
                    owner.emit(AgentEvent::Notice {
                        level: NoticeLevel::Warning,
                        message,
                    });
                }
            }
        }
    }
}

impl Drop for Reservation {
    /// A request that never reported usage (it failed to start) holds nothing any more.
    fn drop(&mut self) {
        self.release(&Usage::default());
    }
}

/// The budgets of this ledger that passed 80 % and were not warned about yet.
fn warnings(ledger: &mut Ledger) -> Vec<String> {
    let mut out = Vec::new();
    let checks = [
        (ledger.budgets.run_usd, ledger.run_usd, RUN_USD),
        (ledger.budgets.session_usd, ledger.session_usd, SESSION_USD),
        (ledger.task_usd, ledger.run_usd, TASK_USD),
        (
            ledger.budgets.run_output_tokens.map(|t| t as f64),
            ledger.run_output as f64,
            RUN_OUTPUT,
        ),
    ];
    for (limit, spent, what) in checks {
        let Some(limit) = limit.filter(|l| *l > 0.0) else {
            continue;
        };
        if spent >= 0.8 * limit && !ledger.warned.contains(&what) {
            ledger.warned.push(what);
            let share = (spent / limit * 100.0).floor();
            out.push(if what == RUN_OUTPUT {
                format!("{share}% of the {what} used: {spent} of {limit} tokens")
            } else {
                format!("{share}% of the {what} used: ${spent:.4} of ${limit:.4}")
            });
        }
    }
    out
}

/// A non-negative token count as a whole number: a float-to-integer `as` saturates (and a
/// NaN becomes 0), which is what a budget wants.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn whole_tokens(tokens: f64) -> u64 {
    tokens.floor() as u64
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    super::state::lock(mutex)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::model::ModelCost;

    fn priced() -> ModelInfo {
        ModelInfo {
            cost: ModelCost {
                input: 10.0,
                output: 100.0,
                ..Default::default()
            },
            max_output_tokens: 10_000,
            ..ModelInfo::unknown("m")
        }
    }

    fn spent(usd: f64, output: u64) -> Usage {
        let mut usage = Usage {
            output,
            ..Default::default()
        };
        usage.cost.total = usd;
        usage
    }

    #[test]
    fn a_request_that_would_cross_is_refused_and_one_that_fits_is_cut() {
        let purse = Purse::new();
        purse.start_run(&Budgets {
            run_usd: Some(1.0),
            ..Default::default()
        });
        // 10,000 input tokens at $10/M = $0.10; output at $100/M: $0.90 left buys 9,000.
        let first = purse.reserve(&priced(), 10_000).unwrap();
        assert_eq!(first.max_output_tokens, Some(9_000));
        // While it is under way, nothing else fits.
        assert!(purse.reserve(&priced(), 10_000).is_err());
        first.settle(&spent(0.5, 100));
        let second = purse.reserve(&priced(), 10_000).unwrap();
        assert_eq!(second.max_output_tokens, Some(4_000));
        second.settle(&spent(0.45, 100));
        let refused = purse.reserve(&priced(), 10_000).err().unwrap();
        assert!(
            refused.contains("run budget (--max-budget-usd"),
            "{refused}"
        );
    }

    #[test]
    fn a_child_spends_its_parents_budget_and_is_stopped_by_it() {
        let parent = Purse::new();
        parent.start_run(&Budgets {
            run_output_tokens: Some(2_000),
            ..Default::default()
        });
        let child = Purse::new();
        child.link(parent.clone(), "sub-agent a1".into(), None);
        child.start_run(&Budgets::default());
        let model = ModelInfo::unknown("free");
        let r = child.reserve(&model, 10).unwrap();
        assert_eq!(r.max_output_tokens, Some(2_000));
        r.settle(&spent(0.0, 1_900));
        let refused = parent.reserve(&model, 10).err().unwrap();
        assert!(refused.contains("output-token budget"), "{refused}");
        assert!(
            child.reserve(&model, 10).is_err(),
            "the parent's budget binds the child"
        );
    }

    #[test]
    fn dollars_without_prices_are_refused_tokens_are_not() {
        let purse = Purse::new();
        purse.start_run(&Budgets {
            run_usd: Some(1.0),
            ..Default::default()
        });
        assert!(purse.check_prices(&ModelInfo::unknown("x")).is_err());
        assert!(purse.check_prices(&priced()).is_ok());
        purse.start_run(&Budgets {
            run_output_tokens: Some(1),
            ..Default::default()
        });
        assert!(purse.check_prices(&ModelInfo::unknown("x")).is_ok());
    }
}
