//! The load generator's configuration (`loadgen.*`): rate, sizes,
//! departures, protocol and flows, addresses, the measurement tag, captures,
//! trace replay, the memcached client, closed loop, and which generator
//! ports send (`traffic`). Every quantity in base units; the Python package
//! resolves unit strings before a config reaches the core.

use serde::{Deserialize, Serialize};

use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};
use crate::wire::ethernet::{MAX_FRAME_BYTES, MIN_FRAME_BYTES};

fn check(ok: bool, field: &str, value: impl ToString, allowed: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::new(field, value.to_string(), allowed).into())
    }
}

/// Which generator ports send, when a host has several (RFC 2544's
/// uni- and bidirectional tests).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Traffic {
    /// Every port sends into its host port (port pairs in both directions).
    #[default]
    Bidir,
    /// Only the first port of each pair sends (0, 2, ...): one direction.
    Uni,
    /// Every port sends, addressing each other port's station in turn.
    Mesh,
}

/// Whose addresses a generator port's frames carry.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Address {
    /// The host port it is wired to (`dst_mac`, `dst_ip` and their port
    /// offsets): a server answers them, a forwarder sends them on as its
    /// topology says.
    #[default]
    Host,
    /// The stations behind the host's other ports (the other generator
    /// ports' `src_mac`, `src_ip`), in turn: frames a bridge forwards by
    /// its FDB and a router by its routes, as a tester addresses a switch
    /// or router (RFC 2544 §12: traffic addressed through the device).
    /// With one host port there is no station across: the frames keep the
    /// host port's addresses.
    Stations,
}

/// How the offered load is stated.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rate {
    pub unit: RateUnit,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
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
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
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

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Interarrival {
    Constant,
    Poisson,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
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

/// Raw latency samples a run keeps at most (`loadgen.keep_samples`; an
/// implementation limit).
pub const MAX_KEPT_SAMPLES: u64 = 10_000_000;

/// Limits of the load generator's fields, stated once: the schema's ranges
/// and the checks in `validate` both use them (implementation limits, not
/// model values).
pub const MAX_FLOWS: u32 = 65536;
pub const MAX_FLOW_SKEW: f64 = 10.0;
pub const MAX_OUTSTANDING: u32 = 32768;
pub const MAX_DELACK_SEGMENTS: u32 = 64;
pub const MAX_MEMCACHED_KEYS: u64 = 1 << 32;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LoadgenConfig {
    /// Offered load of each sending port: bps (frame bits), pps or % of line rate.
    pub rate: Rate,
    /// Frame size(s) in bytes, FCS included.
    pub size: SizeDist,
    /// Spacing of departures: constant or Poisson.
    pub interarrival: Interarrival,
    /// udp (Ethernet/IPv4/UDP), raw Ethernet, or tcp (bulk TCP segments, for `--app iperf`).
    pub protocol: Protocol,
    /// Number of flows (distinct UDP source ports), ≥ 1.
    #[schemars(range(min = 1, max = MAX_FLOWS))]
    pub flows: u32,
    /// Flow popularity: 0 (the default) sends the flows in turn; s > 0
    /// draws each frame's flow from a Zipf distribution, flow rank r (the
    /// first flow is rank 1) with weight 1 / r^s.
    #[serde(default)]
    #[schemars(range(min = 0, max = MAX_FLOW_SKEW))]
    pub flow_skew: f64,
    /// Byte offset of the 16-byte tag; `None` puts it right after the headers.
    #[serde(default)]
    pub tag_offset: Option<u32>,
    /// The load generator's MAC.
    pub src_mac: String,
    /// The device's MAC.
    pub dst_mac: String,
    /// The load generator's IPv4 address.
    pub src_ip: String,
    /// The device's IPv4 address.
    pub dst_ip: String,
    /// First UDP source port (flow i uses `src_port + i`).
    pub src_port: u16,
    /// UDP destination port.
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
    /// Terminate the host's TCP connections instead of sending
    /// (`loadgen::tcp_sink`): acknowledge what arrives at a round-trip time.
    #[serde(default)]
    pub tcp: Option<TcpSinkConfig>,
    /// Which generator ports send when the host has several.
    #[serde(default)]
    pub traffic: Traffic,
    /// Whose addresses the frames carry (mesh traffic addresses the stations).
    #[serde(default)]
    pub address: Address,
}

/// A Zipf distribution over the sizes `min..=max` (bytes): the size of rank
/// r (min is rank 1) has weight 1 / r^skew; skew 0 is uniform.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ZipfSizeConfig {
    pub min: u32,
    pub max: u32,
    #[serde(default)]
    pub skew: f64,
}

