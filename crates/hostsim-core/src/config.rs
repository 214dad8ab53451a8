//! The resolved configuration the core runs from.
//!
//! Every quantity here is already in base units (picoseconds, bits per second,
//! bytes): unit strings, presets and overrides are resolved by the Python
//! package (`hostsim.config`) before a config reaches the core. The core still
//! validates every field with [`SimConfig::validate`], so a config built by
//! hand (or by a Rust test) gets the same clear errors, never a panic.
//!
//! The JSON form of [`SimConfig`] is the contract between the Python package
//! and the core; `hostsim inspect` prints it.

use serde::{Deserialize, Serialize};

use crate::engine::time::show_ps;
use crate::error::{ConfigError, Result};

pub use crate::dev::reflector::{ReflectorConfig, ServiceDist};
pub use crate::link::LinkConfig;
pub use crate::loadgen::config::*;
pub use crate::stack::StackKind as Stack;
/// Smallest and largest Ethernet frame the load generator emits (bytes, FCS included).
pub use crate::wire::ethernet::{MAX_FRAME_BYTES, MIN_FRAME_BYTES};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of every random stream in the run.
    #[serde(default = "SimConfig::default_seed")]
    pub seed: u64,
    /// Device under test, attached to the load generator's ports.
    pub app: String,
    /// The host's network stack: the poll-mode driver or the Linux kernel model.
    #[serde(default)]
    pub stack: Stack,
    #[serde(default)]
    pub sim: SimTiming,
    #[serde(default)]
    pub link: LinkConfig,
    #[serde(default)]
    pub loadgen: LoadgenConfig,
    #[serde(default)]
    pub reflector: ReflectorConfig,
    /// The simulated host, for every application but `reflector`.
    #[serde(default)]
    pub host: Option<crate::host::HostConfig>,
    /// The fields the user set, as dotted contract keys
    /// (`host.app.forward_mode`), whatever their values: the Python package
    /// fills it from flags, `--set`, config files and dicts. A setting given
    /// here that the run does not read is said to be ignored
    /// (`system/warnings.rs`, `user_set`); a setting left out is never said,
    /// as a preset's or a default is nobody's choice. A mbuf count given
    /// here is kept as set, where a preset's grows to fill the rings
    /// (`HostConfig::pool_mbufs`).
    #[serde(default)]
    pub given: Vec<String>,
}

