//! Warnings a result gives about itself: a device out of service, DRAM
//! waits that are an overload or bank timing, and DMA reads that waited
//! behind DRAM accesses booked out of time order.

use serde_json::Value;

use crate::config::SimConfig;
use crate::framebuf::Fate;

/// A device that answered none of the generator's frames, or an
/// application that counted frames that are not what it serves, says why.
pub(super) fn out_of_service(out: &mut Value, cfg: &SimConfig) {
    let mut w = Vec::new();
    let m = &out["accounting"]["measured"];
    let n = |k: &str| m[k].as_u64().unwrap_or(0);
    if n("sent") > 0 && n("returned") + n("consumed") == 0 {
        let mut causes: Vec<(String, u64)> = m["drops"].as_object().into_iter().flatten().filter_map(|(k, v)| Some((k.clone(), v.as_u64()?))).filter(|c| c.1 > 0).collect();
        causes.sort_by(|a, b| b.1.cmp(&a.1));
        let ended: Vec<String> = causes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let mut why = String::new();
        if causes.iter().any(|c| c.0 == Fate::NoSocket.name()) {
            why = format!(
                "; no socket listens on UDP/TCP port {} (loadgen.dst_port): udp-echo answers on host.app.echo_port, iperf on host.app.iperf_port",
                cfg.loadgen.dst_port
            );
        }
        w.push(format!("the device answered none of the {} frames sent in the measured window (they ended as: {}){why}", n("sent"), ended.join(", ")));
    }
    if let Some(k) = out["app"]["not_requests"].as_u64().filter(|&k| k > 0) {
        w.push(format!(
            "the application counted {k} frames that are not requests it serves (app.not_requests): for memcached, drive it with its client (loadgen.memcached) or a trace of requests"
        ));
    }
    // A DRAM channel books each transfer into the first idle gap at or
    // after its time (mem/dram.rs), so a mean wait of microseconds per line
    // is an overload.
    let d = &out["mem"]["dram"];
    let bytes: u64 = d.as_object().into_iter().flatten().filter(|(k, _)| k.starts_with("bytes_")).filter_map(|(_, v)| v.as_u64()).sum();
    if let Some(wait) = d["queue_wait_ps"].as_u64().filter(|_| bytes > 0) {
        let per_line = wait as f64 / (bytes / 64).max(1) as f64;
        let util = d["util"].as_f64().unwrap_or(1.0);
        if per_line > DRAM_WAIT_WARN_PS as f64 && util >= DRAM_BUSY_UTIL {
            w.push(format!(
                "DRAM transfers waited {:.2} us each on average (mem.dram.queue_wait_ps) with the data buses {:.0} % busy: \
                 the channels are overloaded (mem.dram.channels, mem.dram.channel_bandwidth_bytes_per_s)",
                per_line / 1e6,
                util * 100.0
            ));
        } else if per_line > DRAM_WAIT_WARN_PS as f64 {
            // Bank timing (row conflicts, tRAS, refresh), or requests
            // queued behind bank accesses booked before they came that
            // they cannot fit in front of (mem/banks.rs).
            w.push(format!(
                "DRAM transfers waited {:.2} us each on average (mem.dram.queue_wait_ps) with the data buses only {:.1} % busy: \
                 not a bandwidth overload but bank timing (row conflicts, refresh), or requests queued behind bank accesses booked before them; \
                 latencies that include these waits are pessimistic",
                per_line / 1e6,
                util * 100.0
            ));
        }
    }
    if let Some(a) = out["warnings"].as_array_mut() {
        a.extend(w.into_iter().map(Value::String));
    }
}

/// Mean DRAM wait per line above which a result says so: 1 µs, over ten
/// times an idle DRAM access (params.md §4).
const DRAM_WAIT_WARN_PS: u64 = 1_000_000;
/// Data-bus utilisation (`mem.dram.util`) from which long DRAM waits are
/// put down to bandwidth: an M/D/1 queue at 0.5 waits half a transfer on
/// average, so microseconds of wait below it are not the bus's.
const DRAM_BUSY_UTIL: f64 = 0.5;

