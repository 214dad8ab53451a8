//! The fast fidelity (`sim.fidelity = fast`): a run simulated in part and
//! predicted for the rest.
//!
//! At a stationary offered load the measured window repeats one steady
//! state, or, when the load exceeds what the device sustains, fills the
//! device's buffers at a steady excess and then drops that excess. Either
//! way its outcome follows from two rates: the loss rate, and the rate at
//! which frames pile up inside the device. The fast fidelity simulates the
//! warm-up and the first [`SAMPLE_FRAMES`] frames of the window with the
//! full model, unchanged, and predicts the whole window from that sample
//! with a fluid model of the buffers: they grow at the sample's rate until
//! full (`sim.buffer_frames`), then drop what they cannot take. This is
//! sampled simulation (as SimPoint simulates representative intervals in
//! detail) with a fluid queue between sample and prediction.
//!
//! Where the fluid model fills the buffers within the window, a second,
//! longer sample (at most [`OVERFLOW_SAMPLE_FRAMES`]) runs past the fill,
//! so that its second half is the overflow itself: the device with full
//! buffers, dropping by the drop machine's fates. If that half dropped
//! more than the first, its rates go on for the rest of the window, drops
//! by fate (`sim.sample.predicted.drops`). An overflow later than that, or
//! one whose sample would make the fast run simulate more than the run,
//! stays the fluid model's, and its drops have no fate
//! (`unclassified_drops`). Buffers the sample itself saw fill (its second
//! half started or rose dropping) grow no more: the second half's rates
//! go on, and an overflow sample looks a whole sample past the fill.
//! Frames in flight at the end are the sample's, plus the warm-up's frames
//! still inside at its end (a queue that outlasts it) that the rest of the
//! window replaces; lost and in-flight frames never pass the frames sent.
//!
//! The result's counts, rates and statistics are the sample's, exactly as
//! the full model gives them for the shortened run (the conservation
//! identity holds over it); `sim.sample` says what the sample stands for
//! and what the fluid model predicts for the configured window.
//!
//! What it assumes, and where it falls back to the full model:
//! * The load is stationary. A trace replay, a closed loop, TCP and
//!   captures (which should hold every frame of the configured run) are
//!   run in full; a sample whose halves disagree doubles, up to three
//!   times, then the run is run in full.
//! * The device's service rate does not depend on how full its buffers are.
//!   The sample sees the buffers only as full as its own growth leaves
//!   them; a device that serves more slowly with full rings (leaky DMA
//!   out of the DCA ways, say) is predicted too fast, unless the buffers
//!   fill soon enough for an overflow sample to see it.
//! * The caches are warm by the end of the warm-up (`warmup_frames`), and
//!   the application's tables have stopped growing: a run whose sample saw
//!   them grow (`App::table_entries`) is simulated as configured, or with
//!   `sim.settle` the sample's warm-up doubles, up to [`MAX_WARMUP_PS`] and
//!   past the configured run if need be, and the result says so.
//! * A run shorter than its sample is simulated as configured.
//! * The sample's warm-up may be longer than `sim.warmup`: what the
//!   configured window saw before the sample (its drops and its buffers'
//!   growth, from a mark where it starts) is counted, and the rest after
//!   the sample is that much shorter. With `sim.settle` the sample stands
//!   for the steady state after the transient instead.

use serde_json::{json, Value};

use super::Mark;
use crate::framebuf::{Fate, N_FATES};
use crate::config::{Fidelity, SimConfig};
use crate::engine::time::{show_ps, Ps};
use crate::error::Result;

/// Frames of the measured window a sample simulates: the fewest in which
/// buffer growth of 0.5 % of the frames sent (the bandwidth test's default
/// `overload`) exceeds the backlog's noise of a burst or two
/// (`system::BACKLOG_NOISE_FRAMES`, 64) with the test's safety factor 1.5
/// (`msb.TRIAL_SAFETY`): 1.5 × 64 / 0.005. A derived value, not a
/// hardware parameter.
pub const SAMPLE_FRAMES: u64 = 19_200;

/// What a fast run simulates.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// A warm-up and the first part of the window (ps).
    Sample { warmup_ps: Ps, window_ps: Ps },
    /// The whole run, and why.
    Full(String),
}

/// Why a run cannot be sampled, if it cannot: its load is not known to be stationary.
pub fn not_stationary(cfg: &SimConfig) -> Option<&'static str> {
    let lg = &cfg.loadgen;
    if lg.trace.is_some() {
        Some("a trace replay need not be stationary")
    } else if lg.closed_loop.is_some() {
        Some("a closed loop sends as fast as the device answers: its rate is an outcome")
    } else if lg.tcp.is_some() || lg.protocol == crate::loadgen::config::Protocol::Tcp {
        Some("TCP's rate follows its congestion window: not stationary")
    } else if lg.capture_tx.is_some() || lg.capture_rx.is_some() {
        Some("captures hold every frame of the configured run")
    } else {
        None
    }
}

/// Frames the warm-up must have sent: one per frame the device buffers,
/// so that every buffer could have been used and its lines cached once
/// before measuring (an estimate: 0.1 ms of TestPMD 64 B at 29 Mpps, 2,900
/// frames, left the buffers growing 1 % faster than after 0.3 ms); at
/// least one per flow (each flow's first frame may miss a flow table), and
/// with the memcached client's populate pass, one per key (its SETs).
pub fn warmup_frames(cfg: &SimConfig, buffer_frames: u64) -> u64 {
    let lg = &cfg.loadgen;
    let keys = lg.memcached.as_ref().filter(|m| m.populate).map_or(0, |m| m.keys);
    buffer_frames.max(lg.flows as u64).max(keys)
}