/// The memcached client (`loadgen.memcached.*`; SPEC 2.9).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct McClientConfig {
    /// Size of the key space (keys 0..keys).
    #[schemars(range(min = 1, max = MAX_MEMCACHED_KEYS))]
    pub keys: u64,
    /// Key lengths (bytes), at most 250 (memcached's limit).
    pub key_size: ZipfSizeConfig,
    /// Value lengths of SETs (bytes).
    pub value_size: ZipfSizeConfig,
    /// Zipf popularity over the key space (0 = uniform).
    #[schemars(range(min = 0))]
    pub key_skew: f64,
    /// Fraction of GETs among the requests after the population (0..=1).
    #[schemars(range(min = 0, max = 1))]
    pub get_ratio: f64,
    /// The first `keys` requests SET every key in order.
    pub populate: bool,
    /// UDP port of the server (memcached's 11211).
    pub udp_port: u16,
}

impl Default for McClientConfig {
    /// 10 000 keys of 16–40 B (uniform), values of 16–512 B (Zipf 1), key
    /// popularity Zipf 0.99, 90 % GETs after a population pass, port 11211:
    /// estimates in the range of the memcached literature (short keys, small
    /// skewed values, GET-heavy); 11211 is memcached's port.
    fn default() -> Self {
        McClientConfig {
            keys: 10_000,
            key_size: ZipfSizeConfig { min: 16, max: 40, skew: 0.0 },
            value_size: ZipfSizeConfig { min: 16, max: 512, skew: 1.0 },
            key_skew: 0.99,
            get_ratio: 0.9,
            populate: true,
            udp_port: 11211,
        }
    }
}

/// Closed-loop load (`loadgen.closed_loop.*`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClosedLoopConfig {
    /// Requests in flight at once (started together at t = 0).
    #[schemars(range(min = 1, max = MAX_OUTSTANDING))]
    pub outstanding: u32,
    /// A request unanswered this long (ps) is given up and replaced
    /// (1 ms; estimate).
    #[serde(default = "ClosedLoopConfig::default_timeout_ps")]
    pub timeout_ps: u64,
}

impl ClosedLoopConfig {
    fn default_timeout_ps() -> u64 {
        1_000_000_000
    }
}

/// The TCP receiver (`loadgen.tcp.*`): it terminates the host's connections
/// (`--app tcp-send`) and acknowledges what arrives in order.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TcpSinkConfig {
    /// The round-trip time the receiver closes (ps): each ACK leaves
    /// `rtt − 2 × link.propagation` after the segment it answers arrived, so
    /// that segment out to ACK back takes `rtt` plus the host's own time. 0:
    /// the links' propagation alone.
    #[serde(default)]
    pub rtt_ps: Ps,
    /// Probability that an arriving segment is lost (discarded unseen), to
    /// exercise retransmission.
    #[serde(default)]
    #[schemars(range(min = 0), extend("exclusiveMaximum" = 1))]
    pub drop: f64,
    /// Full-sized segments received in order before an ACK goes out (RFC
    /// 1122 §4.2.3.2 and RFC 5681 §4.2: at least every second one).
    #[serde(default = "TcpSinkConfig::default_delack_segments")]
    #[schemars(range(min = 1, max = MAX_DELACK_SEGMENTS))]
    pub delack_segments: u32,
    /// Longest an in-order segment waits for its ACK (ps): Linux's
    /// `TCP_DELACK_MIN`, HZ/25 = 40 ms (include/net/tcp.h).
    #[serde(default = "TcpSinkConfig::default_delack_timeout_ps")]
    pub delack_timeout_ps: Ps,
    /// The receive window it advertises (bytes): Linux's `tcp_rmem` maximum,
    /// 6 MiB (Documentation/networking/ip-sysctl.rst), as if autotuning
    /// had grown to it. Sent in the window field scaled by 2^7 (a window
    /// scale negotiated at a handshake that is not modelled).
    #[serde(default = "TcpSinkConfig::default_window_bytes")]
    #[schemars(range(min = MIN_WINDOW_BYTES, max = MAX_WINDOW_BYTES))]
    pub window_bytes: u32,
}

