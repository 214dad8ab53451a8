//! The host's part of the result, shaped like the machine: `ports[p]` (NIC
//! counters, drops by class, per queue), `nics[d]` (the device's ports and
//! its PCIe link), `cores[c]` (its queue pairs, cycles by category,
//! packets per rx_burst, cache misses per packet, its stack's counters),
//! `mem`, `app`, and the sums over ports and cores (`nic`, `drops`, `cpu`,
//! `pmd` or `kernel`). Statistics (`stats.txt`) carry the same numbers under
//! gem5-style names: `system.nic.port1.rxq0.packets`, `system.cpu3.cycles.rx`.

use serde_json::{json, Map, Value};

use super::Host;
use crate::cpu::{Category, CyclesPerPacket};
use crate::engine::stats::{HasStats, StatSink};
use crate::stack::Stack;
use crate::engine::time::Ps;
use crate::nic::Port;
use crate::stack::pmd::config::RxSharing;

/// Adds the numbers of `b` into `a`, field by field (objects recursively,
/// arrays element by element).
fn add_into(a: &mut Value, b: &Value) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, bv) in b {
                match a.get_mut(k) {
                    Some(av) => add_into(av, bv),
                    None => {
                        a.insert(k.clone(), bv.clone());
                    }
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, bv) in b.iter().enumerate() {
                match a.get_mut(i) {
                    Some(av) => add_into(av, bv),
                    None => a.push(bv.clone()),
                }
            }
        }
        (a @ Value::Number(_), Value::Number(b)) => {
            *a = match (a.as_u64(), b.as_u64()) {
                (Some(x), Some(y)) => json!(x + y),
                _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            }
        }
        _ => {}
    }
}

fn port_drops(p: &Port) -> Value {
    let ring_full: u64 = p.txq.iter().map(|q| q.counters.ring_full_drops).sum();
    json!({
        "dma": p.fsm.dma,
        "core": p.fsm.core,
        "tx": p.fsm.tx + ring_full,
        "fifo_tx": p.fsm.tx,
        "tx_ring_full": ring_full,
    })
}

impl Host {
    /// Pipeline mode: the receiving cores, the workers and each ring; null when run to completion.
    fn pipeline_json(&self) -> Value {
        if self.rings.is_empty() {
            return Value::Null;
        }
        let rings: Vec<Value> = self
            .rings
            .iter()
            .map(|r| {
                let c = r.counters;
                json!({"consumer": r.consumer, "enqueued": c.enqueued, "dequeued": c.dequeued, "full_drops": c.full_drops, "max_used": c.max_used})
            })
            .collect();
        json!({"rx_cores": self.rx_cores, "workers": self.rings.len(), "rings": rings})
    }

    /// The kernel's counters summed over cores, as the result's `kernel`
    /// object; the largest socket queue is the largest of any core's.
    fn kernel_sums(&self, sum: &Value) -> Value {
        let mut k = sum.clone();
        if let Value::Object(o) = &mut k {
            o.remove("rx_nombuf");
            o.remove("app_consumed");
        }
        let max = self.stacks.iter().filter_map(|s| s.result_json().get("sock_queue_max").and_then(Value::as_u64)).max();
        k["sock_queue_max"] = json!(max.unwrap_or(0));
        k
    }

    fn port_json(&self, i: usize) -> Value {
        let p = &self.nic.ports[i];
        let c = p.counters;
        let queues: Vec<Value> = p
            .rxq
            .iter()
            .zip(&p.txq)
            .enumerate()
            .map(|(q, (r, t))| {
                json!({
                    "queue": q,
                    "core": self.rx_owner[i * self.queues + q],
                    "rx_packets": r.counters.packets,
                    "rx_bytes": r.counters.bytes,
                    "tx_packets": t.counters.packets,
                    "tx_bytes": t.counters.bytes,
                    "tx_ring_full_drops": t.counters.ring_full_drops,
                })
            })
            .collect();
        json!({
            "port": i,
            "nic": p.dev,
            "mac": p.mac.to_string(),
            "rx_packets": c.rx_packets,
            "rx_bytes": c.rx_bytes,
            "rx_missed_errors": c.rx_missed_errors,
            "tx_packets": c.tx_packets,
            "tx_bytes": c.tx_bytes,
            "rx_fifo_max_bytes": p.rx_fifo_max_bytes(),
            "drops": port_drops(p),
            "queues": queues,
        })
    }