pub use crate::error::user_set;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SimTiming {
    /// Time the load generator transmits, warm-up included (ps).
    pub duration_ps: u64,
    /// Leading part of `duration_ps` whose packets are not measured (ps).
    pub warmup_ps: u64,
    /// Longest time to wait after the last transmission for replies (ps).
    /// Twice the link's propagation delay is always added on top.
    pub drain_ps: u64,
    /// `full` simulates the whole run; `fast` simulates a sample of its
    /// measured window and predicts the rest (see `system/sample.rs`).
    pub fidelity: Fidelity,
    /// At the fast fidelity, predict the steady state after the start-up
    /// transient rather than the configured window: a sample over which the
    /// application's tables grew lengthens its warm-up (up to 1 s, past the
    /// configured run if need be) instead of falling back to the full
    /// model. The bandwidth test's fast trials set it.
    pub settle: bool,
    /// At the fast fidelity, where the sample's buffers would fill within
    /// the window, take a longer sample past the fill, so that the drops
    /// once they are full are simulated, by fate (`system/sample.rs`).
    /// The bandwidth test's trials turn it off: their verdict needs only
    /// the first sample.
    pub overflow_sample: bool,
    /// Hold a poll-mode core's application work unit (the application's
    /// last `exec` of a burst) to the event loop: each of its data accesses
    /// is made only once every event before its issue time has run
    /// (`cpu/core.rs`, `Core::exec_until`). Off, a core makes a whole
    /// unit's accesses when it starts the unit, ahead of the devices'
    /// events. The devices still make theirs at their events, for later
    /// times (the I/O path's latency), so the core then waits behind their
    /// early bookings as the devices waited behind its. The unit's code
    /// fetch, the application's earlier units, the receive, mempool and
    /// transmit units, and the kernel stack still run at once. The held
    /// unit's load misses that reach DRAM wait in the controller's read
    /// queue (`host.mem.dram.read_queue`, first-ready first), and the
    /// core waits for them where its miss window closes. Slower.
    pub core_horizon: bool,
    /// Make a NIC's main memory requests at the time they reach the memory
    /// side, as events (`nic/port.rs`), not when the NIC acts: payload
    /// reads for transmission one request latency after the TX engine
    /// issues them, and the writes of received data and of RX write-backs
    /// when they arrive (the I/O path is booked when they are sent). The
    /// memory system then sees them in simulated-time order with the other
    /// requests made at events (and, with `core_horizon`, with a held
    /// core's). The FIFO's room and a read's slot are still taken at the
    /// issue, and a read's request packets are booked at its event, from
    /// the issue time, so on a busy link they may wait behind transfers
    /// booked in between. On a PCIe link a payload read's lines from DRAM
    /// wait in the controller's read queue (`host.mem.dram.read_queue`)
    /// and its packets are booked once they are picked. Still made when
    /// the NIC acts, for later times:
    /// descriptor fetches, TX completion write-backs, payloads split from
    /// their headers or in the card's memory, and every write on a PCIe
    /// link with finite posted credits (their return waits for the memory).
    pub dma_at_memory_time: bool,
    /// Most memory the simulation may take on the machine running it
    /// (bytes): a config whose caches, tables, rings, pools and traces need
    /// more is refused before they are built (`system/budget.rs`). None:
    /// half the machine's memory (its cgroup's limit if lower).
    #[schemars(extend("minimum" = 1))]
    pub memory_limit_bytes: Option<u64>,
}

/// How much of a run is simulated in detail.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    /// Every frame of the run, event by event.
    #[default]
    Full,
    /// A warm-up and the first `system::sample::SAMPLE_FRAMES` frames of
    /// the measured window, event by event; the rest of the window
    /// predicted by a fluid model of the device's buffers. Falls back to
    /// `full` where the load is not stationary or the run is shorter than
    /// its sample.
    Fast,
}

impl Default for SimTiming {
    /// 1 ms of traffic whose first 100 µs are not measured, and up to 1 ms
    /// to wait for replies: the users' default trial (estimates; a bandwidth
    /// test sets its own warm-up).
    fn default() -> Self {
        SimTiming { duration_ps: 1_000_000_000, warmup_ps: 100_000_000, drain_ps: 1_000_000_000, fidelity: Fidelity::Full, settle: false, overflow_sample: true, core_horizon: false, dma_at_memory_time: false, memory_limit_bytes: None }
    }
}

impl Default for SimConfig {
    /// A reflector behind a 100 Gb/s link with 1 µs propagation, 1 ms of
    /// traffic, no warm-up: a base for Rust tests and benchmarks. Users get
    /// the Python package's presets instead.
    fn default() -> Self {
        SimConfig {
            seed: 1,
            app: "reflector".into(),
            stack: Stack::Pmd,
            sim: SimTiming { duration_ps: 1_000_000_000, warmup_ps: 0, drain_ps: 1_000_000_000, fidelity: Fidelity::Full, settle: false, overflow_sample: true, core_horizon: false, dma_at_memory_time: false, memory_limit_bytes: None },
            link: LinkConfig { rate_bps: 100_000_000_000, propagation_ps: 1_000_000 },
            loadgen: LoadgenConfig::default(),
            reflector: ReflectorConfig::default(),
            host: None,
            given: vec![],
        }
    }
}



