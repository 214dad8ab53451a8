//! The TCP receiver of the load generator (`loadgen.tcp`): it terminates
//! the host's connections (`--app tcp-send`) as a directly connected peer
//! would, at a round-trip time of its own.
//!
//! Per connection (told apart by the sender's TCP source port) it keeps the
//! next byte expected and the out-of-order data past a hole. A segment in
//! order moves the expected byte on (and over any out-of-order data it
//! joins); every `delack_segments` such segments, or `delack_timeout` after
//! the first unacknowledged one, it acknowledges (a delayed ACK). A segment
//! past a hole, one that fills a hole, and a duplicate are acknowledged at
//! once (the duplicate ACKs that drive the sender's fast retransmit). ACKs
//! leave `rtt − 2 × propagation` after the event that caused them and
//! carry the window `window_bytes`. With `drop` > 0 each arriving segment
//! is lost with that probability before the receiver sees it.
//!
//! Simplified: no handshake (both ends start at sequence number 0); no
//! SACK, no timestamps; the window never shrinks (the application reads
//! at once).

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Value};

use super::config::{TcpSinkConfig, TCP_WINDOW_SHIFT};
use crate::engine::time::Ps;
use crate::engine::SimRng;
use crate::wire::{tcp, TCP_HEADERS};

/// One connection's receive state.
struct Conn {
    /// The sender's source port.
    port: u16,
    /// Headers of the first segment seen (the ACKs answer it, turned round).
    hdr: [u8; TCP_HEADERS],
    /// The next byte expected (64-bit: long transfers pass 2^32).
    rcv_nxt: u64,
    /// Out-of-order data: start → end.
    ooo: BTreeMap<u64, u64>,
    /// In-order segments not yet acknowledged.
    pending: u32,
    /// The delayed-ACK timer.
    delack_at: Option<Ps>,
    /// The highest acknowledgement that has left (the sender can know no
    /// later one: the window check counts from it).
    acked: u64,
    /// Bytes delivered in order, in all and inside the measured window.
    delivered: u64,
}

/// What the receiver counted: arrivals (and ACKs leaving) inside the
/// measured window, as its goodput; `beyond_window` over the whole run.
#[derive(Debug, Default, Clone)]
pub struct SinkCounters {
    pub segments: u64,
    /// Lost on purpose (`loadgen.tcp.drop`).
    pub dropped: u64,
    pub out_of_order: u64,
    /// Segments whose bytes had all arrived before (retransmissions of data received).
    pub duplicates: u64,
    pub acks: u64,
    pub delayed_acks: u64,
    /// Bytes delivered in order inside the measured window.
    pub window_bytes: u64,
    /// Segments that reached past the window last advertised (a sender
    /// breaking flow control), over the whole run: should stay 0.
    pub beyond_window: u64,
}

/// An ACK due to leave: (time, connection, acknowledgement number).
type Due = (Ps, usize, u64);

pub struct TcpSink {
    cfg: TcpSinkConfig,
    /// How long an ACK waits before it leaves.
    hold_ps: Ps,
    rng: SimRng,
    conns: Vec<Conn>,
    due: VecDeque<Due>,
    window: (Ps, Ps),
    pub c: SinkCounters,
}

/// The random stream of the receiver's losses (port p adds 16 p, as the other streams).
const STREAM_LOSS: u64 = 3;

impl TcpSink {
    /// A receiver behind links of `propagation_ps` each way, measuring the
    /// bytes it delivers inside `window` (warm-up end, transmission end).
    pub fn new(cfg: &TcpSinkConfig, propagation_ps: Ps, seed: u64, port: usize, window: (Ps, Ps)) -> TcpSink {
        TcpSink {
            cfg: *cfg,
            hold_ps: cfg.rtt_ps.saturating_sub(2 * propagation_ps),
            rng: SimRng::new(seed, STREAM_LOSS + 16 * port as u64),
            conns: Vec::new(),
            due: VecDeque::new(),
            window,
            c: SinkCounters::default(),
        }
    }

