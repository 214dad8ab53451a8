//! Parameters of the Linux kernel stack model (`host.kernel.*`): interrupt
//! moderation, NAPI budgets, socket and qdisc sizes, the scheduler's
//! granularity, and the instructions of each stage.

use serde::{Deserialize, Serialize};

use crate::engine::time::Ps;
use crate::error::{ConfigError, Result};

/// The kernel stack's parameters (`host.kernel.*`).

/// The most sk_buffs a core's slab may hold: its 128 MiB region of the
/// core's layout (`kernel/mod.rs`, checked by a test there).
pub const MAX_SKBS: u32 = 1 << 18;
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelConfig {
    /// Minimum time between two interrupts of the queue (the ITR of
    /// ixgbe/i40e): 10 µs is ixgbe's 100K ints/s setting (params.md §7a,
    /// ITR constants); adaptive moderation is not modelled.
    pub irq_interval_ps: Ps,
    /// Packets per NAPI poll (`NAPI_POLL_WEIGHT` 64, params.md §7a).
    pub napi_budget: u32,
    /// Packets per `net_rx_action` round before the rest is left to
    /// ksoftirqd (`netdev_budget` 300, params.md §7a).
    pub netdev_budget: u32,
    /// Socket receive buffer, in bytes of skb truesize
    /// (`net.core.rmem_default` 212992; from the kernel docs, not re-read here).
    pub rcvbuf_bytes: u32,
    /// truesize of one received datagram: a 2 KiB half-page buffer and the
    /// sk_buff (estimate, after ixgbe's buffer layout).
    pub skb_truesize_bytes: u32,
    /// Packets the qdisc holds while the TX ring is full (`txqueuelen` 1000;
    /// the iproute2 default, not re-read here).
    pub txqueuelen: u32,
    /// CFS: a running thread keeps the core until its virtual runtime is
    /// this far ahead of the other runnable thread's (the scheduler's
    /// minimum granularity, 0.75 ms on one CPU; not re-read here).
    pub sched_granularity_ps: Ps,
    /// sk_buff structs in the slab (estimate: ample for the rings and socket
    /// queues of one core; a real slab grows on demand).
    pub skbs: u32,
    /// TCP receive buffer (`tcp_rmem` max 6 MiB, the autotuning limit; not re-read here).
    pub tcp_rcvbuf_bytes: u32,
    /// Largest skb GRO builds (`GRO_LEGACY_MAX_SIZE` 65536, params.md §7a).
    pub gro_max_bytes: u32,
    /// Bytes the receiving application asks for per `recv` (iperf3's 128 KiB; not re-read here).
    pub recv_bytes: u32,
    /// The TCP sender (`--app tcp-send`, `tcp_tx.rs`).
    #[serde(default)]
    pub tcp: TcpConfig,
    pub costs: KernelCosts,
    /// The code each path runs (fetched through the L1I).
    #[serde(default)]
    pub code: KernelCode,
}

/// Executed code bytes per path. Each is the static size of the path's
/// functions in Linux 6.1 (Debian's build, `nm -S`; docs/reference/
/// code-footprints.md §2) divided by 3.75, the median of the five
/// static-to-executed ratios measured for testpmd and memcached (2.45–5.5;
/// §1.4, §3.3): derived, not measured for the kernel ([C]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelCode {
    /// Interrupt entry, softirq and the NAPI poll loop (3 967 B static).
    pub irq_bytes: u32,
    /// The driver's receive routine with build_skb (ixgbe, 7 056 B static).
    pub driver_rx_bytes: u32,
    /// GRO, IP receive, UDP receive and the socket wake-up (24 937 B static).
    pub udp_rx_bytes: u32,
    /// GRO, IP receive, TCP receive and the wake-up (27 875 B static).
    pub tcp_rx_bytes: u32,
    /// recvfrom on a UDP socket: system call, udp_recvmsg, copy out (10 763 B static).
    pub udp_recv_bytes: u32,
    /// recv on a TCP socket: system call, tcp_recvmsg, copy out (12 519 B static).
    pub tcp_recv_bytes: u32,
    /// sendto on a UDP socket down to IP output (22 515 B static).
    pub udp_send_bytes: u32,
    /// dev_queue_xmit, the qdisc and the driver's xmit (14 772 B static).
    pub xmit_bytes: u32,
    /// The driver's TX completion and skb free (3 793 B static).
    pub tx_clean_bytes: u32,
    /// Forwarding in the softirq: GRO, IP receive, the route lookup and IP
    /// output (21 065 B static; ip_forward itself not counted).
    pub forward_bytes: u32,
}

