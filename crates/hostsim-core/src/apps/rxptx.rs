//! rxptx (the kernel-bypass study's benchmark): receive a burst, spend a
//! configurable processing time (`host.app.proc_time`, a spin charged to the
//! application) once on the burst, as the study defines it, or once on each
//! packet (`host.app.proc_per = packet`), swap the MACs and transmit.

use super::config::{AppConfig, ProcPer};
use crate::cpu::Category;
use crate::engine::time::Ps;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(RxpTx { proc_time_ps: cfg.proc_time_ps, per: cfg.proc_per }))
}

struct RxpTx {
    proc_time_ps: Ps,
    per: ProcPer,
}

impl App for RxpTx {
    fn name(&self) -> &'static str {
        "rxptx"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        cx.work.reset(Category::App);
        for s in pkts {
            super::swap_macs(cx, s);
        }
        cx.exec();
        let intervals = match self.per {
            ProcPer::Burst => u64::from(!pkts.is_empty()),
            ProcPer::Packet => pkts.len() as u64,
        };
        cx.spin_ps(self.proc_time_ps * intervals);
        Verdict::Forward
    }
}
