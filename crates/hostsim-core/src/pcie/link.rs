//! A timed PCIe link between a device and the root complex: posted writes
//! both ways, non-posted DMA reads with a limit on outstanding read tags,
//! and byte/TLP accounting per direction and per kind of traffic.
//!
//! Each direction is a serializer ([`Timeline`]): a TLP of `data + overhead`
//! bytes occupies it for (data + overhead) × 8 / TLP-layer rate (the encoded
//! rate less the DLLP share, see [`tlp`](super::tlp)) and arrives
//! `latency_ps` after its last byte. A posted write is complete when its last
//! TLP arrives; posted TLPs in one direction never pass earlier ones. A read
//! sends ceil(N/MRRS) request TLPs up, each needing a free read tag; the root
//! complex answers each `host_time_ps` after it arrives (the caller asks the
//! memory system: LLC hit, DRAM, remote socket …), the completions come down
//! in order, and the tag is free again when the last one reaches the device.
//! With few tags, large reads are latency-bound: tags × request size per
//! round trip — the large-packet TX limit of Neugebauer et al. (SIGCOMM 2018).
//!
//! Posted writes up may be flow-controlled by the root port's posted
//! credits (`posted_header_credits`, `posted_data_credits`; 0 = infinite,
//! the default): each write TLP holds one header credit and a data credit
//! per 16 B from when the device sends it until the root complex has passed
//! the write to memory (the memory system's visible time; on arrival when
//! the caller does not say) and an UpdateFC DLLP has crossed back
//! (`latency_ps`); the root complex retires posted writes in order. A TLP
//! without credits waits (`credit_stalls`). Read requests up may likewise
//! be bounded by the root port's non-posted header credits
//! (`nonposted_header_credits`, 0 = infinite, the default), each held from
//! when the request leaves until the root complex has passed it on (on
//! arrival) and an UpdateFC has crossed back (`nonposted_credit_stalls`),
//! beside the device's read tags. Completion credits are not modelled: an
//! endpoint must advertise them infinite (PCIe Base Specification §2.6.1).
//!
//! Simplifications: no replay, DLLPs as a rate factor, no credits for the
//! host's writes down;
//! the host answers every request independently (no root-complex queueing);
//! completions may pass posted writes (the PCIe ordering rules forbid it).
//! Times passed in may lag the latest one by up to
//! [`HISTORY_PS`](crate::engine::timeline::HISTORY_PS).

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::config::{PcieConfig, DATA_CREDIT_BYTES};
use super::tlp::{completion_split_bytes, request_overhead_bytes, tlp_rate_bps, CPL_OVERHEAD_BYTES, MSI_BYTES};
use crate::engine::slots::Slots;
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{bits_to_ps, Ps};
use crate::engine::timeline::Timeline;
use crate::error::Result;

/// What a transfer carries, for the byte counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Packet data.
    Payload,
    /// Descriptor fetches and write-backs.
    Descriptor,
    /// Doorbell (queue-pointer) MMIO writes.
    Doorbell,
    /// MSI/MSI-X messages.
    Interrupt,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Payload, Kind::Descriptor, Kind::Doorbell, Kind::Interrupt];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Payload => "payload",
            Kind::Descriptor => "descriptor",
            Kind::Doorbell => "doorbell",
            Kind::Interrupt => "interrupt",
        }
    }
}

/// Direction seen from the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Device → root complex.
    Up,
    /// Root complex → device.
    Down,
}

/// Counters of one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirStats {
    /// TLP data bytes, by [`Kind`].
    pub data_bytes: [u64; 4],
    /// TLP overhead bytes (headers, framing), by [`Kind`].
    pub overhead_bytes: [u64; 4],
    pub tlps: u64,
    /// Serialization time booked.
    pub busy_ps: Ps,
}

impl DirStats {
    pub fn data(&self) -> u64 {
        self.data_bytes.iter().sum()
    }
    pub fn overhead(&self) -> u64 {
        self.overhead_bytes.iter().sum()
    }
    /// All bytes put on the link in this direction.
    pub fn total(&self) -> u64 {
        self.data() + self.overhead()
    }
    /// Link bytes (data + overhead) of one kind.
    pub fn kind_bytes(&self, k: Kind) -> u64 {
        self.data_bytes[k as usize] + self.overhead_bytes[k as usize]
    }
}

struct Direction {
    wire: Timeline,
    /// (ready, end) of the last posted TLP: later posted TLPs start after `end`.
    last_posted: (Ps, Ps),
    stats: DirStats,
}

impl Direction {
    fn new() -> Self {
        Direction { wire: Timeline::new(), last_posted: (0, 0), stats: DirStats::default() }
    }
}

