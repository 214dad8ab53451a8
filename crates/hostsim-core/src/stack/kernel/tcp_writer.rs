//! The TCP sender's state (`tcp_tx.rs` runs it on the kernel): each
//! connection's sequence space, retransmission queue, congestion window and
//! timers (RFC 5681, 6298, 6582), the write in progress, the zero-copy
//! buffers held until their completion, and the writer's statistics.

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::config::{TcpConfig, TxScheme};
use crate::engine::time::Ps;
use crate::stack::app::WriterSpec;
use crate::wire::{ethernet, ipv4, tcp, TCP_HEADERS};

/// Where the writer's buffers live: 64 GiB per core above this address,
/// each connection's buffer at a 2 MiB-aligned stride.
const USER_BUF_BASE: u64 = 0x80_0000_0000;
const USER_BUF_PER_CORE: u64 = 0x10_0000_0000;

/// One segment in the retransmission queue.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seg {
    pub(super) seq: u64,
    pub(super) len: u32,
    pub(super) skb: u32,
    pub(super) buf: u32,
    /// Where the payload lives if not behind the headers in `buf`: the
    /// application's buffer (zero-copy) or the NIC's memory (nicmem); 0 otherwise.
    pub(super) payload: u64,
    /// When it may be sent: its copy's completion (ioat, nicmem), else 0.
    pub(super) ready: Ps,
    /// Times sent, and when last.
    pub(super) sent: u8,
    pub(super) sent_at: Ps,
}

/// One connection's send state (sequence numbers 64-bit; the wire carries the low 32 bits).
pub(super) struct Conn {
    pub(super) sport: u16,
    /// Ethernet/IPv4/TCP headers of its segments (sequence number and lengths set per segment).
    pub(super) hdr: [u8; TCP_HEADERS],
    pub(super) snd_una: u64,
    /// The highest sequence number sent (an ACK beyond it is bogus).
    pub(super) snd_max: u64,
    /// The end of the data written.
    pub(super) write_seq: u64,
    /// Unacknowledged and unsent segments, from `snd_una`; `nxt` is the first unsent.
    pub(super) segs: VecDeque<Seg>,
    pub(super) nxt: usize,
    pub(super) cwnd: u64,
    pub(super) ssthresh: u64,
    /// The peer's window.
    pub(super) rwnd: u64,
    pub(super) dupacks: u32,
    /// NewReno: in fast recovery until this is acknowledged.
    pub(super) recover: Option<u64>,
    pub(super) srtt: Option<Ps>,
    pub(super) rttvar: Ps,
    pub(super) rto: Ps,
    pub(super) rto_at: Option<Ps>,
    /// Send-buffer bytes queued (skb truesize).
    pub(super) wmem: u64,
    /// TCP Small Queues: truesize of its clones in the qdisc and TX ring,
    /// and whether it stopped sending for them.
    pub(super) tsq_bytes: u64,
    pub(super) tsq_throttled: bool,
}

impl Conn {
    pub(super) fn snd_nxt(&self) -> u64 {
        self.segs.get(self.nxt).map_or(self.write_seq, |s| s.seq)
    }
    pub(super) fn in_flight(&self) -> u64 {
        self.snd_nxt() - self.snd_una
    }
}

/// The write in progress.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cur {
    pub(super) conn: usize,
    /// The buffer written (of the connection's `buffers`).
    pub(super) buf: usize,
    /// Bytes of the buffer already in the send queue.
    pub(super) off: u64,
    pub(super) start: Ps,
    pub(super) blocked_ps: Ps,
    pub(super) blocked_since: Option<Ps>,
    /// All of it queued, its copies complete at this time (ioat, nicmem; 0: not waiting).
    pub(super) wait: Ps,
}

#[derive(Debug, Default, Clone)]
pub(super) struct Stats {
    /// Writes completed over the whole run (not reset at warm-up).
    pub(super) writes_total: u64,
    pub(super) writes: u64,
    pub(super) bytes_written: u64,
    pub(super) bytes_acked: u64,
    pub(super) segments: u64,
    pub(super) transmissions: u64,
    pub(super) fast_retransmits: u64,
    /// Segments sent more than once.
    pub(super) retransmissions: u64,
    pub(super) timeouts: u64,
    pub(super) acks: u64,
    pub(super) dupacks: u64,
    /// Sends that found the window closed (cwnd or the peer's).
    pub(super) window_limited: u64,
    /// Sends held back by TCP Small Queues.
    pub(super) tsq_throttled: u64,
    /// Writes that waited for send-buffer space, and buffer allocations that failed.
    pub(super) blocks: u64,
    /// Zero-copy: writes that waited for their buffer's completion, and completions.
    pub(super) buffer_waits: u64,
    pub(super) completions: u64,
    pub(super) nombuf: u64,
    /// Per write (ps): time inside `write()`, time blocked in it, and how
    /// long its buffer was held (until it may be reused).
    pub(super) write_ps: Vec<u64>,
    pub(super) blocked_ps: Vec<u64>,
    pub(super) hold_ps: Vec<u64>,
    /// When the last byte written was acknowledged.
    pub(super) done_at: Ps,
}