/// The sample for a run offering `offered_pps` in all (its sending ports'
/// sum), or why the whole run is simulated: a warm-up of `sim.warmup` or,
/// if longer, the time to send `warmup_frames`; then [`SAMPLE_FRAMES`]
/// frames of the window, or the configured window if shorter. A sample
/// longer than the run would cost more than the run: the run is simulated
/// as configured.
pub fn plan(cfg: &SimConfig, offered_pps: f64, warmup_frames: u64) -> Plan {
    if let Some(why) = not_stationary(cfg) {
        return Plan::Full(why.into());
    }
    if !(offered_pps > 0.0) {
        return Plan::Full("no offered rate: the device or a TCP sink sets the pace".into());
    }
    let time = |frames: u64| (frames as f64 / offered_pps * 1e12).ceil().min(u64::MAX as f64) as Ps;
    let warmup_ps = cfg.sim.warmup_ps.max(time(warmup_frames));
    let window_ps = cfg.sim.duration_ps.saturating_sub(cfg.sim.warmup_ps).min(time(SAMPLE_FRAMES));
    if warmup_ps.saturating_add(window_ps) > cfg.sim.duration_ps {
        return Plan::Full(format!(
            "a sample ({} of warm-up, {} of window) is longer than the run ({})",
            show_ps(warmup_ps),
            show_ps(window_ps),
            show_ps(cfg.sim.duration_ps)
        ));
    }
    Plan::Sample { warmup_ps, window_ps }
}

/// The fluid model's prediction for the configured window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub tx_packets: u64,
    pub in_flight_packets: u64,
    /// Frames the buffers grow by over the window (at most their headroom).
    pub backlog_growth: u64,
    /// When the buffers fill, after the window starts (ps), if they do (by
    /// the sample's end, where they filled within it).
    pub fill_ps: Option<Ps>,
    /// Of the dropped frames, by fate (`Fate::ALL`'s order): the sample's,
    /// and each fate's rate in its second half for the rest of the window.
    pub drops: [u64; N_FATES],
    /// Dropped frames no sample saw dropped: the overflow of buffers the
    /// fluid model fills after the sample (their fate is not known).
    pub unclassified_drops: u64,
}

impl Prediction {
    /// Dropped frames, the buffers' overflow included: the fates' and the unclassified.
    pub fn lost_packets(&self) -> u64 {
        self.drops.iter().sum::<u64>() + self.unclassified_drops
    }

    pub fn loss_rate(&self) -> f64 {
        (self.lost_packets() + self.in_flight_packets) as f64 / self.tx_packets.max(1) as f64
    }
}

/// What a sample measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleCounts {
    /// Frames sent in its window, and of those lost and still inside at the end.
    pub tx: u64,
    pub in_flight: u64,
    /// Frames sent before its window (in the warm-up) still inside at its end.
    pub earlier_in_flight: u64,
    /// Of the frames lost, by fate (`Fate::ALL`'s order).
    pub lost_by: [u64; N_FATES],
    /// What the device held at the start, middle and end of its window (`System::marks`).
    pub marks: [Mark; 3],
    /// How much later its window starts than the one it stands for (its
    /// warm-up was longer than `sim.warmup`), and what the device held
    /// where that one starts (`marks[0]` when they are the same).
    pub offset_ps: Ps,
    pub pre: Mark,
    /// Frames the device can hold.
    pub buffer_frames: u64,
    /// Whether the sample was lengthened past the fill of the buffers and
    /// its second half dropped: that half is the overflow, whose rates go on.
    pub overflowed: bool,
}

impl SampleCounts {
    /// Growth of the frames inside over half `h` (0 or 1), 0 within the noise.
    fn growth(&self, h: usize) -> u64 {
        let g = self.marks[h + 1].inside.saturating_sub(self.marks[h].inside);
        if g > super::BACKLOG_NOISE_FRAMES { g } else { 0 }
    }

    /// The rate the frames inside grow at (per ps of a `sample_ps` sample)
    /// for the rest of the window. While nothing is dropped it is the whole
    /// sample's slope, 0 within the backlog's noise: the noise is that of
    /// two marks over the whole sample, the precision [`SAMPLE_FRAMES`] is
    /// sized for (a half's slope has twice the error, and a half's growth
    /// under the noise would hide an excess of 0.67 % of the frames sent,
    /// above the bandwidth test's 0.5 % overload). When dropping started
    /// in the second half (none in the first) or rose in it (by more than
    /// the backlog's noise), buffers filled within the sample: its second
    /// half's rate goes on, as it does after an overflow sample
    /// ([`SampleCounts::overflowed`]). (Steady drops in both halves, a TX
    /// ring's say, change nothing here.)
    fn growth_rate(&self, sample_ps: Ps) -> f64 {
        let half = (sample_ps / 2).max(1) as f64;
        if self.filled_within() || self.overflowed {
            return self.growth(1) as f64 / half;
        }
        let g = self.marks[2].inside.saturating_sub(self.marks[0].inside);
        if g > super::BACKLOG_NOISE_FRAMES {
            g as f64 / (2.0 * half)
        } else {
            0.0
        }
    }

    /// Whether the buffers filled within the sample: dropping started in
    /// its second half (none in the first) or rose in it by more than the
    /// backlog's noise.
    pub(crate) fn filled_within(&self) -> bool {
        (self.dropped_in(0) == 0 && self.dropped_in(1) > 0) || self.drops_rose()
    }

    /// Frames dropped over half `h` (0 or 1).
    fn dropped_in(&self, h: usize) -> u64 {
        self.marks[h + 1].dropped().saturating_sub(self.marks[h].dropped())
    }

