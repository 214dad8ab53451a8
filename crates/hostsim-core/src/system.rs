//! Builds a system from a config, wires its components and runs the event
//! loop. All wiring happens here (gem5's `System`, ns-3's helpers):
//!
//! ```text
//! load generator ──link[TO_DUT]──▶ device under test
//!        ▲                               │
//!        └──────────link[TO_GEN]─────────┘
//! ```
//!
//! Open loop, the generator sends on its own schedule; closed loop, it also
//! sends when a reply arrives (`GenDeparture` at that instant) and after a
//! timeout check (`GenTimeout`, one event per timeout period). Open loop, the
//! generator only measures what comes back, so a frame put on the return
//! link is handed to it at once with its arrival time (no event); frames
//! that would arrive after the run's end are not received, as before.
//!
//! The run: the generator transmits for `sim.duration`; statistics reset when
//! warm-up ends; then the system drains for up to `sim.drain` plus twice the
//! propagation delay, or until no event is left.

use std::time::Instant;

use serde_json::{json, Value};

use crate::config::SimConfig;
use crate::dev::reflector::{Arrival, Reflector};
use crate::engine::stats::{HasStats, Stat, StatSink};
use crate::engine::time::{ps_to_s, Ps};
use crate::engine::EventQueue;
use crate::host::Host;
use crate::stack::Event as HostEvent;
use crate::error::Result;
use crate::framebuf::{FrameId, FramePool};
use crate::link::Link;
use crate::loadgen::Loadgen;

/// Link directions.
const TO_DUT: usize = 0;
const TO_GEN: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The generator's next departure is due.
    GenDeparture,
    /// Closed loop: give up requests unanswered for the timeout.
    GenTimeout,
    /// The head frame of a link's delay line arrives.
    LinkArrival(usize),
    /// The reflector finishes serving its head frame.
    ReflectorDone,
    /// Warm-up ends: reset statistics.
    WarmupEnd,
    /// An event of the simulated host.
    Host(HostEvent),
}

/// The device under test.
pub enum Dut {
    Reflector(Reflector),
    Host(Box<Host>),
}

pub struct System {
    cfg: SimConfig,
    q: EventQueue<Event>,
    pool: FramePool,
    links: [Link; 2],
    pub loadgen: Loadgen,
    pub dut: Dut,
    out: Vec<FrameId>,
    /// Closed loop: a `GenDeparture` is already queued.
    gen_pending: bool,
    /// The run's last instant (transmission, drain, twice the propagation).
    limit: Ps,
    /// Open loop: the latest arrival handed to the generator.
    last_arrival: Ps,
}

impl System {
    pub fn new(cfg: &SimConfig) -> Result<Self> {
        cfg.validate()?;
        let loadgen = Loadgen::new(cfg)?;
        // Frame buffers hold the largest frame anyone builds: the generator, or an application.
        let on_host = cfg.app != "reflector";
        let registry = crate::apps::Registry::builtin();
        let host_frames = match (&cfg.host, registry.get(&cfg.app)) {
            (Some(h), Some(e)) if on_host => (e.max_frame_bytes)(&h.app),
            _ => 0,
        };
        let max_frame = loadgen.max_frame_bytes();
        let pool = FramePool::new(max_frame.max(host_frames));
        let link = || Link::new(cfg.link.rate_bps, cfg.link.propagation_ps);
        Ok(System {
            cfg: cfg.clone(),
            q: EventQueue::new(),
            pool,
            links: [link(), link()],
            loadgen,
            dut: match &cfg.host {
                Some(h) if on_host => Dut::Host(Box::new(Host::new(cfg, h, max_frame)?)),
                _ => Dut::Reflector(Reflector::new(&cfg.reflector, cfg.seed)),
            },
            out: Vec::with_capacity(2),
            gen_pending: false,
            limit: cfg.sim.duration_ps.saturating_add(cfg.sim.drain_ps).saturating_add(2 * cfg.link.propagation_ps),
            last_arrival: 0,
        })
    }