/// A zero-copy write whose buffer is held until its last byte is acknowledged.
#[derive(Debug, Clone, Copy)]
pub(super) struct Held {
    pub(super) conn: usize,
    pub(super) buf: usize,
    pub(super) end_seq: u64,
    pub(super) start: Ps,
}

/// The writer: its connections, the write in progress, its statistics.
pub(super) struct Writer {
    pub(super) spec: WriterSpec,
    pub(super) cfg: TcpConfig,
    pub(super) scheme: TxScheme,
    /// Zero-copy: writes whose buffers wait for their completion, and which buffers are held.
    pub(super) held: VecDeque<Held>,
    pub(super) busy: Vec<bool>,
    pub(super) tx_end: Ps,
    pub(super) conns: Vec<Conn>,
    pub(super) cur: Option<Cur>,
    pub(super) blocked: bool,
    /// A segment's copy the stack waits for to send it: the earliest completion.
    pub(super) copy_wait: Option<Ps>,
    /// Writes started, and the base address of the user buffers.
    pub(super) started: u64,
    pub(super) user: u64,
    pub(super) stride: u64,
    /// Scratch: (skb, buffer) pairs an ACK frees, and the connections a NAPI poll's ACKs were for.
    pub(super) freed: Vec<(u32, u32)>,
    pub(super) acked: Vec<bool>,
    /// The connection each clone in flight belongs to, by skb.
    pub(super) clone_conn: Vec<u16>,
    pub(super) s: Stats,
}

/// Writes kept for the result's distributions (a long run keeps the first).
pub(super) const MAX_SAMPLES: usize = 1 << 20;

impl Writer {
    pub(super) fn new(spec: WriterSpec, cfg: TcpConfig, scheme: TxScheme, core: usize, tx_end: Ps, addrs: (ethernet::Mac, ethernet::Mac, std::net::Ipv4Addr, std::net::Ipv4Addr)) -> Writer {
        let (src_mac, dst_mac, src_ip, dst_ip) = addrs;
        let conns = (0..spec.connections)
            .map(|i| {
                let sport = spec.src_port.wrapping_add((core as u32 * spec.connections + i) as u16);
                let mut hdr = [0u8; TCP_HEADERS];
                ethernet::Repr { dst: dst_mac, src: src_mac, ethertype: ethernet::ETHERTYPE_IPV4 }.emit(&mut ethernet::Packet::new_unchecked(&mut hdr[..]));
                let l3 = ethernet::HEADER_LEN;
                ipv4::Repr { src: src_ip, dst: dst_ip, protocol: ipv4::PROTO_TCP, payload_len: tcp::HEADER_LEN, ttl: 64 }
                    .emit(&mut ipv4::Packet::new_unchecked(&mut hdr[l3..]));
                tcp::Packet::new_unchecked(&mut hdr[l3 + ipv4::HEADER_LEN..]).emit(sport, spec.dst_port, 0, 0, tcp::FLAG_ACK, 65535);
                Conn {
                    sport,
                    hdr,
                    snd_una: 0,
                    snd_max: 0,
                    write_seq: 0,
                    segs: VecDeque::new(),
                    nxt: 0,
                    cwnd: cfg.init_cwnd_segments as u64 * cfg.mss_bytes as u64,
                    ssthresh: u64::MAX,
                    // Until the first ACK: the initial window (RFC 7323 scaling is not yet agreed).
                    rwnd: 65535,
                    dupacks: 0,
                    recover: None,
                    srtt: None,
                    rttvar: 0,
                    rto: cfg.rto_init_ps,
                    rto_at: None,
                    wmem: 0,
                    tsq_bytes: 0,
                    tsq_throttled: false,
                }
            })
            .collect();
        Writer {
            spec,
            cfg,
            scheme,
            held: VecDeque::new(),
            busy: vec![false; (spec.connections * spec.buffers) as usize],
            tx_end,
            conns,
            cur: None,
            blocked: false,
            copy_wait: None,
            started: 0,
            user: USER_BUF_BASE + core as u64 * USER_BUF_PER_CORE,
            stride: spec.buffer_bytes.div_ceil(2 << 20) * (2 << 20),
            freed: Vec::with_capacity(256),
            acked: vec![false; spec.connections as usize],
            clone_conn: Vec::new(),
            s: Stats::default(),
        }
    }

