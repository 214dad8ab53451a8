//! Builds a system from a config, wires its components and runs the event
//! loop. All wiring between the load generator and the device happens here
//! (gem5's `System`, ns-3's helpers):
//!
//! ```text
//! generator port p ──link p [TO_DUT]──▶ device port p
//!        ▲                                   │
//!        └──────────link p [TO_GEN]──────────┘
//! ```
//!
//! One generator port per device port, each on its own full-duplex link
//! (the reflector has one port; a host has `host.ports`). Which generator
//! ports send is `loadgen.traffic`. A frame that comes back is measured by
//! the generator port that sent it (the frame pool remembers its origin),
//! wherever it comes back; frames the device built itself go to the port
//! that receives them.
//!
//! Open loop, each generator sends on its own schedule; closed loop, it
//! also sends when a reply arrives (`GenDeparture` at that instant) and
//! after a timeout check (`GenTimeout`, one event per timeout period). Open
//! loop, the generator only measures what comes back, so a frame put on the
//! return link is handed to it at once with its arrival time (no event);
//! frames that would arrive after the run's end are not received.
//!
//! The run: the generators transmit for `sim.duration`; statistics reset
//! when warm-up ends; then the system drains for up to `sim.drain` plus
//! twice the propagation delay, or until no event is left.

pub mod budget;
pub mod sample;
mod warnings;
pub use warnings::PASSED;

use std::time::Instant;

use serde_json::{json, Value};

use crate::config::{Fidelity, SimConfig};
use crate::dev::reflector::{Arrival, Reflector};
use crate::engine::stats::{HasStats, Stat, StatSink};
use crate::engine::time::{ps_to_s, Ps};
use crate::engine::EventQueue;
use crate::error::Result;
use crate::framebuf::{Fate, FrameId, FramePool, Ledger, N_FATES};
use crate::host::{Host, HostEnv};
use crate::link::Link;
use crate::loadgen::{self, Loadgen};
use crate::stack::Event as HostEvent;

/// Frames inside the device vary by about a burst or two as it polls
/// (testpmd's burst is 32): growth below this says nothing (an estimate).
pub(crate) const BACKLOG_NOISE_FRAMES: u64 = 64;

/// How the warning starts that the device's buffers grew over its window
/// (the bandwidth test counts these instead of repeating them).
pub const FELL_BEHIND: &str = "the device fell behind";

/// Link directions.
const TO_DUT: usize = 0;
const TO_GEN: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// Generator port p's next departure is due.
    GenDeparture(u16),
    /// Closed loop: port p gives up requests unanswered for the timeout.
    GenTimeout(u16),
    /// TCP receiver mode: port p's next ACK is due, or a delayed-ACK timer.
    SinkAck(u16),
    /// The head frame of a link's delay line arrives: (port, direction).
    LinkArrival(u16, u8),
    /// The reflector finishes serving its head frame.
    ReflectorDone,
    /// Warm-up ends: reset the generators' and the links' statistics.
    WarmupEnd,
    /// The first frame sent after warm-up can reach the device (one
    /// propagation delay later): reset the device's statistics, so that it
    /// counts what the generators count; note the frames inside it.
    DutWarmupEnd,
    /// The last frame sent (`sim.duration`) can reach the device: note the
    /// frames inside it.
    TxEnd,
    /// The middle of the device's window: note the frames inside it.
    MidWindow,
    /// A sample's: where the window it stands for starts, before its own
    /// (its warm-up was lengthened): note the frames inside the device.
    PreMark,
    /// An event of the simulated host.
    Host(HostEvent),
}

/// What the device holds at an instant of its window (`System::marks`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Mark {
    /// Frames inside it: alive, not on the links nor waiting for the generator's wire.
    pub inside: u64,
    /// Frames it dropped so far, warm-up included, by fate (`Fate::ALL`'s
    /// order; the drops' entries).
    pub fates: [u64; N_FATES],
    /// Entries of the application's tables (`App::table_entries`).
    pub entries: u64,
}

impl Mark {
    /// Frames it dropped so far, warm-up included.
    pub fn dropped(&self) -> u64 {
        self.fates.iter().sum()
    }
}

/// The device under test.
pub enum Dut {
    Reflector(Reflector),
    Host(Box<Host>),
}

/// One generator port, its link to the device, and what it has received.
pub struct GenPort {
    pub lg: Loadgen,
    links: [Link; 2],
    /// Does this port send (`loadgen.traffic`)?
    pub sends: bool,
    /// Closed loop: a `GenDeparture` is already queued.
    gen_pending: bool,
    /// TCP receiver mode: the time of the `SinkAck` queued.
    sink_at: Option<Ps>,
    /// Frames that arrived at this port (from any origin) after warm-up.
    pub rx_frames: u64,
}