    fn core_json(&self, c: usize) -> Value {
        let core = &self.cores[c];
        let acct = core.account();
        let packets = acct.packets();
        let mc = self.mem.counters();
        let per = |n: u64| if packets == 0 { 0.0 } else { n as f64 / packets as f64 };
        let mut v = core.result_json();
        let extra = json!({
            "core": c,
            "stack": self.stack_name,
            "queues": self.streams[c].iter().map(|s| json!({"rx_port": s.rx_port, "rx_queue": s.rx_queue, "tx_port": s.tx_port, "tx_queue": s.tx_queue})).collect::<Vec<_>>(),
            "packets": packets,
            "cycles_per_packet": acct.cycles_per_packet(packets).to_json(),
            "rx_burst_packets": self.stacks[c].burst_histogram(),
            "cache_misses_per_packet": {"l1d": per(mc.l1d[c].misses), "l2": per(mc.l2[c].misses)},
        });
        let mut extra = extra;
        extra[self.stack_name] = self.stacks[c].result_json();
        if let (Value::Object(o), Value::Object(e)) = (&mut v, extra) {
            o.extend(e);
        }
        v
    }

    /// Cycles per packet over every core: each category's cycles summed,
    /// over the packets received (in pipeline mode the workers handle the
    /// same packets again, so only the receiving cores' count).
    fn cycles_per_packet(&self) -> (CyclesPerPacket, u64) {
        let packets: u64 = self.cores[..self.rx_cores].iter().map(|c| c.account().packets()).sum();
        let mut per_category = [0.0; Category::COUNT];
        let mut total = 0.0;
        if packets > 0 {
            for core in &self.cores {
                let a = core.account();
                for cat in Category::ALL {
                    per_category[cat.index()] += a.cycles(cat) / packets as f64;
                }
                total += a.total_cycles() / packets as f64;
            }
        }
        (CyclesPerPacket { per_category, total }, packets)
    }

    /// The host's part of the JSON result; utilisations are over `span_ps`
    /// (warm-up end to the end of the run).
    pub fn result_json(&self, span_ps: Ps) -> Value {
        let ports: Vec<Value> = (0..self.nic.ports.len()).map(|i| self.port_json(i)).collect();
        let cores: Vec<Value> = (0..self.cores.len()).map(|c| self.core_json(c)).collect();
        let mut nic = json!({});
        let mut drops = json!({});
        for (p, v) in self.nic.ports.iter().zip(&ports) {
            let mut sums = v.clone();
            if let Value::Object(o) = &mut sums {
                for k in ["port", "nic", "mac", "drops", "queues", "rx_fifo_max_bytes"] {
                    o.remove(k);
                }
            }
            add_into(&mut nic, &sums);
            add_into(&mut drops, &port_drops(p));
        }
        nic["rx_fifo_max_bytes"] = json!(self.nic.ports.iter().map(Port::rx_fifo_max_bytes).max().unwrap_or(0));
        let mut stack = json!({});
        for s in &self.stacks {
            add_into(&mut stack, &s.result_json());
        }
        nic["rx_nombuf"] = json!(stack.get("rx_nombuf").and_then(Value::as_u64).unwrap_or(0));
        let sd = self.stacks.iter().map(|s| s.drops()).fold((0, 0, 0), |a, d| (a.0 + d.socket, a.1 + d.no_port, a.2 + d.qdisc));
        drops["ring"] = json!(self.rings.iter().map(|r| r.counters.full_drops).sum::<u64>());
        drops["socket"] = json!(sd.0);
        drops["no_port"] = json!(sd.1);
        drops["qdisc"] = json!(sd.2);
        let mut hist = json!([]);
        for s in &self.stacks {
            add_into(&mut hist, &json!(s.burst_histogram()));
        }
        let num = |k: &str| stack.get(k).and_then(Value::as_u64).unwrap_or(0);
        // Every rx_burst call, empty or not, and the packets they returned.
        let calls = hist.as_array().map_or(0, |h| h.iter().filter_map(Value::as_u64).sum::<u64>());
        let received = hist.as_array().map_or(0, |h| h.iter().enumerate().map(|(n, c)| n as u64 * c.as_u64().unwrap_or(0)).sum::<u64>());
        let polls = calls + num("empty_polls");
        let (cpp, packets) = self.cycles_per_packet();
        let nics: Vec<Value> = self
            .nic
            .devs
            .iter()
            .enumerate()
            .map(|(d, dev)| {
                let mut o = json!({
                    "nic": d,
                    "ports": (0..self.nic.ports.len()).filter(|&p| self.nic.ports[p].dev == d).collect::<Vec<_>>(),
                    "max_pps": if dev.frame_interval_ps == 0 { 0.0 } else { 1e12 / dev.frame_interval_ps as f64 },
                });
                // `pcie` or `iobus`, by the device's I/O path.
                o[dev.io.key()] = dev.io.result_json(span_ps);
                o["memory"] = dev.memory.as_ref().map_or(Value::Null, |m| m.result_json());
                o
            })
            .collect();
        let mut app = match self.app.result_json() {
            Value::Object(o) => Value::Object(o),
            _ => Value::Object(Map::new()),
        };
        app["name"] = json!(self.app.name());
        json!({
            "stack": self.stack_name,
            "nic": nic,
            "drops": drops,
            "ports": ports,
            "nics": nics,
            "cores": cores,
            "cpu": {"cycles_per_packet": cpp.to_json(), "packets": packets, "cores": self.cores.len()},
            "pipeline": self.pipeline_json(),
            "rx_sharing": match self.shared.first() {
                Some(sh) if sh.design != RxSharing::None => sh.result_json(),
                _ => Value::Null,
            },
            "pmd": {
                "rx_burst_packets": hist,
                "empty_polls": num("empty_polls"),
                "polls": polls,
                "polls_per_packet": if received == 0 { Value::Null } else { json!(polls as f64 / received as f64) },
                "app_consumed": num("app_consumed"),
                "txonly_unsent": num("txonly_unsent"),
                "tx_buffer_sends": num("tx_buffer_sends"),
                "tx_drain_flushes": num("tx_drain_flushes"),
                "mempool_available": self.mbufs.available(),
            },
            "kernel": if self.stack_name == "kernel" { self.kernel_sums(&stack) } else { Value::Null },
            "mem": self.mem_json(span_ps),
            "copy_engine": self.dma.result_json(),
            "app": app,
        })
    }