pub struct PcieLink {
    cfg: PcieConfig,
    rate_bps: u64,
    /// Serialization time by TLP length on the link (data + overhead).
    ser_ps: Vec<Ps>,
    req_overhead: u32,
    cpl_split: u32,
    up: Direction,
    down: Direction,
    /// The read tags, each held until its read's last completion arrives.
    tags: Slots,
    /// Posted TLPs up whose credits are out, in order: (when the credits are
    /// back at the device, data credits held); only with finite credits.
    credits: VecDeque<(Ps, u32)>,
    /// Data credits held by `credits`.
    credit_data: u32,
    /// Read requests up whose non-posted header credit is out, in order:
    /// when it is back at the device; only with finite credits.
    np_credits: VecDeque<Ps>,
    // statistics
    writes: u64,
    reads: u64,
    read_requests: u64,
    mmio_writes: u64,
    msis: u64,
    tag_stalls: u64,
    tag_stall_ps: Ps,
    credit_stalls: u64,
    credit_stall_ps: Ps,
    np_credit_stalls: u64,
    np_credit_stall_ps: Ps,
    read_latency: super::ReadLatency,
}

impl PcieLink {
    pub fn new(cfg: &PcieConfig) -> Result<Self> {
        cfg.validate()?;
        let rate_bps = tlp_rate_bps(cfg).round() as u64;
        let req_overhead = request_overhead_bytes(cfg.addr64);
        let max_tlp = cfg.mps_bytes.max(cfg.mrrs_bytes) + req_overhead.max(CPL_OVERHEAD_BYTES);
        let ser_ps = (0..=max_tlp as u64).map(|b| bits_to_ps(b * 8, rate_bps)).collect();
        Ok(PcieLink {
            cfg: cfg.clone(),
            rate_bps,
            ser_ps,
            req_overhead,
            cpl_split: completion_split_bytes(cfg),
            up: Direction::new(),
            down: Direction::new(),
            tags: Slots::new(cfg.read_tags as usize),
            writes: 0,
            reads: 0,
            read_requests: 0,
            mmio_writes: 0,
            msis: 0,
            tag_stalls: 0,
            tag_stall_ps: 0,
            credits: VecDeque::new(),
            credit_data: 0,
            credit_stalls: 0,
            credit_stall_ps: 0,
            np_credits: VecDeque::new(),
            np_credit_stalls: 0,
            np_credit_stall_ps: 0,
            read_latency: Default::default(),
        })
    }

    pub fn config(&self) -> &PcieConfig {
        &self.cfg
    }

    /// TLP-layer rate of each direction used for serialization (bits per second).
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Time one TLP of `link_bytes` (data + overhead) occupies a direction.
    #[inline]
    pub fn serialization_ps(&self, link_bytes: u32) -> Ps {
        self.ser_ps.get(link_bytes as usize).copied().unwrap_or_else(|| bits_to_ps(link_bytes as u64 * 8, self.rate_bps))
    }

    pub fn stats(&self, dir: Dir) -> &DirStats {
        match dir {
            Dir::Up => &self.up.stats,
            Dir::Down => &self.down.stats,
        }
    }

    /// Read tags in use at `now` (booked reads whose last completion has not arrived).
    pub fn tags_in_use(&self, now: Ps) -> usize {
        self.tags.in_use(now)
    }

    /// Sends one TLP; returns the time its last byte leaves.
    fn send(&mut self, dir: Dir, ready: Ps, data: u32, overhead: u32, kind: Kind, posted: bool) -> Ps {
        let ser = self.serialization_ps(data + overhead);
        let d = match dir {
            Dir::Up => &mut self.up,
            Dir::Down => &mut self.down,
        };
        let mut ready = ready;
        if posted && ready >= d.last_posted.0 {
            ready = ready.max(d.last_posted.1);
        }
        let end = d.wire.book(ready, ser) + ser;
        if posted {
            d.last_posted = (ready, end);
        }
        let s = &mut d.stats;
        s.data_bytes[kind as usize] += data as u64;
        s.overhead_bytes[kind as usize] += overhead as u64;
        s.tlps += 1;
        s.busy_ps += ser;
        end
    }

    /// The run ended at `end`: serialisation booked after it (transfers
    /// queued on a saturated link) was not done within the run and leaves
    /// the busy time, so no utilisation passes 1.
    pub fn clip_busy_at(&mut self, end: Ps) {
        for d in [&mut self.up, &mut self.down] {
            d.stats.busy_ps = d.stats.busy_ps.saturating_sub(d.wire.busy_after(end));
        }
    }

    fn advance(&mut self, now: Ps) {
        self.up.wire.advance(now);
        self.down.wire.advance(now);
    }

