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

use crate::error::{ConfigError, Result};

/// Smallest and largest Ethernet frame the load generator emits (bytes, FCS included).
pub use crate::wire::ethernet::{MAX_FRAME_BYTES, MIN_FRAME_BYTES};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of every random stream in the run.
    pub seed: u64,
    /// Device under test attached to the load generator's port.
    pub app: String,
    /// The host's network stack: the poll-mode driver or the Linux kernel model.
    #[serde(default)]
    pub stack: Stack,
    pub sim: SimTiming,
    pub link: LinkConfig,
    pub loadgen: LoadgenConfig,
    #[serde(default)]
    pub reflector: ReflectorConfig,
    /// The simulated host, for every application but `reflector`.
    #[serde(default)]
    pub host: Option<crate::host::HostConfig>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SimTiming {
    /// Time the load generator transmits, warm-up included (ps).
    pub duration_ps: u64,
    /// Leading part of `duration_ps` whose packets are not measured (ps).
    pub warmup_ps: u64,
    /// Longest time to wait after the last transmission for replies (ps).
    /// Twice the link's propagation delay is always added on top.
    pub drain_ps: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Line rate of each direction (bits per second).
    pub rate_bps: u64,
    /// One-way propagation delay (ps).
    pub propagation_ps: u64,
}

/// How the offered load is stated.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    pub unit: RateUnit,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RateUnit {
    /// Ethernet frame bits per second (frame bytes incl. FCS × 8).
    Bps,
    /// Frames per second.
    Pps,
    /// Percent of line rate (which counts 20 B preamble + gap per frame).
    Percent,
}

/// Frame-size distribution (sizes include the 4 B FCS).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SizeDist {
    Fixed { bytes: u32 },
    /// Sizes drawn with the given weights (equal weights if `weights` is empty).
    List {
        bytes: Vec<u32>,
        #[serde(default)]
        weights: Vec<f64>,
    },
    /// Uniform over [min, max] inclusive.
    Uniform { min: u32, max: u32 },
    /// Simple IMIX: 64, 594 and 1518 B in the ratio 7:4:1.
    Imix,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Interarrival {
    Constant,
    Poisson,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Ethernet II with the experimental EtherType 0x88B5 and the tag after the header.
    Raw,
    /// Ethernet II / IPv4 / UDP; flows differ in the UDP source port.
    Udp,
    /// Ethernet II / IPv4 / TCP bulk data (ACK|PSH, sequence numbers advancing
    /// by the payload; no handshake, no retransmission): the sender side of
    /// `--app iperf`. Flows differ in the TCP source port.
    Tcp,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LoadgenConfig {
    pub rate: Rate,
    pub size: SizeDist,
    pub interarrival: Interarrival,
    pub protocol: Protocol,
    /// Number of flows (distinct UDP source ports), ≥ 1.
    pub flows: u32,
    /// Byte offset of the 16-byte tag; `None` puts it right after the headers.
    #[serde(default)]
    pub tag_offset: Option<u32>,
    pub src_mac: String,
    pub dst_mac: String,
    pub src_ip: String,
    pub dst_ip: String,
    pub src_port: u16,
    pub dst_port: u16,
    /// Write transmitted frames (measured window and warm-up) to this pcap file.
    #[serde(default)]
    pub capture_tx: Option<String>,
    /// Write received frames to this pcap file.
    #[serde(default)]
    pub capture_rx: Option<String>,
    /// Stop capturing after this many frames per file (0 = no limit).
    #[serde(default)]
    pub capture_limit: u64,
    /// Keep the first N raw (sequence, latency) samples in the result, for tests.
    #[serde(default)]
    pub keep_samples: u64,
    /// Replay a pcap/pcapng file instead of synthetic traffic.
    #[serde(default)]
    pub trace: Option<TraceConfig>,
    /// Send memcached requests instead of tagged frames (`loadgen::memcached`).
    #[serde(default)]
    pub memcached: Option<McClientConfig>,
    /// Keep a fixed number of requests outstanding instead of following
    /// `loadgen.rate` (memcached client only).
    #[serde(default)]
    pub closed_loop: Option<ClosedLoopConfig>,
}

/// A Zipf distribution over the sizes `min..=max` (bytes): the size of rank
/// r (min is rank 1) has weight 1 / r^skew; skew 0 is uniform.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ZipfSizeConfig {
    pub min: u32,
    pub max: u32,
    #[serde(default)]
    pub skew: f64,
}

