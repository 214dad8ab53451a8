//! gem5's I/O path as the NIC sees it in a gem5 full-system machine with
//! caches (configs/deprecated/example/fs.py, configs/example/arm/devices.py):
//!
//! * DMA: device → I/O crossbar (request layer towards the IOCache) →
//!   IOCache → memory bus, and the response back through the crossbar's
//!   layer towards the device. Without an IOCache (`iocache.enabled =
//!   false`, gem5's cache-less configs) a second Bridge stands in its place.
//! * MMIO (doorbells): core → memory bus → Bridge → crossbar (request layer
//!   towards the device) → device; the write's response returns through the
//!   crossbar and the Bridge (gem5 answers every write).
//! * Interrupts: gem5's PCI devices post them to the platform's interrupt
//!   controller, not over the crossbar (`PciDevice::intrPost`); one is
//!   raised once the device's earlier DMA writes are done.
//!
//! gem5's DMA port splits every transfer into cache-line packets
//! (`DmaPort::dmaAction`, `src/dev/dma_device.cc`); so does this model
//! (64 B, line-aligned transfers assumed).
//!
//! IOCache: latency and MSHRs, no tag state. gem5's default IOCache holds
//! 1 kB (16 lines, configs/common/Caches.py) while the NIC streams through
//! rings and buffers of megabytes, so every access is taken as a miss: a
//! request waits for a free MSHR, goes downstream `tag_latency` cycles after
//! it arrives, and its response leaves `response_latency` cycles after the
//! memory answers. A read's MSHR is held until the memory system answers
//! that line, asked when the line goes downstream ([`Gem5Io::dma_read_with`]);
//! a whole-line write (gem5 promotes it to
//! WriteLineReq and sends an invalidation, no fetch, src/mem/cache/cache.cc)
//! holds its MSHR only for the tag latency: the memory side's time for it
//! is the memory system's, which the caller adds on top. Partial-line
//! writes are treated as whole lines (gem5 would fetch the line first).
//!
//! Not modelled: the memory bus (SystemXBar) between the IOCache or Bridge
//! and memory — the memory system's own latency stands for it, as it does
//! for the root complex on the PCIe path; the device's PIO latency.

use serde_json::{json, Value};

use super::bridge::Bridge;
use super::config::IoConfig;
use super::xbar::{edge, Layer, LayerStats};
use crate::engine::slots::Slots;
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::Ps;
use crate::error::Result;
use crate::pcie::Kind;

/// Line size of gem5's DMA packets (bytes).
const CHUNK_BYTES: u32 = crate::mem::LINE_BYTES as u32;

pub struct Gem5Io {
    cfg: IoConfig,
    cycle: Ps,
    /// Requests towards memory (the IOCache's port): DMA reads and writes.
    up: Layer,
    /// Responses towards the device: read data and write acknowledgements.
    down: Layer,
    /// Requests towards the device's PIO port: MMIO writes.
    pio: Layer,
    /// Responses towards the Bridge: MMIO write acknowledgements.
    pio_resp: Layer,
    /// CPU → I/O bus (MMIO).
    iobridge: Bridge,
    /// I/O bus → memory for DMA when there is no IOCache.
    dmabridge: Bridge,
    /// Release times of the IOCache's MSHRs in use.
    mshrs: Slots,
    /// When the device's last DMA write was done (interrupts follow it).
    last_write: Ps,
    // statistics
    writes: u64,
    reads: u64,
    packets: u64,
    mmio_writes: u64,
    msis: u64,
    mshr_full_waits: u64,
    mshr_full_wait_ps: Ps,
    /// The reads' share of the two above, and the time reads held an MSHR
    /// (from taking it to the memory's answer; gem5's `mshrMissLatency`).
    read_mshr_full_waits: u64,
    read_mshr_full_wait_ps: Ps,
    read_mshr_hold_ps: Ps,
    read_latency: crate::pcie::ReadLatency,
    bytes_by_kind: [u64; 4],
}

impl Gem5Io {
    /// Leaves out of every layer's busy time what was booked after the run's `end`.
    pub fn clip_busy_at(&mut self, end: Ps) {
        for l in [&mut self.up, &mut self.down, &mut self.pio, &mut self.pio_resp] {
            l.clip_busy_at(end);
        }
    }

