//! l2fwd (DPDK `examples/l2fwd`): rewrite the MACs — destination the
//! station behind the egress port, source the egress port — and forward on
//! the port `host.app.port_topology` gives: paired by default, as real
//! l2fwd (0↔1, 2↔3; an odd last port to itself), or chained, or looped.

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};

pub fn new(_: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(L2fwd))
}

struct L2fwd;

impl App for L2fwd {
    fn name(&self) -> &'static str {
        "l2fwd"
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