    /// A posted write of `bytes` split at MPS; returns when the last TLP
    /// arrives. `clock`: `now` is the device's time and may advance the
    /// link's forgetting clock (a core's doorbell may come from ahead of it).
    fn posted_write(&mut self, dir: Dir, now: Ps, bytes: u32, kind: Kind, clock: bool) -> Ps {
        if clock {
            self.advance(now);
        }
        let mut left = bytes;
        let mut end = now;
        let credited = dir == Dir::Up && self.credits_finite();
        while left > 0 {
            let data = left.min(self.cfg.mps_bytes);
            if credited {
                let need = data.div_ceil(DATA_CREDIT_BYTES).max(1);
                let ready = self.take_credits(now, need);
                end = self.send(dir, ready, data, self.req_overhead, kind, true);
                // Back no earlier than the root complex has the TLP (the caller may say later).
                self.credits.push_back((end + 2 * self.cfg.latency_ps, need));
                self.credit_data += need;
            } else {
                end = self.send(dir, now, data, self.req_overhead, kind, true);
            }
            left -= data;
        }
        if bytes == 0 {
            now
        } else {
            end + self.cfg.latency_ps
        }
    }

    /// The device writes `bytes` to host memory at `now`; returns when the
    /// last TLP has arrived at the root complex (the posted write is complete;
    /// the memory system's own time, e.g. a DCA allocation, comes on top).
    /// The root complex frees its credits on arrival.
    pub fn dma_write(&mut self, now: Ps, bytes: u32, kind: Kind) -> Ps {
        self.writes += 1;
        self.posted_write(Dir::Up, now, bytes, kind, true)
    }

    /// [`dma_write`](Self::dma_write), the memory system taking the write
    /// when it arrives: `host(arrive)` is when it is visible there, and
    /// returned. The write's credits come back one link latency after that.
    pub fn dma_write_to(&mut self, now: Ps, bytes: u32, kind: Kind, host: impl FnOnce(Ps) -> Ps) -> Ps {
        let arrive = self.dma_write(now, bytes, kind);
        let visible = host(arrive);
        if self.credits_finite() && bytes > 0 {
            let back = visible + self.cfg.latency_ps;
            let n = bytes.div_ceil(self.cfg.mps_bytes) as usize;
            let len = self.credits.len();
            for c in self.credits.range_mut(len.saturating_sub(n)..) {
                c.0 = c.0.max(back);
            }
        }
        visible
    }

    /// Whether the root port's posted credits are finite (then a write's
    /// credits wait for the memory to have it).
    #[inline(always)]
    pub fn credits_finite(&self) -> bool {
        self.cfg.posted_header_credits != 0 || self.cfg.posted_data_credits != 0
    }

    /// When a posted TLP up that needs `need` data credits may leave, ready
    /// at `ready`: it takes the credits of the oldest TLPs out until enough
    /// are free, and leaves once the last of those is back (the root complex
    /// retires writes in order). Credits go in call order: callers do not
    /// come in time order, so none is freed by time alone.
    fn take_credits(&mut self, ready: Ps, need: u32) -> Ps {
        let (ph, pd) = (self.cfg.posted_header_credits as usize, self.cfg.posted_data_credits);
        let mut at = ready;
        while (ph != 0 && self.credits.len() >= ph) || (pd != 0 && self.credit_data + need > pd) {
            let Some((t, d)) = self.credits.pop_front() else { break };
            at = at.max(t);
            self.credit_data -= d;
        }
        if at > ready {
            self.credit_stalls += 1;
            self.credit_stall_ps += at - ready;
        }
        at
    }

    /// When a read request ready at `ready` may leave with `np` non-posted
    /// header credits: once the oldest request's credit is back if all are
    /// out (the root complex passes requests on in order).
    fn take_np_credit(&mut self, ready: Ps, np: usize) -> Ps {
        // One credit a request, so at most one is ever short.
        let at = if self.np_credits.len() >= np { self.np_credits.pop_front().map_or(ready, |t| ready.max(t)) } else { ready };
        if at > ready {
            self.np_credit_stalls += 1;
            self.np_credit_stall_ps += at - ready;
        }
        at
    }

    /// The host writes `bytes` (a doorbell) to a device register at `now`;
    /// returns when it arrives at the device.
    pub fn mmio_write(&mut self, now: Ps, bytes: u32) -> Ps {
        self.mmio_writes += 1;
        // A core runs ahead of the devices by up to its current work unit:
        // its doorbell is booked, but does not move the forgetting clock.
        self.posted_write(Dir::Down, now, bytes, Kind::Doorbell, false)
    }