impl Default for KernelCode {
    fn default() -> Self {
        KernelCode {
            irq_bytes: 1058,
            driver_rx_bytes: 1882,
            udp_rx_bytes: 6650,
            tcp_rx_bytes: 7433,
            udp_recv_bytes: 2870,
            tcp_recv_bytes: 3338,
            udp_send_bytes: 6004,
            xmit_bytes: 3939,
            tx_clean_bytes: 1011,
            forward_bytes: 5617,
        }
    }
}

/// How a TCP sender's payload reaches the NIC (`host.tx_scheme`; SPEC §1 study 4).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum TxScheme {
    /// The CPU copies the payload from the application's buffer into the
    /// socket's buffers; the NIC reads headers and payload from them.
    #[default]
    Copy,
    /// The chipset's DMA copy engine (I/OAT, `dma/`) copies the payload
    /// into the socket's buffers instead of the CPU; `write()` returns when
    /// its copies are complete.
    Ioat,
    /// MSG_ZEROCOPY: the application's pages are pinned and the NIC reads
    /// the payload from them; the buffer is released by a completion once
    /// its bytes are acknowledged.
    Zerocopy,
    /// The NIC moves the payload once into its own memory (`nic.memory`);
    /// the host keeps only headers, the NIC joins them to the payload it
    /// holds (also for retransmissions); `write()` returns when the
    /// transfers are complete.
    Nicmem,
}

impl TxScheme {
    pub fn name(self) -> &'static str {
        match self {
            TxScheme::Copy => "copy",
            TxScheme::Ioat => "ioat",
            TxScheme::Zerocopy => "zerocopy",
            TxScheme::Nicmem => "nicmem",
        }
    }
}

/// The TCP sender's parameters (`host.kernel.tcp.*`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Payload bytes per segment: the Ethernet MTU of 1500 B (RFC 894)
    /// less 20 B of IPv4 and 20 B of TCP header (no options are sent).
    pub mss_bytes: u32,
    /// The initial congestion window in segments: `TCP_INIT_CWND` 10
    /// (include/net/tcp.h; RFC 6928).
    pub init_cwnd_segments: u32,
    /// The retransmission timeout's floor and ceiling: `TCP_RTO_MIN` HZ/5 =
    /// 200 ms and `TCP_RTO_MAX` 120 s (include/net/tcp.h).
    pub rto_min_ps: Ps,
    pub rto_max_ps: Ps,
    /// The timeout before the first round-trip sample: `TCP_TIMEOUT_INIT`
    /// 1 s (include/net/tcp.h; RFC 6298 §2.1).
    pub rto_init_ps: Ps,
    /// The send buffer per connection, in bytes of skb truesize: the
    /// `tcp_wmem` maximum, 4 MiB (Documentation/networking/ip-sysctl.rst;
    /// not re-read here), as if autotuning had grown to it.
    pub sndbuf_bytes: u64,
    /// TCP Small Queues: a connection's bytes (skb truesize) in the qdisc
    /// and the TX ring at most — `tcp_limit_output_bytes`, 16 × 65536 =
    /// 1 MiB (net/ipv4/tcp_ipv4.c, tcp_sk_init, before 2025's rise to
    /// 4 MiB) [V] — or less: about 1 ms at the pacing rate
    /// (`sk_pacing_rate >> sk_pacing_shift`, shift 10), but at least two
    /// skbs (tcp_output.c, tcp_small_queue_check) [V].
    pub limit_output_bytes: u64,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1460,
            init_cwnd_segments: 10,
            rto_min_ps: 200_000_000_000,
            rto_max_ps: 120_000_000_000_000,
            rto_init_ps: 1_000_000_000_000,
            sndbuf_bytes: 4 << 20,
            limit_output_bytes: 16 * 65536,
        }
    }
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            irq_interval_ps: 10_000_000,
            napi_budget: 64,
            netdev_budget: 300,
            rcvbuf_bytes: 212_992,
            skb_truesize_bytes: 2304,
            txqueuelen: 1000,
            sched_granularity_ps: 750_000_000,
            skbs: 8192,
            tcp_rcvbuf_bytes: 6 << 20,
            gro_max_bytes: 65536,
            recv_bytes: 128 << 10,
            tcp: TcpConfig::default(),
            costs: KernelCosts::default(),
            code: KernelCode::default(),
        }
    }
}