    pub fn new(cfg: &IoConfig) -> Result<Self> {
        cfg.validate()?;
        let cycle = cfg.cycle_ps();
        let w = cfg.xbar.width_bytes;
        let b = &cfg.bridge;
        Ok(Gem5Io {
            cfg: cfg.clone(),
            cycle,
            up: Layer::new(cycle, w),
            down: Layer::new(cycle, w),
            pio: Layer::new(cycle, w),
            pio_resp: Layer::new(cycle, w),
            iobridge: Bridge::new(b.delay_ps, b.req_queue_entries, b.resp_queue_entries),
            dmabridge: Bridge::new(b.delay_ps, b.req_queue_entries, b.resp_queue_entries),
            mshrs: Slots::new(cfg.iocache.mshrs as usize),
            last_write: 0,
            writes: 0,
            reads: 0,
            packets: 0,
            mmio_writes: 0,
            msis: 0,
            mshr_full_waits: 0,
            mshr_full_wait_ps: 0,
            read_mshr_full_waits: 0,
            read_mshr_full_wait_ps: 0,
            read_mshr_hold_ps: 0,
            read_latency: Default::default(),
            bytes_by_kind: [0; 4],
        })
    }

    pub fn config(&self) -> &IoConfig {
        &self.cfg
    }

    fn cycles(&self, n: u32) -> Ps {
        n as Ps * self.cycle
    }

    /// A free MSHR at `t` or when one frees.
    fn take_mshr(&mut self, t: Ps) -> Ps {
        let free = self.mshrs.take(t);
        if free > t {
            self.mshr_full_waits += 1;
            self.mshr_full_wait_ps += free - t;
        }
        free
    }

    /// One packet from the crossbar to memory, arriving at the IOCache (or
    /// DMA bridge) at `t`; `answer(at)`: when the memory side answers a
    /// request sent to it at `at` (`None`: a write, answered at once; its
    /// memory time is the caller's). Returns (when it reaches the memory
    /// side, when its response leaves towards the crossbar).
    fn memory_side(&mut self, t: Ps, answer: Option<&mut dyn FnMut(Ps) -> Ps>) -> (Ps, Ps) {
        if self.cfg.iocache.enabled {
            let got = self.take_mshr(t);
            let sent = edge(got, self.cycle) + self.cycles(self.cfg.iocache.tag_latency_cycles);
            let read = answer.is_some();
            let answered = answer.map_or(sent, |f| f(sent).max(sent));
            if read {
                self.read_mshr_full_waits += (got > t) as u64;
                self.read_mshr_full_wait_ps += got - t;
                self.read_mshr_hold_ps += answered - got;
            }
            self.mshrs.hold_until(answered);
            (sent, answered + self.cycles(self.cfg.iocache.response_latency_cycles))
        } else {
            let e = self.dmabridge.enter(t, true);
            // The memory bus takes it as soon as it is ready (not modelled).
            self.dmabridge.left(e.ready);
            let answered = answer.map_or(e.ready, |f| f(e.ready).max(e.ready));
            (e.ready, self.dmabridge.responded(answered))
        }
    }

    /// The device writes `bytes` to memory at `now`; returns when the last
    /// line is done at the memory side (the memory system's time comes on top).
    pub fn dma_write(&mut self, now: Ps, bytes: u32, kind: Kind) -> Ps {
        self.advance(now);
        self.writes += 1;
        self.bytes_by_kind[kind as usize] += bytes as u64;
        let mut done = now;
        let mut left = bytes;
        while left > 0 {
            let c = left.min(CHUNK_BYTES);
            left -= c;
            self.packets += 1;
            let taken = self.up.send(now, c);
            let arrive = taken + self.cycles(self.cfg.xbar.frontend_latency_cycles + self.cfg.xbar.forward_latency_cycles);
            let (at_memory, resp) = self.memory_side(arrive, None);
            // The acknowledgement (no data) crosses back; the device does not wait for it.
            self.down.send(resp, 0);
            done = done.max(at_memory);
        }
        self.last_write = self.last_write.max(done);
        done
    }

