//! bridge: the Linux bridge (kernel stack only), after `net/bridge` of
//! Linux 3.x. It takes frames at the port's `rx_handler`, before the IP
//! layer (`br_handle_frame`), learns the source address in its forwarding
//! database (`br_fdb_update`), looks the destination up (`__br_fdb_get`)
//! and forwards to the port it was learned on, floods when it is unknown
//! or has aged out, passes frames for the bridge's own ports up the host's
//! stack (here: dropped, no socket listens) and drops frames whose
//! destination sits behind the port they came in on. With bridge netfilter
//! on (`bridge-nf-call-iptables`, the kernel's default) an IPv4 frame
//! carries an `nf_bridge_info` (allocated and freed) and traverses the
//! iptables PRE_ROUTING, FORWARD and POST_ROUTING hooks. When the bridge
//! device is promiscuous, or the destination is a broadcast or multicast
//! address, a forwarded frame's skb is cloned and the clone goes up the
//! host's stack too (`deliver_clone`), which the kernel stack runs.
//!
//! The FDB is a hash of `BR_HASH_SIZE` chain heads (256 pointers, 32
//! lines) with one 64 B entry per address, at simulated addresses: a
//! lookup reads the head line and walks the chain's entries, newest first,
//! each load waiting for the one before. A learned entry's `updated` time
//! is written on every frame from it; an entry older than the ageing time
//! is not used for forwarding (the frame floods) until the source is heard
//! again.
//!
//! Simplified: the bridge's ports are the ingress port and the one the
//! topology gives (two ports), so flooding reaches one port and needs no
//! clone (`br_flood` hands the original skb to its last port); the chain
//! hash is CRC32-C of the address's last four bytes, standing for
//! `br_mac_hash`'s salted `jhash_1word`; expired entries are not garbage
//! collected (they stay in their chain until their address is heard again);
//! no STP, VLAN filtering or multicast snooping. Its cycles count as `app`
//! (the forwarding decision) but for the `nf_bridge_info`'s allocation and
//! release (`mempool`).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::config::AppConfig;
use crate::cpu::{Category, Work};
use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};
use crate::framebuf::FrameId;
use crate::stack::{App, AppCx, Forwarding};
use crate::wire::ethernet::{self, Mac};

/// Where the bridge's structures live: the chain heads, each port's
/// `net_bridge_port`, then the FDB entries (beside the FIB of ipfwd).
const HEADS_BASE: u64 = 0x2e00_0000;
const PORTS_BASE: u64 = 0x2e00_8000;
const ENTRIES_BASE: u64 = 0x2e10_0000;
/// Each core's `nf_bridge_info`: a kmalloc object freed and taken again per frame.
const NF_BRIDGE_BASE: u64 = 0x2e08_0000;
/// Chain heads (`BR_HASH_SIZE`, 1 << `BR_HASH_BITS` 8, Linux br_private.h).
const HASH_SIZE: u32 = 256;
/// Chain heads per line (8 B `hlist_head` pointers).
const HEADS_PER_LINE: u32 = 8;

/// `host.app.bridge`: the bridge's settings and its work per frame.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BridgeConfig {
    /// How long a learned address is used for forwarding after it was last
    /// heard (`ageing_time`: 300 s, Linux `br_dev_setup`).
    pub ageing_time_ps: Ps,
    /// Bridge netfilter: IPv4 frames traverse the iptables hooks
    /// (`bridge-nf-call-iptables`, 1 by default in Linux `br_netfilter.c`).
    pub nf_call_iptables: bool,
    /// The bridge device is promiscuous (e.g. a packet capture on it):
    /// every forwarded frame is also cloned up the host's stack.
    pub promisc: bool,
    /// Instructions of the bridge's own path per frame: `br_handle_frame`,
    /// `br_handle_frame_finish`, `br_forward`, `br_forward_finish` and
    /// `br_dev_queue_push_xmit` (estimate).
    pub handle_instr: u32,
    /// Instructions of one FDB lookup: the hash and each compare (estimate).
    pub fdb_instr: u32,
    /// Instructions to create an entry for a new address (`fdb_create`:
    /// the slab allocation, the chain insert, the netlink notification;
    /// estimate).
    pub create_instr: u32,
    /// Instructions of one iptables hook traversal with empty chains
    /// (the br_netfilter glue, `nf_hook_slow`, `ipt_do_table`; estimate).
    pub nf_hook_instr: u32,
    /// Instructions to allocate and free a frame's `nf_bridge_info`
    /// (kmalloc and kfree; estimate).
    pub nf_bridge_instr: u32,
}