pub struct System {
    cfg: SimConfig,
    q: EventQueue<Event>,
    pool: FramePool,
    pub gens: Vec<GenPort>,
    pub dut: Dut,
    out: Vec<FrameId>,
    /// The run's last instant (transmission, drain, twice the propagation).
    limit: Ps,
    /// Open loop: the latest arrival handed to a generator, or frame the device consumed.
    last_arrival: Ps,
    /// Closed loop (replies are events).
    closed: bool,
    /// Frames each generator port sent still in flight when the run ended
    /// (whole run, measured window), counted once by `run`.
    in_flight: Vec<[u64; 2]>,
    /// What the device held at the start, the middle and the end of its
    /// window (warm-up's and transmission's end, one propagation delay
    /// later). Growth of the frames inside means the device is falling
    /// behind; a fast run's sample compares the two halves (`sample.rs`).
    /// The middle mark is taken only with `mid_mark`.
    pub marks: [Mark; 3],
    /// Take the middle mark (a fast run's sample; one more event).
    pub mid_mark: bool,
    /// A sample's: when the window it stands for starts, if before its own
    /// (`sim.warmup` as configured, shorter than the sample's), and what
    /// the device held then (`marks[0]` when they are the same).
    pub pre_mark_at: Option<Ps>,
    pub pre_mark: Mark,
}

impl System {
    /// A system running one of the built-in applications.
    pub fn new(cfg: &SimConfig) -> Result<Self> {
        Self::with_apps(cfg, &crate::apps::Registry::builtin())
    }

    /// A system whose application comes from `registry` (built-in ones and
    /// any the caller added: see `tests/toy_app.rs`).
    pub fn with_apps(cfg: &SimConfig, registry: &crate::apps::Registry) -> Result<Self> {
        cfg.validate_with(registry)?;
        // Before anything sized is built (the traces' frames first), and again
        // once the largest frame is known, before the host.
        budget::check(cfg, registry, crate::wire::ethernet::MIN_FRAME_BYTES)?;
        let on_host = cfg.app != "reflector";
        let ports = generator_ports(cfg);
        let mut gens = Vec::with_capacity(ports);
        for p in 0..ports {
            let lg = port_loadgen(cfg, p, ports)?;
            let link = || Link::new(cfg.link.rate_bps, cfg.link.propagation_ps);
            gens.push(GenPort { lg, links: [link(), link()], sends: cfg.loadgen.sends(p, ports), gen_pending: false, sink_at: None, rx_frames: 0 });
        }
        // Frame buffers hold the largest frame anyone builds: the generator, or an application.
        let host_frames = match (&cfg.host, registry.get(&cfg.app)) {
            (Some(h), Some(e)) if on_host => (e.max_frame_bytes)(&h.app),
            _ => 0,
        };
        let max_frame = gens.iter().map(|g| g.lg.max_frame_bytes()).max().unwrap_or(64);
        let pool = FramePool::new(max_frame.max(host_frames));
        budget::check(cfg, registry, max_frame.max(host_frames))?;
        let dut = match &cfg.host {
            Some(h) if on_host => {
                let mac = |s: &str| crate::wire::ethernet::parse_mac(s).unwrap_or_default();
                let ip = |s: &str| s.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
                let lg = &cfg.loadgen;
                let env = HostEnv {
                    app: &cfg.app,
                    stack: cfg.stack,
                    registry,
                    link_rate_bps: cfg.link.rate_bps,
                    tx_end_ps: cfg.sim.duration_ps,
                    // The host's ports are the generator's destinations.
                    base: crate::nic::PortAddrs { mac: mac(&lg.dst_mac), ip: ip(&lg.dst_ip), peer: mac(&lg.src_mac), peer_ip: ip(&lg.src_ip) },
                    dma_at_memory_time: cfg.sim.dma_at_memory_time,
                    given: &cfg.given,
                };
                Dut::Host(Box::new(Host::new(&env, h, max_frame)?))
            }
            _ => Dut::Reflector(Reflector::new(&cfg.reflector, cfg.seed)),
        };
        Ok(System {
            cfg: cfg.clone(),
            q: EventQueue::new(),
            pool,
            gens,
            dut,
            out: Vec::with_capacity(2),
            limit: cfg.sim.duration_ps.saturating_add(cfg.sim.drain_ps).saturating_add(2 * cfg.link.propagation_ps),
            last_arrival: 0,
            // A reply that makes the generator send must arrive as an event.
            closed: cfg.loadgen.closed_loop.is_some() || cfg.loadgen.tcp.is_some(),
            marks: [Mark::default(); 3],
            mid_mark: false,
            pre_mark_at: None,
            pre_mark: Mark::default(),
            in_flight: Vec::new(),
        })
    }