    /// The device reads `bytes` at `now`; the memory system answers each
    /// line `host_time_ps` after it reaches the memory side. Returns when
    /// the last line's response is at the device.
    pub fn dma_read(&mut self, now: Ps, bytes: u32, host_time_ps: Ps, kind: Kind) -> Ps {
        self.dma_read_with(now, bytes, kind, &mut |_, _, at| at + host_time_ps)
    }

    /// The device reads `bytes` at `now`; `host(offset, len, at)` is when
    /// the memory system has the line at `offset` (`len` bytes) that
    /// reaches it at `at`, asked as each line goes downstream (after any
    /// wait for an MSHR). Returns when the last line is at the device.
    pub fn dma_read_with(&mut self, now: Ps, bytes: u32, kind: Kind, host: &mut dyn FnMut(u32, u32, Ps) -> Ps) -> Ps {
        self.advance(now);
        self.reads += 1;
        self.bytes_by_kind[kind as usize] += bytes as u64;
        let x = self.cfg.xbar.clone();
        let mut done = now;
        let mut off = 0;
        while off < bytes {
            let c = (bytes - off).min(CHUNK_BYTES);
            self.packets += 1;
            let taken = self.up.send(now, 0);
            let arrive = taken + self.cycles(x.frontend_latency_cycles + x.forward_latency_cycles);
            let (_, resp) = self.memory_side(arrive, Some(&mut |at| host(off, c, at)));
            let back = self.down.send(resp, c) + self.cycles(x.response_latency_cycles);
            done = done.max(back);
            off += c;
        }
        self.read_latency.record(kind, bytes, now, done);
        done
    }

    /// The host writes `bytes` (a doorbell) to a device register at `now`;
    /// returns when it reaches the device. A core may run ahead of the
    /// devices: its time does not move the layers' forgetting clock.
    pub fn mmio_write(&mut self, now: Ps, bytes: u32) -> Ps {
        self.mmio_writes += 1;
        self.bytes_by_kind[Kind::Doorbell as usize] += bytes as u64;
        let x = self.cfg.xbar.clone();
        let e = self.iobridge.enter(now, true);
        let taken = self.pio.send(e.ready, bytes);
        self.iobridge.left(taken);
        let at_device = taken + self.cycles(x.frontend_latency_cycles + x.forward_latency_cycles);
        let ack = self.pio_resp.send(at_device, 0) + self.cycles(x.response_latency_cycles);
        self.iobridge.responded(ack);
        at_device
    }

    /// The device raises an interrupt at `now`: delivered once its earlier
    /// DMA writes are done (not over the crossbar).
    pub fn msi(&mut self, now: Ps) -> Ps {
        self.msis += 1;
        now.max(self.last_write)
    }

    fn advance(&mut self, now: Ps) {
        for l in [&mut self.up, &mut self.down, &mut self.pio, &mut self.pio_resp] {
            l.advance(now);
        }
    }

    fn layers(&self) -> [(&'static str, &LayerStats, &'static str); 4] {
        [
            ("up", &self.up.stats, "Crossbar layer towards memory (DMA requests)"),
            ("down", &self.down.stats, "Crossbar layer towards the device (DMA responses)"),
            ("pio", &self.pio.stats, "Crossbar layer towards the device's registers (MMIO writes)"),
            ("pio_resp", &self.pio_resp.stats, "Crossbar layer towards the Bridge (MMIO responses)"),
        ]
    }