/// States the largest value of every fixed-width unsigned integer
/// (`"format": "uint16"` → `"maximum": 65535`) where no tighter bound is given.
fn add_integer_maxima(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            let max = match map.get("format").and_then(|f| f.as_str()) {
                Some("uint8") => Some(u8::MAX as u64),
                Some("uint16") => Some(u16::MAX as u64),
                Some("uint32") => Some(u32::MAX as u64),
                Some("uint64") | Some("uint") => Some(u64::MAX),
                _ => None,
            };
            if let Some(max) = max {
                map.entry("maximum").or_insert(max.into());
            }
            map.values_mut().for_each(add_integer_maxima);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(add_integer_maxima),
        _ => {}
    }
}

fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, value.to_string(), allowed).into())
    }
}

/// The fastest link: 1.6 Tb/s Ethernet (IEEE P802.3dj).
pub const MAX_LINK_RATE_BPS: u64 = 1_600_000_000_000;
/// Frames in flight on one link at most (each holds a frame buffer): about
/// 1.5 GiB of buffers at 1518 B. An implementation limit, not a model value.
pub const MAX_FRAMES_ON_A_LINK: u64 = 1 << 20;
/// Frames the device may buffer in all (about 6 GiB of frame buffers at
/// 1518 B). An implementation limit, not a model value.
pub const MAX_BUFFERED_FRAMES: u64 = 1 << 22;
/// A minimum frame on the wire: 64 B, preamble, start delimiter and gap.
const MIN_WIRE_FRAME_BITS: u64 = (64 + crate::link::WIRE_OVERHEAD_BYTES as u64) * 8;

impl SimConfig {
    /// Frames the device under test can hold before it drops (frames of
    /// `mean_frame_bytes`), buffer by buffer: (name, the field that sizes it, frames).
    pub fn buffers(&self, mean_frame_bytes: f64) -> Vec<(&'static str, &'static str, u64)> {
        match &self.host {
            Some(h) if self.app != "reflector" => h.buffers(self.stack == Stack::Kernel, mean_frame_bytes),
            _ => vec![("reflector_queue", "reflector.queue_frames", self.reflector.queue_frames as u64)],
        }
    }

    /// The JSON Schema (draft 2020-12) of the contract form, derived from
    /// these types: every field, its type, its serde default and doc
    /// comment. The Python package's pydantic model is generated from it
    /// and a test keeps the two equal (`hostsim schema` prints it).
    pub fn json_schema() -> serde_json::Value {
        let mut schema = serde_json::to_value(schemars::schema_for!(SimConfig)).expect("a schema is plain JSON");
        add_integer_maxima(&mut schema);
        schema
    }

    fn default_seed() -> u64 {
        1
    }