    /// A frame from the host arrived at `now`. Returns true when it was a
    /// TCP segment (the receiver took it; the system ends the frame).
    pub fn receive(&mut self, frame: &[u8], now: Ps) -> bool {
        let Some((port, seq32, len)) = segment(frame) else { return false };
        if len == 0 {
            return true; // a pure ACK from the host: nothing to deliver
        }
        // Every count, as the goodput, over the measured window's arrivals.
        let counted = self.in_window(now) as u64;
        self.c.segments += counted;
        if self.cfg.drop > 0.0 && self.rng.unit() < self.cfg.drop {
            self.c.dropped += counted;
            return true;
        }
        let k = match self.conns.iter().position(|c| c.port == port) {
            Some(k) => k,
            None => {
                let mut hdr = [0u8; TCP_HEADERS];
                hdr.copy_from_slice(&frame[..TCP_HEADERS]);
                self.conns.push(Conn { port, hdr, rcv_nxt: 0, ooo: BTreeMap::new(), pending: 0, delack_at: None, acked: 0, delivered: 0 });
                self.conns.len() - 1
            }
        };
        let (in_window, wnd) = (counted == 1, self.cfg.window_bytes as u64);
        let c = &mut self.conns[k];
        let seq = widen(c.rcv_nxt, seq32);
        let end = seq + len as u64;
        if end > c.acked + wnd {
            self.c.beyond_window += 1;
        }
        if end <= c.rcv_nxt {
            self.c.duplicates += counted;
            return self.ack_now(k, now);
        }
        if seq > c.rcv_nxt {
            self.c.out_of_order += counted;
            let e = c.ooo.entry(seq).or_insert(end);
            *e = (*e).max(end);
            return self.ack_now(k, now);
        }
        let before = c.rcv_nxt;
        c.rcv_nxt = end;
        let filled = !c.ooo.is_empty();
        while let Some((&s, &e)) = c.ooo.first_key_value() {
            if s > c.rcv_nxt {
                break;
            }
            c.rcv_nxt = c.rcv_nxt.max(e);
            c.ooo.pop_first();
        }
        let n = c.rcv_nxt - before;
        c.delivered += n;
        if in_window {
            self.c.window_bytes += n;
        }
        c.pending += 1;
        if filled || c.pending >= self.cfg.delack_segments {
            return self.ack_now(k, now);
        }
        if c.delack_at.is_none() {
            c.delack_at = Some(now + self.cfg.delack_timeout_ps);
        }
        true
    }

    /// Whether `t` falls in the measured window (warm-up end, transmission end).
    #[inline]
    fn in_window(&self, t: Ps) -> bool {
        t >= self.window.0 && t < self.window.1
    }

    /// Queues connection `k`'s ACK of everything in order, caused at `t`.
    fn ack_now(&mut self, k: usize, t: Ps) -> bool {
        let c = &mut self.conns[k];
        c.pending = 0;
        c.delack_at = None;
        let at = t + self.hold_ps;
        // Due times come in order, but for delayed-ACK timers: keep the queue sorted.
        let i = self.due.partition_point(|d| d.0 <= at);
        self.due.insert(i, (at, k, c.rcv_nxt));
        true
    }

    /// When the next ACK leaves or a delayed-ACK timer fires.
    pub fn next_event(&self) -> Option<Ps> {
        let timers = self.conns.iter().filter_map(|c| c.delack_at).min();
        self.due.front().map(|d| d.0).into_iter().chain(timers).min()
    }

    /// Fires the delayed-ACK timers due by `now` (each ACK leaving
    /// `rtt − 2 × propagation` after its timer), then takes the next ACK
    /// due by `now`: (connection, acknowledgement number).
    pub fn pop_ack(&mut self, now: Ps) -> Option<(usize, u64)> {
        for k in 0..self.conns.len() {
            if let Some(t) = self.conns[k].delack_at.filter(|&t| t <= now) {
                self.c.delayed_acks += self.in_window(t) as u64;
                self.ack_now(k, t);
            }
        }
        if !self.due.front().is_some_and(|d| d.0 <= now) {
            return None;
        }
        let (_, k, ack) = self.due.pop_front()?;
        self.c.acks += self.in_window(now) as u64;
        let c = &mut self.conns[k];
        c.acked = c.acked.max(ack);
        Some((k, ack))
    }

    /// Writes connection `k`'s ACK of `ack` into `buf` (a 64 B frame without FCS).
    pub fn write_ack(&self, k: usize, ack: u64, buf: &mut [u8]) {
        let window = (self.cfg.window_bytes >> TCP_WINDOW_SHIFT).min(u16::MAX as u32) as u16;
        tcp::write_ack(buf, &self.conns[k].hdr, ack as u32, window);
    }

    /// Bytes delivered in order over the whole run, all connections.
    pub fn delivered(&self) -> u64 {
        self.conns.iter().map(|c| c.delivered).sum()
    }

    pub fn reset_stats(&mut self) {
        self.c = SinkCounters::default();
    }

    /// The `loadgen.tcp` object of the result.
    pub fn result_json(&self, window_s: f64) -> Value {
        let c = &self.c;
        json!({
            "connections": self.conns.len(),
            "segments": c.segments,
            "dropped_segments": c.dropped,
            "out_of_order_segments": c.out_of_order,
            "duplicate_segments": c.duplicates,
            "acks": c.acks,
            "delayed_acks": c.delayed_acks,
            "beyond_window_segments": c.beyond_window,
            "goodput_bytes": c.window_bytes,
            "goodput_bps": if window_s.is_finite() && window_s > 0.0 { c.window_bytes as f64 * 8.0 / window_s } else { 0.0 },
            "delivered_bytes_total": self.delivered(),
            "delivered_bytes_by_connection": self.conns.iter().map(|c| c.delivered).collect::<Vec<_>>(),
            "rtt_hold_ps": self.hold_ps,
        })
    }
}

