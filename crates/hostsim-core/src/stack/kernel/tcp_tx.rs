//! The kernel's TCP sender (`--app tcp-send`): an application thread that
//! `write()`s buffers on its connections, and TCP's transmit side under it.
//!
//! ```text
//! write(): syscall, tcp_sendmsg ─▶ per MSS: skb + page buffer, copy from the
//!   user buffer (blocks while the send buffer is full) ─▶ tcp_write_xmit:
//!   while the window allows, a clone of the segment's skb through IP, the
//!   qdisc and the driver (the NIC reads headers and payload from the buffer)
//! ACK (NAPI) ─▶ tcp_ack: acked segments freed (their buffers once no clone
//!   holds them), RTT and RTO (RFC 6298), cwnd (Reno: slow start, congestion
//!   avoidance; NewReno fast retransmit and recovery, RFC 5681/6582),
//!   then more segments, and the blocked writer woken when a third of the
//!   send buffer is free
//! RTO timer ─▶ cwnd to one segment, everything unacknowledged sent again
//! ```
//!
//! Each segment keeps its skb and page buffer until it is acknowledged
//! (the retransmission queue); each transmission sends a clone of the skb
//! that shares the buffer, freed when the NIC has sent it — the buffer goes
//! back to the pool when the last of the original and its clones is freed
//! (the data reference count of `skb_shared_info`).
//!
//! Simplified: no handshake (both ends start at sequence number 0); no TSO,
//! no SACK, no timestamps, no pacing, no Nagle (every segment is full but a
//! write's last); ACKs are processed in the softirq as they arrive, also
//! while the writer is inside `write()` (Linux queues them to the socket's
//! backlog while the writer holds the socket lock); one blocking writer
//! thread per core, which writes its buffers to its connections in turn.

use super::config::TxScheme;
use super::tcp_writer::{Cur, Held, Seg, MAX_SAMPLES};
use super::{Kernel, Thread, SKB_LINES};
use crate::cpu::Category;
use crate::framebuf::Fate;
use crate::loadgen::tcp_sink::widen;
use crate::nic::Slot;
use crate::stack::StackCx;
use crate::wire::{ethernet, ipv4, tcp, TCP_HEADERS};

/// A TX-ring entry whose skb is a clone: its completion frees the clone and
/// drops one reference to the page buffer (which the segment still holds).
pub(super) const CLONE: u32 = 1 << 31;

/// The window scale of the receiver's ACKs (`loadgen.tcp`): 2^7.
const WINDOW_SHIFT: u32 = crate::loadgen::config::TCP_WINDOW_SHIFT;

/// The destination port, acknowledgement number and window field of a TCP segment with the ACK flag.
fn ack_of(frame: &[u8]) -> Option<(u16, u32, u16)> {
    tcp::in_frame(frame, |t| (t.flags() & tcp::FLAG_ACK != 0).then(|| (t.dst_port(), t.ack(), t.window())))?
}

