//! The discrete-event kernel: picosecond time, an event queue ordered by
//! (time, insertion sequence), seeded random streams, a statistics
//! registry and a timeline of busy periods for servers booked out of time
//! order (a PCIe direction, a DRAM channel). Nothing here knows about networking; `system/` wires the
//! components and dispatches their events.

pub mod cancel;
pub mod modulo;
pub mod queue;
pub mod rng;
pub mod slots;
pub mod stats;
pub mod time;
pub mod timeline;

pub use modulo::Modulus;
pub use queue::EventQueue;
pub use rng::SimRng;
pub use slots::Slots;
pub use stats::{Stat, StatSink, StatValue};
pub use time::Ps;

/// A handle on a request a component serves later (a DRAM read waiting in
/// the controller's read queue, `mem/read_queue.rs`): its requester asks
/// for the completion with it.
pub type Ticket = u32;
