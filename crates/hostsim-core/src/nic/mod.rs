//! The NIC (SPEC 2.4): the pieces of one port's receive and transmit path
//! that are state machines of their own — the RX FIFO, the descriptor cache
//! with its prefetch and write-back thresholds, and the drop-attribution FSM.
//! Their timing (DMA over PCIe into the memory system) is driven by the
//! system builder, which calls these with the current time.
//!
//! Read first: Intel 82599 datasheet §7.1 (receive) and §7.2 (transmit) for
//! descriptor rings, thresholds and write-back; params.md §2d for the 16 B
//! descriptors and batching; SPEC 2.10 for drop attribution.

pub mod config;
pub mod desc_cache;
pub mod drop_fsm;
pub mod rx_fifo;

pub use config::NicConfig;
pub use desc_cache::RxDescCache;
pub use drop_fsm::{DropCause, DropFsm};
pub use rx_fifo::RxFifo;
