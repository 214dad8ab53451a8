//! ovs: Open vSwitch's kernel datapath (kernel stack only), as in Linux
//! 3.x before megaflows: the port's `rx_handler` (`netdev_frame_hook`)
//! hands the frame to `ovs_vport_receive`, which extracts the flow key
//! (`ovs_flow_extract`), looks it up in the exact-match flow table
//! (`ovs_flow_tbl_lookup`: a hash of the key selects a bucket, the entry's
//! key is compared, its statistics updated) and executes the flow's
//! actions (`do_output` to the port the topology gives, `dev_queue_xmit`).
//! A miss is an upcall: the frame goes to `ovs-vswitchd` over netlink, the
//! user-space classifier decides, installs the flow and sends the frame
//! back to be executed. The table is `flow_table.rs` with OvS's entry size
//! (a `sw_flow` of 576 B, params.md §7b), so with many active flows the
//! entries outgrow L1, L2, then the LLC. Its cycles count as `app` (the
//! forwarding decision).
//!
//! Simplified: the key is the IPv4 5-tuple (frames without one are dropped
//! and counted, where OvS would key them on their Ethernet fields); the
//! bucket is selected with CRC32-C where the datapath uses `jhash2`; the
//! upcall's work runs on the core that received the frame (on one core, as
//! in the single-core study, `ovs-vswitchd` shares it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::AppConfig;
use super::flow_table::{FlowTable, FlowTableConfig};
use crate::cpu::Category;
use crate::error::Result;
use crate::framebuf::FrameId;
use crate::stack::{App, AppCx, Forwarding};

/// `host.app.ovs`: the datapath's flow table and work per frame. The
/// table's fields are its own rather than a nested `FlowTableConfig`, so
/// that a partial `host.app.ovs` keeps OvS's defaults, not the vswitch's.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OvsConfig {
    /// Flow entries the table holds (a power of two; estimate: OvS's
    /// default flow limit is far above the study's 20,000 flows).
    pub entries: u32,
    /// Bytes of one `sw_flow` (576 B, Emmerich et al. 2015, params.md §7b).
    pub entry_bytes: u32,
    /// Lines of an entry read to compare the key (estimate: the key of an
    /// IPv4/UDP flow spans two lines of the `sw_flow`).
    pub key_lines: u32,
    /// Instructions of `ovs_flow_extract` and the key's hash (estimate).
    pub key_instr: u32,
    /// Instructions of the bucket walk and key compare (estimate).
    pub lookup_instr: u32,
    /// Instructions of an upcall: the netlink message to `ovs-vswitchd`,
    /// its classification, the flow install and the execute message back
    /// (estimate: tens of microseconds of user-space work).
    pub upcall_instr: u32,
    /// Instructions of `ovs_vport_receive`'s bookkeeping, the flow's
    /// statistics lock and `ovs_execute_actions`/`do_output` (estimate).
    pub actions_instr: u32,
}

impl Default for OvsConfig {
    fn default() -> Self {
        OvsConfig { entries: 1 << 16, entry_bytes: 576, key_lines: 2, key_instr: 250, lookup_instr: 60, upcall_instr: 100_000, actions_instr: 200 }
    }
}

impl OvsConfig {
    /// The flow table these fields describe.
    pub fn table(&self) -> FlowTableConfig {
        FlowTableConfig {
            entries: self.entries,
            entry_bytes: self.entry_bytes,
            key_lines: self.key_lines,
            key_instr: self.key_instr,
            lookup_instr: self.lookup_instr,
            upcall_instr: self.upcall_instr,
        }
    }

    pub fn validate(&self) -> Result<()> {
        self.table().validate_as("app.ovs")
    }
}

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    cfg.ovs.validate()?;
    Ok(Box::new(Ovs { table: FlowTable::new(&cfg.ovs.table()), actions_instr: cfg.ovs.actions_instr }))
}

struct Ovs {
    table: FlowTable,
    actions_instr: u32,
}

impl App for Ovs {
    fn name(&self) -> &'static str {
        "ovs"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[crate::nic::Slot]) -> crate::stack::Verdict {
        super::kernel_only_burst(cx, pkts)
    }

    fn rx_handler(&self) -> bool {
        true
    }

    fn forward(&mut self, cx: &mut AppCx, frame: FrameId, _buf_addr: u64) -> Forwarding {
        cx.work.reset(Category::App);
        // The key comes from the header line the driver read.
        let verdict = if self.table.lookup_frame(cx.frames.data(frame), cx.work).is_some() {
            cx.work.instr(self.actions_instr as u64);
            Forwarding::Transmit
        } else {
            Forwarding::Drop
        };
        cx.exec();
        verdict
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::Forwarding;
    use crate::wire::{ethernet, ipv4};

    fn frame(sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&ethernet::ETHERTYPE_IPV4.to_be_bytes());
        ipv4::Repr { src: "10.0.0.1".parse().unwrap(), dst: "10.0.0.2".parse().unwrap(), protocol: ipv4::PROTO_UDP, payload_len: 26, ttl: 64 }
            .emit(&mut ipv4::Packet::new_unchecked(&mut f[14..]));
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f
    }

    /// The first frame of a flow upcalls and installs its 576 B entry (the
    /// bucket and three entry lines written); the next reads the bucket
    /// and two key lines, writes the statistics line, and is sent; the
    /// frame's bytes are untouched.
    #[test]
    fn a_flow_upcalls_once_then_hits() {
        let mut ovs = new(&AppConfig::default()).unwrap();
        let f = frame(7);
        let (out, v, n) = super::super::tests::with_cx(f.clone(), |cx, s| ovs.forward(cx, s.frame, s.buf_addr));
        assert_eq!((v, n, out), (Forwarding::Transmit, 1 + 1 + 3, f.clone()));
        let (_, v, n) = super::super::tests::with_cx(f.clone(), |cx, s| ovs.forward(cx, s.frame, s.buf_addr));
        assert_eq!((v, n), (Forwarding::Transmit, 1 + 2 + 1));
        assert_eq!((ovs.result_json()["misses"].as_u64(), ovs.result_json()["hits"].as_u64()), (Some(1), Some(1)));
        let mut arp = f;
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let (_, v, _) = super::super::tests::with_cx(arp, |cx, s| ovs.forward(cx, s.frame, s.buf_addr));
        assert_eq!(v, Forwarding::Drop);
        assert!(ovs.rx_handler());
    }

    #[test]
    fn bad_sizes_are_named_under_ovs() {
        let e = OvsConfig { entry_bytes: 100, ..Default::default() }.validate().unwrap_err().to_string();
        assert!(e.starts_with("app.ovs.entry_bytes"), "{e}");
    }
}