impl Default for BridgeConfig {
    fn default() -> Self {
        BridgeConfig {
            ageing_time_ps: 300 * 1_000_000_000_000,
            nf_call_iptables: true,
            promisc: false,
            handle_instr: 300,
            fdb_instr: 40,
            create_instr: 2000,
            nf_hook_instr: 200,
            nf_bridge_instr: 80,
        }
    }
}

impl BridgeConfig {
    pub fn validate(&self) -> Result<()> {
        if self.ageing_time_ps == 0 {
            return Err(ConfigError::new("app.bridge.ageing_time", "0".into(), "> 0 (how long a learned address is used)").into());
        }
        Ok(())
    }
}

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    cfg.bridge.validate()?;
    Ok(Box::new(Bridge { cfg: cfg.bridge, fdb: Fdb::default(), c: Counters::default(), ports_added: 0 }))
}

/// One FDB entry: where the address was heard, when, and whether it is
/// one of the bridge's own ports.
#[derive(Debug, Clone, Copy)]
struct Entry {
    port: usize,
    updated: Ps,
    local: bool,
}

/// The forwarding database: the entries and their chains, exactly.
struct Fdb {
    index: HashMap<Mac, u32>,
    entries: Vec<Entry>,
    /// Each chain's entries, newest first (`hlist_add_head`).
    chains: Vec<Vec<u32>>,
}

impl Default for Fdb {
    fn default() -> Self {
        Fdb { index: HashMap::new(), entries: Vec::new(), chains: vec![Vec::new(); HASH_SIZE as usize] }
    }
}

impl Fdb {
    fn bucket(mac: &Mac) -> u32 {
        crc32c::crc32c(&mac.0[2..]) & (HASH_SIZE - 1)
    }

    fn entry_addr(i: u32) -> u64 {
        ENTRIES_BASE + i as u64 * 64
    }

    /// Looks `mac` up, charging the chain head and every entry the walk
    /// visits to `work`; returns the entry's index.
    fn find(&self, mac: &Mac, instr: u32, work: &mut Work) -> Option<u32> {
        let b = Fdb::bucket(mac);
        work.instr(instr as u64).read_after(HEADS_BASE + (b / HEADS_PER_LINE) as u64 * 64);
        let found = self.index.get(mac).copied();
        for &i in &self.chains[b as usize] {
            work.read_after(Fdb::entry_addr(i));
            if Some(i) == found {
                break;
            }
        }
        found
    }

    /// Adds `mac` at the head of its chain, charging the entry and the head written.
    fn insert(&mut self, mac: Mac, e: Entry, work: Option<&mut Work>) -> u32 {
        let i = self.entries.len() as u32;
        self.entries.push(e);
        self.index.insert(mac, i);
        let b = Fdb::bucket(&mac);
        self.chains[b as usize].insert(0, i);
        if let Some(w) = work {
            w.write(Fdb::entry_addr(i)).write(HEADS_BASE + (b / HEADS_PER_LINE) as u64 * 64);
        }
        i
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    /// Addresses learned, and frames that refreshed a learned address.
    learned: u64,
    refreshed: u64,
    /// Frames forwarded to a learned port, and flooded (unknown or aged out).
    known: u64,
    flooded: u64,
    /// Frames for the bridge's own ports (passed up the host's stack).
    local: u64,
    /// Frames whose destination is behind the port they came in on.
    filtered: u64,
    /// Frames with a group source address (`br_handle_frame` drops them).
    invalid: u64,
}

struct Bridge {
    cfg: BridgeConfig,
    fdb: Fdb,
    c: Counters,
    /// Ingress ports whose pair of addresses is in the FDB (a bit each).
    ports_added: u64,
}

impl Bridge {
    /// The bridge's own ports' addresses are local entries from the start
    /// (`br_fdb_insert` when a port is added): entered the first time a
    /// port's frames arrive, at no cost.
    fn add_ports(&mut self, cx: &AppCx) {
        let bit = 1u64 << (cx.rx_port % 64);
        if self.ports_added & bit != 0 {
            return;
        }
        self.ports_added |= bit;
        for (port, mac) in [(cx.rx_port, cx.rx_port_mac), (usize::MAX, cx.port_mac)] {
            if !self.fdb.index.contains_key(&mac) {
                self.fdb.insert(mac, Entry { port, updated: 0, local: true }, None);
            }
        }
    }
}

impl App for Bridge {
    fn name(&self) -> &'static str {
        "bridge"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[crate::nic::Slot]) -> crate::stack::Verdict {
        super::kernel_only_burst(cx, pkts)
    }

