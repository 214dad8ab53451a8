//! The hardware-style load generator (SPEC 2.3), attached straight to a
//! device's port. It never drops or delays its own frames: a departure waits
//! only for the wire (which happens only when the offered rate reaches line
//! rate), so every loss belongs to the device under test.
//!
//! Synthetic mode: rate in bps, pps or percent of line rate; fixed, list,
//! uniform or IMIX sizes; constant or Poisson departures; raw Ethernet or
//! Ethernet/IPv4/UDP over N flows. Every frame carries a tag (`wire::tag`)
//! with its sequence number and transmit time; replies are measured by
//! `measure::Measure`.
//!
//! Trace mode (`loadgen.trace`, `trace::Replay`): departures and frame bytes
//! come from a pcap/pcapng file. Frames carry a tag only where it fits in
//! their padding (`trace.tag`); what comes back is counted whether tagged or
//! not (`rx_untagged_packets`), and the offered and achieved rates are over
//! the time the trace was actually sent.
//!
//! TCP receiver mode (`loadgen.tcp`, `tcp_sink::TcpSink`): the port sends
//! nothing on a schedule; it acknowledges the host's TCP segments (`--app
//! tcp-send`), and its ACKs are the frames it sends (the host consumes
//! them). Goodput is counted in `loadgen.tcp`.
//!
//! memcached mode (`loadgen.memcached`, `memcached::McClient`): each
//! departure is a memcached UDP request; replies are paired with requests by
//! request id. Closed loop (`loadgen.closed_loop`) keeps a fixed number of
//! requests outstanding instead: the system starts one whenever a reply
//! completes one (`receive` returns true) or a timeout check gives one up.

pub mod capture;
pub mod config;
pub mod frame;
pub mod measure;
pub mod memcached;
pub mod source;
pub mod tcp_sink;
pub mod trace;

use serde_json::{json, Value};

use config::{LoadgenConfig, TraceTiming};
use crate::engine::stats::{HasStats, StatSink};
use crate::engine::time::{ps_to_s, Ps};
use crate::engine::SimRng;
use crate::error::{Error, Result};
use crate::framebuf::{FrameId, FramePool};
use crate::wire::tag;
use capture::Capture;
use frame::FrameBuilder;
use measure::Measure;
use memcached::{McClient, Received};
use source::{offered_rate, Departures, OfferedRate, Pacing, SizeSampler};
use trace::{Replay, Trace};

/// The offered rate of a trace on its own clock: its frames over its length
/// (span plus one mean gap), scaled. Never capped: the wire spaces frames
/// that come faster than line rate.
fn trace_rate(trace: &Trace, time_scale: f64, line_rate_pps: f64) -> OfferedRate {
    let n = trace.len() as f64;
    let len_s = if n > 1.0 { ps_to_s(trace.span_ps()) * n / (n - 1.0) * time_scale } else { 0.0 };
    let pps = if len_s > 0.0 { n / len_s } else { 0.0 };
    OfferedRate { requested_pps: pps, pps, line_rate_pps, capped: false }
}

/// Random streams of the load generator (port 0; port p adds 16 p).
const STREAM_SIZES: u64 = 1;
const STREAM_DEPARTURES: u64 = 2;

/// What a generator port needs to know of the run beyond its own config.
#[derive(Debug, Clone)]
pub struct Env {
    pub seed: u64,
    /// The generator port (its random streams differ from the other ports').
    pub port: usize,
    pub link_rate_bps: u64,
    /// Transmission ends at `duration_ps`; the first `warmup_ps` are not measured.
    pub duration_ps: Ps,
    pub warmup_ps: Ps,
    /// One-way propagation delay of the port's links.
    pub propagation_ps: Ps,
    /// The fields the user set (`SimConfig::given`), as dotted keys.
    pub given: Vec<String>,
}

impl Env {
    /// A seed for generators that draw their own streams (the memcached client).
    fn port_seed(&self) -> u64 {
        self.seed.wrapping_add(self.port as u64 * 0x9E37_79B9_7F4A_7C15)
    }
}

pub struct Loadgen {
    builder: FrameBuilder,
    sizes: SizeSampler,
    departures: Departures,
    pub rate: OfferedRate,
    mean_bytes: f64,
    link_bps: u64,
    tx_end: Ps,
    next_seq: u64,
    next_departure: Ps,
    pub measure: Measure,
    capture_tx: Option<Capture>,
    capture_rx: Option<Capture>,
    /// Frames sent over the whole run, warm-up included.
    pub total_tx: u64,
    pub total_rx: u64,
    /// TCP mode: pure ACKs received (the receiver's answers are not echoes).
    tcp_acks: Option<u64>,
    /// Trace mode: the replay, whose frames replace the synthetic ones.
    replay: Option<Replay>,
    /// Frames that left later than scheduled because the wire was still
    /// busy (a trace asking for more than line rate), and by how much in all.
    delayed: u64,
    /// Frames due before the end of transmission that could not start on the wire before the run ended.
    unsent: u64,
    delay_ps: u64,
    /// When the wire finished the last frame sent.
    last_wire_end: Ps,
    warmup_ps: Ps,
    /// This generator port (the frame pool's ledger keys on it).
    port: usize,
    /// memcached mode: requests and replies instead of tagged frames.
    pub mc: Option<McClient>,
    /// Closed loop: (outstanding, timeout) and the requests that may start now.
    pub closed_loop: Option<crate::loadgen::config::ClosedLoopConfig>,
    credits: u32,
    /// The fields that shape synthetic traffic set away from their
    /// defaults (`given_fields`), said when nothing reads them.
    given: Vec<&'static str>,
    /// TCP receiver mode: the receiver; the port sends only its ACKs.
    pub sink: Option<tcp_sink::TcpSink>,
}

