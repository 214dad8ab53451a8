//! l2fwd (DPDK `examples/l2fwd`): rewrite the MACs — destination the
//! station behind the egress port, source the egress port — and forward on
//! the paired port (0↔1, 2↔3; an odd last port to itself).

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};
use crate::wire::ethernet;

pub fn new(_: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(L2fwd))
}

struct L2fwd;

impl App for L2fwd {
    fn name(&self) -> &'static str {
        "l2fwd"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        let header_instr = cx.costs.header_instr as u64;
        cx.work.reset(Category::App);
        for s in pkts {
            cx.work.instr(header_instr).write(s.buf_addr);
            let mut p = ethernet::Packet::new_unchecked(cx.frames.data_mut(s.frame));
            p.set_dst(cx.peer_mac);
            p.set_src(cx.port_mac);
        }
        cx.exec();
        Verdict::Forward
    }
}
