//! The applications' parameters (`host.app.*`): testpmd's forwarding mode,
//! rxptx's processing time, txonly's frame length, the key-value store,
//! the ports udp-echo and iperf listen on, a switch's flow table, and the
//! forwarding paths of ipfwd, the bridge and Open vSwitch's kernel datapath.

use serde::{Deserialize, Serialize};

pub use super::bridge::BridgeConfig;
pub use super::flow_table::FlowTableConfig;
pub use super::ipfwd::IpfwdConfig;
pub use super::l3fwd::L3fwdConfig;
pub use super::ovs::OvsConfig;
pub use super::tcp_send::TcpSendConfig;
use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};

/// Which port a forwarding application transmits a packet on, given the
/// port it came from (testpmd `--port-topology`; l2fwd pairs ports the
/// same way).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PortTopology {
    /// 0↔1, 2↔3, ...; an odd last port to itself.
    #[default]
    Paired,
    /// 0→1→2→...→0.
    Chained,
    /// Every port to itself.
    Loop,
}

impl PortTopology {
    /// The port packets from `port` leave on, of `ports`.
    pub fn tx_port(self, port: usize, ports: usize) -> usize {
        match self {
            PortTopology::Paired if port ^ 1 < ports => port ^ 1,
            PortTopology::Paired | PortTopology::Loop => port,
            PortTopology::Chained => (port + 1) % ports,
        }
    }
}

/// testpmd forwarding modes (`--forward-mode`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ForwardMode {
    Io,
    Mac,
    #[default]
    Macswap,
    Rxonly,
    /// Generate packets and transmit them; the RX queue is not polled.
    Txonly,
}

/// What rxptx's processing time is charged per (`host.app.proc_per`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ProcPer {
    /// The kernel-bypass study's definition: receive a burst, wait one
    /// processing interval, transmit the burst.
    #[default]
    Burst,
    /// One processing interval for every packet of the burst.
    Packet,
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    /// testpmd's forwarding mode (app `testpmd` only).
    #[serde(default)]
    pub forward_mode: ForwardMode,
    /// rxptx: the processing interval (ps), spent once per received burst
    /// or once per packet as `proc_per` says.
    #[serde(default)]
    pub proc_time_ps: Ps,
    /// rxptx: what one processing interval is spent on.
    #[serde(default)]
    pub proc_per: ProcPer,
    /// testpmd txonly: length of the generated frames, FCS included
    /// (testpmd `--txpkts`, default 64).
    #[serde(default = "default_tx_frame_bytes")]
    pub tx_frame_bytes: u32,
    /// memcached (MemcachedDPDK, MemcachedKernel): the store and its costs.
    #[serde(default)]
    pub kvs: KvsAppConfig,
    /// udp-echo: the UDP port it answers on (the load generator's default
    /// destination port, 9; RFC 862's echo port is 7).
    #[serde(default = "default_echo_port")]
    pub echo_port: u16,
    /// iperf: the TCP port it receives on (iperf3's 5201).
    #[serde(default = "default_iperf_port")]
    pub iperf_port: u16,
    /// Forwarding applications: which port a packet leaves on (testpmd's
    /// default, paired). Applications that answer the sender (udp-echo,
    /// memcached, iperf) answer on the port the request came in on.
    #[serde(default)]
    pub port_topology: PortTopology,
    /// vswitch: its exact-match flow table (`flow_table.rs`).
    #[serde(default)]
    pub flow_table: FlowTableConfig,
    /// ipfwd: the forwarding path's work per packet.
    #[serde(default)]
    pub ipfwd: IpfwdConfig,
    /// bridge: its settings and work per frame.
    #[serde(default)]
    pub bridge: BridgeConfig,
    /// ovs: the kernel datapath's flow table and work per frame.
    #[serde(default)]
    pub ovs: OvsConfig,
    /// l3fwd: its work per packet.
    #[serde(default)]
    pub l3fwd: L3fwdConfig,
    /// tcp-send: its connections and writes.
    #[serde(default)]
    pub tcp_send: TcpSendConfig,
}

fn default_iperf_port() -> u16 {
    5201
}

fn default_echo_port() -> u16 {
    9
}