/// The fields that shape synthetic traffic that the user gave (`user`,
/// `SimConfig::given`: whatever their values) or that differ from their
/// defaults (a config built without that record, in Rust).
fn given_fields(lg: &LoadgenConfig, user: &[String]) -> Vec<&'static str> {
    let d = LoadgenConfig::default();
    let given = [
        ("rate", lg.rate != d.rate),
        ("size", lg.size != d.size),
        ("interarrival", lg.interarrival != d.interarrival),
        ("flows", lg.flows != d.flows),
        ("flow_skew", lg.flow_skew != d.flow_skew),
        ("protocol", lg.protocol != d.protocol),
        ("dst_port", lg.dst_port != d.dst_port),
        ("tag_offset", lg.tag_offset != d.tag_offset),
    ];
    given.iter().filter(|g| crate::error::user_set(user, &format!("loadgen.{}", g.0), g.1)).map(|g| g.0).collect()
}

impl Loadgen {
    pub fn new(lg: &LoadgenConfig, env: &Env) -> Result<Self> {
        let streams = 16 * env.port as u64;
        let sizes = SizeSampler::new(&lg.size, SimRng::new(env.seed, STREAM_SIZES + streams));
        let trace = lg.trace.as_ref().map(|t| Trace::load(t, lg)).transpose()?;
        if let Some(t) = trace.as_ref().filter(|t| t.is_empty()) {
            // Nothing to send: every run would be an idle link, and a bandwidth test's MSB a 0 that passed.
            let c = &t.counts;
            let mut why = Vec::new();
            if c.filtered > 0 {
                why.push(format!("{} not UDP to loadgen.trace.udp_port", c.filtered));
            }
            if c.oversize > 0 {
                why.push(format!("{} larger than loadgen.trace.max_frame_bytes", c.oversize));
            }
            return Err(Error::io(&t.path, format!("none of the capture's {} packets is replayed ({})", c.read, why.join(", "))));
        }
        let mc = lg.memcached.as_ref().map(|m| McClient::new(m, env.port_seed()));
        let mean_bytes = match (&mc, &trace) {
            (Some(m), _) => m.mean_frame_bytes(),
            (None, Some(t)) => t.mean_frame_bytes(),
            (None, None) => sizes.mean_bytes(),
        };
        let mut rate = offered_rate(&lg.rate, mean_bytes, env.link_rate_bps);
        let pacing = Pacing::of(&lg.rate, &rate, mean_bytes);
        let mut departures = Departures::paced(rate.pps, lg.interarrival, pacing, 0, SimRng::new(env.seed, STREAM_DEPARTURES + streams));
        let (replay, next_departure) = match (trace, &lg.trace) {
            (Some(trace), Some(tc)) => {
                if tc.timing == TraceTiming::Trace {
                    rate = trace_rate(&trace, tc.time_scale, rate.line_rate_pps);
                }
                let r = Replay::new(trace, tc, departures)?;
                departures = Departures::new(1.0, lg.interarrival, 0, SimRng::new(env.seed, STREAM_DEPARTURES + streams));
                let next = r.peek().map_or(Ps::MAX, |(t, _)| t);
                (Some(r), next)
            }
            _ => (None, departures.next()),
        };
        let sink = lg.tcp.as_ref().map(|t| tcp_sink::TcpSink::new(t, env.propagation_ps, env.seed, env.port, (env.warmup_ps, env.duration_ps)));
        let next_departure = if sink.is_some() {
            // ACKs only: none on a schedule, and no offered rate.
            rate = OfferedRate { requested_pps: 0.0, pps: 0.0, line_rate_pps: rate.line_rate_pps, capped: false };
            Ps::MAX
        } else {
            next_departure
        };
        let capture = |p: &Option<String>| p.as_deref().map(|p| Capture::create(p, lg.capture_limit)).transpose();
        Ok(Loadgen {
            builder: mc.as_ref().map_or_else(|| FrameBuilder::new(lg), |m| m.builder(lg)),
            sizes,
            departures,
            rate,
            mean_bytes,
            link_bps: env.link_rate_bps,
            tx_end: env.duration_ps,
            next_seq: 0,
            next_departure,
            measure: Measure::new(env.warmup_ps, env.duration_ps, lg.keep_samples),
            capture_tx: capture(&lg.capture_tx)?,
            capture_rx: capture(&lg.capture_rx)?,
            total_tx: 0,
            total_rx: 0,
            tcp_acks: (lg.protocol == crate::loadgen::config::Protocol::Tcp).then_some(0),
            replay,
            delayed: 0,
            unsent: 0,
            delay_ps: 0,
            last_wire_end: 0,
            warmup_ps: env.warmup_ps,
            port: env.port,
            mc,
            closed_loop: lg.closed_loop,
            credits: lg.closed_loop.map_or(0, |c| c.outstanding),
            given: given_fields(lg, &env.given),
            sink,
        })
    }

