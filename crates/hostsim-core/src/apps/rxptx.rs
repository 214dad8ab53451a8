//! rxptx (the kernel-bypass study's benchmark): receive a burst, spend a
//! configurable processing time on each packet (`host.app.proc_time`, a
//! spin charged to the application), swap the MACs and transmit.

use super::config::AppConfig;
use crate::cpu::Category;
use crate::engine::time::Ps;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};
use crate::wire::ethernet;

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(RxpTx { proc_time_ps: cfg.proc_time_ps }))
}

struct RxpTx {
    proc_time_ps: Ps,
}

impl App for RxpTx {
    fn name(&self) -> &'static str {
        "rxptx"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        let header_instr = cx.costs.header_instr as u64;
        cx.work.reset(Category::App);
        for s in pkts {
            cx.work.instr(header_instr).read(s.buf_addr).write(s.buf_addr);
            ethernet::Packet::new_unchecked(cx.frames.data_mut(s.frame)).swap_macs();
        }
        cx.exec();
        cx.core.spin_ps(self.proc_time_ps * pkts.len() as u64);
        Verdict::Forward
    }
}