/// Instructions per stage; memory accesses come on top, at their addresses.
///
/// The receive and transmit stages, the system call and the socket's
/// receive are derived from published per-function times of Linux 4.12–5.4
/// (docs/reference/host-costs.md §6): measured ns × the measuring CPU's
/// clock × the measured IPC of the path (2.0 receiving, 1.5 transmitting).
/// The interrupt, wake-up, context switch, qdisc, copy and TCP stages have
/// no per-stage measurement and are estimates. Instruction-cache and branch
/// misses are not modelled; the measured times include them. Emmerich et
/// al.'s Table II (Linux 3.7, params.md §7b) is a check, not a source.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelCosts {
    /// Hard interrupt: entry, handler (mask, schedule NAPI), EOI, exit.
    pub irq_instr: u32,
    /// One NAPI poll call (driver poll routine, net_rx_action bookkeeping).
    pub napi_poll_instr: u32,
    /// Driver RX per packet: descriptor, DMA sync, eth_type_trans.
    pub rx_pkt_instr: u32,
    /// Driver per refilled descriptor.
    pub refill_instr: u32,
    /// sk_buff allocation and initialisation (build_skb).
    pub skb_alloc_instr: u32,
    /// sk_buff release (kfree_skb / consume_skb).
    pub skb_free_instr: u32,
    /// Page-buffer allocation or free (page pool / frag allocator).
    pub buf_instr: u32,
    /// GRO receive (no merge for UDP).
    pub gro_instr: u32,
    /// ip_rcv and ip_rcv_finish: header checks, netfilter hooks, route lookup.
    pub ip_rcv_instr: u32,
    /// udp_rcv: socket lookup, queueing, memory accounting.
    pub udp_rcv_instr: u32,
    /// Waking the blocked application (try_to_wake_up).
    pub wakeup_instr: u32,
    /// One context switch (schedule, switch_to).
    pub context_switch_instr: u32,
    /// System-call entry and exit.
    pub syscall_instr: u32,
    /// udp_recvmsg: dequeue, address copy-out, accounting.
    pub sock_recv_instr: u32,
    /// Copy per 64 B line (copy_to_user / copy_from_user).
    pub copy_instr_per_line: u32,
    /// udp_sendmsg above the IP layer: the connected socket's route,
    /// ip_make_skb's set-up, the UDP header, udp_send_skb.
    pub udp_send_instr: u32,
    /// IP output down to the device: ip_local_out (or ip_forward_finish),
    /// ip_output, ip_finish_output2 with the neighbour's cached header, and
    /// dev_queue_xmit up to the qdisc. Charged on UDP datagrams sent and
    /// on forwarded packets; TCP's estimates (`tcp_xmit_instr`,
    /// `tcp_ack_instr`) still include their own IP output.
    #[serde(default = "KernelCosts::default_ip_output_instr")]
    pub ip_output_instr: u32,
    /// Qdisc enqueue, dequeue and the lock around them.
    pub qdisc_instr: u32,
    /// Driver xmit: DMA map, descriptor, tail doorbell.
    pub xmit_instr: u32,
    /// Per transmitted descriptor cleaned in NAPI.
    pub tx_clean_instr: u32,
    /// The application per datagram (udp-echo: take the source address, send back).
    pub app_instr: u32,
    /// tcp_v4_rcv and tcp_rcv_established per (GRO-merged) skb.
    pub tcp_rcv_instr: u32,
    /// Building and sending one ACK (tcp_send_ack down to the qdisc).
    pub tcp_ack_instr: u32,
    /// tcp_recvmsg per skb consumed.
    pub tcp_recv_skb_instr: u32,
    /// The TCP sender (estimates of the same order as the receive side's):
    /// tcp_sendmsg per `write()` (lock, checks, the final push).
    #[serde(default = "KernelCosts::default_tcp_sendmsg_instr")]
    pub tcp_sendmsg_instr: u32,
    /// Per segment built in tcp_sendmsg (sk_stream_alloc_skb, accounting, queueing).
    #[serde(default = "KernelCosts::default_tcp_segment_instr")]
    pub tcp_segment_instr: u32,
    /// Per segment sent: tcp_write_xmit, tcp_transmit_skb (clone, header), ip_queue_xmit, neighbour output.
    #[serde(default = "KernelCosts::default_tcp_xmit_instr")]
    pub tcp_xmit_instr: u32,
    /// Per ACK received: tcp_v4_rcv, tcp_ack (window, RTT, congestion control).
    #[serde(default = "KernelCosts::default_tcp_ack_rcv_instr")]
    pub tcp_ack_rcv_instr: u32,
    /// Per segment an ACK frees (tcp_clean_rtx_queue).
    #[serde(default = "KernelCosts::default_tcp_clean_instr")]
    pub tcp_clean_instr: u32,
    /// A retransmission timeout (tcp_retransmit_timer, tcp_enter_loss).
    #[serde(default = "KernelCosts::default_tcp_timer_instr")]
    pub tcp_timer_instr: u32,
    /// MSG_ZEROCOPY, per 4 KiB page of the application's buffer a segment
    /// covers: pinning it (get_user_pages) and the skb fragment.
    #[serde(default = "KernelCosts::default_zerocopy_page_instr")]
    pub zerocopy_page_instr: u32,
    /// MSG_ZEROCOPY, per completed write: the notification queued on the
    /// socket's error queue, and the application's recvmsg(MSG_ERRQUEUE)
    /// reading it (its system call is charged apart).
    #[serde(default = "KernelCosts::default_zerocopy_completion_instr")]
    pub zerocopy_completion_instr: u32,
    /// A copy offloaded to the copy engine (`ioat`) or a transfer into the
    /// NIC's memory (`nicmem`): the descriptor prepared and written to the
    /// channel's ring, and the doorbell (Linux: device_prep_dma_memcpy,
    /// tx_submit, issue_pending).
    #[serde(default = "KernelCosts::default_offload_submit_instr")]
    pub offload_submit_instr: u32,
    /// One poll of an offloaded copy's completion status (dma_async_is_tx_complete).
    #[serde(default = "KernelCosts::default_offload_poll_instr")]
    pub offload_poll_instr: u32,
}