    /// Full-mesh traffic: frames take these destinations in turn.
    pub fn set_mesh(&mut self, dests: Vec<(crate::wire::ethernet::Mac, std::net::Ipv4Addr)>) {
        let b = std::mem::replace(&mut self.builder, FrameBuilder::new(&LoadgenConfig::default()));
        self.builder = b.with_mesh(dests);
    }

    /// Mean frame size of what the generator sends (bytes, FCS included).
    pub fn mean_frame_bytes(&self) -> f64 {
        self.mean_bytes
    }

    /// Largest frame the generator can send.
    pub fn max_frame_bytes(&self) -> u32 {
        match (&self.mc, &self.replay) {
            (Some(m), _) => m.max_frame_bytes(),
            (None, Some(r)) => r.trace.max_frame_bytes(),
            (None, None) => self.sizes.max_bytes(),
        }
    }

    /// The time of the next departure, if any is left in the run.
    #[inline]
    pub fn next_departure(&self) -> Option<Ps> {
        (self.next_departure < self.tx_end).then_some(self.next_departure)
    }

    /// Builds the next frame, to start on the wire at `start` (≥ its scheduled
    /// departure when the wire is busy). Returns it and advances the schedule.
    #[inline]
    pub fn emit(&mut self, pool: &mut FramePool, start: Ps, frame_bytes: u32) -> FrameId {
        let seq = self.next_seq;
        self.next_seq += 1;
        let id = pool.alloc(frame_bytes);
        // The pool's identity of the frame: this port's frame `seq`, in the window or not.
        pool.mark_sent(id, self.port, seq, self.measure.in_window(start));
        if self.replay.is_some() {
            return self.emit_trace_frame(pool, id, start, frame_bytes, seq);
        }
        if let Some(m) = self.mc.as_mut() {
            let evicted = m.emit(&self.builder, pool.data_mut(id), seq, self.builder.flow_of(seq), start, &self.measure);
            // A request given up for its id frees its place in a closed loop.
            self.credits += (evicted && self.closed_loop.is_some()) as u32;
            self.measure.on_tx(start, frame_bytes);
            self.total_tx += 1;
            if let Some(c) = self.capture_tx.as_mut() {
                c.write(start, pool.data(id));
            }
            if self.closed_loop.is_some() {
                self.credits = self.credits.saturating_sub(1);
            } else {
                self.departures.sent(frame_bytes);
                self.next_departure = self.departures.next();
            }
            return id;
        }
        let t = tag::Repr { flow: self.builder.flow_of(seq), seq: seq as u32, tx_ps: start };
        self.builder.build(pool.data_mut(id), frame_bytes, &t);
        self.measure.on_tx(start, frame_bytes);
        self.total_tx += 1;
        if let Some(c) = self.capture_tx.as_mut() {
            c.write(start, pool.data(id));
        }
        self.departures.sent(frame_bytes);
        self.next_departure = self.departures.next();
        id
    }

    /// Trace mode: the next trace frame, tagged if it has room for it.
    #[inline]
    fn emit_trace_frame(&mut self, pool: &mut FramePool, id: FrameId, start: Ps, frame_bytes: u32, seq: u64) -> FrameId {
        let Some(r) = self.replay.as_mut() else { return id };
        if let Some((_, f)) = r.peek() {
            let buf = pool.data_mut(id);
            r.trace.write(f, buf);
            if f.tag {
                let at = buf.len() - tag::TAG_LEN;
                tag::Repr { flow: 0, seq: seq as u32, tx_ps: start }.emit(&mut buf[at..]);
            }
        }
        r.advance();
        self.next_departure = r.peek().map_or(Ps::MAX, |(t, _)| t);
        self.measure.on_tx(start, frame_bytes);
        self.total_tx += 1;
        if let Some(c) = self.capture_tx.as_mut() {
            c.write(start, pool.data(id));
        }
        id
    }

