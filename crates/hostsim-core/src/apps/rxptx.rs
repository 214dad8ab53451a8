//! rxptx (the kernel-bypass study's benchmark): receive a burst, spend a
//! configurable processing time on each packet (`host.app.proc_time`, a
//! spin charged to the application), swap the MACs and transmit.

use super::config::AppConfig;
use crate::cpu::Category;
use crate::engine::time::Ps;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};

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
        cx.work.reset(Category::App);
        for s in pkts {
            super::swap_macs(cx, s);
        }
        cx.exec();
        cx.core.spin_ps(self.proc_time_ps * pkts.len() as u64);
        Verdict::Forward
    }
}
