//! Invariants every result must satisfy. The system checks each result it
//! assembles and puts a violation in `warnings` (naming the invariant);
//! tests run through `system::checked_run`, which asserts there is none.
//!
//! * conservation: every frame a generator sent came back, was consumed by
//!   the device, was dropped by a named buffer, or is still in flight —
//!   exactly, over the measured window and over the whole run; and the
//!   generator's own counts agree with that ledger;
//! * rates: offered ≤ line rate, received ≤ sent;
//! * utilisations ≤ 100 % (each PCIe direction, the DRAM channels);
//! * latency no shorter than the link's propagation (a consumed frame is
//!   measured one way) and no longer than the run;
//! * TCP goodput no more than the protocol's ceiling on the link.

use serde_json::Value;

/// Relative slack for comparisons of rates computed in floating point.
const EPS: f64 = 1e-9;

fn u(v: &Value, path: &[&str]) -> Option<u64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_u64()
}

fn f(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

/// Conservation in one ledger row (`accounting.measured`, `.total`, a port's).
fn row_violations(name: &str, row: &Value, out: &mut Vec<String>) {
    let g = |k: &str| u(row, &[k]).unwrap_or(0);
    let (sent, returned, consumed, dropped, in_flight) = (g("sent"), g("returned"), g("consumed"), g("dropped"), g("in_flight"));
    if sent != returned + consumed + dropped + in_flight {
        out.push(format!(
            "conservation: {name}: sent {sent} != returned {returned} + consumed {consumed} + dropped {dropped} + in flight {in_flight}"
        ));
    }
    let by_cause: u64 = row.get("drops").and_then(Value::as_object).map_or(0, |d| d.values().filter_map(Value::as_u64).sum());
    if by_cause != dropped {
        out.push(format!("conservation: {name}: drops by cause sum to {by_cause}, dropped is {dropped}"));
    }
}

/// Every invariant the result breaks, one line each (empty when it holds).
pub fn violations(r: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let lg = &r["loadgen"];
    if let Some(acc) = r.get("accounting") {
        row_violations("accounting.measured", &acc["measured"], &mut out);
        row_violations("accounting.total", &acc["total"], &mut out);
        for (p, port) in acc.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
            row_violations(&format!("accounting.ports[{p}].measured"), &port["measured"], &mut out);
            row_violations(&format!("accounting.ports[{p}].total"), &port["total"], &mut out);
        }
        let m = &acc["measured"];
        let sent = u(m, &["sent"]).unwrap_or(0);
        if u(lg, &["tx_packets"]) != Some(sent) {
            out.push(format!("conservation: loadgen.tx_packets {:?} != frames sent in the window {sent}", u(lg, &["tx_packets"])));
        }
        // The memcached client counts replies (several datagrams, pairing by id), not frames.
        if lg.get("memcached").is_none() {
            let back = u(m, &["returned"]).unwrap_or(0) + u(m, &["consumed"]).unwrap_or(0);
            if u(lg, &["rx_packets"]) != Some(back) {
                out.push(format!("conservation: loadgen.rx_packets {:?} != frames of the window returned or consumed {back}", u(lg, &["rx_packets"])));
            }
            if u(lg, &["lost_packets"]) != u(m, &["dropped"]) {
                out.push(format!("conservation: loadgen.lost_packets {:?} != frames of the window dropped {:?}", u(lg, &["lost_packets"]), u(m, &["dropped"])));
            }
        }
    } else {
        out.push("conservation: the result has no accounting".into());
    }
    let (tx, rx) = (u(lg, &["tx_packets"]).unwrap_or(0), u(lg, &["rx_packets"]).unwrap_or(0));
    if lg.get("memcached").is_none() && rx > tx {
        out.push(format!("rates: loadgen received {rx} frames of the window but sent {tx}"));
    }
    // On the wire a frame takes its bytes plus preamble, start delimiter and
    // inter-frame gap: no generator port can put more than its link's rate.
    let window_s = f(lg, &["measured_window_ps"]).unwrap_or(0.0) / 1e12;
    if let (Some(link), true) = (f(lg, &["link_rate_bps"]), window_s > 0.0) {
        // The window holds the whole wire slot of every frame counted in it.
        let most = link * (1.0 + EPS);
        for (p, row) in lg.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let (bytes, frames) = (f(row, &["tx_bytes"]).unwrap_or(0.0), f(row, &["tx_packets"]).unwrap_or(0.0));
            // A frame's wire time is a whole picosecond, rounded to the
            // nearest (`engine::time::bits_to_ps`): each may be up to half a
            // picosecond short of its exact time (3 ppb at 4.5 Gb/s).
            let wire_bps = (bytes + crate::link::WIRE_OVERHEAD_BYTES as f64 * frames) * 8.0 / (window_s + frames * 0.5e-12);
            if wire_bps > most {
                out.push(format!("rates: port {p} offered {wire_bps:.6e} bit/s on the wire, above its link's {link:.6e} bit/s"));
            }
        }
    }
    for (i, nic) in r.get("nics").and_then(Value::as_array).into_iter().flatten().enumerate() {
        for (path, dirs) in [("pcie", &["up_util", "down_util"][..]), ("iobus", &["up_util", "down_util", "pio_util", "pio_resp_util"][..])] {
            for dir in dirs {
                if let Some(x) = f(nic, &[path, dir]).filter(|&x| x > 1.0 + EPS) {
                    out.push(format!("utilisation: nics[{i}].{path}.{dir} = {x:.4} > 1"));
                }
            }
        }
    }
    if let Some(x) = f(r, &["mem", "dram", "util"]).filter(|&x| x > 1.0 + EPS) {
        out.push(format!("utilisation: mem.dram.util = {x:.4} > 1"));
    }
    let span_ns = f(r, &["sim", "simulated_ps"]).unwrap_or(f64::INFINITY) / 1e3;
    let path_min_ns = f(r, &["sim", "path_min_ps"]).unwrap_or(0.0) / 1e3;
    if let Some(min) = f(lg, &["latency_ns", "min"]).filter(|&x| x < path_min_ns) {
        out.push(format!("latency: minimum {min} ns is shorter than the link's propagation ({path_min_ns} ns)"));
    }
    if let (Some(goodput), Some(link), Some(mean)) = (f(lg, &["goodput_bps"]), f(lg, &["link_rate_bps"]), f(lg, &["mean_frame_bytes"])) {
        // TCP over Ethernet carries at most the payload share of each frame on the wire.
        let headers = (crate::wire::TCP_HEADERS + crate::wire::ethernet::FCS_LEN) as f64;
        let ports = f(lg, &["sending_ports"]).unwrap_or(1.0).max(1.0);
        let ceiling = link * ports * (mean - headers).max(0.0) / (mean + crate::link::WIRE_OVERHEAD_BYTES as f64);
        let slack = if window_s > 0.0 { f(lg, &["max_frame_bytes"]).unwrap_or(0.0) * 8.0 * ports / window_s } else { 0.0 };
        if goodput > ceiling * (1.0 + EPS) + slack {
            out.push(format!("goodput: {goodput:.6e} bit/s of TCP payload exceeds the protocol's ceiling {ceiling:.6e} bit/s"));
        }
    }
    if let Some(max) = f(lg, &["latency_ns", "max"]).filter(|&x| x > span_ns) {
        out.push(format!("latency: maximum {max:.0} ns exceeds the run ({span_ns:.0} ns)"));
    }
    out
}