impl Kernel {
    /// The writer thread's next unit: starts a write if none is in
    /// progress, then puts one segment of it into the send queue (blocking
    /// when the send buffer is full) and pushes what the window allows.
    pub(super) fn write_step(&mut self, cx: &mut StackCx) {
        let c = self.cfg.costs;
        let now = cx.core.now();
        let Some(w) = self.writer.as_mut() else { return };
        if w.cur.is_none() {
            let (conn, buf) = w.slot_of(w.started);
            if w.busy[conn * w.spec.buffers as usize + buf] {
                // Zero-copy: the buffer is still the kernel's; wait for its completion.
                w.s.buffer_waits += 1;
                w.blocked = true;
                return;
            }
            w.started += 1;
            w.cur = Some(Cur { conn, buf, off: 0, start: now, blocked_ps: 0, blocked_since: None, wait: 0 });
            self.c.syscalls += 1;
            self.work.reset(Category::Syscall).instr(c.syscall_instr as u64);
            self.exec(cx);
            self.work.reset(Category::Proto).instr(c.tcp_sendmsg_instr as u64).read(self.at.sock).write(self.at.sock + 64);
            self.exec(cx);
        }
        let w = self.writer.as_mut().unwrap();
        let mut cur = w.cur.unwrap();
        if cur.off == w.spec.buffer_bytes {
            // Its copies are complete: the thread polls their status and returns.
            self.offload_poll(cx);
            self.end_write(cx, cur);
            return;
        }
        if let Some(since) = cur.blocked_since.take() {
            cur.blocked_ps += now - since;
        }
        let truesize = self.cfg.skb_truesize_bytes as u64;
        let (k, total) = (cur.conn, w.spec.buffer_bytes);
        if !w.room(k, truesize) {
            w.s.blocks += 1;
            cur.blocked_since = Some(now);
            w.cur = Some(cur);
            w.blocked = true;
            return;
        }
        let len = (total - cur.off).min(w.mss());
        let user = w.user_buf(k, cur.buf) + cur.off;
        let scheme = w.scheme;
        let Some((skb, buf)) = self.alloc_segment(cx) else {
            let w = self.writer.as_mut().unwrap();
            w.s.nombuf += 1;
            cur.blocked_since = Some(now);
            w.cur = Some(cur);
            w.blocked = true;
            return;
        };
        // sk_stream_alloc_skb, then the payload as the scheme has it (`tcp_offload.rs`).
        let data = cx.mbufs.data_addr(buf);
        self.work.reset(Category::Proto).instr(c.tcp_segment_instr as u64).write(self.at.sock + 64);
        self.exec(cx);
        let (ready, payload) = self.segment_payload(cx, scheme, user, data, buf, len);
        self.set_data_ref(buf, 1);
        let w = self.writer.as_mut().unwrap();
        let conn = &mut w.conns[k];
        conn.segs.push_back(Seg { seq: conn.write_seq, len: len as u32, skb, buf, payload, ready, sent: 0, sent_at: 0 });
        conn.write_seq += len;
        conn.wmem += truesize;
        w.s.segments += 1;
        w.s.bytes_written += len;
        cur.off += len;
        if cur.off == total && ready > cx.core.now() {
            // ioat, nicmem: the thread sleeps until its last copy is complete.
            cur.wait = ready;
            w.cur = Some(cur);
        } else if cur.off == total {
            self.end_write(cx, cur);
        } else {
            w.cur = Some(cur);
        }
        self.tcp_write_xmit(cx, k);
    }

    /// write() returns: with a copy the buffer may be reused at once (with
    /// ioat and nicmem, once their copies are complete), with zero-copy
    /// once its completion is read.
    fn end_write(&mut self, cx: &mut StackCx, cur: Cur) {
        let now = cx.core.now();
        let w = self.writer.as_mut().unwrap();
        let zerocopy = w.scheme == TxScheme::Zerocopy;
        w.s.writes += 1;
        w.s.writes_total += 1;
        if w.s.write_ps.len() < MAX_SAMPLES {
            w.s.write_ps.push(now - cur.start);
            w.s.blocked_ps.push(cur.blocked_ps);
            if !zerocopy {
                w.s.hold_ps.push(now - cur.start);
            }
        }
        if zerocopy {
            let k = cur.conn;
            let end_seq = w.conns[k].write_seq;
            w.busy[k * w.spec.buffers as usize + cur.buf] = true;
            w.held.push_back(Held { conn: k, buf: cur.buf, end_seq, start: cur.start });
        }
        w.cur = None;
    }