    /// Runs to the end of the drain; returns the simulated end time.
    pub fn run(&mut self) -> Ps {
        if let Some(cl) = self.loadgen.closed_loop {
            self.q.schedule(0, Event::GenDeparture);
            self.gen_pending = true;
            self.q.schedule(cl.timeout_ps, Event::GenTimeout);
        } else if let Some(t) = self.loadgen.next_departure() {
            self.q.schedule(t, Event::GenDeparture);
        }
        if self.cfg.sim.warmup_ps > 0 {
            self.q.schedule(self.cfg.sim.warmup_ps, Event::WarmupEnd);
        }
        self.drain_host();
        while let Some((now, ev)) = self.q.pop_until(self.limit) {
            self.dispatch(now, ev);
        }
        self.q.now().max(self.last_arrival).max(self.cfg.sim.duration_ps)
    }

    #[inline]
    fn dispatch(&mut self, now: Ps, ev: Event) {
        match ev {
            Event::GenDeparture if self.loadgen.closed_loop.is_some() => {
                // Closed loop: every free place starts a request now, back to back on the wire.
                self.gen_pending = false;
                while self.loadgen.has_credit(now) {
                    let bytes = self.loadgen.next_size();
                    let start = now.max(self.links[TO_DUT].free_at());
                    let id = self.loadgen.emit(&mut self.pool, start, bytes);
                    self.send(TO_DUT, start, id);
                }
            }
            Event::GenTimeout => {
                if self.loadgen.expire(now) {
                    self.gen_now(now);
                }
                let period = self.loadgen.closed_loop.map_or(0, |c| c.timeout_ps);
                if now < self.cfg.sim.duration_ps.saturating_add(period) {
                    self.q.schedule(now + period, Event::GenTimeout);
                }
            }
            Event::GenDeparture => {
                // The generator is open loop and nothing it sends can reach the
                // device before one propagation delay: every departure due by
                // then is sent now, in order, with its own start time.
                let horizon = now.saturating_add(self.cfg.link.propagation_ps);
                let mut due = Some(now);
                while let Some(t) = due.filter(|&t| t <= horizon) {
                    let bytes = self.loadgen.next_size();
                    let start = t.max(self.links[TO_DUT].free_at());
                    let id = self.loadgen.emit(&mut self.pool, start, bytes);
                    self.send(TO_DUT, start, id);
                    due = self.loadgen.next_departure();
                }
                if let Some(t) = due {
                    self.q.schedule(t, Event::GenDeparture);
                }
            }
            Event::LinkArrival(dir) => {
                let Some((id, next)) = self.links[dir].deliver() else { return };
                if let Some(t) = next {
                    self.q.schedule(t, Event::LinkArrival(dir));
                }
                if dir == TO_DUT {
                    match &mut self.dut {
                        Dut::Reflector(r) => {
                            if let Arrival::Serving(done) = r.arrive(&mut self.pool, id, now) {
                                self.q.schedule(done, Event::ReflectorDone);
                            }
                        }
                        Dut::Host(h) => {
                            h.frame_arrival(0, &mut self.pool, id, now);
                            self.drain_host();
                        }
                    }
                } else if self.loadgen.receive(&mut self.pool, id, now) {
                    self.gen_now(now);
                }
            }
            Event::ReflectorDone => {
                let Dut::Reflector(r) = &mut self.dut else { return };
                let mut out = std::mem::take(&mut self.out);
                let next = r.complete(&mut self.pool, now, &mut out);
                for id in out.drain(..) {
                    self.to_gen(now, id);
                }
                self.out = out;
                if let Some(t) = next {
                    self.q.schedule(t, Event::ReflectorDone);
                }
            }
            Event::WarmupEnd => self.reset_stats(),
            Event::Host(ev) => {
                if let Dut::Host(h) = &mut self.dut {
                    h.handle(now, ev, &mut self.pool);
                    self.drain_host();
                }
            }
        }
    }

    /// Closed loop: the generator may transmit at `now` (a reply or a timeout freed a place).
    #[inline]
    fn gen_now(&mut self, now: Ps) {
        if !self.gen_pending {
            self.gen_pending = true;
            self.q.schedule(now, Event::GenDeparture);
        }
    }

    /// Queues what the host produced: its events, frames for the wire, frames it consumed.
    #[inline]
    fn drain_host(&mut self) {
        let Dut::Host(h) = &mut self.dut else { return };
        for (t, ev) in h.out.events.drain(..) {
            self.q.schedule(t, Event::Host(ev));
        }
        for i in 0..h.out.wire.len() {
            let Dut::Host(h) = &self.dut else { return };
            let (t, _port, id) = h.out.wire[i];
            self.to_gen(t, id);
        }
        let Dut::Host(h) = &mut self.dut else { return };
        h.out.wire.clear();
        for (t, id) in h.out.consumed.drain(..) {
            self.loadgen.consume(&mut self.pool, id, t);
        }
    }