    /// Runs to the end of the drain; returns the simulated end time.
    pub fn run(&mut self) -> Ps {
        for p in 0..self.gens.len() {
            let g = &mut self.gens[p];
            if !g.sends {
                continue;
            }
            if let Some(cl) = g.lg.closed_loop {
                self.q.schedule(0, Event::GenDeparture(p as u16));
                g.gen_pending = true;
                self.q.schedule(cl.timeout_ps, Event::GenTimeout(p as u16));
            } else if let Some(t) = g.lg.next_departure() {
                self.q.schedule(t, Event::GenDeparture(p as u16));
            }
        }
        // The device's window: from when the first frame sent after warm-up
        // reaches it to when the last frame sent does.
        let prop = self.cfg.link.propagation_ps;
        self.q.schedule(self.cfg.sim.duration_ps.saturating_add(prop), Event::TxEnd);
        if self.mid_mark {
            let mid = self.cfg.sim.warmup_ps + (self.cfg.sim.duration_ps - self.cfg.sim.warmup_ps) / 2;
            self.q.schedule(mid.saturating_add(prop), Event::MidWindow);
        }
        if let Some(t) = self.pre_mark_at {
            self.q.schedule(if t == 0 { 0 } else { t.saturating_add(prop) }, Event::PreMark);
        }
        if self.cfg.sim.warmup_ps > 0 {
            self.q.schedule(self.cfg.sim.warmup_ps, Event::WarmupEnd);
            self.q.schedule(self.dut_window_start(), Event::DutWarmupEnd);
        }
        self.drain_host();
        let mut until_look = crate::engine::cancel::EVERY;
        while let Some((now, ev)) = self.q.pop_until(self.limit) {
            self.dispatch(now, ev);
            until_look -= 1;
            if until_look == 0 {
                until_look = crate::engine::cancel::EVERY;
                if crate::engine::cancel::requested() {
                    break;
                }
            }
        }
        let end = self.q.now().max(self.last_arrival).max(self.cfg.sim.duration_ps);
        if let Dut::Host(h) = &mut self.dut {
            h.finish_units();
            h.clip_io_at(end);
        }
        self.in_flight = self.pool.in_flight(self.gens.len());
        for (g, n) in self.gens.iter_mut().zip(&self.in_flight) {
            g.lg.set_in_flight(n[Ledger::MEASURED_ROW]);
        }
        end
    }

    /// What became of every frame the generators sent (`accounting` in the
    /// result): over the measured window and over the whole run, summed over
    /// the ports and, with several ports, for each.
    pub fn accounting_json(&self) -> Value {
        let row = |ledgers: &[(Ledger, [u64; 2])], r: usize| {
            let sum = |f: &dyn Fn(&Ledger, &[u64; 2]) -> u64| ledgers.iter().map(|(l, n)| f(l, n)).sum::<u64>();
            let mut drops = serde_json::Map::new();
            for fate in Fate::ALL.into_iter().filter(|f| f.is_drop()) {
                drops.insert(fate.name().into(), json!(sum(&|l, _| l.count(r, fate))));
            }
            json!({
                "sent": sum(&|l, _| l.sent[r]),
                "returned": sum(&|l, _| l.count(r, Fate::Returned)),
                "consumed": sum(&|l, _| l.count(r, Fate::Consumed)),
                "dropped": sum(&|l, _| l.dropped(r)),
                "in_flight": sum(&|_, n| n[r]),
                "drops": drops,
            })
        };
        let per_port: Vec<(Ledger, [u64; 2])> = (0..self.gens.len()).map(|p| (self.pool.ledger(p), self.in_flight.get(p).copied().unwrap_or_default())).collect();
        let mut v = json!({
            "measured": row(&per_port, Ledger::MEASURED_ROW),
            "total": row(&per_port, Ledger::TOTAL_ROW),
        });
        if per_port.len() > 1 {
            v["ports"] = per_port
                .iter()
                .enumerate()
                .map(|(p, l)| json!({"port": p, "measured": row(std::slice::from_ref(l), Ledger::MEASURED_ROW), "total": row(std::slice::from_ref(l), Ledger::TOTAL_ROW)}))
                .collect();
        }
        v
    }