    /// TCP receiver mode: the next ACK due by `now` as a frame starting on
    /// the wire at `start`, or None.
    pub fn emit_ack(&mut self, pool: &mut FramePool, now: Ps, start: Ps) -> Option<FrameId> {
        let (k, ack) = self.sink.as_mut()?.pop_ack(now)?;
        let bytes = crate::wire::ethernet::MIN_FRAME_BYTES;
        let id = pool.alloc(bytes);
        let seq = self.next_seq;
        self.next_seq += 1;
        pool.mark_sent(id, self.port, seq, self.measure.in_window(start));
        self.sink.as_ref()?.write_ack(k, ack, pool.data_mut(id));
        self.measure.on_tx(start, bytes);
        self.total_tx += 1;
        if let Some(c) = self.capture_tx.as_mut() {
            c.write(start, pool.data(id));
        }
        Some(id)
    }

    /// Size of the frame about to be sent.
    #[inline]
    pub fn next_size(&mut self) -> u32 {
        if let Some(m) = self.mc.as_mut() {
            return m.prepare(self.next_seq);
        }
        match &self.replay {
            Some(r) => r.peek().map_or(64, |(_, f)| f.frame_bytes),
            None => self.sizes.next(),
        }
    }

    /// A frame came back at `now` (the system gives its buffer back after).
    /// Returns true when a closed loop may send at once.
    #[inline]
    pub fn receive(&mut self, pool: &FramePool, id: FrameId, now: Ps) -> bool {
        if let Some(c) = self.capture_rx.as_mut() {
            c.write(now, pool.data(id));
        }
        if let Some(s) = self.sink.as_mut() {
            // The host's segments: the receiver takes them (they are not
            // frames this port sent, so they are not measured).
            s.receive(pool.data(id), now);
            return false;
        }
        if let Some(m) = self.mc.as_mut() {
            self.total_rx += 1;
            let done = m.receive(pool.data(id), pool.seq(id), now, &mut self.measure) == Received::Completed;
            if done && self.closed_loop.is_some() {
                self.credits += 1;
                return now < self.tx_end;
            }
            return false;
        }
        if self.tcp_acks.is_some() && crate::wire::tcp::is_pure_ack(pool.data(id)) {
            // The kernel's ACKs for `--app iperf`: counted, not measured.
            *self.tcp_acks.as_mut().unwrap() += 1;
            return false;
        }
        self.consume(pool, id, now);
        false
    }

    /// A frame due at `due` started at `start` (the wire was busy until
    /// then) and its slot on the wire (inter-frame gap included) ended at
    /// `wire_end`. The measured window lasts until the last frame counted
    /// in it has left the wire, so no rate over it passes the link's.
    #[inline]
    pub fn departed(&mut self, due: Ps, start: Ps, wire_end: Ps) {
        if self.measure.in_window(start) {
            self.last_wire_end = wire_end;
        }
        if self.replay.is_some() && start > due {
            self.delayed += 1;
            self.delay_ps += start - due;
        }
    }

    /// The frame due next could not start on the wire before the run ends
    /// (the generator's queue is that far behind the link): it is never
    /// sent, and the departure after it is due next. `frame_bytes`: its
    /// size, from [`Loadgen::next_size`].
    pub fn unsendable(&mut self, frame_bytes: u32) {
        self.unsent += 1;
        if let Some(r) = self.replay.as_mut() {
            r.advance();
            r.sent -= 1;
            self.next_departure = r.peek().map_or(Ps::MAX, |(t, _)| t);
        } else if self.closed_loop.is_none() && self.mc.is_none() {
            self.departures.sent(frame_bytes);
            self.next_departure = self.departures.next();
        } else {
            self.next_departure = Ps::MAX;
        }
    }

    /// Frames of the measured window still in flight at the end (from the system's ledger).
    pub fn set_in_flight(&mut self, n: u64) {
        self.measure.in_flight = n;
    }

    /// Closed loop: may a request start at `now`?
    #[inline]
    pub fn has_credit(&self, now: Ps) -> bool {
        self.credits > 0 && now < self.tx_end
    }

    /// Closed loop: gives up requests unanswered for the timeout; true when
    /// some were (their places may be refilled at once).
    pub fn expire(&mut self, now: Ps) -> bool {
        let (Some(m), Some(cl)) = (self.mc.as_mut(), self.closed_loop) else { return false };
        let n = m.expire(now, cl.timeout_ps, self.next_seq, &self.measure);
        self.credits += n;
        n > 0 && now < self.tx_end
    }