/// Panics with every violation (for tests).
pub fn assert_holds(r: &Value) {
    let v = violations(r);
    assert!(v.is_empty(), "invariants violated:\n  {}", v.join("\n  "));
}


#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A result that keeps every invariant: 100 frames sent, 90 back, 6
    /// dropped, 4 in flight, at 1 % of a 100 Gb/s link over 1 ms.
    fn good() -> Value {
        let row = json!({"sent": 100, "returned": 90, "consumed": 0, "dropped": 6, "in_flight": 4, "drops": {"rx_fifo_core": 6}});
        json!({
            "accounting": {"measured": row, "total": row},
            "loadgen": {
                "tx_packets": 100, "rx_packets": 90, "lost_packets": 6, "tx_bytes": 6400, "max_frame_bytes": 64,
                "link_rate_bps": 1e11, "measured_window_ps": 1_000_000_000u64, "sending_ports": 1,
                "latency_ns": {"min": 2000.0, "max": 9000.0},
                "ports": [{"tx_bytes": 6400, "tx_packets": 100}],
            },
            "nics": [{"pcie": {"up_util": 0.5, "down_util": 0.2}}],
            "mem": {"dram": {"util": 0.3}},
            "sim": {"simulated_ps": 2_000_000_000u64, "path_min_ps": 1_000_000},
        })
    }

    fn broken(path: &str, value: Value) -> Vec<String> {
        let mut r = good();
        *r.pointer_mut(path).unwrap_or_else(|| panic!("{path}")) = value;
        violations(&r)
    }

    #[test]
    fn a_result_that_keeps_every_invariant_passes() {
        assert_eq!(violations(&good()), Vec::<String>::new());
    }

    /// At 4.5 Gb/s a 64 B frame's wire time is 149 333.3 ps, taken as
    /// 149 333 ps: frames back to back pass the exact rate by 2.2 ppb, which
    /// the rate invariant allows (it fired); a picosecond shorter does not pass.
    #[test]
    fn the_rate_invariant_allows_the_picosecond_rounding_and_no_more() {
        let at = |slot_ps: u64| {
            let n = 6696u64;
            let mut r = good();
            r["loadgen"]["link_rate_bps"] = json!(4.5e9);
            r["loadgen"]["measured_window_ps"] = json!(n * slot_ps);
            r["loadgen"]["ports"] = json!([{"tx_bytes": 64 * n, "tx_packets": n}]);
            violations(&r)
        };
        assert_eq!(at(149_333), Vec::<String>::new());
        assert!(at(149_332).iter().any(|v| v.starts_with("rates: port 0 offered")), "{:?}", at(149_332));
    }

    #[test]
    fn every_broken_invariant_is_named() {
        for (path, value, words) in [
            ("/accounting/measured/in_flight", json!(3), "conservation: accounting.measured: sent 100"),
            ("/accounting/total/drops/rx_fifo_core", json!(5), "drops by cause sum to 5"),
            ("/loadgen/tx_packets", json!(99), "loadgen.tx_packets"),
            ("/loadgen/rx_packets", json!(91), "loadgen.rx_packets"),
            ("/loadgen/lost_packets", json!(10), "loadgen.lost_packets"),
            // 12.5 MB in 1 ms is 100 Gb/s of frame bits alone: over the link with the overhead.
            ("/loadgen/ports/0/tx_bytes", json!(12_500_000), "rates: port 0 offered"),
            ("/nics/0/pcie/up_util", json!(1.01), "utilisation: nics[0].pcie.up_util"),
            ("/mem/dram/util", json!(1.01), "utilisation: mem.dram.util"),
            ("/loadgen/latency_ns/min", json!(999.0), "latency: minimum 999 ns"),
            ("/loadgen/latency_ns/max", json!(2.5e6), "latency: maximum"),
        ] {
            let v = broken(path, value);
            assert!(v.iter().any(|l| l.starts_with(words) || l.contains(words)), "{path}: {v:?}");
        }
        // gem5's I/O crossbar has utilisations of its own.
        let mut r = good();
        r["nics"][0]["iobus"] = json!({"up_util": 0.3, "pio_util": 1.2});
        assert_eq!(violations(&r), vec!["utilisation: nics[0].iobus.pio_util = 1.2000 > 1".to_string()]);
        let mut r = good();
        r.as_object_mut().unwrap().remove("accounting");
        assert_eq!(violations(&r), vec!["conservation: the result has no accounting".to_string()]);
    }
}