    /// Parses the JSON contract form: unknown fields are errors, a missing
    /// field takes the default the schema lists (`app` has none).
    pub fn from_json(text: &str) -> Result<SimConfig> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let cfg: SimConfig = serde_path_to_error::deserialize(de).map_err(crate::error::Error::from_serde_path)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every field against its allowed range, with the built-in applications.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(&crate::apps::Registry::builtin())
    }

    /// Checks every field; `app` must be one of `registry`'s (or the reflector).
    pub fn validate_with(&self, registry: &crate::apps::Registry) -> Result<()> {
        let on = |k: Stack| registry.names().into_iter().filter(|n| registry.get(n).is_some_and(|e| if k == Stack::Kernel { e.stacks.kernel } else { e.stacks.pmd })).collect::<Vec<_>>().join(", ");
        if self.app != "reflector" {
            let entry = registry.lookup(&self.app)?;
            match self.stack {
                Stack::Kernel if !entry.stacks.kernel => check(false, "stack", "kernel", &format!("pmd for app {} (the kernel stack runs {})", self.app, on(Stack::Kernel)))?,
                Stack::Pmd if !entry.stacks.pmd => check(false, "stack", "pmd", &format!("kernel for app {} (the poll-mode driver runs {})", self.app, on(Stack::Pmd)))?,
                _ => {}
            }
            match &self.host {
                Some(h) => {
                    h.validate()?;
                    h.pool_mbufs(&self.given)?;
                }
                None => check(false, "host", "none", &format!("a host config for app {}", self.app))?,
            }
        } else if self.stack == Stack::Kernel {
            // The reflector is the harness's own device: it has no host, so no stack to choose.
            check(false, "stack", "kernel", &format!("pmd for app reflector (it has no host stack; the kernel stack runs {})", on(Stack::Kernel)))?;
        }
        let s = &self.sim;
        check(s.duration_ps > 0, "sim.duration", format!("{} ps", s.duration_ps), "> 0")?;
        check(s.warmup_ps < s.duration_ps, "sim.warmup", show_ps(s.warmup_ps), &format!("less than sim.duration ({})", show_ps(s.duration_ps)))?;
        check(s.memory_limit_bytes != Some(0), "sim.memory_limit", "0 B", "at least 1 B, or unset for half the machine's memory")?;
        check(self.link.rate_bps > 0 && self.link.rate_bps <= MAX_LINK_RATE_BPS, "link.rate", self.link.rate_bps, "> 0 and <= 1.6 Tbps (1.6e12 bps)")?;
        check(self.link.propagation_ps <= 10_000_000_000_000, "link.propagation", self.link.propagation_ps, "<= 10 s")?;
        // Every frame on a link's delay line holds a buffer: bounded before anything is allocated.
        let on_wire = self.link.rate_bps as f64 * (self.link.propagation_ps as f64 / 1e12) / (MIN_WIRE_FRAME_BITS as f64);
        check(
            on_wire <= MAX_FRAMES_ON_A_LINK as f64,
            "link.propagation",
            self.link.propagation_ps,
            &format!("at most {MAX_FRAMES_ON_A_LINK} minimum-size frames in flight on a link (link.rate x link.propagation; here {on_wire:.0})"),
        )?;
        self.loadgen.validate()?;
        // Every buffered frame may hold a frame buffer: bounded before anything runs.
        let buffers = self.buffers(64.0);
        let buffered: u64 = buffers.iter().map(|b| b.2).sum();
        if let Some(&(name, field, frames)) = buffers.iter().max_by_key(|b| b.2).filter(|_| buffered > MAX_BUFFERED_FRAMES) {
            // Named by the field behind the largest buffer.
            let allowed = format!("at most {MAX_BUFFERED_FRAMES} 64 B frames buffered by the device in all (here {buffered}; {name} hold {frames})");
            return Err(ConfigError::new(field, "too large".into(), &allowed).into());
        }
        let ports = self.host.as_ref().filter(|_| self.app != "reflector").map_or(1, |h| h.ports);
        if let Some(t) = &self.loadgen.tcp {
            let links = 2 * self.link.propagation_ps;
            check(t.rtt_ps == 0 || t.rtt_ps >= links, "loadgen.tcp.rtt", format!("{} ps", t.rtt_ps), &format!("0 or >= 2 x link.propagation ({links} ps): the links alone take that"))?;
            check(self.app == "tcp-send", "loadgen.tcp", "set", &format!("only with app tcp-send (app {} sends no TCP to acknowledge)", self.app))?;
        }
        if self.app == "tcp-send" {
            check(self.loadgen.tcp.is_some(), "loadgen.tcp", "none", "set with app tcp-send (its connections need a receiver)")?;
            if let Some(h) = &self.host {
                // Each queued segment holds an skb and a page buffer; full send
                // buffers must leave the RX rings theirs, or no ACK gets in.
                let k = &h.kernel;
                let per_conn = k.tcp.sndbuf_bytes.div_ceil(k.skb_truesize_bytes as u64);
                let segs = per_conn * h.app.tcp_send.connections as u64 * h.cores as u64;
                let rx = h.pmd.rxd as u64 * h.ports as u64 * h.queues as u64;
                let pool = h.pool_mbufs(&self.given)?.min(k.skbs as u64);
                let fits = (pool.saturating_sub(rx) / 2 / (h.app.tcp_send.connections as u64 * h.cores as u64).max(1)) * k.skb_truesize_bytes as u64;
                check(
                    2 * segs + rx <= pool,
                    "host.kernel.tcp.sndbuf_bytes",
                    k.tcp.sndbuf_bytes,
                    &format!(
                        "at most {fits} here: full send buffers ({segs} segments, each an skb and a page buffer, and as many clones in flight) and the RX rings ({rx}) must fit host.pmd.mempool.mbufs and host.kernel.skbs ({pool})"
                    ),
                )?;
            }
        }
        if self.loadgen.traffic == Traffic::Mesh {
            check(ports >= 2, "loadgen.traffic", "mesh", &format!("bidir or uni with one port (mesh needs host.ports >= 2; here {ports})"))?;
        }

        let r = &self.reflector;
        check(r.queue_frames >= 1, "reflector.queue_frames", r.queue_frames, ">= 1")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A contract whose field `path` (dotted) is replaced by `value`.
    fn with(path: &str, value: serde_json::Value) -> String {
        let mut v = serde_json::to_value(SimConfig::default()).unwrap();
        let mut at = &mut v;
        let keys: Vec<&str> = path.split('.').collect();
        for k in &keys[..keys.len() - 1] {
            at = &mut at[*k];
        }
        at[keys[keys.len() - 1]] = value;
        v.to_string()
    }

    #[test]
    fn the_schema_names_every_field_of_the_contract() {
        // Every key of a serialized config (with a host) is a property of its schema object.
        let schema = SimConfig::json_schema();
        let defs = &schema["$defs"];
        let mut cfg = SimConfig::default();
        cfg.app = "testpmd".into();
        cfg.host = Some(crate::host::HostConfig::preset("i9-7940x-cx5").unwrap());
        fn walk(value: &serde_json::Value, schema: &serde_json::Value, defs: &serde_json::Value, path: &str, seen: &mut usize) {
            let resolve = |s: &serde_json::Value| -> serde_json::Value {
                let mut s = s.clone();
                for _ in 0..4 {
                    if let Some(r) = s.get("$ref").and_then(|r| r.as_str()) {
                        s = defs[r.trim_start_matches("#/$defs/")].clone();
                    } else if let Some(any) = s.get("anyOf").and_then(|a| a.as_array()) {
                        s = any.iter().find(|v| v.get("type") != Some(&serde_json::json!("null"))).cloned().unwrap_or_default();
                    } else {
                        break;
                    }
                }
                s
            };
            let schema = resolve(schema);
            if let Some(map) = value.as_object() {
                let Some(props) = schema.get("properties") else { return };
                for (k, v) in map {
                    let sub = props.get(k).unwrap_or_else(|| panic!("{path}.{k} is not in the schema"));
                    *seen += 1;
                    walk(v, sub, defs, &format!("{path}.{k}"), seen);
                }
            }
        }
        let mut seen = 0;
        walk(&serde_json::to_value(&cfg).unwrap(), &schema, defs, "", &mut seen);
        assert!(seen > 250, "{seen} fields checked");
        assert_eq!(schema["additionalProperties"], serde_json::json!(false), "unknown fields are refused");
    }

    #[test]
    fn a_field_of_the_wrong_shape_is_named_by_its_dotted_path() {
        for (path, value, words) in [
            ("loadgen.rate.value", serde_json::json!("fast"), "invalid type: string \"fast\""),
            ("sim.duration_ps", serde_json::json!(-1), "invalid value: integer `-1`"),
            ("loadgen.interarrival", serde_json::json!("sometimes"), "unknown variant `sometimes`"),
            ("reflector.queue_frames", serde_json::json!(1.5), "invalid type: floating point `1.5`"),
        ] {
            let e = SimConfig::from_json(&with(path, value)).unwrap_err();
            assert_eq!(e.field(), Some(path), "{e}");
            assert!(e.to_string().starts_with(&format!("{path}: {words}")), "{e}");
        }
        let e = SimConfig::from_json(&with("loadgen.bogus", serde_json::json!(1))).unwrap_err().to_string();
        assert!(e.contains("bogus") && e.starts_with("loadgen"), "{e}");
    }
}