    /// The memory system's counters, with the DRAM channels' utilisation
    /// over `span_ps` (see `Dram::util`).
    fn mem_json(&self, span_ps: Ps) -> Value {
        let mut m = self.mem.result_json();
        m["dram"]["util"] = json!(self.mem.dram().util(span_ps));
        m
    }

    pub(super) fn report(&self, s: &mut StatSink<'_>) {
        let mut nic = s.scope("nic");
        for (i, p) in self.nic.ports.iter().enumerate() {
            let mut port = nic.scope(&format!("port{i}"));
            let c = p.counters;
            port.count("rx_packets", c.rx_packets, "Frames DMA'd to host memory");
            port.add("rx_bytes", c.rx_bytes as f64, "Byte", "Frame bytes DMA'd to host memory");
            port.count("rx_missed_errors", c.rx_missed_errors, "Frames dropped because the RX FIFO was full");
            port.count("tx_packets", c.tx_packets, "Frames read from host memory for transmission");
            port.add("tx_bytes", c.tx_bytes as f64, "Byte", "Frame bytes read for transmission");
            p.fsm.report_stats(&mut port);
            for (q, (r, t)) in p.rxq.iter().zip(&p.txq).enumerate() {
                let mut rq = port.scope(&format!("rxq{q}"));
                rq.count("packets", r.counters.packets, "Frames DMA'd into this queue's buffers");
                rq.add("bytes", r.counters.bytes as f64, "Byte", "Frame bytes DMA'd into this queue");
                let mut tq = port.scope(&format!("txq{q}"));
                tq.count("packets", t.counters.packets, "Frames read for transmission from this queue");
                tq.add("bytes", t.counters.bytes as f64, "Byte", "Frame bytes read from this queue");
                tq.count("ring_full_drops", t.counters.ring_full_drops, "Packets freed because this TX ring was full");
            }
        }
        for (d, dev) in self.nic.devs.iter().enumerate() {
            dev.io.report_stats(&mut nic.scope(&format!("dev{d}.{}", dev.io.key())));
            if let Some(m) = &dev.memory {
                let j = m.result_json();
                let mut ms = nic.scope(&format!("dev{d}.memory"));
                for (k, what) in [("bytes_read", "Bytes read from the card's DRAM"), ("bytes_written", "Bytes written to the card's DRAM"), ("header_clip_bytes", "Padding bytes of host headers read over PCIe and clipped")] {
                    ms.add(k, j[k].as_u64().unwrap_or(0) as f64, "Byte", what);
                }
            }
        }
        self.dma.report_stats(&mut s.scope("copy_engine"));
        for (c, core) in self.cores.iter().enumerate() {
            let mut cpu = s.scope(&format!("cpu{c}"));
            core.report_stats(&mut cpu);
            self.stacks[c].report_stats(&mut cpu.scope(self.stack_name));
        }
        self.mem.report_stats(&mut s.scope("mem"));
        if let Some(sh) = self.shared.first().filter(|sh| sh.design != RxSharing::None) {
            let mut r = s.scope("rx_sharing");
            let c = sh.counters;
            r.count("cas", c.cas, "Compare-and-swap attempts on the shared index");
            r.count("cas_retries", c.cas_retries, "Attempts that lost to another core's claim and were retried");
            r.count("joins", c.joins, "Join-line publications and reads");
        }
    }
}