    #[inline]
    fn dispatch(&mut self, now: Ps, ev: Event) {
        match ev {
            Event::GenDeparture(p) if self.gens[p as usize].lg.closed_loop.is_some() => {
                // Closed loop: every free place starts a request now, back to back on the wire.
                let p = p as usize;
                self.gens[p].gen_pending = false;
                while self.gens[p].lg.has_credit(now) {
                    let g = &mut self.gens[p];
                    let bytes = g.lg.next_size();
                    let start = now.max(g.links[TO_DUT].free_at());
                    let id = g.lg.emit(&mut self.pool, start, bytes);
                    self.send(p, TO_DUT, start, id);
                    let g = &mut self.gens[p];
                    g.lg.departed(start, start, g.links[TO_DUT].free_at());
                }
            }
            Event::GenTimeout(p) => {
                let p = p as usize;
                if self.gens[p].lg.expire(now) {
                    self.gen_now(p, now);
                }
                let period = self.gens[p].lg.closed_loop.map_or(0, |c| c.timeout_ps);
                if now < self.cfg.sim.duration_ps.saturating_add(period) {
                    self.q.schedule(now + period, Event::GenTimeout(p as u16));
                }
            }
            Event::GenDeparture(p) => {
                // The generator is open loop and nothing it sends can reach the
                // device before one propagation delay: every departure due by
                // then is sent now, in order, with its own start time.
                let p = p as usize;
                let horizon = now.saturating_add(self.cfg.link.propagation_ps);
                let mut due = Some(now);
                while let Some(t) = due.filter(|&t| t <= horizon) {
                    let g = &mut self.gens[p];
                    let bytes = g.lg.next_size();
                    let start = t.max(g.links[TO_DUT].free_at());
                    if start > self.limit {
                        // It would leave after the run has ended: never sent.
                        g.lg.unsendable(bytes);
                        due = g.lg.next_departure();
                        continue;
                    }
                    let id = g.lg.emit(&mut self.pool, start, bytes);
                    self.send(p, TO_DUT, start, id);
                    let g = &mut self.gens[p];
                    g.lg.departed(t, start, g.links[TO_DUT].free_at());
                    due = g.lg.next_departure();
                }
                if let Some(t) = due {
                    self.q.schedule(t, Event::GenDeparture(p as u16));
                }
            }
            Event::SinkAck(p) => {
                let p = p as usize;
                if self.gens[p].sink_at != Some(now) {
                    return; // superseded by a sooner one
                }
                self.gens[p].sink_at = None;
                loop {
                    let g = &mut self.gens[p];
                    let start = now.max(g.links[TO_DUT].free_at());
                    let Some(id) = g.lg.emit_ack(&mut self.pool, now, start) else { break };
                    self.send(p, TO_DUT, start, id);
                }
                self.sink_schedule(p);
            }
            Event::LinkArrival(p, dir) => {
                let (p, dir) = (p as usize, dir as usize);
                let Some((id, next)) = self.gens[p].links[dir].deliver() else { return };
                if let Some(t) = next {
                    self.q.schedule(t, Event::LinkArrival(p as u16, dir as u8));
                }
                if dir == TO_DUT {
                    match &mut self.dut {
                        Dut::Reflector(r) => {
                            if let Arrival::Serving(done) = r.arrive(&mut self.pool, id, now) {
                                self.q.schedule(done, Event::ReflectorDone);
                            }
                        }
                        Dut::Host(h) => {
                            h.frame_arrival(p, &mut self.pool, id, now);
                            self.drain_host();
                        }
                    }
                } else {
                    self.receive(p, id, now);
                }
            }
            Event::ReflectorDone => {
                let Dut::Reflector(r) = &mut self.dut else { return };
                let mut out = std::mem::take(&mut self.out);
                let next = r.complete(&mut self.pool, now, &mut out);
                for id in out.drain(..) {
                    self.to_gen(0, now, id);
                }
                self.out = out;
                if let Some(t) = next {
                    self.q.schedule(t, Event::ReflectorDone);
                }
            }
            Event::WarmupEnd => self.reset_stats(),
            Event::TxEnd => self.marks[2] = self.mark(),
            Event::MidWindow => self.marks[1] = self.mark(),
            Event::PreMark => self.pre_mark = self.mark(),
            Event::DutWarmupEnd => {
                self.marks[0] = self.mark();
                match &mut self.dut {
                    Dut::Reflector(r) => r.reset_stats(),
                    Dut::Host(h) => h.reset_stats(),
                }
            }
            Event::Host(ev) => {
                // Only a core's step runs against the horizon.
                let horizon = if self.cfg.sim.core_horizon && matches!(ev, HostEvent::Core(_)) { self.horizon() } else { Ps::MAX };
                if let Dut::Host(h) = &mut self.dut {
                    h.handle(now, ev, &mut self.pool, horizon);
                    self.drain_host();
                }
            }
        }
    }