    /// The device raises an MSI-X at `now` (a 4 B write); returns when it
    /// reaches the root complex. It does not pass the device's earlier writes.
    pub fn msi(&mut self, now: Ps) -> Ps {
        self.msis += 1;
        self.posted_write(Dir::Up, now, MSI_BYTES, Kind::Interrupt, true)
    }

    /// The device reads `bytes` of host memory at `now`; the root complex
    /// answers each request `host_time_ps` after it arrives. Returns when the
    /// last completion byte is at the device.
    pub fn dma_read(&mut self, now: Ps, bytes: u32, host_time_ps: Ps, kind: Kind) -> Ps {
        self.advance(now);
        self.reads += 1;
        let mut done = now;
        let mut left = bytes;
        let mut issue = now; // requests of one read leave in order
        let np = self.cfg.nonposted_header_credits as usize;
        while left > 0 {
            let req = left.min(self.cfg.mrrs_bytes);
            left -= req;
            let mut ready = self.tags.take(issue);
            if ready > issue {
                self.tag_stalls += 1;
                self.tag_stall_ps += ready - issue;
            }
            if np != 0 {
                ready = self.take_np_credit(ready, np);
            }
            let sent = self.send(Dir::Up, ready, 0, self.req_overhead, kind, false);
            if np != 0 {
                // Back once the root complex has passed the request on (on arrival) and an UpdateFC has crossed.
                self.np_credits.push_back(sent + 2 * self.cfg.latency_ps);
            }
            issue = sent;
            self.read_requests += 1;
            let mut cpl_ready = sent + self.cfg.latency_ps + host_time_ps;
            let mut rest = req;
            while rest > 0 {
                let data = rest.min(self.cpl_split);
                cpl_ready = self.send(Dir::Down, cpl_ready, data, CPL_OVERHEAD_BYTES, kind, false);
                rest -= data;
            }
            let arrival = cpl_ready + self.cfg.latency_ps;
            self.tags.hold_until(arrival);
            done = done.max(arrival);
        }
        self.read_latency.record(kind, bytes, now, done);
        done
    }

    /// Counters as the JSON result's `pcie` object; `window_ps` is the
    /// measured time the utilisations refer to.
    pub fn result_json(&self, window_ps: Ps) -> Value {
        let mut o = json!({
            "rate_bps": self.rate_bps,
            "writes": self.writes,
            "reads": self.reads,
            "read_requests": self.read_requests,
            "mmio_writes": self.mmio_writes,
            "msis": self.msis,
            "tag_stalls": self.tag_stalls,
            "tag_stall_ps": self.tag_stall_ps,
            "credit_stalls": self.credit_stalls,
            "credit_stall_ps": self.credit_stall_ps,
            "nonposted_credit_stalls": self.np_credit_stalls,
            "nonposted_credit_stall_ps": self.np_credit_stall_ps,
            "read_latency": self.read_latency.result_json(),
        });
        for (name, d) in [("up", &self.up.stats), ("down", &self.down.stats)] {
            let util = if window_ps > 0 { d.busy_ps as f64 / window_ps as f64 } else { 0.0 };
            o[format!("{name}_bytes")] = d.total().into();
            o[format!("{name}_data_bytes")] = d.data().into();
            o[format!("{name}_overhead_bytes")] = d.overhead().into();
            o[format!("{name}_tlps")] = d.tlps.into();
            o[format!("{name}_busy_ps")] = d.busy_ps.into();
            o[format!("{name}_util")] = util.into();
            for k in Kind::ALL {
                o[format!("{name}_{}_bytes", k.name())] = d.kind_bytes(k).into();
            }
        }
        o
    }
}

fn kind_desc(dir: Dir, k: Kind) -> &'static str {
    match (dir, k) {
        (Dir::Up, Kind::Payload) => "Link bytes (data + TLP overhead) of packet data, device to host",
        (Dir::Up, Kind::Descriptor) => "Link bytes of descriptor traffic, device to host",
        (Dir::Up, Kind::Doorbell) => "Link bytes of doorbells, device to host",
        (Dir::Up, Kind::Interrupt) => "Link bytes of MSI-X messages, device to host",
        (Dir::Down, Kind::Payload) => "Link bytes (data + TLP overhead) of packet data, host to device",
        (Dir::Down, Kind::Descriptor) => "Link bytes of descriptor traffic, host to device",
        (Dir::Down, Kind::Doorbell) => "Link bytes of doorbell MMIO writes, host to device",
        (Dir::Down, Kind::Interrupt) => "Link bytes of interrupt traffic, host to device",
    }
}

