//! The benchmark applications (SPEC 2.9), one file each, and the registry
//! that names them. Each implements [`crate::stack::App`]: it acts on the
//! real frame bytes and charges its instructions and memory accesses to
//! the core that runs it.
//!
//! Adding an application is one file here (or anywhere: see
//! `tests/toy_app.rs`) and one line in [`Registry::builtin`] (or one
//! [`Registry::add`] call).

mod bridge;
pub mod config;
pub mod flow_table;
mod ipfwd;
mod l2fwd;
mod l3fwd;
mod ovs;
pub mod memcached;
mod rxptx;
mod tcp_send;
mod testpmd;
mod touch;
mod udp_echo;
mod vswitch;
mod iperf;

pub use config::{AppConfig, ForwardMode, KvsAppConfig};

use crate::error::{ConfigError, Result};
use crate::nic::Slot;
use crate::stack::{App, AppCx};
use crate::wire::ethernet;

/// Builds an application from the host's `app` section.
pub type Ctor = fn(&AppConfig) -> Result<Box<dyn App>>;

/// Which stacks an application runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stacks {
    pub pmd: bool,
    pub kernel: bool,
}

pub const PMD: Stacks = Stacks { pmd: true, kernel: false };
pub const KERNEL: Stacks = Stacks { pmd: false, kernel: true };
pub const BOTH: Stacks = Stacks { pmd: true, kernel: true };

/// A registered application.
#[derive(Clone)]
pub struct Entry {
    pub name: &'static str,
    pub stacks: Stacks,
    /// Largest frame it builds itself, FCS included (frame buffers must hold it).
    pub max_frame_bytes: fn(&AppConfig) -> u32,
    pub ctor: Ctor,
    /// The traffic it expects: `loadgen` fields (in the config's user
    /// units) that apply unless the user set them, so that `--app X` alone
    /// drives X with requests it answers.
    pub traffic: &'static [(&'static str, &'static str)],
    /// The `host.app` settings it reads besides `port_topology` (which
    /// every forwarding application reads): one set for another
    /// application is said to be ignored.
    pub reads: &'static [&'static str],
}

fn none(_: &AppConfig) -> u32 {
    0
}

/// The applications a host can run, by name.
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// Every application of the benchmark suite.
    pub fn builtin() -> Registry {
        let mut r = Registry { entries: Vec::new() };
        r.add("testpmd", PMD, testpmd::max_frame_bytes, testpmd::new);
        r.add("touchfwd", PMD, none, touch::new_fwd);
        r.add("touchdrop", PMD, none, touch::new_drop);
        r.add("rxptx", PMD, none, rxptx::new);
        r.add("l2fwd", PMD, none, l2fwd::new);
        r.add("vswitch", PMD, none, vswitch::new);
        r.add("l3fwd", PMD, none, l3fwd::new);
        r.add("ipfwd", KERNEL, none, ipfwd::new);
        r.add("bridge", KERNEL, none, bridge::new);
        r.add("ovs", KERNEL, none, ovs::new);
        r.add("udp-echo", BOTH, none, udp_echo::new);
        r.add("memcached", BOTH, memcached::max_frame_bytes, memcached::new);
        r.add("iperf", KERNEL, none, iperf::new);
        r.add("tcp-send", KERNEL, tcp_send::max_frame_bytes, tcp_send::new);
        // The memcached client with its defaults (GET-heavy, keys populated first).
        r.set_traffic("memcached", &[("memcached", "true")]);
        // A bridge forwards frames addressed to the stations behind its ports.
        r.set_traffic("bridge", &[("address", "stations")]);
        // l3fwd routes by the destination address: the stations across.
        r.set_traffic("l3fwd", &[("address", "stations")]);
        // iperf3's TCP flow to its port, in full-sized segments.
        r.set_traffic("iperf", &[("protocol", "tcp"), ("dst_port", "5201"), ("size", "1518")]);
        // The receiver that terminates its connections.
        r.set_traffic("tcp-send", &[("tcp", "true")]);
        for (name, reads) in [
            ("testpmd", &["forward_mode", "tx_frame_bytes"][..]),
            ("rxptx", &["proc_time_ps", "proc_per"]),
            ("vswitch", &["flow_table"]),
            ("l3fwd", &["l3fwd"]),
            ("ipfwd", &["ipfwd"]),
            ("bridge", &["bridge"]),
            ("ovs", &["ovs"]),
            ("udp-echo", &["echo_port"]),
            ("memcached", &["kvs"]),
            ("iperf", &["iperf_port"]),
            ("tcp-send", &["tcp_send"]),
        ] {
            r.set_reads(name, reads);
        }
        r
    }

    /// The `host.app` settings application `name` reads (see [`Entry::reads`]).
    pub fn set_reads(&mut self, name: &str, reads: &'static [&'static str]) -> &mut Self {
        if let Some(e) = self.entries.iter_mut().find(|e| e.name == name) {
            e.reads = reads;
        }
        self
    }

    /// The traffic application `name` expects (see [`Entry::traffic`]).
    pub fn set_traffic(&mut self, name: &str, traffic: &'static [(&'static str, &'static str)]) -> &mut Self {
        if let Some(e) = self.entries.iter_mut().find(|e| e.name == name) {
            e.traffic = traffic;
        }
        self
    }

    /// Registers an application (a later entry of the same name replaces the
    /// earlier, keeping the traffic it implies and the settings it reads).
    pub fn add(&mut self, name: &'static str, stacks: Stacks, max_frame_bytes: fn(&AppConfig) -> u32, ctor: Ctor) -> &mut Self {
        let (traffic, reads) = self.get(name).map_or((&[][..], &[][..]), |e| (e.traffic, e.reads));
        self.entries.retain(|e| e.name != name);
        self.entries.push(Entry { name, stacks, max_frame_bytes, ctor, traffic, reads });
        self
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.name).collect()
    }

    /// The entry for `name`, or an error naming the field `app` and the choices.
    pub fn lookup(&self, name: &str) -> Result<&Entry> {
        self.get(name).ok_or_else(|| ConfigError::new("app", name.to_string(), &format!("one of reflector, {}", self.names().join(", "))).into())
    }
}

