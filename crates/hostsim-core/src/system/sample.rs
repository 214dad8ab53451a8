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
//! The result's counts, rates and statistics are the sample's, exactly as
//! the full model gives them for the shortened run (the conservation
//! identity holds over it); `sim.sample` says what the sample stands for
//! and what the fluid model predicts for the configured window.
//!
//! What it assumes, and where it falls back to the full model:
//! * The load is stationary. A trace replay, a closed loop, TCP, a host
//!   that sends on its own (no offered rate), and captures (which should
//!   hold every frame of the configured run) are run in full.
//! * The device's service rate does not depend on how full its buffers are.
//!   The sample sees the buffers only as full as its own growth leaves
//!   them; a device that serves more slowly with full rings (leaky DMA
//!   out of the DCA ways, say) is predicted too fast.
//! * The caches are warm by the end of `sim.warmup`.
//! * A window no longer than the sample is simulated whole.

use serde_json::{json, Value};

use crate::config::{Fidelity, SimConfig};
use crate::engine::time::Ps;
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
fn not_stationary(cfg: &SimConfig) -> Option<&'static str> {
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

/// The sample for a run offering `offered_pps` in all (its sending ports'
/// sum) to a device that holds `buffer_frames`, or why the whole run is
/// simulated. The warm-up lasts at least until `buffer_frames` frames were
/// sent, so that every buffer could have been used and its lines cached
/// once before measuring (an estimate: 0.1 ms of TestPMD 64 B at 29 Mpps,
/// 2,900 frames, left the buffers growing 1 % faster than after 0.3 ms),
/// which may be longer than `sim.warmup`; the window, [`SAMPLE_FRAMES`]
/// frames or the configured window if shorter. A sample longer than the
/// run would cost more than the run: the run is simulated as configured.
pub fn plan(cfg: &SimConfig, offered_pps: f64, buffer_frames: u64) -> Plan {
    if let Some(why) = not_stationary(cfg) {
        return Plan::Full(why.into());
    }
    if !(offered_pps > 0.0) {
        return Plan::Full("no offered rate: the device or a TCP sink sets the pace".into());
    }
    let time = |frames: u64| (frames as f64 / offered_pps * 1e12).ceil().min(u64::MAX as f64) as Ps;
    let warmup_ps = cfg.sim.warmup_ps.max(time(buffer_frames));
    let window_ps = (cfg.sim.duration_ps - cfg.sim.warmup_ps).min(time(SAMPLE_FRAMES));
    if warmup_ps.saturating_add(window_ps) > cfg.sim.duration_ps {
        return Plan::Full(format!(
            "a sample ({warmup_ps} ps of warm-up, what sending the {buffer_frames} frames the device buffers takes, and {window_ps} ps of window) is longer than the run ({} ps)",
            cfg.sim.duration_ps
        ));
    }
    Plan::Sample { warmup_ps, window_ps }
}

/// The fluid model's prediction for the configured window from a sample's counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub tx_packets: u64,
    /// Dropped frames, the buffers' overflow included.
    pub lost_packets: u64,
    pub in_flight_packets: u64,
    /// Frames the buffers grow by over the window (at most their headroom).
    pub backlog_growth: u64,
    /// When the buffers fill, after the window starts (ps), if they do.
    pub fill_ps: Option<Ps>,
}

impl Prediction {
    pub fn loss_rate(&self) -> f64 {
        (self.lost_packets + self.in_flight_packets) as f64 / self.tx_packets.max(1) as f64
    }
}

/// The sample's measured-window counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleCounts {
    pub tx: u64,
    pub lost: u64,
    pub in_flight: u64,
    /// Frames inside the device when warm-up ended.
    pub backlog_start: u64,
    /// Growth of that over the sample's window (0 within the noise).
    pub growth: u64,
    /// Frames the device can hold.
    pub buffer_frames: u64,
}

/// Scales the sample's window (`sample_ps`) to the configured one
/// (`window_ps`): sending, dropping and growth go on at the sample's
/// rates; growth stops when the buffers are full and becomes loss from
/// then on. Frames still inside at the end are the sample's: the drain is
/// the same.
pub fn predict(s: SampleCounts, sample_ps: Ps, window_ps: Ps) -> Prediction {
    let k = window_ps as f64 / sample_ps.max(1) as f64;
    let grown = s.growth as f64 * k;
    let headroom = s.buffer_frames.saturating_sub(s.backlog_start) as f64;
    let growth = grown.min(headroom);
    let fill_ps = (grown > headroom && s.growth > 0).then(|| (headroom / s.growth as f64 * sample_ps as f64).round() as Ps);
    Prediction {
        tx_packets: (s.tx as f64 * k).round() as u64,
        lost_packets: (s.lost as f64 * k + (grown - growth)).round() as u64,
        in_flight_packets: s.in_flight,
        backlog_growth: growth.round() as u64,
        fill_ps,
    }
}