impl KernelCosts {
    fn default_ip_output_instr() -> u32 {
        1072
    }
    fn default_tcp_sendmsg_instr() -> u32 {
        1000
    }
    fn default_tcp_segment_instr() -> u32 {
        300
    }
    fn default_tcp_xmit_instr() -> u32 {
        1200
    }
    fn default_tcp_ack_rcv_instr() -> u32 {
        800
    }
    fn default_tcp_clean_instr() -> u32 {
        150
    }
    fn default_tcp_timer_instr() -> u32 {
        1000
    }
    fn default_zerocopy_page_instr() -> u32 {
        150
    }
    fn default_zerocopy_completion_instr() -> u32 {
        1000
    }
    fn default_offload_submit_instr() -> u32 {
        300
    }
    fn default_offload_poll_instr() -> u32 {
        100
    }
}

impl Default for KernelCosts {
    fn default() -> Self {
        KernelCosts {
            irq_instr: 1500,
            napi_poll_instr: 154,
            rx_pkt_instr: 206,
            refill_instr: 53,
            skb_alloc_instr: 190,
            skb_free_instr: 146,
            buf_instr: 38,
            gro_instr: 188,
            ip_rcv_instr: 451,
            udp_rcv_instr: 451,
            wakeup_instr: 800,
            context_switch_instr: 1500,
            syscall_instr: 1152,
            sock_recv_instr: 1816,
            copy_instr_per_line: 6,
            udp_send_instr: 760,
            ip_output_instr: Self::default_ip_output_instr(),
            qdisc_instr: 300,
            xmit_instr: 140,
            tx_clean_instr: 30,
            app_instr: 100,
            tcp_rcv_instr: 900,
            tcp_ack_instr: 600,
            tcp_recv_skb_instr: 150,
            tcp_sendmsg_instr: Self::default_tcp_sendmsg_instr(),
            tcp_segment_instr: Self::default_tcp_segment_instr(),
            tcp_xmit_instr: Self::default_tcp_xmit_instr(),
            tcp_ack_rcv_instr: Self::default_tcp_ack_rcv_instr(),
            tcp_clean_instr: Self::default_tcp_clean_instr(),
            tcp_timer_instr: Self::default_tcp_timer_instr(),
            zerocopy_page_instr: Self::default_zerocopy_page_instr(),
            zerocopy_completion_instr: Self::default_zerocopy_completion_instr(),
            offload_submit_instr: Self::default_offload_submit_instr(),
            offload_poll_instr: Self::default_offload_poll_instr(),
        }
    }
}