    fn rx_handler(&self) -> bool {
        true
    }

    fn forward(&mut self, cx: &mut AppCx, frame: FrameId, _buf_addr: u64) -> Forwarding {
        let c = self.cfg;
        self.add_ports(cx);
        let data = cx.frames.data(frame);
        let Ok(eth) = ethernet::Packet::new_checked(data) else {
            self.c.invalid += 1;
            return Forwarding::Drop;
        };
        let (dst, src, ipv4) = (eth.dst(), eth.src(), eth.ethertype() == ethernet::ETHERTYPE_IPV4);
        let now = cx.now();
        // The port's state (br_port_get_rcu, p->state, p->br) and the bridge's path.
        cx.work.reset(Category::App).instr(c.handle_instr as u64).read(PORTS_BASE + cx.rx_port as u64 * 64);
        if src.0[0] & 1 != 0 {
            self.c.invalid += 1;
            cx.exec();
            return Forwarding::Drop;
        }
        // br_fdb_update: refresh the source's entry, or create one.
        match self.fdb.find(&src, c.fdb_instr, cx.work) {
            Some(i) => {
                let e = &mut self.fdb.entries[i as usize];
                if !e.local {
                    e.port = cx.rx_port;
                    e.updated = now;
                    self.c.refreshed += 1;
                    cx.work.write(Fdb::entry_addr(i));
                }
            }
            None => {
                cx.work.instr(c.create_instr as u64);
                self.fdb.insert(src, Entry { port: cx.rx_port, updated: now, local: false }, Some(cx.work));
                self.c.learned += 1;
            }
        }
        let nf = c.nf_call_iptables && ipv4;
        if nf {
            // br_nf_pre_routing: NF_INET_PRE_ROUTING.
            cx.work.instr(c.nf_hook_instr as u64);
        }
        let group = dst.0[0] & 1 != 0;
        let verdict = if group {
            // Flooded, and the original goes up the host's stack: a clone is sent.
            self.c.flooded += 1;
            Forwarding::TransmitAndClone
        } else {
            let hit = self.fdb.find(&dst, c.fdb_instr, cx.work).map(|i| self.fdb.entries[i as usize]);
            match hit {
                Some(e) if e.local => {
                    self.c.local += 1;
                    Forwarding::Drop
                }
                Some(e) if now.saturating_sub(e.updated) <= c.ageing_time_ps => {
                    if e.port == cx.rx_port {
                        self.c.filtered += 1;
                        Forwarding::Drop
                    } else {
                        self.c.known += 1;
                        Forwarding::Transmit
                    }
                }
                _ => {
                    self.c.flooded += 1;
                    Forwarding::Transmit
                }
            }
        };
        let verdict = if verdict == Forwarding::Transmit && c.promisc { Forwarding::TransmitAndClone } else { verdict };
        if nf && verdict != Forwarding::Drop {
            // br_nf_forward_ip and br_nf_post_routing: NF_INET_FORWARD, NF_INET_POST_ROUTING.
            cx.work.instr(2 * c.nf_hook_instr as u64);
        }
        cx.exec();
        if nf {
            cx.work.reset(Category::Mempool).instr(c.nf_bridge_instr as u64).write(NF_BRIDGE_BASE + cx.core_id as u64 * 64);
            cx.exec();
        }
        verdict
    }

    fn result_json(&self) -> Value {
        let c = self.c;
        json!({
            "fdb_entries": self.fdb.entries.len(),
            "learned": c.learned,
            "refreshed": c.refreshed,
            "known": c.known,
            "flooded": c.flooded,
            "local": c.local,
            "filtered": c.filtered,
            "invalid": c.invalid,
        })
    }

    fn reset_stats(&mut self) {
        self.c = Counters::default();
    }

    fn table_entries(&self) -> u64 {
        self.fdb.entries.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::Forwarding;
    use crate::wire::ipv4;

    /// A 64 B UDP frame (no FCS) from `src` to `dst`.
    fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f[12..14].copy_from_slice(&ethernet::ETHERTYPE_IPV4.to_be_bytes());
        ipv4::Repr { src: "10.0.0.1".parse().unwrap(), dst: "10.0.1.1".parse().unwrap(), protocol: ipv4::PROTO_UDP, payload_len: 26, ttl: 64 }
            .emit(&mut ipv4::Packet::new_unchecked(&mut f[14..]));
        f
    }

    const A: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const B: [u8; 6] = [2, 0, 0, 0, 1, 1];