/// The memcached client (`loadgen.memcached.*`; SPEC 2.9).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McClientConfig {
    /// Size of the key space (keys 0..keys).
    pub keys: u64,
    /// Key lengths (bytes), at most 250 (memcached's limit).
    pub key_size: ZipfSizeConfig,
    /// Value lengths of SETs (bytes).
    pub value_size: ZipfSizeConfig,
    /// Zipf popularity over the key space (0 = uniform).
    #[serde(default)]
    pub key_skew: f64,
    /// Fraction of GETs among the requests after the population (0..=1).
    pub get_ratio: f64,
    /// The first `keys` requests SET every key in order.
    #[serde(default)]
    pub populate: bool,
    /// UDP port of the server (memcached's 11211).
    #[serde(default = "McClientConfig::default_udp_port")]
    pub udp_port: u16,
}

impl McClientConfig {
    fn default_udp_port() -> u16 {
        11211
    }
}

/// Closed-loop load (`loadgen.closed_loop.*`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClosedLoopConfig {
    /// Requests in flight at once (started together at t = 0).
    pub outstanding: u32,
    /// A request unanswered this long (ps) is given up and replaced.
    pub timeout_ps: u64,
}

/// Where trace departures come from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TraceTiming {
    /// The trace's own timestamps, relative to its first frame, times `time_scale`.
    Trace,
    /// `loadgen.rate` and `loadgen.interarrival`; the trace gives only the frames.
    Rate,
}

/// What to do with a frame larger than `max_frame_bytes`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnOversize {
    /// Leave it out, count it (`loadgen.trace_oversize_frames`) and warn.
    Skip,
    /// Refuse the trace.
    Error,
}

/// How often the trace is played: `false` once, `true` until `sim.duration`
/// ends, a count N for N passes in all (as `tcpreplay --loop=N`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum TraceLoop {
    Forever(bool),
    Passes(u64),
}

impl TraceLoop {
    /// Passes in all; `None` for no limit.
    pub fn passes(self) -> Option<u64> {
        match self {
            TraceLoop::Forever(false) => Some(1),
            TraceLoop::Forever(true) => None,
            TraceLoop::Passes(n) => Some(n),
        }
    }
}

/// Trace replay (`loadgen.trace.*`; SPEC 2.3 trace mode).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// The pcap (µs or ns, either byte order) or pcapng file; Ethernet link type only.
    pub path: String,
    #[serde(default = "TraceConfig::default_timing")]
    pub timing: TraceTiming,
    /// Multiplies the trace's gaps (0.5 replays twice as fast); `timing = trace` only.
    #[serde(default = "TraceConfig::default_time_scale")]
    pub time_scale: f64,
    #[serde(default = "TraceConfig::default_loop", rename = "loop")]
    pub repeat: TraceLoop,
    /// Keep only UDP datagrams (IPv4 or IPv6) to this destination port.
    #[serde(default)]
    pub udp_port: Option<u16>,
    /// Largest frame replayed, FCS included (a captured length L is an L + 4 B frame).
    #[serde(default = "TraceConfig::default_max_frame_bytes")]
    pub max_frame_bytes: u32,
    #[serde(default = "TraceConfig::default_on_oversize")]
    pub on_oversize: OnOversize,
    /// Also rewrite the IPv4 destination to `loadgen.dst_ip` and the UDP
    /// destination port to `loadgen.dst_port` (IPv4 checksum fixed, UDP checksum 0).
    #[serde(default)]
    pub rewrite_ip: bool,
    /// Write the measurement tag into the last 16 B of a frame when they lie
    /// after the end of its IP packet (Ethernet padding), never over payload.
    #[serde(default)]
    pub tag: bool,
}

impl TraceConfig {
    fn default_timing() -> TraceTiming {
        TraceTiming::Trace
    }
    fn default_time_scale() -> f64 {
        1.0
    }
    fn default_loop() -> TraceLoop {
        TraceLoop::Forever(false)
    }
    fn default_max_frame_bytes() -> u32 {
        1518
    }
    fn default_on_oversize() -> OnOversize {
        OnOversize::Skip
    }

    /// A trace of `path` with every other field at its default.
    pub fn new(path: &str) -> Self {
        TraceConfig {
            path: path.to_string(),
            timing: Self::default_timing(),
            time_scale: Self::default_time_scale(),
            repeat: Self::default_loop(),
            udp_port: None,
            max_frame_bytes: Self::default_max_frame_bytes(),
            on_oversize: Self::default_on_oversize(),
            rewrite_ip: false,
            tag: false,
        }
    }

    /// Checks every field against its allowed range.
    pub fn validate(&self) -> Result<()> {
        check(!self.path.trim().is_empty(), "loadgen.trace.path", &self.path, "a pcap or pcapng file")?;
        check(self.time_scale.is_finite() && self.time_scale > 0.0, "loadgen.trace.time_scale", self.time_scale, "> 0")?;
        check(
            (MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&self.max_frame_bytes),
            "loadgen.trace.max_frame_bytes",
            self.max_frame_bytes,
            &format!("{MIN_FRAME_BYTES}..={MAX_FRAME_BYTES} bytes (FCS included)"),
        )?;
        check(self.repeat != TraceLoop::Passes(0), "loadgen.trace.loop", 0, "true, false or a number of passes >= 1")
    }
}