    /// A frame reached its end at `now` without coming back (an application
    /// that drops what it receives): measured as delivered, not captured. The
    /// system gives its buffer back.
    #[inline]
    pub fn consume(&mut self, pool: &FramePool, id: FrameId, now: Ps) {
        if self.mc.is_some() {
            // A request the server answered with nothing: it stays outstanding.
            return;
        }
        if self.sink.is_some() {
            // An ACK the host's TCP took: delivered, with no tag to time it.
            self.total_rx += 1;
            self.measure.on_rx_untagged(pool.measured(id), pool.frame_bytes(id));
            return;
        }
        self.total_rx += 1;
        // A frame that is none the generator sent and answers none (testpmd
        // txonly's, built in a recycled buffer whose payload may still hold
        // an old tag) is no reply, whatever its bytes say.
        if self.replay.is_none() && pool.seq(id).is_none() {
            self.measure.rx_invalid += 1;
            return;
        }
        let data = pool.data(id);
        let off = match &self.replay {
            Some(r) if r.tags() => data.len().saturating_sub(tag::TAG_LEN),
            Some(_) => usize::MAX,
            None => self.builder.tag_offset(),
        };
        match data.get(off..).map(tag::Repr::parse) {
            Some(Ok(t)) => match self.widen(t.seq) {
                Some(seq) if t.tx_ps <= now => self.measure.on_rx(seq, t.flow, t.tx_ps, now, pool.frame_bytes(id)),
                _ => self.measure.rx_invalid += 1,
            },
            _ if self.replay.is_some() => self.measure.on_rx_untagged(pool.measured(id), pool.frame_bytes(id)),
            _ => self.measure.rx_invalid += 1,
        }
    }

    /// The 64-bit sequence number whose low 32 bits are `seq32`, the newest
    /// one already sent.
    #[inline]
    fn widen(&self, seq32: u32) -> Option<u64> {
        let cand = (self.next_seq & !0xffff_ffff) | seq32 as u64;
        if cand < self.next_seq {
            Some(cand)
        } else {
            cand.checked_sub(1 << 32)
        }
    }

    /// Closes capture files; returns how many frames each holds.
    pub fn finish_captures(&mut self) -> Result<(Option<u64>, Option<u64>)> {
        let tx = self.capture_tx.take().map(Capture::finish).transpose()?;
        let rx = self.capture_rx.take().map(Capture::finish).transpose()?;
        Ok((tx, rx))
    }

    /// Length of the measured window (s): warm-up end to the end of
    /// transmission (`sim.duration`, or earlier when a trace ran out), or to
    /// the end of the wire slot of the last frame counted in it when that is
    /// later (a frame that starts inside the window counts whole, so the
    /// window holds all of its time on the wire). Rates are 0 when nothing
    /// was sent in it.
    fn window_s(&self) -> f64 {
        match self.window_ps() {
            0 => f64::INFINITY,
            w => ps_to_s(w),
        }
    }

    fn window_ps(&self) -> Ps {
        // A trace ends with its last frame on the wire (later than its
        // timestamp when the trace asked for more than the link carries).
        let end = match self.replay.as_ref().and_then(Replay::end_ps) {
            Some(t) => t.min(self.tx_end),
            None => self.tx_end,
        };
        end.max(self.last_wire_end).saturating_sub(self.warmup_ps)
    }