/// The window scale the receiver's ACKs use (RFC 7323 shift).
pub const TCP_WINDOW_SHIFT: u32 = 7;
/// The receive window's range: at least one full-sized segment, at most the
/// 16-bit window field scaled by 2^`TCP_WINDOW_SHIFT`.
pub const MIN_WINDOW_BYTES: u32 = 1500;
pub const MAX_WINDOW_BYTES: u32 = (u16::MAX as u32) << TCP_WINDOW_SHIFT;

impl TcpSinkConfig {
    fn default_delack_segments() -> u32 {
        2
    }
    fn default_delack_timeout_ps() -> Ps {
        40_000_000_000
    }
    fn default_window_bytes() -> u32 {
        6 << 20
    }
}

impl Default for TcpSinkConfig {
    fn default() -> Self {
        TcpSinkConfig {
            rtt_ps: 0,
            drop: 0.0,
            delack_segments: Self::default_delack_segments(),
            delack_timeout_ps: Self::default_delack_timeout_ps(),
            window_bytes: Self::default_window_bytes(),
        }
    }
}

/// Where trace departures come from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TraceTiming {
    /// The trace's own timestamps, relative to its first frame, times `time_scale`.
    Trace,
    /// `loadgen.rate` and `loadgen.interarrival`; the trace gives only the frames.
    Rate,
}

/// What to do with a frame larger than `max_frame_bytes`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnOversize {
    /// Leave it out, count it (`loadgen.trace_oversize_frames`) and warn.
    Skip,
    /// Refuse the trace.
    Error,
}

/// How often the trace is played: `false` once, `true` until `sim.duration`
/// ends, a count N for N passes in all (as `tcpreplay --loop=N`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq)]
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
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// The pcap (µs or ns, either byte order) or pcapng file; Ethernet link type only.
    pub path: String,
    /// trace: the file's timestamps; rate: `loadgen.rate` and `loadgen.interarrival`.
    #[serde(default = "TraceConfig::default_timing")]
    pub timing: TraceTiming,
    /// Multiplies the trace's gaps (0.5 replays twice as fast); `timing = trace` only.
    #[serde(default = "TraceConfig::default_time_scale")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub time_scale: f64,
    /// How often the trace is played: false once, true until `sim.duration` ends, N for N passes.
    #[serde(default = "TraceConfig::default_loop", rename = "loop")]
    pub repeat: TraceLoop,
    /// Keep only UDP datagrams (IPv4 or IPv6) to this destination port.
    #[serde(default)]
    pub udp_port: Option<u16>,
    /// Largest frame replayed, FCS included (a captured length L is an L + 4 B frame).
    #[serde(default = "TraceConfig::default_max_frame_bytes")]
    pub max_frame_bytes: u32,
    /// Frames larger than `max_frame_bytes`: skip them (counted, warned) or stop with an error.
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
    /// Pad runt frames (shorter than 60 B without FCS, as captured on a
    /// sending host before the NIC pads them) to the minimum, counted and
    /// warned; false: a runt is an error naming the packet.
    #[serde(default)]
    pub pad_runts: bool,
    /// Recompute the IPv4 header checksum and the UDP and TCP checksums
    /// (IPv4 and IPv6) of every frame, as `tcpreplay --fixcsum`: captures
    /// taken with checksum offload carry placeholders.
    #[serde(default)]
    pub fix_checksums: bool,
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
            pad_runts: false,
            fix_checksums: false,
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
            &format!("{MIN_FRAME_BYTES} to {MAX_FRAME_BYTES} bytes (FCS included)"),
        )?;
        check(self.repeat != TraceLoop::Passes(0), "loadgen.trace.loop", 0, "true (loop until sim.duration), false (one pass) or a number of passes >= 1")
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
            flow_skew: 0.0,
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
            tcp: None,
            traffic: Traffic::Bidir,
            address: Address::Host,
        }
    }
}

