//! Random impairments of one direction, as netem defines them (tc-netem(8); S. Hemminger,
//! "Network Emulation with NetEm", LCA 2005; the reference kernel's sch_netem.c, read to
//! learn what netem does where ours must behave the same):
//!
//! - `loss`: Bernoulli, Gilbert–Elliott (netem's `loss gemodel`) and the 4-state Markov
//!   model (netem's `loss state`);
//! - `delay`: jitter added to the one-way delay, drawn from netem's distributions
//!   (uniform, normal, pareto, paretonormal) and optionally correlated;
//! - `events`: per-packet chances — duplication, corruption — and netem's reordering
//!   (a packet sent at once, without the delay, with a `gap`);
//! - `correlated`: netem's correlated uniform source, shared by all of them;
//! - `quantile`: the inverse normal CDF the distributions need.
//!
//! Every component draws from its own seeded stream (`rng::Rng`), so the core stays
//! deterministic and adding one impairment does not shift another's sequence.

mod correlated;
mod delay;
mod events;
mod loss;
pub mod quantile;

pub use correlated::Correlated;
pub use delay::{Jitter, JitterModel, JitterSpec};
pub use events::{Chance, Reorder, ReorderSpec};
pub use loss::{Loss, LossModel};