    /// Warnings about the trace: frames left out or changed, and a replay
    /// cut short by `sim.duration`.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = vec![];
        let given = |f: &str| self.given.contains(&f);
        if self.closed_loop.is_some() && given("rate") {
            w.push("loadgen.rate is ignored in closed loop (loadgen.closed_loop): a request starts whenever one completes or times out".into());
        }
        if given("rate") && self.replay.as_ref().is_some_and(|r| !r.at_rate()) {
            w.push("loadgen.rate is ignored: the trace's frames leave at their own timestamps (loadgen.trace.timing = trace; \
                    set it to rate to replay them at loadgen.rate)"
                .into());
        }
        if given("size") {
            let why = if self.mc.is_some() {
                Some("with the memcached client (loadgen.memcached) each request's size follows from its key and value")
            } else if self.replay.is_some() {
                Some("a trace's frames keep their own lengths (loadgen.trace)")
            } else if self.sink.is_some() {
                Some("the TCP receiver (loadgen.tcp) sends only ACKs")
            } else {
                None
            };
            if let Some(why) = why {
                w.push(format!("loadgen.size is ignored: {why}"));
            }
        }
        // The size has its own reason, above; the rate and the spacing pace a trace at a rate.
        let unread = |read: &[&str]| -> Option<String> {
            let names: Vec<String> = self.given.iter().filter(|f| !read.contains(f)).map(|f| format!("loadgen.{f}")).collect();
            (!names.is_empty()).then(|| names.join(", "))
        };
        let why = if self.sink.is_some() {
            unread(&["size"]).map(|n| (n, "the TCP receiver (loadgen.tcp) sends only ACKs, each when the host's segments call for it"))
        } else if self.mc.is_some() {
            unread(&["size", "rate", "interarrival", "flows", "flow_skew"])
                .map(|n| (n, "the memcached client (loadgen.memcached) sends UDP requests to loadgen.memcached.udp_port and pairs replies by their request ids"))
        } else if self.replay.is_some() {
            unread(&["size", "rate", "interarrival"]).map(|n| (n, "a trace's frames keep their own bytes (loadgen.trace)"))
        } else {
            None
        };
        if let Some((names, why)) = why {
            w.push(format!("{names} ignored: {why}"));
        }
        if let Some(n) = self.mc.as_ref().map(|m| m.counters.id_reuses).filter(|&n| n > 0) {
            w.push(format!(
                "loadgen.memcached: {n} requests were still unanswered when a newer request needed their 16-bit request id; \
                 they were given up (counted in timeouts) and their late replies counted in late_replies, not paired"
            ));
        }
        let Some(r) = &self.replay else { return w };
        let (c, path) = (&r.trace.counts, &r.trace.path);
        if c.oversize > 0 {
            w.push(format!("loadgen.trace: {} of {} frames in {path} exceed loadgen.trace.max_frame_bytes and were not sent (loadgen.trace_oversize_frames)", c.oversize, c.read));
        }
        if c.padded > 0 {
            w.push(format!("loadgen.trace: {} runt frames in {path} (under 60 B without FCS) were padded to 64 B (loadgen.trace.pad_runts)", c.padded));
        }
        if c.truncated > 0 {
            w.push(format!("loadgen.trace: {} frames in {path} were captured shorter than they were; sent at their original length, the missing bytes as zeros", c.truncated));
        }
        if c.untaggable > 0 {
            w.push(format!(
                "loadgen.trace.tag: {} of {} frames in {path} have no room for the {} B tag after their packet and were sent untagged: \
                 their latency is not measured (loadgen.rx_untagged_packets)",
                c.untaggable,
                c.read,
                tag::TAG_LEN
            ));
        }
        if c.untimed > 0 {
            w.push(format!("loadgen.trace: {} frames in {path} have no timestamp (pcapng Simple Packet Blocks); each leaves with the frame before", c.untimed));
        }
        if self.unsent > 0 {
            w.push(format!(
                "loadgen.trace: {path} asks for more than the link carries: {} frames due before the end of transmission \
                 could not start on the wire before the run ended and were never sent (loadgen.trace_unsent_frames)",
                self.unsent
            ));
        }
        if self.delayed > 0 {
            w.push(format!(
                "loadgen.trace: {path} asks for more than the link carries: {} frames left later than their timestamps, \
                 {:.3} us in all ({:.3} us on average; loadgen.trace_delayed_frames); offered is what the link carried",
                self.delayed,
                self.delay_ps as f64 / 1e6,
                self.delay_ps as f64 / 1e6 / self.delayed as f64
            ));
        }
        if c.backwards > 0 {
            w.push(format!("loadgen.trace: {} frames in {path} are timestamped earlier than the frame before; each leaves with the frame before", c.backwards));
        }
        // Frames timestamped within the warm-up may still leave after it when
        // the wire is busy: only a replay none of whose frames started in the
        // window measured nothing.
        if let Some(end) = r.end_ps().filter(|&e| e <= self.warmup_ps && r.sent > 0 && self.measure.tx_packets == 0) {
            w.push(format!("loadgen.trace: the replay ended at {:.3} us, within the warm-up (sim.warmup); nothing was measured", end as f64 / 1e6));
        }
        if r.trace.is_empty() {
            w.push(format!("loadgen.trace: no frame of {path} to replay ({} read, {} filtered out by udp_port, {} oversize)", c.read, c.filtered, c.oversize));
        } else if let Some(planned) = r.frames_planned().filter(|&p| r.sent < p) {
            w.push(format!("loadgen.trace: sim.duration ended the replay after {} of {planned} trace frames", r.sent));
        }
        w
    }

    /// The mean frame (FCS included) of the frames sent in the measured
    /// window, or the nominal mean when none was sent.
    fn sent_mean_bytes(&self) -> f64 {
        self.measure.mean_tx_frame_bytes().unwrap_or(self.mean_bytes)
    }

    /// The link's frame rate for frames of the window's mean size.
    fn sent_line_rate_pps(&self) -> f64 {
        self.link_bps as f64 / ((self.sent_mean_bytes() + crate::link::WIRE_OVERHEAD_BYTES as f64) * 8.0)
    }

    /// The measured results (the `loadgen` object of the JSON result).
    /// `line_rate_*` and `mean_frame_bytes` are the frames sent in the
    /// window's; `nominal_*` the mean a rate in percent or bps refers to
    /// (the configured sizes, the trace's frames, the memcached mix), which
    /// a bandwidth test's trials are scaled by. They differ where the
    /// frames sent are drawn from a mix (IMIX, memcached requests).
    pub fn result_json(&self) -> Value {
        let m = &self.measure;
        let w = self.window_s();
        let mut v = m.counts_json(w);
        let (mean, line_pps) = (self.sent_mean_bytes(), self.sent_line_rate_pps());
        for (k, x) in [
            ("requested_pps", json!(self.rate.requested_pps)),
            ("line_rate_pps", json!(line_pps)),
            ("line_rate_bps", json!(line_pps * mean * 8.0)),
            ("nominal_line_rate_pps", json!(self.rate.line_rate_pps)),
            ("nominal_mean_frame_bytes", json!(self.mean_bytes)),
            ("link_rate_bps", json!(self.link_bps)),
            ("mean_frame_bytes", json!(mean)),
            ("max_frame_bytes", json!(self.max_frame_bytes())),
            ("rate_capped", json!(self.rate.capped)),
            ("measured_window_ps", json!(self.window_ps())),
            ("latency_ns", m.latency_json()),
            ("latency_histogram", m.histogram_json()),
        ] {
            v[k] = x;
        }
        if let Some(mc) = &self.mc {
            v["memcached"] = mc.result_json(w);
        }
        if let Some(sink) = &self.sink {
            v["tcp"] = sink.result_json(w);
        }
        if let Some(n) = self.tcp_acks {
            v["rx_tcp_acks"] = json!(n);
            // The TCP payload of the window's segments the receiver consumed
            // (rx counts those; the ACKs are counted apart).
            let headers = (crate::wire::TCP_HEADERS + crate::wire::ethernet::FCS_LEN) as u64;
            let payload = m.rx_bytes.saturating_sub(m.rx_packets * headers);
            v["goodput_bps"] = json!(payload as f64 * 8.0 / w);
        }
        if let Some(r) = &self.replay {
            let c = &r.trace.counts;
            v["rx_untagged_packets"] = json!(m.rx_untagged);
            v["trace_frames"] = json!(r.trace.len());
            v["trace_frames_read"] = json!(c.read);
            v["trace_frames_sent"] = json!(r.sent);
            v["trace_unsent_frames"] = json!(self.unsent);
            v["trace_passes"] = json!(r.passes_done());
            v["trace_oversize_frames"] = json!(c.oversize);
            v["trace_filtered_frames"] = json!(c.filtered);
            v["trace_truncated_frames"] = json!(c.truncated);
            v["trace_padded_frames"] = json!(c.padded);
            v["trace_checksummed_frames"] = json!(c.checksummed);
            v["trace_span_ps"] = json!(r.trace.span_ps());
            v["trace_delayed_frames"] = json!(self.delayed);
            v["trace_delay_ps"] = json!(self.delay_ps);
            v["trace_complete"] = json!(r.end_ps().is_some());
        }
        if !m.samples().is_empty() {
            v["samples"] = Value::Array(m.samples().iter().map(|&(s, l)| json!([s, l])).collect());
        }
        v
    }
}