    /// A frame arrived at generator port `p`: the port that sent it measures it.
    #[inline]
    fn receive(&mut self, p: usize, id: FrameId, now: Ps) {
        self.gens[p].rx_frames += 1;
        let o = self.origin(id, p);
        let go = self.gens[o].lg.receive(&self.pool, id, now);
        self.pool.end(id, Fate::Returned);
        if go {
            self.gen_now(o, now);
        }
        if self.gens[o].lg.sink.is_some() {
            self.sink_schedule(o);
        }
    }

    /// TCP receiver mode: queues port `p`'s next ACK or timer unless one
    /// as soon is queued.
    fn sink_schedule(&mut self, p: usize) {
        let g = &mut self.gens[p];
        let Some(t) = g.lg.sink.as_ref().and_then(|s| s.next_event()) else { return };
        if g.sink_at.map_or(true, |q| t < q) {
            g.sink_at = Some(t);
            self.q.schedule(t, Event::SinkAck(p as u16));
        }
    }

    /// The generator port that sent a frame (`p`, where it arrives, for frames the device built).
    #[inline]
    fn origin(&self, id: FrameId, p: usize) -> usize {
        self.pool.origin(id).unwrap_or(p)
    }

    /// Closed loop: generator `p` may transmit at `now` (a reply or a timeout freed a place).
    #[inline]
    fn gen_now(&mut self, p: usize, now: Ps) {
        if !self.gens[p].gen_pending {
            self.gens[p].gen_pending = true;
            self.q.schedule(now, Event::GenDeparture(p as u16));
        }
    }

    /// The earliest time at which a pending event may act on the host,
    /// whose memory requests come then or later (`sim.core_horizon`): a
    /// host event's or a frame's arrival at the device at its time; any
    /// other (a departure, a frame back at a generator, a mark) one
    /// propagation delay later, the soonest a frame it sends can arrive.
    #[inline(never)]
    fn horizon(&self) -> Ps {
        let prop = self.cfg.link.propagation_ps;
        self.q.fold(Ps::MAX, |h, t, ev| {
            h.min(match ev {
                Event::Host(_) => t,
                Event::LinkArrival(_, dir) if *dir as usize == TO_DUT => t,
                _ => t.saturating_add(prop),
            })
        })
    }

    /// Queues what the host produced: its events, frames for the wire, frames it consumed.
    #[inline]
    fn drain_host(&mut self) {
        let Dut::Host(h) = &mut self.dut else { return };
        for (t, ev) in h.out.events.drain(..) {
            self.q.schedule(t, Event::Host(ev));
        }
        // Taken out while the generators handle them, then given back (the
        // vectors keep their capacity).
        let (mut wire, mut consumed) = (std::mem::take(&mut h.out.wire), std::mem::take(&mut h.out.consumed));
        for &(t, port, id) in &wire {
            self.to_gen(port as usize, t, id);
        }
        for &(t, id) in &consumed {
            // A core runs ahead of event time: one that takes a frame after
            // the run's last instant is still working on it at the end (it
            // stays in flight, as a frame arriving after the run does).
            if t > self.limit {
                continue;
            }
            self.last_arrival = self.last_arrival.max(t);
            let o = self.origin(id, 0);
            self.gens[o].lg.consume(&self.pool, id, t);
            self.pool.end(id, Fate::Consumed);
        }
        wire.clear();
        consumed.clear();
        if let Dut::Host(h) = &mut self.dut {
            (h.out.wire, h.out.consumed) = (wire, consumed);
        }
    }

    /// A frame for generator port `p` leaves the device at `now`.
    #[inline]
    fn to_gen(&mut self, p: usize, now: Ps, id: FrameId) {
        if self.closed {
            // A reply makes room for a request: it must arrive as an event.
            self.send(p, TO_GEN, now, id);
            return;
        }
        let (_, arrival) = self.gens[p].links[TO_GEN].transmit(now, self.pool.frame_bytes(id));
        if arrival <= self.limit {
            self.last_arrival = self.last_arrival.max(arrival);
            self.receive(p, id, arrival);
        }
        // Otherwise it arrives after the run: it stays in flight.
    }

    #[inline]
    fn send(&mut self, p: usize, dir: usize, now: Ps, id: FrameId) {
        let sent = self.gens[p].links[dir].send(now, id, self.pool.frame_bytes(id));
        if sent.is_head {
            self.q.schedule(sent.arrival, Event::LinkArrival(p as u16, dir as u8));
        }
    }

    fn reset_stats(&mut self) {
        for g in &mut self.gens {
            g.lg.reset_stats();
            g.rx_frames = 0;
        }
        for g in &mut self.gens {
            g.links.iter_mut().for_each(|l| l.reset_stats());
        }
    }

