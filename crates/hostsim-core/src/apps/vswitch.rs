//! vswitch: a DPDK virtual switch (Intel's DPDK vSwitch, OvS-DPDK's fast
//! path): batched rx_burst, an exact-match flow table looked up by a
//! CRC32-C hash of each packet's 5-tuple (`flow_table.rs`), its statistics
//! updated, a miss sent to the slow path that installs the flow; the flows'
//! action outputs to the port `host.app.port_topology` gives, in batches.
//! Its cycles count as `app` (the forwarding decision).

use serde_json::Value;

use super::config::AppConfig;
use super::flow_table::FlowTable;
use crate::cpu::Category;
use crate::error::Result;
use crate::framebuf::Fate;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    cfg.flow_table.validate()?;
    Ok(Box::new(Vswitch { table: FlowTable::new(&cfg.flow_table) }))
}

struct Vswitch {
    table: FlowTable,
}

impl App for Vswitch {
    fn name(&self) -> &'static str {
        "vswitch"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        cx.work.reset(Category::App);
        for s in pkts {
            // The headers are in the first line the NIC wrote.
            cx.work.read(s.buf_addr);
            if self.table.lookup_frame(cx.frames.data(s.frame), cx.work).is_some() {
                cx.tx.push(*s);
            } else {
                // No flow matches a frame without a 5-tuple: dropped.
                cx.frames.end(s.frame, Fate::App);
                cx.free.push(s.mbuf);
            }
        }
        cx.exec();
        Verdict::Listed
    }

    fn result_json(&self) -> Value {
        self.table.result_json()
    }

    fn reset_stats(&mut self) {
        self.table.reset_stats();
    }

    fn table_entries(&self) -> u64 {
        self.table.len()
    }
}