    /// A frame for the generator leaves the device at `now`.
    #[inline]
    fn to_gen(&mut self, now: Ps, id: FrameId) {
        if self.loadgen.closed_loop.is_some() {
            // A reply makes room for a request: it must arrive as an event.
            self.send(TO_GEN, now, id);
            return;
        }
        let (_, arrival) = self.links[TO_GEN].transmit(now, self.pool.frame_bytes(id));
        if arrival <= self.limit {
            self.last_arrival = self.last_arrival.max(arrival);
            self.loadgen.receive(&mut self.pool, id, arrival);
        } else {
            self.pool.free(id);
        }
    }

    #[inline]
    fn send(&mut self, dir: usize, now: Ps, id: FrameId) {
        let sent = self.links[dir].send(now, id, self.pool.frame_bytes(id));
        if sent.is_head {
            self.q.schedule(sent.arrival, Event::LinkArrival(dir));
        }
    }

    fn reset_stats(&mut self) {
        self.loadgen.reset_stats();
        match &mut self.dut {
            Dut::Reflector(r) => r.reset_stats(),
            Dut::Host(h) => h.reset_stats(),
        }
        self.links.iter_mut().for_each(|l| l.reset_stats());
    }

    /// Every statistic, gem5-style dotted names under `system.`.
    pub fn stats(&self) -> Vec<Stat> {
        let mut v = Vec::new();
        let mut root = StatSink::new(&mut v);
        let mut sys = root.scope("system");
        self.loadgen.report_stats(&mut sys.scope("loadgen"));
        match &self.dut {
            Dut::Reflector(r) => r.report_stats(&mut sys.scope("reflector")),
            Dut::Host(h) => h.report_stats(&mut sys.scope("host")),
        }
        self.links[TO_DUT].report_stats(&mut sys.scope("link_to_dut"));
        self.links[TO_GEN].report_stats(&mut sys.scope("link_to_gen"));
        v
    }

    pub fn events_handled(&self) -> u64 {
        self.q.events_handled()
    }

    /// Frame buffers ever allocated (the most frames in flight at once).
    pub fn frame_buffers(&self) -> usize {
        self.pool.capacity()
    }
}

/// Runs a config and assembles the JSON result.
pub fn run(cfg: &SimConfig) -> Result<Value> {
    let wall = Instant::now();
    let mut sys = System::new(cfg)?;
    let end = sys.run();
    let (cap_tx, cap_rx) = sys.loadgen.finish_captures()?;
    let wall_s = wall.elapsed().as_secs_f64();
    let mut warnings = Vec::new();
    let rate = sys.loadgen.rate;
    if rate.capped {
        warnings.push(format!(
            "loadgen.rate: requested {:.6} Mpps exceeds line rate {:.6} Mpps for {:.1} B frames; capped at line rate",
            rate.requested_pps / 1e6,
            rate.line_rate_pps / 1e6,
            sys.loadgen.result_json()["mean_frame_bytes"].as_f64().unwrap_or(0.0)
        ));
    }
    warnings.extend(sys.loadgen.warnings());
    let stats = sys.stats();
    let total_tx = sys.loadgen.total_tx;
    let window_ps = cfg.sim.duration_ps - cfg.sim.warmup_ps;
    let mut out = json!({
        "loadgen": sys.loadgen.result_json(),
        "capture": {"tx_frames": cap_tx, "rx_frames": cap_rx},
        "sim": {
            "simulated_ps": end,
            "simulated_s": ps_to_s(end),
            "wall_s": wall_s,
            "packets": total_tx,
            "packets_per_wall_s": if wall_s > 0.0 { total_tx as f64 / wall_s } else { 0.0 },
            "events": sys.events_handled(),
            "frame_buffers": sys.frame_buffers(),
            "seed": cfg.seed,
            "version": crate::VERSION,
        },
        "stats": stats,
        "warnings": warnings,
    });
    match &sys.dut {
        Dut::Reflector(r) => out["reflector"] = r.result_json(),
        Dut::Host(h) => {
            if let (Value::Object(o), Value::Object(parts)) = (&mut out, h.result_json(window_ps)) {
                o.extend(parts);
            }
        }
    }
    Ok(out)
}