    /// An skb and a page buffer for a new segment; None if either pool is empty.
    pub(super) fn alloc_segment(&mut self, cx: &mut StackCx) -> Option<(u32, u32)> {
        let c = self.cfg.costs;
        let skb = self.alloc_skb(cx)?;
        self.ids2.clear();
        self.touched.clear();
        if !cx.mbufs.get_bulk(self.id, 1, &mut self.ids2, &mut self.touched) {
            self.c.nombuf += 1;
            self.ids.clear();
            self.ids.push(skb);
            self.ids2.clear();
            self.free_skbs(cx);
            return None;
        }
        let buf = self.ids2[0];
        self.exec_touched(cx, Category::Mempool, c.buf_instr as u64);
        Some((skb, buf))
    }

    /// One sk_buff from the slab, initialised; None if the slab is empty.
    fn alloc_skb(&mut self, cx: &mut StackCx) -> Option<u32> {
        self.ids.clear();
        self.touched.clear();
        if !self.skbs.get_bulk(0, 1, &mut self.ids, &mut self.touched) {
            self.c.nombuf += 1;
            return None;
        }
        self.work.reset(Category::Skb).instr(self.cfg.costs.skb_alloc_instr as u64);
        for &a in &self.touched {
            self.work.write(a);
        }
        let skb = self.ids[0];
        for l in 0..SKB_LINES {
            self.work.write(self.skbs.mbuf_addr(skb) + l * 64);
        }
        self.exec(cx);
        Some(skb)
    }

    /// Sets the references to page buffer `buf` (the segment and its clones in flight).
    fn set_data_ref(&mut self, buf: u32, n: u8) {
        let i = buf as usize;
        if i >= self.data_refs.len() {
            self.data_refs.resize(i + 1, 0);
        }
        self.data_refs[i] = n;
    }

    /// Drops one reference to page buffer `buf`: true when it was the last.
    pub(super) fn put_data_ref(&mut self, buf: u32) -> bool {
        let r = &mut self.data_refs[buf as usize];
        *r -= 1;
        *r == 0
    }

    /// tcp_write_xmit: sends connection `k`'s unsent segments while the window allows.
    pub(super) fn tcp_write_xmit(&mut self, cx: &mut StackCx, k: usize) {
        loop {
            let w = self.writer.as_mut().unwrap();
            let c = &w.conns[k];
            let Some(seg) = c.segs.get(c.nxt).copied() else { return };
            if seg.ready > cx.core.now() {
                // Its copy is not complete: the stack polls again then.
                w.copy_wait = Some(w.copy_wait.map_or(seg.ready, |t| t.min(seg.ready)));
                return;
            }
            let wnd = c.cwnd.min(c.rwnd);
            if c.in_flight() + seg.len as u64 > wnd {
                w.s.window_limited += 1;
                return;
            }
            let truesize = self.cfg.skb_truesize_bytes as u64;
            if c.tsq_bytes + truesize > w.tsq_limit(k, truesize) {
                // TCP Small Queues: sent on when the NIC frees a clone.
                w.conns[k].tsq_throttled = true;
                w.s.tsq_throttled += 1;
                return;
            }
            let i = c.nxt;
            if !self.tcp_transmit(cx, k, i) {
                return;
            }
            self.writer.as_mut().unwrap().conns[k].nxt += 1;
        }
    }