/// Runs `cfg` at the fast fidelity: the sample with the full model, then
/// the prediction; or the whole run where it cannot be sampled.
pub fn run(cfg: &SimConfig, registry: &crate::apps::Registry) -> Result<Value> {
    debug_assert_eq!(cfg.sim.fidelity, Fidelity::Fast);
    // Asked only of a stationary load (a capture's generator opens its file).
    let (offered, mean_bytes) = if not_stationary(cfg).is_some() { (0.0, 0.0) } else { super::offered_pps(cfg, registry)? };
    let buffer_frames = cfg.buffers(mean_bytes).iter().map(|b| b.2).sum();
    let plan = plan(cfg, offered, buffer_frames);
    let Plan::Sample { warmup_ps, window_ps: sample_ps } = plan else {
        let Plan::Full(why) = plan else { unreachable!() };
        let mut out = super::run_detailed(cfg, registry, false)?;
        out["sim"]["fidelity"] = json!("fast");
        out["sim"]["sample"] = json!({"sampled": false, "why": why});
        return Ok(out);
    };
    let mut short = cfg.clone();
    short.sim.warmup_ps = warmup_ps;
    short.sim.duration_ps = warmup_ps + sample_ps;
    let wall = std::time::Instant::now();
    let mut out = super::run_detailed(&short, registry, true)?;
    let wall_s = wall.elapsed().as_secs_f64();
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let (lg, sim) = (&out["loadgen"], &out["sim"]);
    let start = n(&sim["backlog_frames"]["warmup_end"]);
    let raw = n(&sim["backlog_frames"]["tx_end"]).saturating_sub(start);
    let counts = SampleCounts {
        tx: n(&lg["tx_packets"]),
        lost: n(&lg["lost_packets"]),
        in_flight: n(&lg["in_flight_packets"]),
        backlog_start: start,
        growth: if raw > super::BACKLOG_NOISE_FRAMES { raw } else { 0 },
        buffer_frames: n(&sim["buffer_frames"]),
    };
    let window_ps = cfg.sim.duration_ps - cfg.sim.warmup_ps;
    let mut p = predict(counts, sample_ps, window_ps);
    // What the window sends is known without sampling: the offered rate's.
    p.tx_packets = (offered * window_ps as f64 / 1e12).round() as u64;
    // What the configured run sends in all, at the offered rate.
    let represented = (offered * cfg.sim.duration_ps as f64 / 1e12).round() as u64;
    let growth_rate = if p.backlog_growth > super::BACKLOG_NOISE_FRAMES { p.backlog_growth as f64 / p.tx_packets.max(1) as f64 } else { 0.0 };
    // More than a burst's worth and 1 % of what was sent: an overload the
    // sample's buffers take up (as `system::run_detailed` warns of a full run).
    if counts.growth > 0 && (p.fill_ps.is_some() || counts.growth * 100 > counts.tx) {
        let what = match p.fill_ps {
            Some(fill) => format!("fills them {:.3} ms into the {:.3} ms window and loses {:.2} % of it", fill as f64 / 1e9, window_ps as f64 / 1e9, p.loss_rate() * 100.0),
            None => format!("does not fill them within the {:.3} ms window, so drops would show only in a longer run (sim.duration)", window_ps as f64 / 1e9),
        };
        let w = format!(
            "the device fell behind: its buffers ({} frames) grew by {} frames over the {:.3} ms sample ({:.2} % of the {} sent); at that pace the fluid model {what}",
            counts.buffer_frames,
            counts.growth,
            sample_ps as f64 / 1e9,
            counts.growth as f64 * 100.0 / counts.tx.max(1) as f64,
            counts.tx,
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
        "represented_window_ps": window_ps,
        "represented_duration_ps": cfg.sim.duration_ps,
        "represented_packets": represented,
        "represented_packets_per_wall_s": if wall_s > 0.0 { represented as f64 / wall_s } else { 0.0 },
        "predicted": {
            "tx_packets": p.tx_packets,
            "lost_packets": p.lost_packets,
            "in_flight_packets": p.in_flight_packets,
            "loss_rate": p.loss_rate(),
            "backlog_growth_frames": p.backlog_growth,
            "backlog_growth_rate": growth_rate,
            "buffers_fill_ps": p.fill_ps,
        },
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(tx: u64, lost: u64, growth: u64) -> SampleCounts {
        SampleCounts { tx, lost, in_flight: 3, backlog_start: 100, growth, buffer_frames: 1_100 }
    }

    #[test]
    fn a_steady_sample_scales_by_the_window() {
        // 10 × the sample: sending and losing at the sample's rates.
        let p = predict(counts(20_000, 50, 0), 1_000, 10_000);
        assert_eq!((p.tx_packets, p.lost_packets, p.in_flight_packets, p.backlog_growth, p.fill_ps), (200_000, 500, 3, 0, None));
        assert!((p.loss_rate() - 503.0 / 200_000.0).abs() < 1e-15);
    }

    #[test]
    fn growth_fills_the_buffers_then_becomes_loss() {
        // 200 frames of growth per 1,000 ps; 1,000 frames of headroom: full
        // after 5,000 ps; the other 5 samples' worth (1,000 frames) is lost.
        let p = predict(counts(20_000, 0, 200), 1_000, 10_000);
        assert_eq!((p.backlog_growth, p.lost_packets, p.fill_ps), (1_000, 1_000, Some(5_000)));
        // Growth that never fills them stays growth.
        let q = predict(counts(20_000, 0, 90), 1_000, 10_000);
        assert_eq!((q.backlog_growth, q.lost_packets, q.fill_ps), (900, 0, None));
    }

    #[test]
    fn loss_plus_growth_is_the_samples_over_the_window() {
        // What the bandwidth test adds up (loss + growth, over what was
        // sent) is the same for the sample and the prediction, but for the
        // frames left in flight, which do not scale.
        let c = counts(20_000, 40, 300);
        let p = predict(c, 1_000, 7_000);
        let sample = (c.lost + c.growth) as f64 / c.tx as f64;
        let predicted = (p.lost_packets + p.backlog_growth) as f64 / p.tx_packets as f64;
        assert!((sample - predicted).abs() < 1e-4, "{sample} vs {predicted}");
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