    /// Whether the second half dropped more than the first by more than the
    /// backlog's noise (steady drops, a TX ring's say, are in both).
    fn drops_rose(&self) -> bool {
        self.dropped_in(1) > self.dropped_in(0) + super::BACKLOG_NOISE_FRAMES
    }

    /// Frames dropped or piled up over half `h`: the excess over what the device sustains.
    fn excess(&self, h: usize) -> u64 {
        self.dropped_in(h) + self.growth(h)
    }

    /// Whether the application's tables grew over the window: frames took
    /// a slow path (an upcall, learning) that a steady state does not.
    /// Even a few matter: one upcall costs as much as a hundred frames.
    pub fn tables_grew(&self) -> bool {
        self.marks[2].entries != self.marks[0].entries
    }

    /// Whether the two halves of the window saw the same excess, within
    /// `overload` of the frames sent in a half plus the backlog's noise
    /// at each of the three marks.
    pub fn stationary(&self, half_frames: f64, overload: f64) -> bool {
        let (a, b) = (self.excess(0) as f64, self.excess(1) as f64);
        (a - b).abs() <= overload * half_frames + 3.0 * super::BACKLOG_NOISE_FRAMES as f64
    }
}

/// The configured window (`window_ps`) from a sample of its first
/// `sample_ps`: the sample's counts as they are, then its rates for the
/// rest: drops go on at the second half's rate, and the frames inside
/// grow at [`SampleCounts::growth_rate`] until the buffers are full
/// (`buffer_frames`), after which the growth is lost too. Frames still
/// inside at the end are the sample's, and as many of the frames sent
/// before it and still inside at its end (a queue that outlasts the
/// sample) as the rest of the window replaces.
pub fn predict(s: SampleCounts, sample_ps: Ps, window_ps: Ps, tx_packets: u64) -> Prediction {
    let half = (sample_ps / 2).max(1) as f64;
    // The window starts `offset_ps` before the sample's: what the device
    // dropped and took up in between was simulated (the sample's warm-up),
    // and the rest after the sample is that much shorter.
    let rest = window_ps.saturating_sub(sample_ps).saturating_sub(s.offset_ps) as f64;
    let growth_rate = s.growth_rate(sample_ps);
    let headroom = s.buffer_frames.saturating_sub(s.marks[2].inside) as f64;
    let grown = growth_rate * rest;
    let kept = grown.min(headroom);
    // Buffers that filled within the sample did so by its end at the latest.
    let fill_ps = if s.filled_within() && !s.overflowed && rest > 0.0 {
        Some(s.offset_ps + sample_ps)
    } else {
        (grown > headroom && growth_rate > 0.0).then(|| s.offset_ps + sample_ps + (headroom / growth_rate).round() as Ps)
    };
    let mut drops = s.lost_by;
    for (f, d) in drops.iter_mut().enumerate() {
        *d += s.marks[0].fates[f].saturating_sub(s.pre.fates[f]);
        *d += (s.marks[2].fates[f].saturating_sub(s.marks[1].fates[f]) as f64 / half * rest).round() as u64;
    }
    let unclassified_drops = (grown - kept).round() as u64;
    // Frames sent before the sample and still inside at its end (a queue
    // longer than the sample) leave first, at the rate the sample's own
    // frames were taken in; a window that goes on past the sample replaces
    // them by its own frames, which are then inside at its end.
    let taken_in = s.tx.saturating_sub(s.lost_by.iter().sum()) as f64 / (2.0 * half);
    let replaced = s.earlier_in_flight.min((taken_in * rest).round() as u64);
    let mut p = Prediction {
        tx_packets,
        in_flight_packets: (s.in_flight + replaced).min(tx_packets),
        backlog_growth: s.marks[2].inside.saturating_sub(s.pre.inside) + kept.round() as u64,
        fill_ps,
        drops,
        unclassified_drops,
    };
    p.cap();
    p
}

impl Prediction {
    /// Keeps the frames lost and still inside within the frames sent. The
    /// parts are estimates of one window (the drops before the sample are
    /// counted by time, so they include frames sent before the window, and
    /// the rest goes on at rates): for a device that loses nearly every
    /// frame they can add up to more than were sent. The excess comes off
    /// the unclassified drops first, then off the fates in proportion.
    fn cap(&mut self) {
        let mut excess = self.lost_packets().saturating_sub(self.tx_packets - self.in_flight_packets);
        let cut = excess.min(self.unclassified_drops);
        self.unclassified_drops -= cut;
        excess -= cut;
        let total: u64 = self.drops.iter().sum();
        if excess == 0 || total == 0 {
            return;
        }
        // Each fate's share, rounded down, then what is left one frame at a
        // time from the largest fates (ties to the first): exact and deterministic.
        let mut left = excess;
        for d in self.drops.iter_mut() {
            let share = (*d as u128 * excess as u128 / total as u128) as u64;
            *d -= share;
            left -= share;
        }
        while left > 0 {
            let f = (0..N_FATES).max_by_key(|&f| (self.drops[f], std::cmp::Reverse(f))).unwrap_or(0);
            self.drops[f] -= 1;
            left -= 1;
        }
    }
}

/// How many times a sample may double when its halves disagree.
const MAX_DOUBLINGS: u32 = 3;

/// How the warning starts that a sample's warm-up was lengthened for the
/// application's tables (the bandwidth test counts these).
pub const TABLES_GREW: &str = "the application's tables were still growing";

/// The longest warm-up a sample waits for the application's tables to stop
/// growing: the bandwidth test's longest trial warm-up (`msb.MAX_TRIAL_WARMUP_S`).
pub const MAX_WARMUP_PS: Ps = 1_000_000_000_000;