    /// tcp_transmit_skb: a clone of segment `i` of connection `k` through IP,
    /// the qdisc and the driver. False if no skb could be had for the clone.
    fn tcp_transmit(&mut self, cx: &mut StackCx, k: usize, i: usize) -> bool {
        let Some(clone) = self.alloc_skb(cx) else {
            self.writer.as_mut().unwrap().s.nombuf += 1;
            return false;
        };
        let now = cx.core.now();
        let truesize = self.cfg.skb_truesize_bytes as u64;
        let w = self.writer.as_mut().unwrap();
        let ci = clone as usize;
        if ci >= w.clone_conn.len() {
            w.clone_conn.resize(ci + 1, 0);
        }
        w.clone_conn[ci] = k as u16;
        let c = &mut w.conns[k];
        c.tsq_bytes += truesize;
        let seg = &mut c.segs[i];
        seg.sent = seg.sent.saturating_add(1);
        seg.sent_at = now;
        let (seq, len, buf, again, user) = (seg.seq, seg.len as usize, seg.buf, seg.sent > 1, seg.payload);
        c.snd_max = c.snd_max.max(seq + len as u64);
        w.s.retransmissions += again as u64;
        if c.rto_at.is_none() {
            c.rto_at = Some(now + c.rto);
        }
        w.s.transmissions += 1;
        let hdr = c.hdr;
        let frame = cx.frames.alloc((TCP_HEADERS + len + ethernet::FCS_LEN) as u32);
        let b = cx.frames.data_mut(frame);
        b[..TCP_HEADERS].copy_from_slice(&hdr);
        let l3 = ethernet::HEADER_LEN;
        let mut ip = ipv4::Packet::new_unchecked(&mut b[l3..]);
        ip.set_total_len((ipv4::HEADER_LEN + tcp::HEADER_LEN + len) as u16);
        ip.fill_checksum();
        let mut t = tcp::Packet::new_unchecked(&mut b[l3 + ipv4::HEADER_LEN..]);
        t.set_seq(seq as u32);
        t.set_flags(tcp::FLAG_ACK | tcp::FLAG_PSH);
        let data = cx.mbufs.data_addr(buf);
        // The headers written in front of the payload.
        self.work.reset(Category::Proto).instr(self.cfg.costs.tcp_xmit_instr as u64).read(self.at.sock).read(self.at.route).read(self.at.route + 64).write(data);
        self.exec(cx);
        self.data_refs[buf as usize] += 1;
        if user != 0 {
            // The NIC gathers the payload from the application's pages or its own memory.
            let f = frame as usize;
            if f >= self.frame_split.len() {
                self.frame_split.resize(f + 1, 0);
            }
            self.frame_split[f] = user;
        }
        self.queue_xmit(cx, Slot { mbuf: buf, frame, buf_addr: data }, clone | CLONE);
        true
    }

    /// The ACKs of one NAPI poll (`rcvd`): tcp_ack for each, then what
    /// their windows allow sent, and the writer woken if it waits for room.
    pub(super) fn tcp_acks_in(&mut self, cx: &mut StackCx) {
        let c = self.cfg.costs;
        let rcvd = std::mem::take(&mut self.rcvd);
        let t = cx.core.now();
        let mut freed = std::mem::take(&mut self.writer.as_mut().unwrap().freed);
        freed.clear();
        for q in &rcvd {
            self.work.reset(Category::Proto).instr((c.ip_rcv_instr + c.tcp_ack_rcv_instr) as u64).read(self.at.sock).write(self.at.sock + 64);
            self.exec(cx);
            let w = self.writer.as_mut().unwrap();
            let k = ack_of(cx.frames.data(q.frame)).and_then(|(port, ack, wnd)| w.conns.iter().position(|c| c.sport == port).map(|k| (k, ack, wnd)));
            let Some((k, ack32, wnd)) = k else {
                self.c.no_ports += 1;
                cx.frames.end(q.frame, Fate::NoSocket);
                freed.push((q.skb, q.buf));
                continue;
            };
            cx.out.consumed.push((t, q.frame));
            freed.push((q.skb, q.buf));
            w.acked[k] = true;
            self.tcp_ack(cx, k, ack32, wnd as u64, &mut freed);
        }
        self.rcvd = rcvd;
        // The ACKs' own skbs and buffers, and the acknowledged segments'.
        self.ids.clear();
        self.ids2.clear();
        self.ids.extend(freed.iter().map(|f| f.0));
        self.ids2.extend(freed.iter().map(|f| f.1).filter(|&b| b != u32::MAX));
        if !self.ids.is_empty() {
            self.free_skbs(cx);
        }
        self.writer.as_mut().unwrap().freed = freed;
        // tcp_data_snd_check: what the new windows allow, on each connection that heard.
        for k in 0..self.writer.as_ref().unwrap().conns.len() {
            if std::mem::take(&mut self.writer.as_mut().unwrap().acked[k]) {
                self.tcp_write_xmit(cx, k);
            }
        }
        let w = self.writer.as_mut().unwrap();
        if w.blocked && w.may_resume() {
            w.blocked = false;
            self.c.wakeups += 1;
            self.place(Thread::App);
            self.work.reset(Category::Sched).instr(c.wakeup_instr as u64).write(self.at.sock + 128);
            self.exec(cx);
        }
    }