impl LoadgenConfig {
    /// The config of generator port `p` of `ports`: its own addresses (port
    /// 0's plus p × 256, see `wire::port_mac`) and capture files
    /// (`name.pcap` → `name.port1.pcap`).
    pub fn for_port(&self, p: usize) -> LoadgenConfig {
        let mut c = self.clone();
        if p == 0 {
            return c;
        }
        let mac = |s: &str| crate::wire::ethernet::parse_mac(s).map(|m| crate::wire::port_mac(m, p).to_string()).unwrap_or_else(|| s.to_string());
        let ip = |s: &str| s.parse().map(|a| crate::wire::port_ip(a, p).to_string()).unwrap_or_else(|_| s.to_string());
        c.src_mac = mac(&self.src_mac);
        c.dst_mac = mac(&self.dst_mac);
        c.src_ip = ip(&self.src_ip);
        c.dst_ip = ip(&self.dst_ip);
        let per_port = |path: &Option<String>| {
            path.as_ref().map(|f| match f.rsplit_once('.') {
                Some((stem, ext)) if !stem.is_empty() && !ext.contains('/') => format!("{stem}.port{p}.{ext}"),
                _ => format!("{f}.port{p}"),
            })
        };
        c.capture_tx = per_port(&self.capture_tx);
        c.capture_rx = per_port(&self.capture_rx);
        c
    }

    /// Do the frames carry the addresses of the stations across the host
    /// (`address = stations`, or mesh traffic)?
    pub fn to_stations(&self) -> bool {
        self.address == Address::Stations || self.traffic == Traffic::Mesh
    }

    /// Does generator port `p` of `ports` send, under `traffic`?
    pub fn sends(&self, p: usize, ports: usize) -> bool {
        match self.traffic {
            Traffic::Uni if ports > 1 => p % 2 == 0,
            _ => true,
        }
    }

    /// Checks every field against its allowed range.
    pub fn validate(&self) -> Result<()> {
        let lg = self;
        check(lg.keep_samples <= MAX_KEPT_SAMPLES, "loadgen.keep_samples", lg.keep_samples, &format!("<= {MAX_KEPT_SAMPLES} (16 B each)"))?;
        check(lg.rate.value.is_finite() && lg.rate.value > 0.0, "loadgen.rate", lg.rate.value, "> 0")?;
        check((1..=MAX_FLOWS).contains(&lg.flows), "loadgen.flows", lg.flows, &format!("1 to {MAX_FLOWS}"))?;
        check(lg.flow_skew.is_finite() && (0.0..=MAX_FLOW_SKEW).contains(&lg.flow_skew), "loadgen.flow_skew", lg.flow_skew, &format!("0 to {MAX_FLOW_SKEW} (0: flows in turn)"))?;
        if lg.flow_skew > 0.0 {
            check(lg.protocol != Protocol::Tcp, "loadgen.flow_skew", lg.flow_skew, "0 with loadgen.protocol tcp (its segments' offsets assume flows in turn)")?;
        }
        self.validate_sizes()?;
        for (field, mac) in [("loadgen.src_mac", &lg.src_mac), ("loadgen.dst_mac", &lg.dst_mac)] {
            check(crate::wire::ethernet::parse_mac(mac).is_some(), field, mac, "a MAC like 02:00:00:00:00:01")?;
        }
        for (field, ip) in [("loadgen.src_ip", &lg.src_ip), ("loadgen.dst_ip", &lg.dst_ip)] {
            check(ip.parse::<std::net::Ipv4Addr>().is_ok(), field, ip, "a dotted IPv4 address")?;
        }
        // Where the tag goes, for the frames built from the header template:
        // the memcached client, a trace and the TCP receiver build none (a
        // tag_offset beside them is said to be ignored, Loadgen::warnings).
        if lg.memcached.is_none() && lg.trace.is_none() && lg.tcp.is_none() {
            self.validate_tag(lg.tag_offset)?;
        }
        if let Some(t) = &lg.trace {
            t.validate()?;
        }
        if let Some(m) = &lg.memcached {
            super::memcached::validate(m, self.jumbo_limit_bytes())?;
            check(lg.trace.is_none(), "loadgen.memcached", "set", "not together with loadgen.trace")?;
        }
        if lg.traffic == Traffic::Mesh {
            check(lg.trace.is_none() && lg.memcached.is_none(), "loadgen.traffic", "mesh", "bidir or uni with loadgen.trace or loadgen.memcached (mesh frames are synthetic)")?;
        }
        if lg.address == Address::Stations {
            check(lg.trace.is_none() && lg.memcached.is_none(), "loadgen.address", "stations", "host with loadgen.trace or loadgen.memcached (their frames keep their own addresses)")?;
        }
        if let Some(c) = &lg.closed_loop {
            check(lg.memcached.is_some(), "loadgen.closed_loop", "set", "only with loadgen.memcached (requests matched by id)")?;
            check((1..=MAX_OUTSTANDING).contains(&c.outstanding), "loadgen.closed_loop.outstanding", c.outstanding, &format!("1 to {MAX_OUTSTANDING}"))?;
            check(c.timeout_ps > 0, "loadgen.closed_loop.timeout", c.timeout_ps, "> 0")?;
        }
        if let Some(t) = &lg.tcp {
            check(lg.trace.is_none() && lg.memcached.is_none(), "loadgen.tcp", "set", "not together with loadgen.trace or loadgen.memcached (the receiver sends only ACKs)")?;
            check(t.drop.is_finite() && (0.0..1.0).contains(&t.drop), "loadgen.tcp.drop", t.drop, "0 <= p < 1")?;
            check((1..=MAX_DELACK_SEGMENTS).contains(&t.delack_segments), "loadgen.tcp.delack_segments", t.delack_segments, &format!("1 to {MAX_DELACK_SEGMENTS}"))?;
            check(t.delack_timeout_ps > 0, "loadgen.tcp.delack_timeout", t.delack_timeout_ps, "> 0")?;
            let max = MAX_WINDOW_BYTES;
            check((MIN_WINDOW_BYTES..=max).contains(&t.window_bytes), "loadgen.tcp.window_bytes", t.window_bytes, &format!("1500 to {max} (the 16-bit field scaled by 2^{TCP_WINDOW_SHIFT})"))?;
        }
        Ok(())
    }

