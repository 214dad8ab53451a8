//! Software stacks on the host: the DPDK-style poll-mode driver (`pmd`) now,
//! the Linux kernel stack later (SPEC 2.8).

pub mod pmd;