impl KernelConfig {
    pub fn validate(&self) -> Result<()> {
        let bad = |f: &str, v: u64, allowed: &str| -> Result<()> { Err(ConfigError::new(f, v.to_string(), allowed).into()) };
        if self.napi_budget == 0 || self.napi_budget > 4096 {
            return bad("kernel.napi_budget", self.napi_budget as u64, "1 to 4096");
        }
        if self.netdev_budget < self.napi_budget {
            return bad("kernel.netdev_budget", self.netdev_budget as u64, &format!(">= kernel.napi_budget ({})", self.napi_budget));
        }
        if self.skb_truesize_bytes == 0 || self.rcvbuf_bytes < self.skb_truesize_bytes {
            return bad("kernel.rcvbuf_bytes", self.rcvbuf_bytes as u64, &format!(">= kernel.skb_truesize_bytes ({}) > 0", self.skb_truesize_bytes));
        }
        // The slab must fit its region of the core's layout (kernel/mod.rs).
        if self.skbs < 64 || self.skbs > MAX_SKBS {
            return bad("kernel.skbs", self.skbs as u64, &format!("64 to {MAX_SKBS}"));
        }
        if self.irq_interval_ps > 10_000_000_000 {
            return bad("kernel.irq_interval", self.irq_interval_ps, "<= 10 ms");
        }
        if self.sched_granularity_ps == 0 {
            return bad("kernel.sched_granularity", 0, "> 0");
        }
        if self.tcp_rcvbuf_bytes < self.skb_truesize_bytes {
            return bad("kernel.tcp_rcvbuf_bytes", self.tcp_rcvbuf_bytes as u64, &format!(">= kernel.skb_truesize_bytes ({})", self.skb_truesize_bytes));
        }
        if !(1500..=1 << 20).contains(&self.gro_max_bytes) {
            return bad("kernel.gro_max_bytes", self.gro_max_bytes as u64, "1500 to 1048576");
        }
        if !(1..=1 << 24).contains(&self.recv_bytes) {
            return bad("kernel.recv_bytes", self.recv_bytes as u64, "1 to 16777216");
        }
        let t = &self.tcp;
        if !(536..=1460).contains(&t.mss_bytes) {
            return bad("kernel.tcp.mss_bytes", t.mss_bytes as u64, "536 to 1460 (RFC 879's least to a 1500 B MTU's; jumbo frames are not modelled)");
        }
        if !(1..=1024).contains(&t.init_cwnd_segments) {
            return bad("kernel.tcp.init_cwnd_segments", t.init_cwnd_segments as u64, "1 to 1024");
        }
        if t.rto_min_ps == 0 || t.rto_min_ps > t.rto_max_ps {
            return bad("kernel.tcp.rto_min", t.rto_min_ps, &format!("> 0 and <= kernel.tcp.rto_max ({} ps)", t.rto_max_ps));
        }
        if t.rto_init_ps == 0 {
            return bad("kernel.tcp.rto_init", 0, "> 0");
        }
        if t.limit_output_bytes < 2 * self.skb_truesize_bytes as u64 || t.limit_output_bytes > 1 << 32 {
            return bad("kernel.tcp.limit_output_bytes", t.limit_output_bytes, &format!("{} to 4294967296 (at least two skbs' truesize)", 2 * self.skb_truesize_bytes));
        }
        if t.sndbuf_bytes < self.skb_truesize_bytes as u64 || t.sndbuf_bytes > 1 << 32 {
            return bad("kernel.tcp.sndbuf_bytes", t.sndbuf_bytes, &format!("{} to 4294967296 (at least one skb's truesize)", self.skb_truesize_bytes));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_kernel_configs_name_the_field() {
        let f = |cfg: KernelConfig| match cfg.validate().unwrap_err() {
            crate::error::Error::Config(c) => c.field,
            e => panic!("{e}"),
        };
        let d = KernelConfig::default();
        d.validate().unwrap();
        assert_eq!(f(KernelConfig { napi_budget: 0, ..d }), "kernel.napi_budget");
        assert_eq!(f(KernelConfig { netdev_budget: 32, ..d }), "kernel.netdev_budget");
        assert_eq!(f(KernelConfig { rcvbuf_bytes: 100, ..d }), "kernel.rcvbuf_bytes");
        assert_eq!(f(KernelConfig { skbs: 1, ..d }), "kernel.skbs");
    }
}