impl Default for LoadgenConfig {
    /// Line rate, 64 B, constant spacing, one UDP flow between 02:00:00:00:00:01
    /// (10.0.0.1:1024) and 02:00:00:00:00:02 (10.0.0.2:9) — the Python
    /// package's defaults.
    fn default() -> Self {
        LoadgenConfig {
            rate: Rate { unit: RateUnit::Percent, value: 100.0 },
            size: SizeDist::Fixed { bytes: 64 },
            interarrival: Interarrival::Constant,
            protocol: Protocol::Udp,
            flows: 1,
            tag_offset: None,
            src_mac: "02:00:00:00:00:01".into(),
            dst_mac: "02:00:00:00:00:02".into(),
            src_ip: "10.0.0.1".into(),
            dst_ip: "10.0.0.2".into(),
            src_port: 1024,
            dst_port: 9,
            capture_tx: None,
            capture_rx: None,
            capture_limit: 0,
            keep_samples: 0,
            trace: None,
            memcached: None,
            closed_loop: None,
        }
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
            sim: SimTiming { duration_ps: 1_000_000_000, warmup_ps: 0, drain_ps: 1_000_000_000 },
            link: LinkConfig { rate_bps: 100_000_000_000, propagation_ps: 1_000_000 },
            loadgen: LoadgenConfig::default(),
            reflector: ReflectorConfig::default(),
            host: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ServiceDist {
    Fixed,
    Exponential,
}

/// The reference device: a single server with a finite queue that returns
/// every frame with swapped MACs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ReflectorConfig {
    pub service: ServiceDist,
    /// Mean service time per frame (ps).
    pub service_time_ps: u64,
    /// Frames the device holds at once, the one in service included (≥ 1).
    pub queue_frames: u32,
    /// Fault injection: drop every N-th arriving frame (0 = never).
    #[serde(default)]
    pub drop_every: u64,
    /// Fault injection: return frames in swapped pairs (2nd before 1st).
    #[serde(default)]
    pub swap_pairs: bool,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            service: ServiceDist::Fixed,
            service_time_ps: 100_000,
            queue_frames: 1024,
            drop_every: 0,
            swap_pairs: false,
        }
    }
}

pub const APPS: &[&str] = &["reflector", "testpmd", "touchfwd", "touchdrop", "rxptx", "l2fwd", "udp-echo", "memcached", "iperf"];

/// The software stack a host application runs on (SPEC 2.8).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Stack {
    /// DPDK-style poll-mode driver, run to completion.
    #[default]
    Pmd,
    /// The Linux kernel stack model: interrupts, NAPI, skbs, sockets, system calls.
    Kernel,
}

/// Applications that run on the kernel stack.
pub const KERNEL_APPS: &[&str] = &["udp-echo", "memcached", "iperf"];

fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, value.to_string(), allowed).into())
    }
}

