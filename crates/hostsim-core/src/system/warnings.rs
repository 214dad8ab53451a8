//! Warnings a result gives about itself: a device out of service, DRAM
//! waits that are an overload or bank timing, and DRAM row hits that
//! kept their latency though an earlier request went ahead of them.

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
        let mut ended: Vec<String> = causes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if n("in_flight") > 0 {
            ended.push(format!("still in flight {}", n("in_flight")));
        }
        let mut why = String::new();
        if causes.iter().any(|c| c.0 == Fate::NoSocket.name()) {
            why = if cfg.loadgen.protocol == crate::loadgen::config::Protocol::Raw {
                "; the frames are raw Ethernet (loadgen.protocol raw), which no socket takes: udp-echo answers UDP, iperf TCP".to_owned()
            } else {
                format!(
                    "; no socket listens on UDP/TCP port {} (loadgen.dst_port): udp-echo answers on host.app.echo_port, iperf on host.app.iperf_port",
                    cfg.loadgen.dst_port
                )
            };
        }
        w.push(format!("the device answered none of the {} frames sent in the measured window (they ended as: {}){why}", n("sent"), ended.join(", ")));
    }
    let said = |w: &Value| w.as_array().is_some_and(|a| a.iter().any(|w| w.as_str().is_some_and(|w| w.contains("nothing was measured"))));
    if n("sent") == 0 && cfg.loadgen.tcp.is_none() && !said(&out["warnings"]) {
        // A rate too low for one frame in the window, or a generator that never sent.
        let lg = &out["loadgen"];
        let window_s = lg["measured_window_ps"].as_f64().unwrap_or(0.0) / 1e12;
        let expected = lg["requested_pps"].as_f64().unwrap_or(0.0) * window_s;
        let why = if expected < 1.0 {
            format!(": loadgen.rate asks for {expected:.3e} frames in its {:.3} us (raise loadgen.rate or sim.duration)", window_s * 1e6)
        } else {
            String::new()
        };
        w.push(format!("no frame was sent in the measured window; nothing was measured{why}"));
    }
    if let Some(k) = out["app"]["not_requests"].as_u64().filter(|&k| k > 0) {
        w.push(format!(
            "the application counted {k} frames that are not requests it serves (app.not_requests): for memcached, drive it with its client (loadgen.memcached) or a trace of requests; \
             udp-echo answers UDP datagrams to host.app.echo_port"
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
            // queued behind bank accesses requested before them that they
            // cannot fit in front of (mem/banks.rs).
            w.push(format!(
                "DRAM transfers waited {:.2} us each on average (mem.dram.queue_wait_ps) with the data buses only {:.1} % busy: \
                 not a bandwidth overload but bank timing (row conflicts, refresh), or requests queued behind bank accesses requested before them; \
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

/// `host.app` settings the user gave (`SimConfig::given`) that the
/// application run does not read (each belongs to another application):
/// said whatever their values, not silently ignored.
pub(super) fn unread_app_settings(out: &mut Value, cfg: &SimConfig, registry: &crate::apps::Registry) {
    let Some(entry) = registry.get(&cfg.app).filter(|_| cfg.host.is_some()) else { return };
    let mut unread: Vec<String> = vec![];
    for key in &cfg.given {
        let Some(path) = key.strip_prefix("host.app.") else { continue };
        let setting = path.split('.').next().unwrap_or(path);
        // Every forwarding application reads the port topology.
        if setting == "port_topology" || entry.reads.contains(&setting) {
            continue;
        }
        let name = format!("host.app.{}", path.strip_suffix("_ps").unwrap_or(path));
        if !unread.contains(&name) {
            unread.push(name);
        }
    }
    if unread.is_empty() {
        return;
    }
    let w = format!("{} set but not read by --app {} (each belongs to another application): ignored", unread.join(", "), cfg.app);
    if let Some(a) = out["warnings"].as_array_mut() {
        a.push(Value::String(w));
    }
}

/// Settings the run's other choices make moot, said rather than dropped:
/// a PMD burst under the kernel stack, the reflector's settings beside a
/// host application (each when the user set it: `config::user_set`), a
/// flow skew over a single flow.
pub(super) fn moot_settings(out: &mut Value, cfg: &SimConfig) {
    let mut said = vec![];
    let set = |key: &str, changed: bool| crate::config::user_set(&cfg.given, key, changed);
    if let Some(h) = cfg.host.as_ref().filter(|_| cfg.stack == crate::config::Stack::Kernel) {
        let pmd = crate::stack::pmd::config::PmdConfig::default();
        if set("host.pmd.burst", h.pmd.burst != pmd.burst) {
            said.push(format!(
                "host.pmd.burst ({}) is ignored with stack = kernel: NAPI polls up to host.kernel.napi_budget ({}) frames a call",
                h.pmd.burst, h.kernel.napi_budget
            ));
        }
    }
    if cfg.app != "reflector" {
        // The harness's own device stands in for a host: a host application has none.
        let (values, default) = (serde_json::to_value(&cfg.reflector), serde_json::to_value(crate::config::ReflectorConfig::default()));
        if let (Ok(Value::Object(values)), Ok(default)) = (values, default) {
            let names: Vec<String> = values
                .iter()
                .filter(|(k, v)| set(&format!("reflector.{k}"), default.get(k.as_str()) != Some(*v)))
                .map(|(k, _)| format!("reflector.{}", k.trim_end_matches("_ps")))
                .collect();
            if !names.is_empty() {
                said.push(format!("{} ignored: only --app reflector has the reflector; --app {} runs on the host model", names.join(", "), cfg.app));
            }
        }
    }
    let lg = &cfg.loadgen;
    if lg.flow_skew != 0.0 && lg.flows == 1 && lg.trace.is_none() {
        said.push(format!("loadgen.flow_skew ({}) has no effect with loadgen.flows = 1: every frame is the one flow's", lg.flow_skew));
    }
    if let Some(a) = out["warnings"].as_array_mut() {
        a.extend(said.into_iter().map(Value::String));
    }
}

/// Mean DRAM wait per line above which a result says so: 1 µs, over ten
/// times an idle DRAM access (params.md §4).
const DRAM_WAIT_WARN_PS: u64 = 1_000_000;
/// Data-bus utilisation (`mem.dram.util`) from which long DRAM waits are
/// put down to bandwidth: an M/D/1 queue at 0.5 waits half a transfer on
/// average, so microseconds of wait below it are not the bus's.
const DRAM_BUSY_UTIL: f64 = 0.5;

/// Row hits that an access requested before them, but booked after
/// them, went ahead of with another row (`mem.dram.passed_hits`): a core
/// books a work unit's misses when it starts the unit, ahead of the
/// devices, and a bank serves the devices' requests in request order
/// all the same (mem/banks.rs); the hits they pass keep the latency they
/// were given, where in request order they were row conflicts.
pub(super) fn dram_order(out: &mut Value) {
    let d = &out["mem"]["dram"];
    let n = |k: &str| d[k].as_u64().unwrap_or(0);
    let (passed, accesses) = (n("passed_hits"), n("row_hits") + n("row_misses") + n("row_conflicts"));
    if passed < PASSED_MIN || (passed as f64) < PASSED_SHARE * accesses as f64 {
        return;
    }
    let w = format!(
        "{PASSED}: {passed} row hits, {:.1} % of the DRAM accesses, were passed by an access to another row requested before them \
         but booked after them (mem.dram.passed_hits): a core books a work unit's misses when it starts the unit, ahead of the \
         devices; in request order those hits were row conflicts (at least tRP + tRCD later), so the latencies they were given (mostly cores') are optimistic here",
        passed as f64 * 100.0 / accesses as f64
    );
    if let Some(a) = out["warnings"].as_array_mut() {
        a.push(Value::String(w));
    }
}

/// How the warning starts that row hits kept latencies a request order
/// would not give them.
pub const PASSED: &str = "DRAM row hits were passed out of booking order";

/// Share of the DRAM accesses from which passed hits are warned of
/// (estimate: at 5 % the mean access on `a72-quad`'s DDR4-3200 is short
/// by 5 % of tRP + tRCD, 1.4 ns, about 2 % of a core's 62 ns; the runs of
/// docs/reference/dram-pcie.md have at most 0.81 %).
const PASSED_SHARE: f64 = 0.05;
/// Passed hits below which a result does not warn (estimate: fewer are
/// too few for a share to mean anything).
const PASSED_MIN: u64 = 100;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with(passed: u64, hits: u64) -> Value {
        let mut out = json!({"warnings": [], "mem": {"dram": {"passed_hits": passed, "row_hits": hits, "row_misses": 500, "row_conflicts": 500}}});
        dram_order(&mut out);
        out
    }

    #[test]
    fn many_passed_hits_warn_with_their_share() {
        let out = with(150, 1_000);
        let w = out["warnings"][0].as_str().unwrap();
        assert!(w.starts_with(&format!("{PASSED}: 150 row hits, 7.5 % of the DRAM accesses")), "{w}");
        // Under 5 % of the accesses, or too few: no warning.
        assert_eq!(with(140, 2_000)["warnings"], json!([]));
        assert_eq!(with(99, 0)["warnings"], json!([]));
        // A reflector's result has no DRAM at all.
        let mut bare = json!({"warnings": []});
        dram_order(&mut bare);
        assert_eq!(bare["warnings"], json!([]));
    }
}