    /// tcp_ack for connection `k`: `ack32` acknowledged with window field
    /// `wnd`. Freed segments' (skb, buffer or `u32::MAX` while a clone
    /// holds it) go to `freed`.
    fn tcp_ack(&mut self, cx: &mut StackCx, k: usize, ack32: u32, wnd: u64, freed: &mut Vec<(u32, u32)>) {
        let costs = self.cfg.costs;
        let now = cx.core.now();
        let truesize = self.cfg.skb_truesize_bytes as u64;
        let w = self.writer.as_mut().unwrap();
        let mss = w.mss();
        w.s.acks += 1;
        let c = &mut w.conns[k];
        let ack = widen(c.snd_una, ack32);
        c.rwnd = wnd << WINDOW_SHIFT;
        if ack > c.snd_max || ack < c.snd_una {
            return; // acknowledges nothing sent, or old: ignored
        }
        if ack == c.snd_una {
            if c.in_flight() == 0 {
                return; // a window update
            }
            w.s.dupacks += 1;
            c.dupacks += 1;
            if c.recover.is_some() {
                c.cwnd += mss; // inflation for each segment that left the network
            } else if c.dupacks == 3 {
                // Fast retransmit, then fast recovery (RFC 6582).
                c.ssthresh = (c.in_flight() / 2).max(2 * mss);
                c.cwnd = c.ssthresh + 3 * mss;
                c.recover = Some(c.snd_nxt());
                w.s.fast_retransmits += 1;
                self.tcp_retransmit_head(cx, k);
            }
            return;
        }
        // New data acknowledged: the segments wholly below `ack` leave the queue.
        let acked = ack - c.snd_una;
        c.snd_una = ack;
        c.dupacks = 0;
        let mut sample = None;
        let mut n = 0;
        while let Some(s) = c.segs.front() {
            if s.seq + s.len as u64 > ack {
                break;
            }
            let s = c.segs.pop_front().unwrap();
            c.nxt = c.nxt.saturating_sub(1);
            c.wmem -= truesize;
            if s.sent == 1 {
                sample = Some(now - s.sent_at); // Karn: never from a retransmitted segment
            }
            freed.push((s.skb, s.buf));
            n += 1;
        }
        w.s.bytes_acked += acked;
        match c.recover {
            Some(r) if ack < r => {
                // NewReno partial ACK: the next hole goes again; deflate by what was acknowledged.
                c.cwnd = c.cwnd.saturating_sub(acked) + mss;
            }
            Some(_) => {
                c.cwnd = c.ssthresh;
                c.recover = None;
            }
            None if c.cwnd < c.ssthresh => c.cwnd += acked.min(2 * mss), // slow start (RFC 3465, L = 2)
            None => c.cwnd += (mss * mss / c.cwnd).max(1),                 // congestion avoidance
        }
        let partial = c.recover.is_some();
        c.rto_at = if c.snd_una < c.snd_nxt() { Some(now + c.rto) } else { None };
        if c.snd_una == c.write_seq && c.segs.is_empty() {
            w.s.done_at = now;
        }
        if let Some(r) = sample {
            w.sample_rtt(k, r);
        }
        // Zero-copy: writes now wholly acknowledged complete; the
        // notification is queued and the application reads it.
        let snd_una = w.conns[k].snd_una;
        let mut done = 0u64;
        let mut i = 0;
        while i < w.held.len() {
            let h = w.held[i];
            if h.conn == k && h.end_seq <= snd_una {
                w.held.remove(i);
                w.busy[k * w.spec.buffers as usize + h.buf] = false;
                w.s.completions += 1;
                if w.s.hold_ps.len() < MAX_SAMPLES {
                    w.s.hold_ps.push(now - h.start);
                }
                done += 1;
            } else {
                i += 1;
            }
        }
        if done > 0 {
            self.c.syscalls += done;
            self.work.reset(Category::Syscall).instr(done * costs.syscall_instr as u64);
            self.exec(cx);
            self.work.reset(Category::Completion).instr(done * costs.zerocopy_completion_instr as u64).read(self.at.sock).write(self.at.sock + 64);
            self.exec(cx);
        }
        // A buffer a clone still holds is freed with the clone.
        let start = freed.len() - n;
        for i in start..freed.len() {
            let buf = freed[i].1;
            if !self.put_data_ref(buf) {
                freed[i].1 = u32::MAX;
            }
        }
        self.work.reset(Category::Proto).instr(n as u64 * costs.tcp_clean_instr as u64);
        self.exec(cx);
        if partial {
            self.tcp_retransmit_head(cx, k);
        }
    }