/// The load generator's part of the result, over its ports (generator, does
/// it send, frames that arrived at it): the whole as one generator — counts
/// summed, latency from the merged histograms, rates over the same window —
/// and, in `ports`, each port's own figures. One port gives exactly its own
/// result.
pub fn result_json(ports: &[(&Loadgen, bool, u64)]) -> Value {
    let mut v = match ports {
        [(one, _, _)] => one.result_json(),
        _ => aggregate_json(ports),
    };
    let rows: Vec<Value> = ports
        .iter()
        .enumerate()
        .map(|(i, (g, sends, rx_frames))| {
            let mut row = json!({ "port": i, "sends": sends });
            if let (Some(r), Value::Object(counts)) = (row.as_object_mut(), g.measure.counts_json(g.window_s())) {
                r.extend(counts);
            }
            row["rx_frames_at_port"] = json!(rx_frames);
            row["latency_ns"] = g.measure.latency_json();
            row
        })
        .collect();
    v["ports"] = Value::Array(rows);
    v["sending_ports"] = json!(ports.iter().filter(|p| p.1).count());
    v
}

/// Several ports as one generator.
fn aggregate_json(ports: &[(&Loadgen, bool, u64)]) -> Value {
    let first = ports[0].0;
    let mut m = Measure::new(first.warmup_ps, first.tx_end, first.measure.keep_samples());
    for (g, _, _) in ports {
        m.merge(&g.measure);
    }
    // The ports share one window unless a trace ends one early: the longest.
    let (w, window_ps) = ports.iter().map(|(g, _, _)| (g.window_s(), g.window_ps())).fold((0.0f64, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    let sending: Vec<&Loadgen> = ports.iter().filter(|p| p.1).map(|p| p.0).collect();
    let sum = |f: &dyn Fn(&Loadgen) -> f64| sending.iter().map(|g| f(g)).sum::<f64>();
    let mut v = m.counts_json(w);
    for (k, x) in [
        ("requested_pps", json!(sum(&|g| g.rate.requested_pps))),
        ("line_rate_pps", json!(sum(&|g| g.sent_line_rate_pps()))),
        ("line_rate_bps", json!(sum(&|g| g.sent_line_rate_pps() * g.sent_mean_bytes() * 8.0))),
        ("nominal_line_rate_pps", json!(sum(&|g| g.rate.line_rate_pps))),
        ("nominal_mean_frame_bytes", json!(first.mean_bytes)),
        ("link_rate_bps", json!(first.link_bps)),
        ("mean_frame_bytes", json!(m.mean_tx_frame_bytes().unwrap_or(first.mean_bytes))),
        ("max_frame_bytes", json!(ports.iter().map(|p| p.0.max_frame_bytes()).max())),
        ("rate_capped", json!(sending.iter().any(|g| g.rate.capped))),
        ("measured_window_ps", json!(window_ps)),
        ("latency_ns", m.latency_json()),
        ("latency_histogram", m.histogram_json()),
    ] {
        v[k] = x;
    }
    let parts: Vec<Value> = ports.iter().map(|(g, _, _)| g.result_json()).collect();
    for key in ["memcached", "tcp", "rx_tcp_acks", "rx_untagged_packets", "trace_frames_sent", "trace_unsent_frames", "trace_oversize_frames", "trace_truncated_frames", "trace_delayed_frames", "trace_delay_ps"] {
        if parts.iter().any(|p| p.get(key).is_some()) {
            let values: Vec<&Value> = parts.iter().filter_map(|p| p.get(key)).collect();
            v[key] = sum_json(&values);
        }
    }
    if !m.samples().is_empty() {
        v["samples"] = Value::Array(m.samples().iter().map(|&(s, l)| json!([s, l])).collect());
    }
    v
}

/// The sum of numbers, and of the numeric fields of objects, field by field.
fn sum_json(values: &[&Value]) -> Value {
    let mut acc = Value::Null;
    for &v in values {
        acc = match (acc, v) {
            (Value::Null, v) => v.clone(),
            (Value::Number(a), Value::Number(b)) => match (a.as_u64(), b.as_u64()) {
                (Some(x), Some(y)) => json!(x + y),
                _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            },
            (Value::Object(mut a), Value::Object(b)) => {
                for (k, bv) in b {
                    let av = a.remove(k).unwrap_or(Value::Null);
                    let both: Vec<&Value> = [&av, bv].into_iter().filter(|x| !x.is_null()).collect();
                    a.insert(k.clone(), sum_json(&both));
                }
                Value::Object(a)
            }
            (a, _) => a,
        }
    }
    acc
}

impl HasStats for Loadgen {
    fn report_stats(&self, s: &mut StatSink<'_>) {
        let m = &self.measure;
        s.count("tx_packets", m.tx_packets, "Frames sent in the measured window");
        s.count("rx_packets", m.rx_packets, "Replies received to frames of the measured window");
        s.count("lost_packets", m.lost(), "Frames of the measured window never answered and not in flight");
        s.count("in_flight_packets", m.in_flight, "Frames of the measured window still inside the system at the end");
        s.count("reordered_packets", m.reordered, "Replies that arrived after a later frame's reply");
        s.count("duplicate_packets", m.duplicates, "Replies received more than once");
        s.count("invalid_packets", m.rx_invalid, "Frames received without a valid tag");
        s.add("tx_bytes", m.tx_bytes as f64, "Byte", "Frame bytes sent in the measured window");
        s.add("rx_bytes", m.rx_bytes as f64, "Byte", "Frame bytes received for the measured window");
        s.add("drop_rate", m.drop_rate(), "Ratio", "lost_packets / tx_packets after draining");
        s.add("loss_rate", m.loss_rate(), "Ratio", "1 - rx_packets / tx_packets: dropped or still in flight (RFC 2544 frame loss)");
        let w = self.window_s();
        s.add("offered_bps", m.tx_bytes as f64 * 8.0 / w, "Bit/Second", "Offered load, frame bits");
        s.add("achieved_bps", m.rx_bytes as f64 * 8.0 / w, "Bit/Second", "Returned load, frame bits");
        s.add("line_rate_pps", self.sent_line_rate_pps(), "Count/Second", "Line rate for the mean frame size sent in the measured window");
        s.add("nominal_line_rate_pps", self.rate.line_rate_pps, "Count/Second", "Line rate for the mean frame size a rate in percent or bps refers to");
        if let Some(mc) = &self.mc {
            let c = &mc.counters;
            for (k, n, desc) in [
                ("requests", c.requests, "memcached requests sent in the measured window"),
                ("replies", c.replies, "Complete replies to those requests"),
                ("hits", c.hits, "GET replies with a VALUE"),
                ("misses", c.misses, "GET replies with END only"),
                ("stored", c.stored, "SET replies STORED"),
                ("errors", c.errors, "Any other reply"),
                ("timeouts", c.timeouts, "Requests given up after loadgen.closed_loop.timeout"),
            ] {
                s.count(&format!("memcached.{k}"), n, desc);
            }
            s.add("memcached.rps", c.replies as f64 / w, "Count/Second", "Replies per second over the measured window");
        }
        let lat = m.latency_json();
        for (k, desc) in [
            ("min", "Minimum round-trip latency"),
            ("mean", "Mean round-trip latency"),
            ("p50", "Median round-trip latency"),
            ("p90", "90th percentile round-trip latency"),
            ("p99", "99th percentile round-trip latency"),
            ("p999", "99.9th percentile round-trip latency"),
            ("max", "Maximum round-trip latency"),
            ("std", "Standard deviation of round-trip latency"),
        ] {
            s.add(&format!("latency_ns.{k}"), lat[k].as_f64().unwrap_or(f64::NAN), "Nanosecond", desc);
        }
    }

    fn reset_stats(&mut self) {
        // The measured window is chosen by transmit time, not by reset.
    }
}