/// The 64-bit sequence number nearest `near` whose low 32 bits are `seq32`.
pub fn widen(near: u64, seq32: u32) -> u64 {
    let d = seq32.wrapping_sub(near as u32) as i32 as i64;
    (near as i64 + d).max(0) as u64
}

/// (source port, sequence number, payload length) of an Ethernet/IPv4/TCP frame.
fn segment(frame: &[u8]) -> Option<(u16, u32, usize)> {
    tcp::in_frame(frame, |t| (t.src_port(), t.seq(), t.payload().len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{ethernet, ipv4};

    fn seg(seq: u32, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; TCP_HEADERS + len];
        ethernet::Repr { dst: ethernet::Mac([2, 0, 0, 0, 0, 1]), src: ethernet::Mac([2, 0, 0, 0, 0, 2]), ethertype: ethernet::ETHERTYPE_IPV4 }
            .emit(&mut ethernet::Packet::new_unchecked(&mut f[..]));
        let l3 = ethernet::HEADER_LEN;
        ipv4::Repr { src: "10.0.0.2".parse().unwrap(), dst: "10.0.0.1".parse().unwrap(), protocol: ipv4::PROTO_TCP, payload_len: tcp::HEADER_LEN + len, ttl: 64 }
            .emit(&mut ipv4::Packet::new_unchecked(&mut f[l3..]));
        tcp::Packet::new_unchecked(&mut f[l3 + ipv4::HEADER_LEN..]).emit(40000, 5001, seq, 0, tcp::FLAG_ACK, 512);
        f
    }

    fn acks(s: &mut TcpSink, now: Ps) -> Vec<u32> {
        let mut out = vec![];
        while let Some((k, ack)) = s.pop_ack(now) {
            let mut b = vec![0u8; 60];
            s.write_ack(k, ack, &mut b);
            let ip = ipv4::Packet::new_checked(&b[ethernet::HEADER_LEN..]).unwrap();
            let t = tcp::Packet::new_checked(&ip.payload()[..tcp::HEADER_LEN]).unwrap();
            assert_eq!((t.src_port(), t.dst_port()), (5001, 40000), "the ACK goes back to the sender");
            out.push(t.ack());
        }
        out
    }

    #[test]
    fn delays_acks_for_two_segments_and_answers_holes_at_once() {
        let cfg = TcpSinkConfig { rtt_ps: 10_000_000, ..Default::default() };
        let mut s = TcpSink::new(&cfg, 1_000_000, 1, 0, (0, Ps::MAX));
        assert!(s.receive(&seg(0, 1000), 0));
        assert_eq!(s.next_event(), Some(40_000_000_000), "one segment waits for the delayed-ACK timer");
        s.receive(&seg(1000, 1000), 100);
        // Every second segment: the ACK leaves rtt − 2 × propagation later.
        assert_eq!(s.next_event(), Some(100 + 8_000_000));
        assert_eq!(acks(&mut s, 8_000_100), vec![2000]);
        // A hole: segment 3000.. arrives before 2000..: a duplicate ACK at once.
        s.receive(&seg(3000, 1000), 200);
        assert_eq!(acks(&mut s, 8_000_200), vec![2000]);
        // Filling it acknowledges both at once.
        s.receive(&seg(2000, 1000), 300);
        assert_eq!(acks(&mut s, 8_000_300), vec![4000]);
        // A retransmission of bytes already had: counted, answered.
        s.receive(&seg(0, 1000), 400);
        assert_eq!(acks(&mut s, 8_000_400), vec![4000]);
        assert_eq!((s.c.out_of_order, s.c.duplicates, s.delivered()), (1, 1, 4000));
        // The delayed-ACK timer sends a lone segment's ACK.
        s.receive(&seg(4000, 500), 500);
        assert_eq!(acks(&mut s, 40_000_000_500 + 8_000_000), vec![4500]);
        assert_eq!(s.c.delayed_acks, 1);
    }

    #[test]
    fn sequence_numbers_widen_past_two_to_the_32() {
        assert_eq!(widen(0, 5), 5);
        assert_eq!(widen((1 << 32) - 10, 20), (1 << 32) + 20);
        assert_eq!(widen((1 << 32) + 20, u32::MAX - 5), (1 << 32) - 6);
        assert_eq!(widen(10, u32::MAX), 0, "never below 0");
    }
}