    /// The TSQ handler (tcp_tsq_handler, run when a throttled connection's
    /// clones are freed): sends what the windows allow.
    pub(super) fn tsq_resume(&mut self, cx: &mut StackCx) {
        let n = self.writer.as_ref().map_or(0, |w| w.conns.len());
        for k in 0..n {
            let w = self.writer.as_mut().unwrap();
            let truesize = self.cfg.skb_truesize_bytes as u64;
            let c = &w.conns[k];
            if c.tsq_throttled && c.tsq_bytes + truesize <= w.tsq_limit(k, truesize) {
                w.conns[k].tsq_throttled = false;
                self.tcp_write_xmit(cx, k);
            }
        }
    }

    /// Sends connection `k`'s first unacknowledged segment again.
    fn tcp_retransmit_head(&mut self, cx: &mut StackCx, k: usize) {
        let w = self.writer.as_mut().unwrap();
        if w.conns[k].segs.is_empty() || w.conns[k].nxt == 0 {
            return;
        }
        self.tcp_transmit(cx, k, 0);
    }

    /// Retransmission timers due at `now` (the timer softirq): each
    /// expired connection's window falls to one segment and everything
    /// unacknowledged is sent again as the window reopens (RFC 5681 §3.1,
    /// RFC 6298 §5, with the timeout doubled).
    pub(super) fn tcp_timers(&mut self, cx: &mut StackCx) {
        let now = cx.core.now();
        let n = self.writer.as_ref().map_or(0, |w| w.conns.len());
        for k in 0..n {
            let w = self.writer.as_mut().unwrap();
            let mss = w.mss();
            let max = w.cfg.rto_max_ps;
            let c = &mut w.conns[k];
            if !c.rto_at.is_some_and(|t| t <= now) {
                continue;
            }
            w.s.timeouts += 1;
            c.ssthresh = (c.in_flight() / 2).max(2 * mss);
            c.cwnd = mss;
            c.recover = None;
            c.dupacks = 0;
            c.nxt = 0;
            c.rto = (c.rto * 2).min(max);
            c.rto_at = None;
            self.work.reset(Category::Proto).instr(self.cfg.costs.tcp_timer_instr as u64).read(self.at.sock);
            self.exec(cx);
            self.tcp_write_xmit(cx, k);
            let w = self.writer.as_mut().unwrap();
            let c = &mut w.conns[k];
            if c.rto_at.is_none() && c.snd_una < c.write_seq {
                c.rto_at = Some(cx.core.now() + c.rto);
            }
        }
    }
}