    /// One of `marks`: what the device holds now.
    fn mark(&self) -> Mark {
        let mut fates = [0; N_FATES];
        for p in 0..self.gens.len() {
            let l = self.pool.ledger(p);
            for (n, f) in fates.iter_mut().zip(Fate::ALL).filter(|(_, f)| f.is_drop()) {
                *n += l.count(Ledger::TOTAL_ROW, f);
            }
        }
        let entries = match &self.dut {
            Dut::Host(h) => h.table_entries(),
            Dut::Reflector(_) => 0,
        };
        Mark { inside: self.frames_in_device(), fates, entries }
    }

    /// Frames alive but on no link: inside the device.
    fn frames_in_device(&self) -> u64 {
        let on_links: usize = self.gens.iter().flat_map(|g| g.links.iter()).map(Link::in_flight).sum();
        (self.pool.in_use() as u64).saturating_sub(on_links as u64)
    }

    /// When the device's measured window starts: the first frame sent after
    /// warm-up reaches it one propagation delay later (0 without warm-up).
    pub fn dut_window_start(&self) -> Ps {
        match self.cfg.sim.warmup_ps {
            0 => 0,
            w => w + self.cfg.link.propagation_ps,
        }
    }

    /// Every statistic, gem5-style dotted names under `system.`.
    pub fn stats(&self) -> Vec<Stat> {
        let mut v = Vec::new();
        let mut root = StatSink::new(&mut v);
        let mut sys = root.scope("system");
        let many = self.gens.len() > 1;
        for (p, g) in self.gens.iter().enumerate() {
            let name = if many { format!("loadgen.port{p}") } else { "loadgen".to_string() };
            g.lg.report_stats(&mut sys.scope(&name));
        }
        match &self.dut {
            Dut::Reflector(r) => r.report_stats(&mut sys.scope("reflector")),
            Dut::Host(h) => h.report_stats(&mut sys),
        }
        for (p, g) in self.gens.iter().enumerate() {
            let (to_dut, to_gen) = if many { (format!("link{p}.to_dut"), format!("link{p}.to_gen")) } else { ("link_to_dut".into(), "link_to_gen".into()) };
            g.links[TO_DUT].report_stats(&mut sys.scope(&to_dut));
            g.links[TO_GEN].report_stats(&mut sys.scope(&to_gen));
        }
        v
    }

    pub fn events_handled(&self) -> u64 {
        self.q.events_handled()
    }

    /// Frame buffers ever allocated (the most frames in flight at once).
    pub fn frame_buffers(&self) -> usize {
        self.pool.capacity()
    }

    /// Frames the generators sent and received over the whole run.
    pub fn total_tx(&self) -> u64 {
        self.gens.iter().map(|g| g.lg.total_tx).sum()
    }

    pub fn total_rx(&self) -> u64 {
        self.gens.iter().map(|g| g.lg.total_rx).sum()
    }
}

/// Full-mesh traffic from generator port `p`: the stations behind every
/// other port (their MAC and IPv4 address), in port order.
fn mesh_destinations(lg: &crate::loadgen::config::LoadgenConfig, p: usize, ports: usize) -> Vec<(crate::wire::ethernet::Mac, std::net::Ipv4Addr)> {
    let mac = crate::wire::ethernet::parse_mac(&lg.src_mac).unwrap_or_default();
    let ip: std::net::Ipv4Addr = lg.src_ip.parse().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
    (0..ports).filter(|&j| j != p).map(|j| (crate::wire::port_mac(mac, j), crate::wire::port_ip(ip, j))).collect()
}

/// Runs a config and assembles the JSON result.
pub fn run(cfg: &SimConfig) -> Result<Value> {
    run_with(cfg, &crate::apps::Registry::builtin())
}

/// [`run`] with the applications of `registry`, at the config's fidelity.
pub fn run_with(cfg: &SimConfig, registry: &crate::apps::Registry) -> Result<Value> {
    match cfg.sim.fidelity {
        Fidelity::Full => run_detailed(cfg, registry, None).map(|(out, ..)| out),
        Fidelity::Fast => sample::run(cfg, registry),
    }
}

/// Frames per second the sending generator ports offer in all (0 where the
/// device or a TCP sink sets the pace), and the largest mean frame size.
/// Builds only the generators.
pub(crate) fn offered_pps(cfg: &SimConfig, registry: &crate::apps::Registry) -> Result<(f64, f64)> {
    cfg.validate_with(registry)?;
    let ports = generator_ports(cfg);
    let (mut pps, mut mean_bytes) = (0.0, 0.0f64);
    for p in 0..ports {
        let lg = port_loadgen(cfg, p, ports)?;
        if cfg.loadgen.sends(p, ports) {
            pps += lg.rate.pps;
        }
        mean_bytes = mean_bytes.max(lg.mean_frame_bytes());
    }
    Ok((pps, mean_bytes))
}