    /// Counters as the JSON result's `iobus` object; `window_ps` is the
    /// measured time the utilisations refer to.
    pub fn result_json(&self, window_ps: Ps) -> Value {
        let (ib, db) = (self.iobridge.stats(), self.dmabridge.stats());
        let mut o = json!({
            "clock_hz": self.cfg.xbar.clock_hz,
            "writes": self.writes,
            "reads": self.reads,
            "packets": self.packets,
            "mmio_writes": self.mmio_writes,
            "msis": self.msis,
            "mshr_full_waits": self.mshr_full_waits,
            "mshr_full_wait_ps": self.mshr_full_wait_ps,
            "read_mshr_full_waits": self.read_mshr_full_waits,
            "read_mshr_full_wait_ps": self.read_mshr_full_wait_ps,
            "read_mshr_hold_ps": self.read_mshr_hold_ps,
            "bridge_req_full_waits": ib.req_full_waits + db.req_full_waits,
            "bridge_req_full_wait_ps": ib.req_full_wait_ps + db.req_full_wait_ps,
            "bridge_resp_full_waits": ib.resp_full_waits + db.resp_full_waits,
            "bridge_resp_full_wait_ps": ib.resp_full_wait_ps + db.resp_full_wait_ps,
            "read_latency": self.read_latency.result_json(),
        });
        for (name, s, _) in self.layers() {
            o[format!("{name}_bytes")] = s.bytes.into();
            o[format!("{name}_packets")] = s.packets.into();
            o[format!("{name}_busy_ps")] = s.busy_ps.into();
            o[format!("{name}_util")] = s.util(window_ps).into();
        }
        for k in Kind::ALL {
            o[format!("{}_bytes", k.name())] = self.bytes_by_kind[k as usize].into();
        }
        o
    }
}

impl HasStats for Gem5Io {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        s.count("writes", self.writes, "DMA writes by the device");
        s.count("reads", self.reads, "DMA reads by the device");
        s.count("packets", self.packets, "Line-sized DMA packets");
        s.count("mmio_writes", self.mmio_writes, "MMIO writes by the host (doorbells)");
        s.count("msis", self.msis, "Interrupts raised by the device");
        s.count("mshr_full_waits", self.mshr_full_waits, "DMA packets that waited for a free IOCache MSHR");
        s.add("mshr_full_wait_ps", self.mshr_full_wait_ps as f64, "Picosecond", "Total time DMA packets waited for an IOCache MSHR");
        s.count("read_mshr_full_waits", self.read_mshr_full_waits, "DMA read packets that waited for a free IOCache MSHR");
        s.add("read_mshr_full_wait_ps", self.read_mshr_full_wait_ps as f64, "Picosecond", "Total time DMA read packets waited for an IOCache MSHR");
        s.add("read_mshr_hold_ps", self.read_mshr_hold_ps as f64, "Picosecond", "Total time DMA read packets held an IOCache MSHR, until memory answered");
        self.read_latency.report_stats(s);
        let (ib, db) = (self.iobridge.stats(), self.dmabridge.stats());
        s.count("bridge_req_full_waits", ib.req_full_waits + db.req_full_waits, "Requests that found a Bridge's request queue full");
        s.add("bridge_req_full_wait_ps", (ib.req_full_wait_ps + db.req_full_wait_ps) as f64, "Picosecond", "Time requests waited for a Bridge request slot");
        s.count("bridge_resp_full_waits", ib.resp_full_waits + db.resp_full_waits, "Requests that found a Bridge's response queue full");
        s.add("bridge_resp_full_wait_ps", (ib.resp_full_wait_ps + db.resp_full_wait_ps) as f64, "Picosecond", "Time requests waited for a Bridge response slot");
        for (name, l, desc) in self.layers() {
            let mut s = s.scope(name);
            s.add("bytes", l.bytes as f64, "Byte", desc);
            s.count("packets", l.packets, "Packets through this crossbar layer");
            s.add("busy_ps", l.busy_ps as f64, "Picosecond", "Time this crossbar layer was held");
        }
    }

    fn reset_stats(&mut self) {
        for l in [&mut self.up, &mut self.down, &mut self.pio, &mut self.pio_resp] {
            l.reset_stats();
        }
        self.iobridge.reset_stats();
        self.dmabridge.reset_stats();
        (self.writes, self.reads, self.packets, self.mmio_writes, self.msis) = (0, 0, 0, 0, 0);
        (self.mshr_full_waits, self.mshr_full_wait_ps) = (0, 0);
        (self.read_mshr_full_waits, self.read_mshr_full_wait_ps, self.read_mshr_hold_ps) = (0, 0, 0);
        self.read_latency = Default::default();
        self.bytes_by_kind = [0; 4];
    }
}

#[cfg(test)]
#[path = "gem5_tests.rs"]
mod tests;