    /// The tag fits after the headers and inside the smallest frame.
    fn validate_tag(&self, tag_offset: Option<u32>) -> Result<()> {
        let min = self.min_frame_bytes();
        let header = super::frame::header_len(self.protocol) as u32;
        let offset = tag_offset.unwrap_or(header);
        let tag_end = offset + crate::wire::tag::TAG_LEN as u32;
        check(offset >= header, "loadgen.tag_offset", offset, &format!(">= {header} (end of headers)"))?;
        if tag_offset.is_none() {
            // The tag goes after the headers: the frames must hold both.
            let need = tag_end + 4;
            let protocol = format!("{:?}", self.protocol).to_lowercase();
            let what = format!("{need} B and up with loadgen.protocol {protocol}: {header} B of headers, the {} B tag and 4 B FCS", crate::wire::tag::TAG_LEN);
            check(need <= min, "loadgen.size", format!("{min} B (smallest frame)"), &what)?;
        }
        check(
            tag_end + 4 <= min,
            "loadgen.tag_offset",
            offset,
            &format!("tag end + 4 B FCS <= smallest frame ({min} B), i.e. <= {}", min.saturating_sub(4 + crate::wire::tag::TAG_LEN as u32)),
        )
    }

    fn validate_sizes(&self) -> Result<()> {
        let range = format!("{MIN_FRAME_BYTES} to {MAX_FRAME_BYTES} bytes");
        let ok = |b: u32| (MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&b);
        match &self.size {
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
                let sum = weights.iter().sum::<f64>();
                check(weights.is_empty() || sum > 0.0, "loadgen.size.weights", "all zero", "a positive sum")?;
                check(sum.is_finite(), "loadgen.size.weights", format!("{weights:?}"), "a finite sum (weights are relative: scale them down)")
            }
            SizeDist::Uniform { min, max } => {
                check(ok(*min), "loadgen.size.min", min, &range)?;
                check(ok(*max) && max >= min, "loadgen.size.max", max, &format!("{min} to {MAX_FRAME_BYTES}"))
            }
            SizeDist::Imix => Ok(()),
        }
    }

    /// Largest request frame the memcached client may build: one standard
    /// frame (1518 B), or more when `loadgen.size` itself asks for jumbo frames.
    pub fn jumbo_limit_bytes(&self) -> u32 {
        let max = match &self.size {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::List { bytes, .. } => bytes.iter().copied().max().unwrap_or(0),
            SizeDist::Uniform { max, .. } => *max,
            SizeDist::Imix => 1518,
        };
        max.clamp(1518, MAX_FRAME_BYTES)
    }

    /// Smallest frame the size distribution can produce.
    pub fn min_frame_bytes(&self) -> u32 {
        match &self.size {
            SizeDist::Fixed { bytes } => *bytes,
            SizeDist::List { bytes, .. } => bytes.iter().copied().min().unwrap_or(MIN_FRAME_BYTES),
            SizeDist::Uniform { min, .. } => *min,
            SizeDist::Imix => 64,
        }
    }
}