/// One generator port per device port: the reflector has one, a host `host.ports`.
fn generator_ports(cfg: &SimConfig) -> usize {
    cfg.host.as_ref().filter(|_| cfg.app != "reflector").map_or(1, |h| h.ports as usize)
}

/// Generator port `p` of `ports`.
fn port_loadgen(cfg: &SimConfig, p: usize, ports: usize) -> Result<Loadgen> {
    let env = loadgen::Env {
        seed: cfg.seed,
        port: p,
        link_rate_bps: cfg.link.rate_bps,
        duration_ps: cfg.sim.duration_ps,
        warmup_ps: cfg.sim.warmup_ps,
        propagation_ps: cfg.link.propagation_ps,
        given: cfg.given.clone(),
    };
    let mut lg = Loadgen::new(&cfg.loadgen.for_port(p), &env)?;
    if cfg.loadgen.to_stations() && ports > 1 {
        lg.set_mesh(mesh_destinations(&cfg.loadgen, p, ports));
    }
    Ok(lg)
}

/// Every frame of the run through the full model, and its JSON result,
/// the marks of its window and the mark where the window a sample stands
/// for starts. `sample`: the run is a fast run's sample, which says itself
/// whether its buffers' growth matters (`sample::run`), standing for the
/// window after the warm-up given.
pub(crate) fn run_detailed(cfg: &SimConfig, registry: &crate::apps::Registry, sample: Option<Ps>) -> Result<(Value, [Mark; 3], Mark)> {
    let wall = Instant::now();
    let mut sys = System::with_apps(cfg, registry)?;
    let sampled = sample.is_some();
    sys.mid_mark = sampled;
    // A mark of its own only where the window it stands for starts earlier.
    sys.pre_mark_at = sample.filter(|&t| t < cfg.sim.warmup_ps);
    let end = sys.run();
    if crate::engine::cancel::requested() {
        return Err(crate::error::Error::Interrupted(sys.q.now()));
    }
    if sys.pre_mark_at.is_none() {
        sys.pre_mark = sys.marks[0];
    }
    let mut cap = (None::<u64>, None::<u64>);
    for g in &mut sys.gens {
        let (tx, rx) = g.lg.finish_captures()?;
        let add = |a: Option<u64>, b: Option<u64>| if a.is_none() && b.is_none() { None } else { Some(a.unwrap_or(0) + b.unwrap_or(0)) };
        cap = (add(cap.0, tx), add(cap.1, rx));
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let mut warnings = Vec::new();
    for g in sys.gens.iter().filter(|g| g.sends) {
        let rate = g.lg.rate;
        if rate.capped && !warnings.iter().any(|w: &String| w.starts_with("loadgen.rate")) {
            // A request of many times the line rate is said in scientific notation.
            let requested = rate.requested_pps / 1e6;
            let requested = if requested < 1e9 { format!("{requested:.6}") } else { format!("{requested:.3e}") };
            warnings.push(format!(
                "loadgen.rate: requested {requested} Mpps exceeds line rate {:.6} Mpps for {:.1} B frames; capped at line rate",
                rate.line_rate_pps / 1e6,
                g.lg.mean_frame_bytes()
            ));
        }
    }
    let in_flight: u64 = sys.in_flight.iter().map(|n| n[Ledger::MEASURED_ROW]).sum();
    let mean_bytes = sys.gens.iter().map(|g| g.lg.mean_frame_bytes()).fold(0.0, f64::max);
    let buffers = cfg.buffers(mean_bytes);
    let buffer_frames: u64 = buffers.iter().map(|b| b.2).sum();
    let backlog = [sys.marks[0].inside, sys.marks[2].inside];
    let growth = backlog[1].saturating_sub(backlog[0]);
    let sent: u64 = (0..sys.gens.len()).map(|p| sys.pool.ledger(p).sent[Ledger::MEASURED_ROW]).sum();
    // More than a burst's worth and 1 % of what was sent (the bandwidth
    // test's default threshold, `hostsim msb --threshold`): the buffers are
    // taking up an overload the window hides.
    if !sampled && growth > BACKLOG_NOISE_FRAMES && growth * 100 > sent {
        let window_s = ps_to_s(cfg.sim.duration_ps.saturating_sub(cfg.sim.warmup_ps));
        let excess = growth as f64 / window_s;
        let grew = format!(
            "{growth} more frames were inside it when the last frame sent reached it than when the first measured one did ({:.2} % of the {sent} sent)",
            growth as f64 * 100.0 / sent.max(1) as f64
        );
        let dropped = sys.marks[2].dropped().saturating_sub(sys.marks[0].dropped());
        warnings.push(if dropped > 0 {
            // The device dropped in the window too (buffers that filled,
            // or steady drops elsewhere, a TX ring's beside growing RX
            // buffers): the growth is an overload the loss rate does
            // not count.
            format!(
                "{FELL_BEHIND}: besides the {dropped} frames it dropped from the first measured frame's arrival to the last's, {grew}; a longer run loses those too, so the loss rate understates the overload (loss plus growth is the excess)"
            )
        } else {
            format!(
                "{FELL_BEHIND}: {grew}; its buffers ({buffer_frames} frames) fill in {:.3} ms at that excess, so drops would show only in a longer run (sim.duration)",
                buffer_frames as f64 / excess * 1e3
            )
        });
    }
    if in_flight > 0 {
        warnings.push(format!(
            "{in_flight} frames of the measured window were still inside the system when the run ended \
             (sim.drain {:.3} ms): counted in loadgen.in_flight_packets and loss_rate, not in lost_packets or drop_rate",
            cfg.sim.drain_ps as f64 / 1e9
        ));
    }
    for w in sys.gens.iter().flat_map(|g| g.lg.warnings()) {
        if !warnings.contains(&w) {
            warnings.push(w);
        }
    }
    let stats = sys.stats();
    let accounting = sys.accounting_json();
    let total_tx = sys.total_tx();
    // Utilisations are over the device's window: from when the first frame
    // sent after warm-up reaches it to the end of the run (the drain
    // included: the device works on what it holds).
    let span_ps = end.saturating_sub(sys.dut_window_start());
    let ports: Vec<(&Loadgen, bool, u64)> = sys.gens.iter().map(|g| (&g.lg, g.sends, g.rx_frames)).collect();
    let mut out = json!({
        "loadgen": loadgen::result_json(&ports),
        "capture": {"tx_frames": cap.0, "rx_frames": cap.1},
        "sim": {
            "simulated_ps": end,
            // No frame is measured sooner: one propagation delay (a frame the
            // device consumes is measured one way, a reply after two).
            "path_min_ps": cfg.link.propagation_ps,
            "simulated_s": ps_to_s(end),
            "wall_s": wall_s,
            "packets": total_tx,
            "packets_per_wall_s": if wall_s > 0.0 { total_tx as f64 / wall_s } else { 0.0 },
            "events": sys.events_handled(),
            "frame_buffers": sys.frame_buffers(),
            "buffers": buffers.iter().map(|(k, _, n)| (k.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "buffer_frames": buffer_frames,
            "backlog_frames": {"warmup_end": backlog[0], "tx_end": backlog[1]},
            // What the device's buffers grew by over the window, as a share
            // of the frames sent in it (0 within a burst's noise): frames
            // a longer trial would lose. The bandwidth test counts it.
            "backlog_growth_rate": if growth > BACKLOG_NOISE_FRAMES { growth as f64 / sent.max(1) as f64 } else { 0.0 },
            "seed": cfg.seed,
            "version": crate::VERSION,
            "fidelity": "full",
            "sample": Value::Null,
        },
        "stats": stats,
        "accounting": accounting,
        "warnings": warnings,
    });
    match &sys.dut {
        Dut::Reflector(r) => out["reflector"] = r.result_json(),
        Dut::Host(h) => {
            if let (Value::Object(o), Value::Object(parts)) = (&mut out, h.result_json(span_ps)) {
                o.extend(parts);
            }
        }
    }
    warnings::out_of_service(&mut out, cfg);
    warnings::unread_app_settings(&mut out, cfg, registry);
    warnings::moot_settings(&mut out, cfg);
    warnings::dram_order(&mut out);
    // A result that breaks an invariant says so, naming it.
    let broken = crate::check::violations(&out);
    if let Some(w) = out["warnings"].as_array_mut() {
        w.extend(broken.into_iter().map(|v| Value::String(format!("invariant violated: {v}"))));
    }
    Ok((out, sys.marks, sys.pre_mark))
}


/// [`run`], then [`crate::check::assert_holds`] on its result (it panics
/// naming every broken invariant): what every system-level test calls.
pub fn checked_run(cfg: &SimConfig) -> Result<Value> {
    checked_run_with(cfg, &crate::apps::Registry::builtin())
}

/// [`checked_run`] with the applications of `registry`.
pub fn checked_run_with(cfg: &SimConfig, registry: &crate::apps::Registry) -> Result<Value> {
    let r = run_with(cfg, registry)?;
    crate::check::assert_holds(&r);
    Ok(r)
}