    /// Has the thread something to do at `now`? A given number of writes
    /// is written whatever the time; with none given, no write starts
    /// after transmission ends.
    pub(super) fn runnable(&self, now: Ps) -> bool {
        let more = match self.spec.writes {
            0 => now < self.tx_end,
            n => self.started < n,
        };
        !self.blocked && self.cur.map_or(more, |c| c.wait <= now)
    }

    /// When the thread wakes from waiting for its copies, or the stack polls
    /// a segment's copy (whichever is first).
    pub(super) fn next_wake(&self) -> Option<Ps> {
        self.cur.filter(|c| c.wait > 0).map(|c| c.wait).into_iter().chain(self.copy_wait).min()
    }

    /// A clone `skb` (of `truesize` bytes) left the host, sent or dropped
    /// by the qdisc: its connection's TCP Small Queues bytes fall.
    pub(super) fn tsq_free(&mut self, skb: u32, truesize: u64) {
        let k = self.clone_conn[skb as usize] as usize;
        self.conns[k].tsq_bytes -= truesize;
    }

    /// The connection and buffer of write number `i`.
    pub(super) fn slot_of(&self, i: u64) -> (usize, usize) {
        let n = self.conns.len() as u64;
        ((i % n) as usize, ((i / n) % self.spec.buffers as u64) as usize)
    }

    /// The address of buffer `b` of connection `k`.
    pub(super) fn user_buf(&self, k: usize, b: usize) -> u64 {
        self.user + (k * self.spec.buffers as usize + b) as u64 * self.stride
    }

    /// May the blocked thread go on: room in its connection's send buffer
    /// for the write in progress, or the next write's buffer released?
    pub(super) fn may_resume(&self) -> bool {
        match self.cur {
            Some(cur) => self.wakes(cur.conn),
            None => {
                let (k, b) = self.slot_of(self.started);
                !self.busy[k * self.spec.buffers as usize + b]
            }
        }
    }

    /// Writes asked for and not completed (0 when no number was given).
    pub(super) fn unfinished(&self) -> u64 {
        self.spec.writes.saturating_sub(self.s.writes_total)
    }

    /// The earliest retransmission timer.
    pub(super) fn next_timer(&self) -> Option<Ps> {
        self.conns.iter().filter_map(|c| c.rto_at).min()
    }

    pub(super) fn mss(&self) -> u64 {
        self.cfg.mss_bytes as u64
    }

    /// Is there room for a segment in connection `k`'s send buffer?
    pub(super) fn room(&self, k: usize, truesize: u64) -> bool {
        self.conns[k].wmem + truesize <= self.cfg.sndbuf_bytes
    }

    /// `sk_stream_write_space`: a blocked writer wakes when its
    /// connection's free space is at least half of what is queued.
    pub(super) fn wakes(&self, k: usize) -> bool {
        let c = &self.conns[k];
        self.cfg.sndbuf_bytes.saturating_sub(c.wmem) >= c.wmem / 2
    }

    /// TCP Small Queues' limit for connection `k` (`TcpConfig::limit_output_bytes`):
    /// about 1 ms (2^-10 s) at its pacing rate — twice cwnd per round trip
    /// in slow start, 1.2 times after (`tcp_pacing_ss_ratio` 200,
    /// `tcp_pacing_ca_ratio` 120, tcp_update_pacing_rate) [V] — at least two
    /// skbs, at most the configured bytes.
    pub(super) fn tsq_limit(&self, k: usize, truesize: u64) -> u64 {
        let c = &self.conns[k];
        let cap = self.cfg.limit_output_bytes;
        let Some(srtt) = c.srtt.filter(|&s| s > 0) else { return cap };
        let ratio = if c.cwnd < c.ssthresh { 200 } else { 120 };
        let per_ms = (c.cwnd as u128 * ratio / 100 * crate::engine::time::PS_PER_S as u128 / srtt as u128 >> 10) as u64;
        per_ms.max(2 * truesize).min(cap)
    }