    fn bridge(cfg: BridgeConfig) -> Bridge {
        Bridge { cfg, fdb: Fdb::default(), c: Counters::default(), ports_added: 0 }
    }

    /// Runs `forward` on `f` with the test context (ingress port 0, whose
    /// MAC is 02:00:00:00:00:02) at time `at`; returns the verdict, the
    /// frame after it and the accesses of the last work unit.
    fn run_at(b: &mut Bridge, f: Vec<u8>, at: Ps) -> (Forwarding, Vec<u8>, usize) {
        let (out, v, n) = super::super::tests::with_cx(f, |cx, s| {
            cx.idle_until(at);
            b.forward(cx, s.frame, s.buf_addr)
        });
        (v, out, n)
    }

    fn run(b: &mut Bridge, f: Vec<u8>) -> (Forwarding, Vec<u8>, usize) {
        run_at(b, f, 0)
    }

    /// An unknown destination floods (out on the other port, no clone);
    /// once the destination was heard on the other port the frame goes
    /// there as known; heard on the ingress port, it is filtered; the
    /// bytes never change.
    #[test]
    fn learns_floods_forwards_and_filters() {
        let mut b = bridge(BridgeConfig::default());
        let f = frame(B, A);
        let (v, out, _) = run(&mut b, f.clone());
        assert_eq!((v, out), (Forwarding::Transmit, f.clone()));
        assert_eq!((b.c.learned, b.c.flooded), (1, 1));
        // B heard on port 1: A's next frame goes there.
        let i = b.fdb.insert(Mac(B), Entry { port: 1, updated: 0, local: false }, None);
        assert_eq!(run(&mut b, f.clone()).0, Forwarding::Transmit);
        assert_eq!((b.c.known, b.c.refreshed), (1, 1));
        // B heard on port 0, where A's frames come in: filtered.
        b.fdb.entries[i as usize].port = 0;
        assert_eq!(run(&mut b, f.clone()).0, Forwarding::Drop);
        assert_eq!(b.c.filtered, 1);
        // A frame for the ingress port's own address goes up the host's stack.
        assert_eq!(run(&mut b, frame([2, 0, 0, 0, 0, 2], A)).0, Forwarding::Drop);
        assert_eq!(b.c.local, 1);
        // Broadcast: flooded, and a clone goes up; a group source is invalid.
        assert_eq!(run(&mut b, frame([0xff; 6], A)).0, Forwarding::TransmitAndClone);
        assert_eq!(run(&mut b, frame(B, [1, 0, 0, 0, 0, 1])).0, Forwarding::Drop);
        assert_eq!(b.c.invalid, 1);
    }

    /// An entry older than the ageing time floods again; hearing the
    /// address refreshes it.
    #[test]
    fn an_aged_entry_floods_until_heard_again() {
        let mut b = bridge(BridgeConfig { ageing_time_ps: 1_000, ..Default::default() });
        b.fdb.insert(Mac(B), Entry { port: 1, updated: 0, local: false }, None);
        assert_eq!(run_at(&mut b, frame(B, A), 1_000).0, Forwarding::Transmit);
        assert_eq!((b.c.known, b.c.flooded), (1, 0));
        assert_eq!(run_at(&mut b, frame(B, A), 1_001).0, Forwarding::Transmit);
        assert_eq!((b.c.known, b.c.flooded), (1, 1));
        // B speaks (on port 0 here, the test's only ingress): its entry moves and is fresh.
        run_at(&mut b, frame(A, B), 5_000);
        assert_eq!((b.fdb.entries[0].port, b.fdb.entries[0].updated), (0, 5_000));
    }

    /// Promiscuous: every forwarded frame is cloned; without bridge
    /// netfilter the iptables hooks and the nf_bridge_info are gone.
    #[test]
    fn promisc_clones_and_netfilter_costs_its_hooks() {
        let mut b = bridge(BridgeConfig { promisc: true, ..Default::default() });
        assert_eq!(run(&mut b, frame(B, A)).0, Forwarding::TransmitAndClone);
        let (mut on, mut off) = (bridge(BridgeConfig::default()), bridge(BridgeConfig { nf_call_iptables: false, ..Default::default() }));
        let (_, _, n_on) = run(&mut on, frame(B, A));
        let (_, _, n_off) = run(&mut off, frame(B, A));
        // The last work unit run: the nf_bridge_info line with netfilter,
        // the bridge's own lines without.
        assert_eq!(n_on, 1);
        assert!(n_off > 1, "{n_off}");
    }
}