/// Runs `cfg` at the fast fidelity: the sample with the full model, then
/// the prediction; or the whole run where it cannot be sampled. A sample
/// whose two halves disagree (a start-up transient the warm-up did not
/// cover) doubles, up to [`MAX_DOUBLINGS`] times and the configured
/// window; if they still disagree, the run is simulated as configured. A
/// sample over which the application's tables grew (a flow table still
/// installing its flows) means a start-up transient in the window: the run
/// is simulated as configured, or with `sim.settle` the warm-up doubles,
/// up to [`MAX_WARMUP_PS`] and past the configured run if need be, and the
/// sample stands for the steady state after the transient.
pub fn run(cfg: &SimConfig, registry: &crate::apps::Registry) -> Result<Value> {
    debug_assert_eq!(cfg.sim.fidelity, Fidelity::Fast);
    // Asked only of a stationary load (a capture's generator opens its file).
    let (offered, mean_bytes) = if not_stationary(cfg).is_some() { (0.0, 0.0) } else { super::offered_pps(cfg, registry)? };
    let buffer_frames = cfg.buffers(mean_bytes).iter().map(|b| b.2).sum();
    let window_ps = cfg.sim.duration_ps - cfg.sim.warmup_ps;
    let mut plan = plan(cfg, offered, warmup_frames(cfg, buffer_frames));
    let mut doublings = 0;
    // Warm-up doublings while the tables grew, from the plan's warm-up.
    let mut warmups = 0u32;
    let first_warmup_ps = match plan {
        Plan::Sample { warmup_ps, .. } => warmup_ps,
        Plan::Full(_) => 0,
    };
    let wall = std::time::Instant::now();
    let (mut out, counts, warmup_ps, sample_ps) = loop {
        let Plan::Sample { warmup_ps, window_ps: sample_ps } = plan else {
            let Plan::Full(why) = plan else { unreachable!() };
            let (mut out, ..) = super::run_detailed(cfg, registry, None)?;
            out["sim"]["fidelity"] = json!("fast");
            out["sim"]["sample"] = json!({"sampled": false, "why": why});
            return Ok(out);
        };
        let (out, counts) = take_sample(cfg, registry, warmup_ps, sample_ps, buffer_frames)?;
        if counts.tables_grew() {
            let (from, to) = (counts.marks[0].entries, counts.marks[2].entries);
            plan = if !cfg.sim.settle {
                Plan::Full(format!(
                    "the application's tables grew over the sample ({from} to {to} entries): the configured window holds a start-up transient (sim.settle predicts the steady state after it instead)"
                ))
            } else if warmup_ps >= MAX_WARMUP_PS {
                Plan::Full(format!(
                    "the application's tables still grew over the sample ({from} to {to} entries) after a warm-up of {:.3} ms, the longest a sample waits: no steady state",
                    warmup_ps as f64 / 1e9
                ))
            } else {
                warmups += 1;
                Plan::Sample { warmup_ps: warmup_ps.saturating_mul(2).min(MAX_WARMUP_PS), window_ps: sample_ps }
            };
            continue;
        }
        let half_frames = offered * (sample_ps / 2) as f64 / 1e12;
        if counts.stationary(half_frames, STATIONARY_OVERLOAD) || sample_ps >= window_ps {
            break (out, counts, warmup_ps, sample_ps);
        }
        if doublings == MAX_DOUBLINGS {
            plan = Plan::Full(format!(
                "the sample's two halves still disagree after {MAX_DOUBLINGS} doublings (excess {} and {} frames over {:.0} frames sent each): not stationary",
                counts.excess(0),
                counts.excess(1),
                half_frames
            ));
            continue;
        }
        doublings += 1;
        let longer = sample_ps.saturating_mul(2).min(window_ps);
        // (A warm-up lengthened for the tables may pass the run already.)
        plan = if warmups == 0 && warmup_ps.saturating_add(longer) > cfg.sim.duration_ps {
            Plan::Full("the sample's two halves disagree and a longer sample would be longer than the run".into())
        } else {
            Plan::Sample { warmup_ps, window_ps: longer }
        };
    };
    let mut counts = counts;
    if warmups > 0 {
        // It stands for the steady state after the tables' transient, not
        // for the configured window, which holds the transient.
        counts.offset_ps = 0;
        counts.pre = counts.marks[0];
    }
    // What the window sends is known without sampling: the offered rate's.
    let window_tx = (offered * window_ps as f64 / 1e12).round() as u64;
    let mut p = predict(counts, sample_ps, window_ps, window_tx);
    let mut sample_ps = sample_ps;
    // Buffers that fill within the window: a longer sample sees what the
    // device drops once they are full, and by which fate.
    let overflow = match p.fill_ps {
        None => Value::Null,
        Some(fill_ps) => {
            // From the sample's start, not the window's; within the run.
            // Its second half starts a quarter sample after a predicted
            // fill; after one within the sample (known only to have come by
            // its end), a whole sample later: the device takes about a
            // sample to settle after a fill it saw (an estimate: TestPMD IMIX
            // at 100 % on altra, 5 ms, predicts 30 % fewer drops at the DMA
            // than the full model a quarter sample later, 10 % a sample later).
            let after = fill_ps.saturating_sub(counts.offset_ps);
            let twice_margin = if counts.filled_within() { 2 * sample_ps } else { sample_ps / 2 };
            let longer = after.saturating_mul(2).saturating_add(twice_margin).min(window_ps.saturating_sub(counts.offset_ps));
            let frames = (offered * longer as f64 / 1e12).ceil() as u64;
            // What the fast run would simulate in all: both samples, each with its warm-up.
            let cost_ps = warmup_ps.saturating_mul(2).saturating_add(sample_ps).saturating_add(longer);
            let not = |why: String| json!({"sampled": false, "fill_ps": fill_ps, "why": why});
            if !cfg.sim.overflow_sample {
                not("sim.overflow_sample is off".into())
            } else if warmups > 0 {
                not("the warm-up was lengthened for the application's tables (sim.settle): a second sample would simulate it again".into())
            } else if frames > OVERFLOW_SAMPLE_FRAMES {
                not(format!("a sample past the fill ({frames} frames) would be longer than OVERFLOW_SAMPLE_FRAMES ({OVERFLOW_SAMPLE_FRAMES})"))
            } else if cost_ps > cfg.sim.duration_ps {
                not(format!(
                    "with a sample past the fill ({} of warm-up, {} of window) the fast run would simulate more than the run ({} against {})",
                    show_ps(warmup_ps),
                    show_ps(longer),
                    show_ps(cost_ps),
                    show_ps(cfg.sim.duration_ps)
                ))
            } else {
                let (o, mut c) = take_sample(cfg, registry, warmup_ps, longer, buffer_frames)?;
                // The buffers filled where its second half dropped more than the first.
                c.overflowed = c.drops_rose();
                let dropped = c.overflowed;
                (out, counts, sample_ps) = (o, c, longer);
                p = predict(counts, sample_ps, window_ps, window_tx);
                if dropped {
                    // They filled within this sample, about when the first one said.
                    p.fill_ps = Some(fill_ps);
                }
                json!({"sampled": true, "fill_ps": fill_ps, "window_ps": longer, "dropped": dropped})
            }
        }
    };
    let wall_s = wall.elapsed().as_secs_f64();
    // What the configured run sends in all, at the offered rate.
    let represented = (offered * cfg.sim.duration_ps as f64 / 1e12).round() as u64;
    let growth_rate = if p.backlog_growth > super::BACKLOG_NOISE_FRAMES { p.backlog_growth as f64 / p.tx_packets.max(1) as f64 } else { 0.0 };
    let grew = counts.marks[2].inside.saturating_sub(counts.marks[0].inside);
    // More than a burst's worth and 1 % of what was sent: an overload the
    // sample's buffers take up (as `system::run_detailed` warns of a full run).
    if grew > super::BACKLOG_NOISE_FRAMES && (p.fill_ps.is_some() || grew * 100 > counts.tx) {
        let dropped = counts.marks[2].dropped().saturating_sub(counts.marks[0].dropped());
        let what = if dropped > 0 {
            format!(
                "besides the {dropped} frames it dropped, so its counts understate the overload; the prediction goes on at its second half's rates and loses {:.2} % of the {:.3} ms window",
                p.loss_rate() * 100.0,
                window_ps as f64 / 1e9
            )
        } else {
            match p.fill_ps {
                Some(fill) => format!("at that pace the fluid model fills them {:.3} ms into the {:.3} ms window and loses {:.2} % of it", fill as f64 / 1e9, window_ps as f64 / 1e9, p.loss_rate() * 100.0),
                None => format!("at that pace the fluid model does not fill them within the {:.3} ms window, so drops would show only in a longer run (sim.duration)", window_ps as f64 / 1e9),
            }
        };
        let w = format!(
            "{}: its buffers ({buffer_frames} frames) grew by {grew} frames over the {:.3} ms sample ({:.2} % of the {} sent), {what}",
            super::FELL_BEHIND,
            sample_ps as f64 / 1e9,
            grew as f64 * 100.0 / counts.tx.max(1) as f64,
            counts.tx,
        );
        if let Some(a) = out["warnings"].as_array_mut() {
            a.push(Value::String(w));
        }
    }
    if warmups > 0 {
        let w = format!(
            "{TABLES_GREW}: after a warm-up of {:.3} ms; the sample was taken after {:.3} ms ({} entries), so it stands for the steady state after that start-up transient, which the configured window (from {:.3} ms) would see in part and the full fidelity shows",
            first_warmup_ps as f64 / 1e9,
            warmup_ps as f64 / 1e9,
            counts.marks[2].entries,
            cfg.sim.warmup_ps as f64 / 1e9
        );
        if let Some(a) = out["warnings"].as_array_mut() {
            a.push(Value::String(w));
        }
    }
    out["sim"]["fidelity"] = json!("fast");
    out["sim"]["sample"] = json!({
        "sampled": true,
        "warmup_ps": warmup_ps,
        "window_ps": sample_ps,
        "doublings": doublings,
        "warmup_doublings": warmups,
        "represented_window_ps": window_ps,
        "offset_ps": counts.offset_ps,
        "represented_duration_ps": cfg.sim.duration_ps,
        "represented_packets": represented,
        "represented_packets_per_wall_s": if wall_s > 0.0 { represented as f64 / wall_s } else { 0.0 },
        "predicted": {
            "tx_packets": p.tx_packets,
            "lost_packets": p.lost_packets(),
            "in_flight_packets": p.in_flight_packets,
            "loss_rate": p.loss_rate(),
            "backlog_growth_frames": p.backlog_growth,
            "backlog_growth_rate": growth_rate,
            "buffers_fill_ps": p.fill_ps,
            "drops": Fate::ALL.iter().zip(p.drops).filter(|(f, _)| f.is_drop()).map(|(f, n)| (f.name().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "unclassified_drops": p.unclassified_drops,
        },
        "overflow": overflow,
    });
    Ok(out)
}

/// Simulates a sample of `cfg`: a warm-up of `warmup_ps`, then a window of `sample_ps`.
fn take_sample(cfg: &SimConfig, registry: &crate::apps::Registry, warmup_ps: Ps, sample_ps: Ps, buffer_frames: u64) -> Result<(Value, SampleCounts)> {
    let mut short = cfg.clone();
    short.sim.warmup_ps = warmup_ps;
    short.sim.duration_ps = warmup_ps + sample_ps;
    let (out, marks, pre) = super::run_detailed(&short, registry, Some(cfg.sim.warmup_ps))?;
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let lg = &out["loadgen"];
    let by = &out["accounting"]["measured"]["drops"];
    let counts = SampleCounts {
        tx: n(&lg["tx_packets"]),
        in_flight: n(&lg["in_flight_packets"]),
        earlier_in_flight: n(&out["accounting"]["total"]["in_flight"]).saturating_sub(n(&out["accounting"]["measured"]["in_flight"])),
        lost_by: Fate::ALL.map(|f| n(&by[f.name()])),
        marks,
        offset_ps: warmup_ps.saturating_sub(cfg.sim.warmup_ps),
        pre,
        buffer_frames,
        overflowed: false,
    };
    Ok((out, counts))
}

/// The longest window a sample past the buffers' fill may have, in frames
/// sent: eight plain samples. Where the buffers would fill later (an
/// overload of a few per cent), the fluid model's overflow stands, with
/// its drops unclassified. A simulation setting (an estimate of what a
/// fast run may spend), not a hardware parameter.
pub const OVERFLOW_SAMPLE_FRAMES: u64 = 8 * SAMPLE_FRAMES;

/// The difference in excess between a sample's halves that still counts
/// as stationary, as a share of the frames sent in a half: the bandwidth
/// test's default overload (0.5 %), on top of the backlog's noise.
const STATIONARY_OVERLOAD: f64 = 0.005;

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(lost: u64, marks: [(u64, u64); 3], buffer_frames: u64) -> SampleCounts {
        // Every drop a FIFO's, the core's.
        let core = Fate::ALL.iter().position(|&f| f == Fate::RxFifoCore).unwrap();
        let marks = marks.map(|(inside, dropped)| {
            let mut fates = [0; N_FATES];
            fates[core] = dropped;
            Mark { inside, fates, entries: 0 }
        });
        let mut lost_by = [0; N_FATES];
        lost_by[core] = lost;
        SampleCounts { tx: 20_000, in_flight: 3, earlier_in_flight: 0, lost_by, marks, offset_ps: 0, pre: marks[0], buffer_frames, overflowed: false }
    }

    #[test]
    fn a_steady_sample_goes_on_at_its_rates() {
        // 25 drops per 500 ps half; 9,000 ps more of window: 450 more.
        let p = predict(counts(50, [(100, 0), (100, 25), (100, 50)], 1_100), 1_000, 10_000, 200_000);
        assert_eq!((p.tx_packets, p.lost_packets(), p.in_flight_packets, p.backlog_growth, p.fill_ps), (200_000, 500, 3, 0, None));
        assert!((p.loss_rate() - 503.0 / 200_000.0).abs() < 1e-15);
    }

    #[test]
    fn growth_fills_the_buffers_then_becomes_loss() {
        // 100 frames of growth per 500 ps; 800 frames of room left after
        // the sample: full 4,000 ps later, at 5,000 ps; the other 1,000
        // frames of the 1,800 grown are lost.
        let p = predict(counts(0, [(100, 0), (200, 0), (300, 0)], 1_100), 1_000, 10_000, 200_000);
        assert_eq!((p.backlog_growth, p.lost_packets(), p.fill_ps), (1_000, 1_000, Some(5_000)));
        // Room for all of it: growth stays growth.
        let q = predict(counts(0, [(100, 0), (200, 0), (300, 0)], 10_000), 1_000, 10_000, 200_000);
        assert_eq!((q.backlog_growth, q.lost_packets(), q.fill_ps), (2_000, 0, None));
        // Growth within the noise (64 frames over the sample) is none.
        let r = predict(counts(0, [(100, 0), (130, 0), (160, 0)], 1_100), 1_000, 10_000, 200_000);
        assert_eq!((r.backlog_growth, r.lost_packets()), (60, 0));
    }

    #[test]
    fn growth_is_the_whole_samples_slope_unless_the_second_half_dropped() {
        // 50 frames a half, under the noise in either half, 100 over the
        // sample: 0.1 frame/ps goes on for 9,000 ps; 800 frames of room:
        // full 8,000 ps after the sample, and 100 lost.
        let p = predict(counts(0, [(100, 0), (150, 0), (200, 0)], 1_000), 1_000, 10_000, 200_000);
        assert_eq!((p.backlog_growth, p.lost_packets(), p.fill_ps), (900, 100, Some(9_000)));
        // The same growth, then drops starting in the second half: the
        // buffers filled, by the sample's end; the second half's rates go
        // on (no growth, 40 drops a half).
        let q = predict(counts(40, [(100, 0), (200, 0), (200, 40)], 1_100), 1_000, 10_000, 200_000);
        assert_eq!((q.backlog_growth, q.lost_packets(), q.fill_ps), (100, 40 + 720, Some(1_000)));
        // Steady drops in both halves (a TX ring's) beside 50 frames of
        // growth a half: the growth is the whole sample's, as without drops.
        let r = predict(counts(20, [(100, 0), (150, 10), (200, 20)], 1_000), 1_000, 10_000, 200_000);
        assert_eq!((r.backlog_growth, r.lost_packets(), r.fill_ps), (900, 20 + 180 + 100, Some(9_000)));
    }

    #[test]
    fn buffers_that_fill_in_the_first_half_grow_no_more() {
        // The buffers fill early in the first half (900 frames grown, 100
        // dropped once full), then only drops: 400 in the second half. The
        // whole sample's slope would fill the 1,000 frames of room left and
        // lose them; the second half, which dropped more, says the buffers
        // are full: no growth, 400 drops per 500 ps for 9,000 ps more.
        let p = predict(counts(500, [(100, 0), (1_000, 100), (1_000, 500)], 2_000), 1_000, 10_000, 200_000);
        // They filled by the sample's end (an overflow sample looks past it).
        assert_eq!((p.backlog_growth, p.fill_ps, p.lost_packets(), p.unclassified_drops), (900, Some(1_000), 500 + 7_200, 0));
        // Drops as steady in both halves (within the noise) beside growth
        // keep the whole sample's slope.
        let q = predict(counts(260, [(100, 0), (150, 100), (200, 160)], 1_000), 1_000, 10_000, 200_000);
        assert_eq!((q.backlog_growth, q.fill_ps), (900, Some(9_000)));
    }

    #[test]
    fn drops_go_on_by_fate_and_an_unsampled_overflow_is_unclassified() {
        let core = Fate::ALL.iter().position(|&f| f == Fate::RxFifoCore).unwrap();
        // Steady drops: the sample's 50 and 450 more, all the core's.
        let p = predict(counts(50, [(100, 0), (100, 25), (100, 50)], 1_100), 1_000, 10_000, 200_000);
        assert_eq!((p.drops[core], p.drops.iter().sum::<u64>(), p.unclassified_drops), (500, 500, 0));
        // Buffers the fluid model fills after the sample: their 1,000 lost
        // frames are no fate's.
        let q = predict(counts(0, [(100, 0), (200, 0), (300, 0)], 1_100), 1_000, 10_000, 200_000);
        assert_eq!((q.drops.iter().sum::<u64>(), q.unclassified_drops, q.lost_packets()), (0, 1_000, 1_000));
    }

    #[test]
    fn frames_a_longer_window_takes_in_replace_the_warm_ups_still_inside() {
        // A queue longer than the sample: 500 frames sent before it were
        // still inside at its end. It took in 1,000 of its 20,000 frames
        // (19,000 lost) in 1,000 ps: one a ps. 9,000 ps more of window
        // replace all 500 by its own; 200 ps, 200 of them.
        let mut c = counts(19_000, [(600, 0), (600, 9_500), (600, 19_000)], 1_100);
        c.earlier_in_flight = 500;
        assert_eq!(predict(c, 1_000, 10_000, 200_000).in_flight_packets, 3 + 500);
        assert_eq!(predict(c, 1_000, 1_200, 24_000).in_flight_packets, 3 + 200);
        // None replaced where the sample is the window.
        assert_eq!(predict(c, 1_000, 1_000, 20_000).in_flight_packets, 3);
    }

    #[test]
    fn a_prediction_never_loses_more_frames_than_were_sent() {
        // A device that loses nearly all: 1,000 frames a half dropped by the
        // core and 400 by the socket; its window started 2,000 ps before the
        // sample, with 3,000 drops counted by time in between; 7,000 ps of
        // window are left after the sample.
        let (core, socket) = (Fate::ALL.iter().position(|&f| f == Fate::RxFifoCore).unwrap(), Fate::ALL.iter().position(|&f| f == Fate::Socket).unwrap());
        let mark = |inside, c, so| {
            let mut fates = [0; N_FATES];
            (fates[core], fates[socket]) = (c, so);
            Mark { inside, fates, entries: 0 }
        };
        let mut c = counts(0, [(100, 0), (100, 0), (100, 0)], 1_100);
        c.marks = [mark(100, 3_000, 0), mark(100, 4_000, 400), mark(100, 5_000, 800)];
        c.pre = mark(100, 0, 0);
        (c.lost_by[core], c.lost_by[socket], c.offset_ps) = (2_000, 800, 2_000);
        // Of 40,000 sent: core 2,000 + 3,000 + 14,000, socket 800 + 5,600.
        let p = predict(c, 1_000, 10_000, 40_000);
        assert_eq!((p.drops[core], p.drops[socket], p.lost_packets(), p.in_flight_packets), (19_000, 6_400, 25_400, 3));
        // Of 12,000 sent, 3 still inside: 11,997 lost at most, 13,403 too
        // many. 10,025.9 of them off the core's and 3,377.1 off the socket's:
        // 10,025 and 3,377, and the last frame off the larger, the core's.
        let q = predict(c, 1_000, 10_000, 12_000);
        assert_eq!((q.drops[core], q.drops[socket], q.lost_packets() + q.in_flight_packets), (19_000 - 10_026, 6_400 - 3_377, 12_000));
        assert!((q.loss_rate() - 1.0).abs() < 1e-15);
        // The unclassified go first.
        let mut r = q;
        (r.drops, r.unclassified_drops) = (p.drops, 5_000);
        r.cap();
        assert_eq!((r.unclassified_drops, r.drops.iter().sum::<u64>()), (0, 11_997));
    }

    #[test]
    fn an_overflowed_sample_goes_on_at_its_second_halfs_rates() {
        // The buffers filled in the first half (900 frames grown, 100
        // dropped), then only drops: 60 in the second half, no more than in
        // the first. As a plain sample the whole slope (900 frames per
        // 1,000 ps) would go on growing into the 100 frames of room left;
        // as an overflow sample the second half's rates go on: no growth,
        // 60 drops per 500 ps for 9,000 ps more.
        let mut c = counts(160, [(100, 0), (1_000, 100), (1_000, 160)], 1_100);
        let plain = predict(c, 1_000, 10_000, 200_000);
        assert_eq!((plain.backlog_growth, plain.fill_ps), (1_000, Some(1_000 + 111)));
        c.overflowed = true;
        let p = predict(c, 1_000, 10_000, 200_000);
        assert_eq!((p.backlog_growth, p.fill_ps, p.lost_packets(), p.unclassified_drops), (900, None, 160 + 1_080, 0));
    }

    #[test]
    fn a_sample_after_a_longer_warm_up_counts_what_the_window_saw_before_it() {
        // The window starts 2,000 ps before the sample: the device held 60
        // frames then and had dropped none; by the sample's start it held
        // 100 and had dropped 10. Steady drops of 25 a half go on for the
        // 7,000 ps left after the sample, not 9,000.
        let mut c = counts(50, [(100, 10), (100, 35), (100, 60)], 1_100);
        c.offset_ps = 2_000;
        c.pre = Mark { inside: 60, fates: [0; N_FATES], entries: 0 };
        let p = predict(c, 1_000, 10_000, 200_000);
        assert_eq!((p.lost_packets(), p.backlog_growth, p.unclassified_drops), (10 + 50 + 350, 40, 0));
        // Growth of 100 frames over the sample fills the 1,000 frames of
        // room left 10,000 ps after it: past the window's end, 2,000 ps
        // sooner than without the offset.
        let mut g = counts(0, [(100, 0), (150, 0), (200, 0)], 1_200);
        g.offset_ps = 2_000;
        g.pre = g.marks[0];
        let q = predict(g, 1_000, 10_000, 200_000);
        assert_eq!((q.backlog_growth, q.fill_ps, q.lost_packets()), (100 + 700, None, 0));
    }

    #[test]
    fn loss_plus_growth_is_the_excess_over_the_window() {
        // 30 drops and 120 frames of growth each half (150 = the excess):
        // over 7 samples' time, 7 × 300 frames lost or grown.
        let p = predict(counts(60, [(100, 0), (220, 30), (340, 60)], 1_100), 1_000, 7_000, 140_000);
        assert_eq!(p.lost_packets() + p.backlog_growth, 2_100);
        assert_eq!((p.backlog_growth, p.fill_ps), (1_000, Some(1_000 + 3_167)));
    }

    #[test]
    fn halves_that_disagree_are_not_stationary() {
        // 10,000 frames a half: 0.5 % (50) plus 3 × 64 frames of noise allowed.
        let same = counts(0, [(100, 0), (100, 150), (100, 300)], 1_100);
        assert!(same.stationary(10_000.0, 0.005));
        let within = counts(0, [(100, 0), (100, 150), (100, 530)], 1_100);
        assert!(within.stationary(10_000.0, 0.005));
        let start_up = counts(0, [(100, 0), (100, 1_000), (100, 1_100)], 1_100);
        assert!(!start_up.stationary(10_000.0, 0.005));
    }

    #[test]
    fn any_entry_installed_over_the_window_is_a_transient() {
        let mut c = counts(0, [(100, 0); 3], 1_100);
        c.marks[0].entries = 1_000;
        c.marks[2].entries = 1_000;
        assert!(!c.tables_grew());
        c.marks[2].entries = 1_001;
        assert!(c.tables_grew());
    }

    #[test]
    fn the_warm_up_covers_every_buffer_flow_and_populated_key() {
        let mut cfg = SimConfig::default();
        assert_eq!(warmup_frames(&cfg, 1_000), 1_000);
        cfg.loadgen.flows = 4_096;
        assert_eq!(warmup_frames(&cfg, 1_000), 4_096);
        cfg.loadgen.memcached = Some(crate::loadgen::config::McClientConfig { keys: 10_000, ..Default::default() });
        assert_eq!(warmup_frames(&cfg, 1_000), 10_000);
        cfg.loadgen.memcached.as_mut().unwrap().populate = false;
        assert_eq!(warmup_frames(&cfg, 1_000), 4_096);
    }

    #[test]
    fn unstationary_loads_and_runs_shorter_than_a_sample_run_in_full() {
        let mut cfg = SimConfig::default();
        cfg.sim.fidelity = Fidelity::Fast;
        cfg.sim.warmup_ps = 100_000_000;
        // 1 ms at 100 Mpps: a warm-up of 1,000 buffered frames is 10 µs,
        // shorter than the configured 100 µs; the window, 19,200 frames: 192 µs.
        assert_eq!(plan(&cfg, 100e6, 1_000), Plan::Sample { warmup_ps: 100_000_000, window_ps: 192_000_000 });
        // 30,000 buffered frames: 300 µs of warm-up.
        assert_eq!(plan(&cfg, 100e6, 30_000), Plan::Sample { warmup_ps: 300_000_000, window_ps: 192_000_000 });
        // At 10 Mpps the configured window, 900 µs, is shorter than a
        // sample: it is the sample, after the configured warm-up.
        assert_eq!(plan(&cfg, 10e6, 1_000), Plan::Sample { warmup_ps: 100_000_000, window_ps: 900_000_000 });
        // A sample longer than the run: the run as configured.
        assert!(matches!(plan(&cfg, 10e6, 10_000), Plan::Full(w) if w.contains("longer than the run")));
        assert!(matches!(plan(&cfg, 0.0, 1_000), Plan::Full(w) if w.contains("no offered rate")));
        cfg.loadgen.capture_tx = Some("x.pcap".into());
        assert!(matches!(plan(&cfg, 100e6, 1_000), Plan::Full(w) if w.contains("captures")));
    }
}