    /// RFC 6298 §2: a new round-trip sample.
    pub(super) fn sample_rtt(&mut self, k: usize, r: Ps) {
        let c = &mut self.conns[k];
        match c.srtt {
            None => {
                c.srtt = Some(r);
                c.rttvar = r / 2;
            }
            Some(s) => {
                c.rttvar = (3 * c.rttvar + s.abs_diff(r)) / 4;
                c.srtt = Some((7 * s + r) / 8);
            }
        }
        c.rto = (c.srtt.unwrap_or(r) + 4 * c.rttvar).clamp(self.cfg.rto_min_ps, self.cfg.rto_max_ps);
    }

    pub(super) fn result_json(&self) -> Value {
        let s = &self.s;
        let dist = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            let q = |p: f64| if v.is_empty() { 0 } else { v[((v.len() - 1) as f64 * p).round() as usize] };
            let mean = if v.is_empty() { 0.0 } else { v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 };
            json!({"count": v.len(), "mean_ps": mean, "min_ps": q(0.0), "p50_ps": q(0.5), "p99_ps": q(0.99), "max_ps": q(1.0)})
        };
        json!({
            "connections": self.conns.len(),
            "buffer_bytes": self.spec.buffer_bytes,
            "writes": s.writes,
            "writes_total": s.writes_total,
            "writes_unfinished": self.unfinished(),
            "bytes_written": s.bytes_written,
            "bytes_acked": s.bytes_acked,
            "segments": s.segments,
            "transmissions": s.transmissions,
            "fast_retransmits": s.fast_retransmits,
            "retransmissions": s.retransmissions,
            "timeouts": s.timeouts,
            "acks": s.acks,
            "dupacks": s.dupacks,
            "window_limited": s.window_limited,
            "tsq_throttled": s.tsq_throttled,
            "blocks": s.blocks,
            "tx_scheme": self.scheme.name(),
            "buffers": self.spec.buffers,
            "buffer_waits": s.buffer_waits,
            "completions": s.completions,
            "nombuf": s.nombuf,
            "write_time": dist(&s.write_ps),
            "blocked_time": dist(&s.blocked_ps),
            "hold_time": dist(&s.hold_ps),
            "complete_ps": s.done_at,
            "cwnd_bytes": self.conns.iter().map(|c| c.cwnd).collect::<Vec<_>>(),
            "srtt_ps": self.conns.iter().map(|c| c.srtt.unwrap_or(0)).collect::<Vec<_>>(),
        })
    }

    pub(super) fn reset_stats(&mut self) {
        let (done_at, writes_total) = (self.s.done_at, self.s.writes_total);
        self.s = Stats { done_at, writes_total, ..Stats::default() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> Writer {
        let spec = WriterSpec { connections: 1, buffer_bytes: 10_000, buffers: 2, writes: 1, dst_port: 5001, src_port: 40000 };
        let m = ethernet::Mac([2, 0, 0, 0, 0, 2]);
        Writer::new(spec, TcpConfig::default(), TxScheme::Copy, 0, Ps::MAX, (m, m, "10.0.0.2".parse().unwrap(), "10.0.0.1".parse().unwrap()))
    }

    #[test]
    fn rto_follows_rfc_6298() {
        let mut w = writer();
        assert_eq!(w.conns[0].rto, 1_000_000_000_000, "1 s before any sample");
        w.sample_rtt(0, 10_000_000);
        // srtt 10 µs, rttvar 5 µs: 30 µs, held up by the 200 ms minimum.
        assert_eq!((w.conns[0].srtt, w.conns[0].rttvar, w.conns[0].rto), (Some(10_000_000), 5_000_000, 200_000_000_000));
        w.sample_rtt(0, 18_000_000);
        assert_eq!((w.conns[0].srtt, w.conns[0].rttvar), (Some(11_000_000), 5_750_000));
    }

    #[test]
    fn writer_wakes_when_a_third_is_free() {
        let mut w = writer();
        let cap = w.cfg.sndbuf_bytes;
        w.conns[0].wmem = cap;
        assert!(!w.wakes(0) && !w.room(0, 1));
        w.conns[0].wmem = cap * 2 / 3;
        assert!(w.wakes(0));
        assert_eq!(w.conns[0].cwnd, 10 * 1460, "RFC 6928 initial window");
    }
}