/// DMA reads (a NIC's and the copy engine's) whose DRAM time was largely
/// waiting behind accesses requested after them but booked before them
/// (`mem.dram.reads_overtaken_*`): a core books a work unit's misses when
/// it starts the unit, ahead of the devices, so the device's reads find
/// those bookings in their way where a controller serving requests as
/// they arrive would have served the device first.
pub(super) fn dram_order(out: &mut Value) {
    let d = &out["mem"]["dram"];
    let sum = |k: &str| ["device", "engine"].iter().map(|a| d[format!("{k}_{a}")].as_u64().unwrap_or(0)).sum::<u64>();
    let (n, wait, latency) = (sum("reads_overtaken"), sum("overtaken_wait_ps"), sum("read_latency_ps"));
    if n < OVERTAKEN_MIN_READS || (wait as f64) < OVERTAKEN_SHARE * latency as f64 {
        return;
    }
    let dropped = match out["drops"]["dma"].as_u64() {
        Some(k) if k > 0 => format!("; the {k} frames the receive FIFOs dropped (drops.dma) may be the booking order's, not the hardware's"),
        _ => String::new(),
    };
    let w = format!(
        "{OVERTAKEN}: {:.0} % of their DRAM time was waiting behind accesses requested after them but booked before them \
         (mem.dram.overtaken_wait_ps_device over read_latency_ps_device, the copy engine's added; {n} reads overtaken): \
         a core books a work unit's misses when it starts the unit, ahead of the devices, where a memory controller would \
         serve the earlier requests first; the DMA path's latency is pessimistic here, and what it sustains a lower bound{dropped}",
        wait as f64 * 100.0 / latency as f64
    );
    if let Some(a) = out["warnings"].as_array_mut() {
        a.push(Value::String(w));
    }
}

/// How the warning starts that the DMA reads were overtaken at their banks.
pub const OVERTAKEN: &str = "the DMA reads waited behind DRAM accesses booked out of time order";

/// Share of the DMA reads' DRAM read time spent overtaken from which a
/// result warns: a third (estimate: 12 % in a run that keeps up, 49 % in
/// one whose DMA path fell behind, docs/reference/dram-pcie.md).
const OVERTAKEN_SHARE: f64 = 1.0 / 3.0;
/// Overtaken reads below which a result does not warn (estimate: fewer
/// are too few for a share to mean anything).
const OVERTAKEN_MIN_READS: u64 = 100;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with(n: u64, wait: u64, latency: u64) -> Value {
        let mut out = json!({"warnings": [], "mem": {"dram": {
            "reads_overtaken_device": n, "overtaken_wait_ps_device": wait, "read_latency_ps_device": latency,
            "reads_overtaken_engine": 0, "overtaken_wait_ps_engine": 0, "read_latency_ps_engine": 0,
        }}});
        dram_order(&mut out);
        out
    }

    #[test]
    fn dma_reads_mostly_overtaken_warn_with_their_share() {
        let out = with(150, 50_000_000, 100_000_000);
        let w = out["warnings"][0].as_str().unwrap();
        assert!(w.starts_with(&format!("{OVERTAKEN}: 50 % of their DRAM time")) && w.contains("150 reads overtaken"), "{w}");
        assert!(!w.contains("drops.dma"), "{w}");
        // Frames the DMA path dropped are named.
        let mut lost = with(0, 0, 0);
        lost["mem"] = with(150, 50_000_000, 100_000_000)["mem"].clone();
        lost["drops"] = json!({"dma": 143});
        dram_order(&mut lost);
        assert!(lost["warnings"][0].as_str().unwrap().ends_with("the 143 frames the receive FIFOs dropped (drops.dma) may be the booking order's, not the hardware's"));
        // Under a third of the time, or too few reads: no warning.
        assert_eq!(with(150, 33_000_000, 100_000_000)["warnings"], json!([]));
        assert_eq!(with(99, 50_000_000, 100_000_000)["warnings"], json!([]));
        // A reflector's result has no DRAM at all.
        let mut bare = json!({"warnings": []});
        dram_order(&mut bare);
        assert_eq!(bare["warnings"], json!([]));
    }
}