/// The poll-mode burst of an application that runs on the kernel stack
/// only: never called (its registry entry says so, and a config asking for
/// the poll-mode driver is refused); were it called, it drops what it got
/// rather than panic.
pub fn kernel_only_burst(cx: &mut AppCx, pkts: &[Slot]) -> crate::stack::Verdict {
    for s in pkts {
        cx.frames.end(s.frame, crate::framebuf::Fate::App);
        cx.free.push(s.mbuf);
    }
    crate::stack::Verdict::Listed
}

/// testpmd mac and l2fwd: the destination MAC becomes the station behind
/// the egress port, the source the port's own (a header write).
#[inline]
pub fn rewrite_macs(cx: &mut AppCx, s: &Slot) {
    cx.work.instr(cx.costs.header_instr as u64).write(s.buf_addr);
    let mut p = ethernet::Packet::new_unchecked(cx.frames.data_mut(s.frame));
    p.set_dst(cx.peer_mac);
    p.set_src(cx.port_mac);
}

/// testpmd macswap, rxptx, touchfwd: swap the MACs (a header read and write).
#[inline]
pub fn swap_macs(cx: &mut AppCx, s: &Slot) {
    cx.work.instr(cx.costs.header_instr as u64).read(s.buf_addr).write(s.buf_addr);
    ethernet::Packet::new_unchecked(cx.frames.data_mut(s.frame)).swap_macs();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_builds_and_names_are_checked() {
        let r = Registry::builtin();
        for name in r.names() {
            let app = (r.get(name).unwrap().ctor)(&AppConfig::default()).unwrap();
            assert_eq!(app.name(), name);
        }
        let e = r.lookup("nope").err().unwrap().to_string();
        assert!(e.starts_with("app") && e.contains("testpmd"), "{e}");
        assert!(r.get("iperf").unwrap().stacks.kernel && !r.get("iperf").unwrap().stacks.pmd);
    }

    /// Runs `burst` of `app` on one 1514 B frame (the port's MAC as its
    /// destination, the peer's as its source, buffer at a line boundary) and
    /// returns the frame after it, the verdict and the accesses charged.
    fn one_frame(app: &str, frame: Vec<u8>) -> (Vec<u8>, crate::stack::Verdict, usize) {
        on_frame(app, frame, |a, cx, s| a.burst(cx, &[s]))
    }

    /// Runs `f` with application `app`, a context on one core and the frame
    /// `frame` in a buffer at a line boundary; returns the frame after it,
    /// what `f` returned and the accesses charged.
    pub(super) fn on_frame<R>(app: &str, frame: Vec<u8>, f: impl FnOnce(&mut dyn App, &mut AppCx, Slot) -> R) -> (Vec<u8>, R, usize) {
        let mut a = (Registry::builtin().get(app).unwrap().ctor)(&AppConfig::default()).unwrap();
        with_cx(frame, |cx, s| f(a.as_mut(), cx, s))
    }

    /// Runs `f` with a context on one core (its clock at 0, ingress port 0
    /// whose MAC is 02:00:00:00:00:02, egress the same) and the frame
    /// `frame` in a buffer at a line boundary; returns the frame after it,
    /// what `f` returned and the accesses of the work unit last filled.
    pub(super) fn with_cx<R>(mut frame: Vec<u8>, f: impl FnOnce(&mut AppCx, Slot) -> R) -> (Vec<u8>, R, usize) {
        use crate::cpu::{Category, Core, CoreConfig, Work};
        use crate::framebuf::FramePool;
        use crate::mem::{MemConfig, MemSystem};
        use crate::stack::mempool::{Mempool, MempoolConfig};
        let cpu = CoreConfig::altra();
        let mut core = Core::new(0, &cpu).unwrap();
        let mut mem = MemSystem::new(&MemConfig::altra(), 1, &[1_000_000_000_000 / cpu.freq_hz]).unwrap();
        let mut frames = FramePool::new(1518);
        let id = frames.alloc(frame.len() as u32 + 4);
        frames.data_mut(id).copy_from_slice(&frame);
        let mut mbufs = Mempool::new(&MempoolConfig { mbufs: 64, cache_size: 0, buf_bytes: 2176 }, 1, 0x1000_0000);
        let (mut work, costs) = (Work::new(Category::App), crate::stack::pmd::config::PmdCosts::default());
        let (mut tx, mut free, mut nombuf, mut scratch, mut touched) = (vec![], vec![], 0, vec![], vec![]);
        let mut cx = AppCx {
            core: &mut core,
            mem: &mut mem,
            frames: &mut frames,
            mbufs: &mut mbufs,
            work: &mut work,
            costs: &costs,
            core_id: 0,
            rx_port: 0,
            rx_port_mac: ethernet::Mac([2, 0, 0, 0, 0, 2]),
            port_mac: ethernet::Mac([2, 0, 0, 0, 0, 2]),
            peer_mac: ethernet::Mac([2, 0, 0, 0, 0, 1]),
            port_ip: "10.0.0.2".parse().unwrap(),
            peer_ip: "10.0.0.1".parse().unwrap(),
            tx: &mut tx,
            free: &mut free,
            nombuf: &mut nombuf,
            user_rx: 0,
            user_tx: 0,
            kernel_app_instr: 0,
            scratch: &mut scratch,
            touched: &mut touched,
            horizon: crate::engine::time::Ps::MAX,
        };
        let verdict = f(&mut cx, Slot { mbuf: 0, frame: id, buf_addr: 0x2000_0000 });
        let accesses = work.accesses().len();
        frame.copy_from_slice(frames.data(id));
        (frame, verdict, accesses)
    }

    #[test]
    fn applications_act_on_the_bytes_and_charge_their_lines() {
        let (port, peer) = ([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]);
        let mut frame = vec![0u8; 1514];
        frame[..6].copy_from_slice(&port);
        frame[6..12].copy_from_slice(&peer);
        frame[100] = 7;
        // touchfwd: 1514 B from a line boundary is 24 lines read, then the
        // header read and written; the MACs swapped.
        let (f, v, n) = one_frame("touchfwd", frame.clone());
        assert_eq!((&f[..6], &f[6..12], n), (&peer[..], &port[..], 24 + 2));
        assert!(matches!(v, crate::stack::Verdict::Forward));
        // touchdrop reads the same lines, swaps nothing and consumes.
        let (f, v, n) = one_frame("touchdrop", frame.clone());
        assert_eq!((&f[..12], n), (&frame[..12], 24));
        assert!(matches!(v, crate::stack::Verdict::Consume));
        // l2fwd: destination the station behind the port, source the port; one header write.
        let (f, _, n) = one_frame("l2fwd", frame.clone());
        assert_eq!((&f[..6], &f[6..12], n), (&peer[..], &port[..], 1));
        // testpmd (macswap by default): the header read and written.
        let (f, _, n) = one_frame("testpmd", frame.clone());
        assert_eq!((&f[..6], n), (&peer[..], 2));
    }
}