impl SimConfig {
    /// Parses the JSON contract form; unknown or missing fields are errors.
    pub fn from_json(text: &str) -> Result<SimConfig> {
        let cfg: SimConfig = serde_json::from_str(text).map_err(crate::error::Error::from_serde)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every field against its allowed range.
    pub fn validate(&self) -> Result<()> {
        check(APPS.contains(&self.app.as_str()), "app", &self.app, &format!("one of {}", APPS.join(", ")))?;
        if self.stack == Stack::Kernel {
            check(KERNEL_APPS.contains(&self.app.as_str()), "stack", "kernel", &format!("pmd for app {} (the kernel stack runs {})", self.app, KERNEL_APPS.join(", ")))?;
        }
        if self.app == "iperf" {
            check(self.stack == Stack::Kernel, "stack", "pmd", "kernel for app iperf (a kernel TCP receiver)")?;
        }
        if self.app != "reflector" {
            match &self.host {
                Some(h) => h.validate()?,
                None => check(false, "host", "none", &format!("a host config for app {}", self.app))?,
            }
        }
        let s = &self.sim;
        check(s.duration_ps > 0, "sim.duration", s.duration_ps, "> 0")?;
        check(s.warmup_ps < s.duration_ps, "sim.warmup", s.warmup_ps, "< sim.duration")?;
        check(self.link.rate_bps > 0, "link.rate", self.link.rate_bps, "> 0 bps")?;
        check(self.link.propagation_ps <= 10_000_000_000_000, "link.propagation", self.link.propagation_ps, "<= 10 s")?;
        let lg = &self.loadgen;
        check(lg.rate.value.is_finite() && lg.rate.value > 0.0, "loadgen.rate", lg.rate.value, "> 0")?;
        check(lg.flows >= 1 && lg.flows <= 65536, "loadgen.flows", lg.flows, "1..=65536")?;
        self.validate_sizes()?;
        for (field, mac) in [("loadgen.src_mac", &lg.src_mac), ("loadgen.dst_mac", &lg.dst_mac)] {
            check(crate::wire::ethernet::parse_mac(mac).is_some(), field, mac, "a MAC like 02:00:00:00:00:01")?;
        }
        for (field, ip) in [("loadgen.src_ip", &lg.src_ip), ("loadgen.dst_ip", &lg.dst_ip)] {
            check(ip.parse::<std::net::Ipv4Addr>().is_ok(), field, ip, "a dotted IPv4 address")?;
        }
        let min = self.min_frame_bytes();
        let header = crate::loadgen::frame::header_len(lg.protocol) as u32;
        let offset = lg.tag_offset.unwrap_or(header);
        let tag_end = offset + crate::wire::tag::TAG_LEN as u32;
        check(offset >= header, "loadgen.tag_offset", offset, &format!(">= {header} (end of headers)"))?;
        check(
            tag_end + 4 <= min,
            "loadgen.tag_offset",
            offset,
            &format!("tag end + 4 B FCS <= smallest frame ({min} B), i.e. <= {}", min.saturating_sub(4 + crate::wire::tag::TAG_LEN as u32)),
        )?;
        if let Some(t) = &lg.trace {
            t.validate()?;
        }
        if let Some(m) = &lg.memcached {
            crate::loadgen::memcached::validate(m, self.jumbo_limit_bytes())?;
            check(lg.trace.is_none(), "loadgen.memcached", "set", "not together with loadgen.trace")?;
        }
        if let Some(c) = &lg.closed_loop {
            check(lg.memcached.is_some(), "loadgen.closed_loop", "set", "only with loadgen.memcached (requests matched by id)")?;
            check((1..=32768).contains(&c.outstanding), "loadgen.closed_loop.outstanding", c.outstanding, "1..=32768")?;
            check(c.timeout_ps > 0, "loadgen.closed_loop.timeout", c.timeout_ps, "> 0")?;
        }
        let r = &self.reflector;
        check(r.queue_frames >= 1, "reflector.queue_frames", r.queue_frames, ">= 1")?;
        Ok(())
    }

    fn validate_sizes(&self) -> Result<()> {
        let range = format!("{MIN_FRAME_BYTES}..={MAX_FRAME_BYTES} bytes");
        let ok = |b: u32| (MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&b);
        match &self.loadgen.size {
            SizeDist::Fixed { bytes } => check(ok(*bytes), "loadgen.size", bytes, &range),
            SizeDist::List { bytes, weights } => {
                check(!bytes.is_empty(), "loadgen.size", "[]", "a non-empty list")?;
                for b in bytes {
                    check(ok(*b), "loadgen.size", b, &range)?;
                }
                check(weights.is_empty() || weights.len() == bytes.len(), "loadgen.size.weights", weights.len(), "one weight per size")?;
                for w in weights {
                    check(w.is_finite() && *w >= 0.0, "loadgen.size.weights", w, ">= 0")?;
                }
                check(weights.is_empty() || weights.iter().sum::<f64>() > 0.0, "loadgen.size.weights", "all zero", "a positive sum")
            }
            SizeDist::Uniform { min, max } => {
                check(ok(*min), "loadgen.size.min", min, &range)?;
                check(ok(*max) && max >= min, "loadgen.size.max", max, &format!("{min}..={MAX_FRAME_BYTES}"))
            }
            SizeDist::Imix => Ok(()),
        }
    }

    /// Largest request frame the memcached client may build: one standard
    /// frame (1518 B), or more when `loadgen.size` itself asks for jumbo frames.
    pub fn jumbo_limit_bytes(&self) -> u32 {
        let max = match &self.loadgen.size {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::List { bytes, .. } => bytes.iter().copied().max().unwrap_or(0),
            SizeDist::Uniform { max, .. } => *max,
            SizeDist::Imix => 1518,
        };
        max.clamp(1518, MAX_FRAME_BYTES)
    }

    /// Smallest frame the size distribution can produce.
    pub fn min_frame_bytes(&self) -> u32 {
        match &self.loadgen.size {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::List { bytes, .. } => bytes.iter().copied().min().unwrap_or(MIN_FRAME_BYTES),
            SizeDist::Uniform { min, .. } => *min,
            SizeDist::Imix => 64,
        }
    }
}
