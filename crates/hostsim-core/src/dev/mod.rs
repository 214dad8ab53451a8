//! Devices under test that the load generator can be attached to. For now
//! only the reference device, `reflector`; the host datapath comes next.

pub mod reflector;
