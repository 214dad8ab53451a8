//! The discrete-event kernel: picosecond time, an event queue ordered by
//! (time, insertion sequence), seeded random streams and a statistics
//! registry. Nothing here knows about networking; `system.rs` wires the
//! components and dispatches their events.

pub mod queue;
pub mod rng;
pub mod stats;
pub mod time;

pub use queue::EventQueue;
pub use rng::SimRng;
pub use stats::{Stat, StatSink, StatValue};
pub use time::Ps;
