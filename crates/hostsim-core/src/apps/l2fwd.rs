//! l2fwd (DPDK `examples/l2fwd`): rewrite the MACs — destination the
//! station behind the egress port, source the egress port — and forward on
//! the port `host.app.port_topology` gives: paired by default, as real
//! l2fwd (0↔1, 2↔3; an odd last port to itself), or chained, or looped.
//! Packets go through a TX buffer per port, sent when it holds
//! `host.pmd.tx_buffer` (32) packets and flushed every
//! `host.pmd.tx_drain_ps` (100 µs), as the real one's.

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, TxBuffering, Verdict};

pub fn new(_: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(L2fwd))
}

struct L2fwd;

impl App for L2fwd {
    fn name(&self) -> &'static str {
        "l2fwd"
    }

    /// `l2fwd_simple_forward` puts each packet in its port's buffer
    /// (`rte_eth_tx_buffer`); DPDK's examples/l2fwd/main.c.
    fn tx_buffering(&self) -> TxBuffering {
        TxBuffering::All
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        cx.work.reset(Category::App);
        for s in pkts {
            super::rewrite_macs(cx, s);
        }
        cx.exec();
        Verdict::Forward
    }
}