impl HasStats for PcieLink {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        s.count("writes", self.writes, "DMA writes by the device");
        s.count("reads", self.reads, "DMA reads by the device");
        s.count("read_requests", self.read_requests, "Read request TLPs (one read tag each)");
        s.count("mmio_writes", self.mmio_writes, "MMIO writes by the host (doorbells)");
        s.count("msis", self.msis, "MSI-X messages");
        s.count("tag_stalls", self.tag_stalls, "Read requests that waited for a free read tag");
        s.add("tag_stall_ps", self.tag_stall_ps as f64, "Picosecond", "Total time read requests waited for a read tag");
        s.count("credit_stalls", self.credit_stalls, "Posted TLPs up that waited for the root port's posted credits");
        s.add("credit_stall_ps", self.credit_stall_ps as f64, "Picosecond", "Total time posted TLPs up waited for credits");
        s.count("nonposted_credit_stalls", self.np_credit_stalls, "Read requests that waited for the root port's non-posted header credits");
        s.add("nonposted_credit_stall_ps", self.np_credit_stall_ps as f64, "Picosecond", "Total time read requests waited for non-posted credits");
        self.read_latency.report_stats(s);
        for (dir, name, d) in [(Dir::Up, "up", &self.up.stats), (Dir::Down, "down", &self.down.stats)] {
            let mut s = s.scope(name);
            s.add("bytes", d.total() as f64, "Byte", "All bytes put on the link (data + TLP overhead)");
            s.add("data_bytes", d.data() as f64, "Byte", "TLP data bytes");
            s.add("overhead_bytes", d.overhead() as f64, "Byte", "TLP header and framing bytes");
            s.count("tlps", d.tlps, "TLPs sent");
            s.add("busy_ps", d.busy_ps as f64, "Picosecond", "Serialization time booked");
            for k in Kind::ALL {
                s.add(&format!("{}_bytes", k.name()), d.kind_bytes(k) as f64, "Byte", kind_desc(dir, k));
            }
        }
    }

    fn reset_stats(&mut self) {
        self.up.stats = DirStats::default();
        self.down.stats = DirStats::default();
        self.writes = 0;
        self.reads = 0;
        self.read_requests = 0;
        self.mmio_writes = 0;
        self.msis = 0;
        self.tag_stalls = 0;
        self.tag_stall_ps = 0;
        self.credit_stalls = 0;
        self.credit_stall_ps = 0;
        self.np_credit_stalls = 0;
        self.np_credit_stall_ps = 0;
        self.read_latency = Default::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcie::tlp::{effective_bandwidth, DmaOp};

    const LAT: Ps = 200_000;

    fn link(cfg: PcieConfig) -> PcieLink {
        PcieLink::new(&PcieConfig { latency_ps: LAT, ..cfg }).unwrap()
    }

    /// Back-to-back 64 B writes with `ph` header credits, retired on
    /// arrival: TLP k waits for TLP k − ph's credits, back 2 × LAT after it
    /// left, so TLP m·ph + j leaves the device at (j + 1)·ser + m·(2·LAT + ser).
    #[test]
    fn posted_header_credits_bound_back_to_back_writes() {
        let ph = 4u64;
        let mut l = link(PcieConfig { posted_header_credits: ph as u32, ..PcieConfig::gen3_x16() });
        let ser = l.serialization_ps(64 + 24);
        for k in 0..40u64 {
            let (m, j) = (k / ph, k % ph);
            assert_eq!(l.dma_write(0, 64, Kind::Payload), (j + 1) * ser + m * (2 * LAT + ser) + LAT, "TLP {k}");
        }
        assert_eq!((l.credit_stalls, l.credit_stall_ps > 0), (36, true));
        // Infinite credits (the default): the same writes leave back to back.
        let mut free = link(PcieConfig::gen3_x16());
        for k in 0..40u64 {
            assert_eq!(free.dma_write(0, 64, Kind::Payload), (k + 1) * ser + LAT);
        }
        assert_eq!(free.credit_stalls, 0);
    }

    /// 16 data credits hold one 256 B TLP: a 1024 B write leaves one TLP per credit round trip.
    #[test]
    fn posted_data_credits_bound_large_writes() {
        let mut l = link(PcieConfig { posted_data_credits: 16, ..PcieConfig::gen3_x16() });
        let ser = l.serialization_ps(256 + 24);
        assert_eq!(l.dma_write(0, 1024, Kind::Payload), 4 * ser + 3 * 2 * LAT + LAT);
        assert_eq!(l.credit_stalls, 3);
    }

    /// A write's credits stay out until the memory system has it (plus the
    /// UpdateFC's trip back): with one credit, the next write waits for that.
    #[test]
    fn credits_return_after_the_host_has_the_write() {
        let mut l = link(PcieConfig { posted_header_credits: 1, ..PcieConfig::gen3_x16() });
        let ser = l.serialization_ps(64 + 24);
        let slow = 1_000_000; // the memory system takes 1 µs (a DRAM-bound write)
        let visible = l.dma_write_to(0, 64, Kind::Payload, |arrive| arrive + slow);
        assert_eq!(visible, ser + LAT + slow);
        assert_eq!(l.dma_write(0, 64, Kind::Payload), visible + LAT + ser + LAT);
        // A fast host: the credit is back 2 × LAT after the TLP left, no earlier.
        let mut l = link(PcieConfig { posted_header_credits: 1, ..PcieConfig::gen3_x16() });
        l.dma_write_to(0, 64, Kind::Payload, |arrive| arrive);
        assert_eq!(l.dma_write(0, 64, Kind::Payload), ser + 2 * LAT + ser + LAT);
    }

    /// One non-posted credit: each read request waits for the previous
    /// one's credit, back 2 × LAT after that request left (the root complex
    /// passes it on when it arrives), however many tags are free.
    #[test]
    fn nonposted_credits_space_read_requests() {
        let host = 80_000;
        let mut l = link(PcieConfig { nonposted_header_credits: 1, ..PcieConfig::gen3_x16() });
        let (req, cpl) = (l.serialization_ps(24), l.serialization_ps(64 + CPL_OVERHEAD_BYTES));
        for k in 0..10u64 {
            let left = req + k * (2 * LAT + req);
            assert_eq!(l.dma_read(0, 64, host, Kind::Descriptor), left + LAT + host + cpl + LAT, "read {k}");
        }
        assert_eq!((l.np_credit_stalls, l.np_credit_stall_ps), (9, (1..10).map(|k| k * (2 * LAT + req)).sum::<Ps>()));
        // Infinite credits (the default): the requests leave back to back
        // and the second completion queues behind the first.
        let mut free = link(PcieConfig::gen3_x16());
        free.dma_read(0, 64, host, Kind::Descriptor);
        let second = free.dma_read(0, 64, host, Kind::Descriptor);
        assert_eq!(second, req + LAT + host + 2 * cpl + LAT);
        assert_eq!(free.np_credit_stalls, 0);
        let e = PcieLink::new(&PcieConfig { nonposted_header_credits: 200, ..PcieConfig::gen3_x16() }).err().unwrap().to_string();
        assert_eq!(e, r#"pcie.nonposted_header_credits: invalid value '200' (allowed: 0 (infinite) or 1 to 127)"#);
    }

    #[test]
    fn credit_counts_are_checked() {
        let e = PcieLink::new(&PcieConfig { posted_header_credits: 128, ..PcieConfig::gen3_x16() }).err().unwrap().to_string();
        assert_eq!(e, r#"pcie.posted_header_credits: invalid value '128' (allowed: 0 (infinite) or 1 to 127)"#);
        let e = PcieLink::new(&PcieConfig { posted_data_credits: 8, ..PcieConfig::gen3_x16() }).err().unwrap().to_string();
        assert_eq!(e, r#"pcie.posted_data_credits: invalid value '8' (allowed: 0 (infinite) or 16 to 2047 (16 B each, at least one TLP of mps_bytes))"#);
    }

    #[test]
    fn write_on_idle_link_and_back_to_back() {
        let mut l = link(PcieConfig::gen3_x16());
        let ser = bits_to_ps((64 + 24) * 8, l.rate_bps());
        // ≈ 6.19 ns at 113.70 Gb/s.
        assert!((6_150..6_250).contains(&ser), "{ser}");
        assert_eq!(l.dma_write(1_000, 64, Kind::Payload), 1_000 + ser + LAT);
        // Second write at the same instant waits for the first's serialization.
        assert_eq!(l.dma_write(1_000, 64, Kind::Payload), 1_000 + 2 * ser + LAT);
        // A 1500 B write: 5 × (256 + 24) + (220 + 24) back to back.
        let t = 10_000_000;
        let big = 5 * l.serialization_ps(280) + l.serialization_ps(244);
        assert_eq!(l.dma_write(t, 1500, Kind::Payload), t + big + LAT);
        let up = l.stats(Dir::Up);
        assert_eq!(up.tlps, 8);
        assert_eq!(up.data(), 64 + 64 + 1500);
        assert_eq!(up.overhead(), 8 * 24);
        assert_eq!(l.stats(Dir::Down).total(), 0);
    }

    #[test]
    fn read_round_trip_is_serialization_latency_and_host_time() {
        let mut l = link(PcieConfig::gen3_x16());
        let host = 80_000;
        let req = l.serialization_ps(24);
        // 64 B: one request, one 64 B completion.
        let cpl = l.serialization_ps(64 + 20);
        assert_eq!(l.dma_read(0, 64, host, Kind::Descriptor), req + LAT + host + cpl + LAT);
        // 512 B at MPS 256: one request, two completions back to back.
        let t = 1_000_000_000;
        let cpl2 = 2 * l.serialization_ps(256 + 20);
        assert_eq!(l.dma_read(t, 512, host, Kind::Payload), t + req + LAT + host + cpl2 + LAT);
        assert_eq!(l.stats(Dir::Up).total(), 2 * 24);
        assert_eq!(l.stats(Dir::Down).total(), 64 + 512 + 3 * 20);
        assert_eq!(l.stats(Dir::Down).kind_bytes(Kind::Descriptor), 84);
        // Each read's latency, issue to last byte, is reported by kind.
        let j = l.result_json(1)["read_latency"].clone();
        assert_eq!(j["descriptor"]["mean_ns"].as_f64().unwrap(), (req + LAT + host + cpl + LAT) as f64 / 1e3);
        assert_eq!(j["payload"]["max_ns"].as_f64().unwrap(), (req + LAT + host + cpl2 + LAT) as f64 / 1e3);
        l.reset_stats();
        assert_eq!(l.result_json(1)["read_latency"], serde_json::json!({}));
    }

    #[test]
    fn one_tag_serializes_reads_many_tags_overlap() {
        let host = 80_000;
        let mut one = link(PcieConfig { read_tags: 1, ..PcieConfig::gen3_x16() });
        let a = one.dma_read(0, 64, host, Kind::Payload);
        let b = one.dma_read(0, 64, host, Kind::Payload);
        assert_eq!(b, 2 * a, "second read starts when the first's tag returns");
        assert_eq!(one.tag_stalls, 1);
        assert_eq!(one.tag_stall_ps, a);

        let mut many = link(PcieConfig { read_tags: 32, ..PcieConfig::gen3_x16() });
        let a2 = many.dma_read(0, 64, host, Kind::Payload);
        let b2 = many.dma_read(0, 64, host, Kind::Payload);
        assert_eq!(a2, a);
        // Request and completion each follow one serialization later.
        assert_eq!(b2, a2 + many.serialization_ps(84));
        assert_eq!(many.tag_stalls, 0);
    }

    #[test]
    fn tag_limited_large_reads_are_latency_bound() {
        // MRRS ≥ 1500 B: one request (one tag) per 1500 B read.
        let host = 80_000;
        let tags = 4;
        let cfg = PcieConfig { read_tags: tags, mrrs_bytes: 2048, ..PcieConfig::gen3_x16() };
        let mut idle = link(cfg.clone());
        let rtt = idle.dma_read(0, 1500, host, Kind::Payload);
        // 24 B request + 2 × 200 ns + 80 ns + 6 completions (5 × 276 + 1 × 240 B).
        let cpl = 5 * idle.serialization_ps(276) + idle.serialization_ps(240);
        assert_eq!(rtt, idle.serialization_ps(24) + 2 * LAT + host + cpl);

        let mut l = link(cfg);
        let n = 400;
        let done: Vec<Ps> = (0..n).map(|_| l.dma_read(0, 1500, host, Kind::Payload)).collect();
        // In steady state each tag carries one read per round trip, exactly.
        for k in 2 * tags as usize..n {
            assert_eq!(done[k] - done[k - tags as usize], rtt, "read {k}");
        }
        let gbps = (n as f64 * 1500.0 * 8.0) / (done[n - 1] as f64 / 1e12) / 1e9;
        let bound = tags as f64 * 1500.0 * 8.0 / (rtt as f64 / 1e12) / 1e9;
        assert!((gbps - bound).abs() / bound < 0.01, "{gbps} vs {bound}");
        // ≈ 81 Gb/s: below the 105 Gb/s the link could carry (params §2c).
        assert!(bound < 0.8 * effective_bandwidth(l.config(), DmaOp::Read, 1500));
        assert_eq!(l.tags_in_use(0), tags as usize);
    }

    #[test]
    fn many_tags_reach_the_bandwidth_model() {
        // With enough tags, back-to-back reads and writes run at §2c's rates.
        let cfg = PcieConfig { read_tags: 256, ..PcieConfig::gen3_x8() };
        let mut l = link(cfg.clone());
        let n = 20_000u64;
        let mut last = 0;
        for _ in 0..n {
            last = l.dma_read(0, 1024, 80_000, Kind::Payload);
        }
        let gbps = (n * 1024 * 8) as f64 / ((last - 2 * LAT - 80_000) as f64 / 1e12) / 1e9;
        let want = effective_bandwidth(&cfg, DmaOp::Read, 1024); // 53.7
        assert!((gbps - want).abs() / want < 0.01, "{gbps} vs {want}");

        let mut w = link(cfg.clone());
        for _ in 0..n {
            last = w.dma_write(0, 64, Kind::Payload);
        }
        let gbps = (n * 64 * 8) as f64 / ((last - LAT) as f64 / 1e12) / 1e9;
        let want = effective_bandwidth(&cfg, DmaOp::Write, 64); // 42.1
        assert!((gbps - want).abs() / want < 0.01, "{gbps} vs {want}");
    }

    #[test]
    fn addressing_and_completion_boundary_change_the_tlps() {
        let host = 50_000;
        // 32-bit addresses: 20 B per request and write.
        let mut l = link(PcieConfig { addr64: false, ..PcieConfig::gen3_x16() });
        assert_eq!(l.dma_write(0, 64, Kind::Payload), l.serialization_ps(84) + LAT);
        // Completions at RCB 64: a 256 B read comes back as four 84 B TLPs.
        let mut r = link(PcieConfig { cpl_split_at_rcb: true, ..PcieConfig::gen3_x16() });
        let want = r.serialization_ps(24) + LAT + host + 4 * r.serialization_ps(84) + LAT;
        assert_eq!(r.dma_read(0, 256, host, Kind::Payload), want);
        assert_eq!(r.stats(Dir::Down).tlps, 4);
        // A 1500 B read at MRRS 512 takes three tags; with three, each request of a second read waits.
        let mut t = link(PcieConfig { read_tags: 3, ..PcieConfig::gen3_x16() });
        let first = t.dma_read(0, 1500, host, Kind::Payload);
        assert_eq!(t.read_requests, 3);
        assert_eq!(t.tags_in_use(0), 3);
        assert_eq!(t.tags_in_use(first), 0);
        assert!(t.dma_read(0, 1500, host, Kind::Payload) > first + 2 * LAT + host);
        assert_eq!(t.tag_stalls, 3);
        // Nothing to move: no time, no TLPs.
        assert_eq!(t.dma_write(7, 0, Kind::Payload), 7);
        assert_eq!(t.dma_read(7, 0, host, Kind::Payload), 7);
        assert_eq!(t.stats(Dir::Up).tlps, 6);
    }

    #[test]
    fn doorbell_is_not_held_behind_future_completions() {
        let mut l = link(PcieConfig::gen3_x16());
        l.dma_read(0, 4096, 80_000, Kind::Payload); // completions booked ~480 ns ahead
        let ser = l.serialization_ps(4 + 24);
        assert_eq!(l.mmio_write(10_000, 4), 10_000 + ser + LAT);
        assert_eq!(l.stats(Dir::Down).kind_bytes(Kind::Doorbell), 28);
    }

    #[test]
    fn msi_follows_earlier_writes() {
        let mut l = link(PcieConfig::gen3_x16());
        let data = l.dma_write(0, 1024, Kind::Payload);
        let irq = l.msi(0);
        assert_eq!(irq, data + l.serialization_ps(28));
        assert_eq!(l.stats(Dir::Up).kind_bytes(Kind::Interrupt), 28);
    }

    #[test]
    fn stats_report_and_reset() {
        let mut l = link(PcieConfig::gen3_x16());
        l.dma_write(0, 100, Kind::Payload);
        l.dma_read(0, 16, 0, Kind::Descriptor);
        l.mmio_write(0, 4);
        let j = l.result_json(1_000_000);
        assert_eq!(j["up_bytes"], 124 + 24);
        assert_eq!(j["down_bytes"], 36 + 28);
        assert_eq!(j["up_payload_bytes"], 124);
        assert_eq!(j["up_descriptor_bytes"], 24);
        assert_eq!(j["down_doorbell_bytes"], 28);
        let util = j["up_util"].as_f64().unwrap();
        assert!((util - l.stats(Dir::Up).busy_ps as f64 / 1e6).abs() < 1e-12 && util > 0.0);
        let mut v = vec![];
        l.report_stats(&mut StatSink::new(&mut v).scope("pcie"));
        let get = |n: &str| v.iter().find(|s| s.name == n).map(|s| s.value.as_f64());
        assert_eq!(get("pcie.up.bytes"), Some(148.0));
        assert_eq!(get("pcie.down.doorbell_bytes"), Some(28.0));
        assert_eq!(get("pcie.reads"), Some(1.0));
        l.reset_stats();
        assert_eq!(l.result_json(1)["up_bytes"], 0);
        assert_eq!(l.result_json(1)["reads"], 0);
    }
}