/// The key-value store behind `--app memcached`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KvsAppConfig {
    /// UDP port the store answers on (memcached's 11211).
    pub udp_port: u16,
    /// Hash chains (a power of two) and item slots (our DPDK kvs' defaults).
    pub buckets: u32,
    pub items: u32,
    /// Longest value a `set` may store (bytes).
    pub max_value_bytes: u32,
    /// Instructions per request for parsing, hashing, the item lookup and
    /// building the reply; the hash table's and the items' memory accesses
    /// come on top. Default 2 810: memcached 1.6.18's user-space
    /// instructions per ASCII GET, measured with valgrind
    /// (docs/reference/code-footprints.md §3.2; its libevent loop and libc
    /// wrappers included; an x86-64 count, used for the Arm presets too). A
    /// SET measured 4 590; every request is charged this one count.
    pub request_instr: u32,
    /// Code a request runs (bytes, fetched through the L1I): 7 520,
    /// memcached 1.6.18's executed user-space bytes per ASCII GET with its
    /// libevent loop and libc wrappers, measured with valgrind
    /// (docs/reference/code-footprints.md §3.2; a SET ran 10 864).
    #[serde(default = "default_kvs_code_bytes")]
    pub code_bytes: u32,
}

fn default_kvs_code_bytes() -> u32 {
    7520
}

impl Default for KvsAppConfig {
    fn default() -> Self {
        KvsAppConfig { udp_port: 11211, buckets: 65536, items: 65536, max_value_bytes: 1024, request_instr: 2810, code_bytes: default_kvs_code_bytes() }
    }
}

fn default_tx_frame_bytes() -> u32 {
    64
}

impl Default for AppConfig {
    fn default() -> Self {
        AppConfig {
            forward_mode: ForwardMode::Macswap,
            proc_time_ps: 1_000_000,
            proc_per: ProcPer::Burst,
            tx_frame_bytes: default_tx_frame_bytes(),
            kvs: KvsAppConfig::default(),
            echo_port: default_echo_port(),
            iperf_port: default_iperf_port(),
            port_topology: PortTopology::Paired,
            flow_table: FlowTableConfig::default(),
            ipfwd: IpfwdConfig::default(),
            bridge: BridgeConfig::default(),
            ovs: OvsConfig::default(),
            l3fwd: L3fwdConfig::default(),
            tcp_send: TcpSendConfig::default(),
        }
    }
}


impl AppConfig {
    /// Checks every field; errors name the field from `app.`.
    pub fn validate(&self) -> Result<()> {
        let invalid = |field: &str, value: String, allowed: &str| -> Result<()> { Err(ConfigError::new(field, value, allowed).into()) };
        let len = self.tx_frame_bytes;
        if !(crate::wire::ethernet::MIN_FRAME_BYTES..=crate::wire::ethernet::MAX_FRAME_BYTES).contains(&len) {
            return invalid("app.tx_frame_bytes", len.to_string(), "64 to 9216");
        }
        self.flow_table.validate()?;
        self.ipfwd.validate()?;
        self.bridge.validate()?;
        self.ovs.validate()?;
        self.tcp_send.validate()?;
        let k = &self.kvs;
        if !k.buckets.is_power_of_two() {
            return invalid("app.kvs.buckets", k.buckets.to_string(), "a power of two");
        }
        if k.items == 0 || k.items > 1 << 24 {
            return invalid("app.kvs.items", k.items.to_string(), "1 to 16777216");
        }
        if k.max_value_bytes > 1 << 20 {
            return invalid("app.kvs.max_value_bytes", k.max_value_bytes.to_string(), "0 to 1048576");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_topologies_as_testpmd() {
        let t = |topo: PortTopology, ports: usize| (0..ports).map(|p| topo.tx_port(p, ports)).collect::<Vec<_>>();
        assert_eq!(t(PortTopology::Paired, 4), vec![1, 0, 3, 2]);
        assert_eq!(t(PortTopology::Paired, 3), vec![1, 0, 2], "an odd last port forwards to itself");
        assert_eq!(t(PortTopology::Paired, 1), vec![0]);
        assert_eq!(t(PortTopology::Chained, 3), vec![1, 2, 0]);
        assert_eq!(t(PortTopology::Loop, 2), vec![0, 1]);
    }
}
