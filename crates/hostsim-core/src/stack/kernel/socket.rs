//! The kernel's protocol and socket layers on one core: GRO, IP, UDP and
//! TCP receive into the socket, the application's system calls (recvfrom,
//! recv, sendto) with their copies, pure ACKs, and the transmit path
//! through the qdisc to the driver.

use super::{code, Kernel, Queued, Thread};
use crate::cpu::{Category, CodeRegion};
use crate::framebuf::{Fate, FrameId};
use crate::nic::Slot;
use crate::stack::app::{App, AppCx};
use crate::stack::StackCx;
use crate::wire::{ethernet, ipv4, tcp, udp, TCP_HEADERS, UDP_HEADERS};

/// A pure ACK: the headers, padded to the 64 B minimum with the FCS.
const ACK_FRAME_BYTES: u32 = 64;

/// What the socket lookup needs of an Ethernet/IPv4 frame: UDP or TCP, the
/// destination and source ports, the payload length, and for TCP the
/// sequence number just after the payload.
#[derive(Debug, Clone, Copy)]
struct L4 {
    tcp: bool,
    dst_port: u16,
    src_port: u16,
    len: usize,
    end_seq: u32,
}

fn l4(frame: &[u8]) -> Option<L4> {
    let eth = ethernet::Packet::new_checked(frame).ok()?;
    if ethernet::Repr::parse(&eth).ok()?.ethertype != ethernet::ETHERTYPE_IPV4 {
        return None;
    }
    let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
    match ip.protocol() {
        ipv4::PROTO_UDP => {
            let u = udp::Packet::new_checked(ip.payload()).ok()?;
            Some(L4 { tcp: false, dst_port: u.dst_port(), src_port: u.src_port(), len: u.payload().len(), end_seq: 0 })
        }
        ipv4::PROTO_TCP => {
            let t = tcp::Packet::new_checked(ip.payload()).ok()?;
            let len = t.payload().len();
            Some(L4 { tcp: true, dst_port: t.dst_port(), src_port: t.src_port(), len, end_seq: t.seq().wrapping_add(len as u32) })
        }
        _ => None,
    }
}

impl Kernel {
    /// GRO, IP, UDP or TCP for the packets of one NAPI poll (`rcvd`): socket
    /// lookup and queueing. TCP segments of a flow merge into one skb (up to
    /// `gro_max_bytes`) that IP and TCP process once and acknowledge.
    pub(super) fn protocols(&mut self, cx: &mut StackCx) {
        let c = self.cfg.costs;
        let udp_cost = (c.gro_instr + c.ip_rcv_instr + c.udp_rcv_instr) as u64;
        let tcp_cost = (c.ip_rcv_instr + c.tcp_rcv_instr) as u64;
        let sock = self.at.sock;
        let k = self.cfg.code;
        let rx_code = if self.tcp { CodeRegion::kernel(code::TCP_RX, k.tcp_rx_bytes) } else { CodeRegion::kernel(code::UDP_RX, k.udp_rx_bytes) };
        self.work.reset(Category::Proto).code(rx_code);
        let was_empty = self.sock_q.is_empty();
        self.ids.clear();
        self.ids2.clear();
        self.acks.clear();
        // The open GRO skb: (flow's source port, bytes, headers of its last segment, ack number).
        let mut gro: Option<(u16, u64, [u8; TCP_HEADERS], u32)> = None;
        let rcvd = std::mem::take(&mut self.rcvd);
        for q in &rcvd {
            // The socket lookup: a segment or datagram to the application's port.
            let ours = l4(cx.frames.data(q.frame)).filter(|s| s.dst_port == self.port && s.tcp == self.tcp);
            if let Some(s) = ours.filter(|s| s.tcp) {
                self.work.instr(c.gro_instr as u64);
                let mut hdr = [0u8; TCP_HEADERS];
                hdr.copy_from_slice(&cx.frames.data(q.frame)[..TCP_HEADERS]);
                match gro.as_mut() {
                    Some(g) if g.0 == s.src_port && g.1 + s.len as u64 <= self.cfg.gro_max_bytes as u64 => {
                        g.1 += s.len as u64;
                        g.2 = hdr;
                        g.3 = s.end_seq;
                    }
                    _ => {
                        if let Some(g) = gro.take() {
                            self.acks.push((g.2, g.3));
                        }
                        // A new skb for IP and TCP.
                        self.c.gro_skbs += 1;
                        self.work.instr(tcp_cost).read(sock).write(sock + 64);
                        gro = Some((s.src_port, s.len as u64, hdr, s.end_seq));
                    }
                }
            } else {
                self.work.instr(udp_cost).read(sock).write(sock + 64);
            }
            let limit = if self.tcp { self.cfg.tcp_rcvbuf_bytes } else { self.cfg.rcvbuf_bytes } as u64;
            let fits = self.sock_q_bytes + self.cfg.skb_truesize_bytes as u64 <= limit;
            if let (Some(s), true) = (ours, fits) {
                self.sock_q.push_back(Queued { len: s.len as u32, ..*q });
                self.sock_q_bytes += self.cfg.skb_truesize_bytes as u64;
            } else {
                let fate = if ours.is_some() {
                    self.c.rcvbuf_errors += 1;
                    Fate::Socket
                } else {
                    self.c.no_ports += 1;
                    Fate::NoSocket
                };
                cx.frames.end(q.frame, fate);
                self.ids.push(q.skb);
                self.ids2.push(q.buf);
            }
        }
        self.rcvd = rcvd;
        if let Some(g) = gro.take() {
            self.acks.push((g.2, g.3));
        }
        self.c.sock_queue_max = self.c.sock_queue_max.max(self.sock_q.len() as u64);
        self.exec(cx);
        if !self.ids.is_empty() {
            self.free_skbs(cx);
        }
        let acks = std::mem::take(&mut self.acks);
        for (hdr, ack) in &acks {
            self.send_ack(cx, hdr, *ack);
        }
        self.acks = acks;
        if was_empty && !self.sock_q.is_empty() {
            // The application sleeps in recvfrom: wake it.
            self.c.wakeups += 1;
            self.place(Thread::App);
            self.work.reset(Category::Sched).instr(c.wakeup_instr as u64).write(sock + 128);
            self.exec(cx);
        }
    }

    /// The context an application runs in on this core.
    pub(super) fn app_cx<'a>(&'a mut self, cx: &'a mut StackCx) -> AppCx<'a> {
        let st = self.s();
        let port = &cx.nic.ports[st.tx_port];
        let (port_mac, peer_mac, port_ip, peer_ip) = (port.mac, port.peer, port.ip, port.peer_ip);
        let rx_port_mac = cx.nic.ports[st.rx_port].mac;
        AppCx {
            core: cx.core,
            mem: cx.mem,
            frames: cx.frames,
            mbufs: cx.mbufs,
            work: &mut self.work,
            costs: &self.pmd_costs,
            core_id: self.id,
            rx_port: st.rx_port,
            rx_port_mac,
            port_mac,
            peer_mac,
            port_ip,
            peer_ip,
            tx: &mut self.no_tx,
            free: &mut self.no_free,
            nombuf: &mut self.c.rx_nombuf,
            user_rx: self.at.user_rx,
            user_tx: self.at.user_tx,
            kernel_app_instr: self.cfg.costs.app_instr as u64,
            scratch: &mut self.scratch,
            touched: &mut self.touched,
            horizon: crate::engine::time::Ps::MAX,
        }
    }

    /// The application: one recvfrom, its processing, a sendto per reply
    /// datagram; then, if the socket is empty, the recvfrom that blocks.
    pub(super) fn app_iteration(&mut self, cx: &mut StackCx, app: &mut dyn App) {
        if self.writer.is_some() {
            self.write_step(cx);
            return;
        }
        if self.tcp {
            self.tcp_recv(cx);
            return;
        }
        let c = self.cfg.costs;
        let Some(q) = self.sock_q.pop_front() else { return };
        self.sock_q_bytes -= self.cfg.skb_truesize_bytes as u64;
        self.c.datagrams_received += 1;
        let len = q.len as u64;
        // recvfrom: system call, dequeue, copy to user, free the skb.
        self.c.syscalls += 1;
        self.work.reset(Category::Syscall).code(CodeRegion::kernel(code::UDP_RECV, self.cfg.code.udp_recv_bytes)).instr(c.syscall_instr as u64);
        self.exec(cx);
        self.work.reset(Category::Proto).instr(c.sock_recv_instr as u64).read(self.at.sock).write(self.at.sock + 64);
        self.exec(cx);
        let data = cx.mbufs.data_addr(q.buf) + UDP_HEADERS as u64;
        self.work.reset(Category::Copy).copy_lines(data, self.at.user_rx, len, c.copy_instr_per_line as u64);
        self.exec(cx);
        self.free_skb(cx, q.skb, q.buf);
        let replies = app.recv(&mut self.app_cx(cx), q.frame, len);
        if replies == 0 {
            cx.frames.end(q.frame, Fate::App);
        }
        for i in 0..replies {
            let (f, n) = app.reply(&mut self.app_cx(cx), i, q.frame, len);
            self.sendto(cx, f, n);
        }
        if self.sock_q.is_empty() {
            // The next recvfrom finds nothing and blocks.
            self.c.syscalls += 1;
            self.work.reset(Category::Syscall).instr(c.syscall_instr as u64).read(self.at.sock);
            self.exec(cx);
        }
    }

    /// A TCP receiver: one `recv` of up to `recv_bytes`: the queued
    /// segments' payloads copied to the user buffer, their skbs freed; then,
    /// if the socket is empty, the `recv` that blocks.
    fn tcp_recv(&mut self, cx: &mut StackCx) {
        let c = self.cfg.costs;
        self.c.syscalls += 1;
        self.work.reset(Category::Syscall).code(CodeRegion::kernel(code::TCP_RECV, self.cfg.code.tcp_recv_bytes)).instr(c.syscall_instr as u64);
        self.exec(cx);
        let want = self.cfg.recv_bytes as u64;
        let mut got = 0u64;
        self.ids.clear();
        self.ids2.clear();
        self.rcvd.clear();
        self.work.reset(Category::Copy);
        while got < want {
            let Some(q) = self.sock_q.front().copied() else { break };
            let len = q.len as u64;
            // A segment larger than what is left stays (partly read) for the next call; simplified: taken whole.
            self.sock_q.pop_front();
            self.sock_q_bytes -= self.cfg.skb_truesize_bytes as u64;
            let data = cx.mbufs.data_addr(q.buf) + TCP_HEADERS as u64;
            self.work.copy_lines(data, self.at.user_rx + got % want, len, c.copy_instr_per_line as u64);
            got += len;
            self.ids.push(q.skb);
            self.ids2.push(q.buf);
            self.rcvd.push(q);
        }
        self.exec(cx);
        let n = self.rcvd.len() as u64;
        self.work.reset(Category::Proto).instr(c.sock_recv_instr as u64 + n * c.tcp_recv_skb_instr as u64).read(self.at.sock).write(self.at.sock + 64);
        self.exec(cx);
        let t = cx.core.now();
        cx.out.consumed.extend(self.rcvd.iter().map(|q| (t, q.frame)));
        self.c.datagrams_received += n;
        self.c.tcp_bytes += got;
        self.c.app_consumed += n;
        self.free_skbs(cx);
        if self.sock_q.is_empty() {
            self.c.syscalls += 1;
            self.work.reset(Category::Syscall).instr(c.syscall_instr as u64).read(self.at.sock);
            self.exec(cx);
        }
    }

    /// sendto: system call, skb and buffer, copy from user, UDP/IP output,
    /// qdisc, driver. `frame` already holds the datagram's bytes.
    fn sendto(&mut self, cx: &mut StackCx, frame: FrameId, len: u64) {
        let c = self.cfg.costs;
        self.c.syscalls += 1;
        self.work.reset(Category::Syscall).code(CodeRegion::kernel(code::UDP_SEND, self.cfg.code.udp_send_bytes)).instr(c.syscall_instr as u64);
        self.exec(cx);
        self.work.reset(Category::Proto).instr((c.udp_send_instr + c.ip_output_instr) as u64).read(self.at.sock).read(self.at.route).read(self.at.route + 64);
        self.exec(cx);
        let Some((skb, buf, data)) = self.alloc_tx(cx, frame) else { return };
        self.work.reset(Category::Copy).copy_lines(self.at.user_tx, data + UDP_HEADERS as u64, len, c.copy_instr_per_line as u64);
        self.exec(cx);
        // UDP and IP headers in front of the data.
        self.work.reset(Category::Proto).write(data);
        self.exec(cx);
        self.c.datagrams_sent += 1;
        self.queue_xmit(cx, Slot { mbuf: buf, frame, buf_addr: data }, skb);
    }

    /// TCP: one pure ACK for a GRO skb, from the softirq (no system call, no copy).
    fn send_ack(&mut self, cx: &mut StackCx, seg: &[u8; TCP_HEADERS], ack: u32) {
        let frame = cx.frames.alloc(ACK_FRAME_BYTES);
        tcp::write_ack(cx.frames.data_mut(frame), seg, ack, 65535);
        self.work.reset(Category::Proto).instr(self.cfg.costs.tcp_ack_instr as u64).read(self.at.sock).read(self.at.route);
        self.exec(cx);
        let Some((skb, buf, data)) = self.alloc_tx(cx, frame) else { return };
        self.work.reset(Category::Proto).write(data);
        self.exec(cx);
        self.c.tcp_acks += 1;
        self.queue_xmit(cx, Slot { mbuf: buf, frame, buf_addr: data }, skb);
    }

    /// An skb and a data buffer (with its address) for a packet to send;
    /// None (the frame dropped and counted) if either pool is empty.
    fn alloc_tx(&mut self, cx: &mut StackCx, frame: FrameId) -> Option<(u32, u32, u64)> {
        match self.alloc_segment(cx) {
            Some((skb, buf)) => Some((skb, buf, cx.mbufs.data_addr(buf))),
            None => {
                self.c.qdisc_drops += 1;
                cx.frames.end(frame, Fate::Qdisc);
                None
            }
        }
    }

    /// The qdisc (with its lock), then the driver, or the qdisc's backlog
    /// while the TX ring is full, or a drop when that is full too.
    pub(super) fn queue_xmit(&mut self, cx: &mut StackCx, slot: Slot, skb: u32) {
        let c = self.cfg.costs;
        let q = self.qdisc_addr();
        self.work.reset(Category::Qdisc).instr(c.qdisc_instr as u64).write(q).write(q + 64);
        self.exec(cx);
        if self.napi().qdisc.is_empty() && self.txq(cx).ring.free() > 0 {
            self.xmit(cx, slot, skb);
        } else if (self.napi().qdisc.len() as u64) < self.cfg.txqueuelen as u64 {
            self.c.qdisc_requeues += 1;
            self.napi().qdisc.push_back((slot, skb));
        } else {
            self.c.qdisc_drops += 1;
            cx.frames.end(slot.frame, Fate::Qdisc);
            if let Some(a) = self.frame_split.get_mut(slot.frame as usize) {
                *a = 0;
            }
            if skb & super::tcp_tx::CLONE != 0 {
                // A TCP segment's clone: the segment keeps its buffer for a retransmission.
                if let Some(w) = self.writer.as_mut() {
                    w.tsq_free(skb & !super::tcp_tx::CLONE, self.cfg.skb_truesize_bytes as u64);
                }
                let last = self.put_data_ref(slot.mbuf);
                self.free_skb_only(cx, skb & !super::tcp_tx::CLONE, last.then_some(slot.mbuf));
            } else {
                self.free_skb(cx, skb, slot.mbuf);
            }
        }
        self.set_tx_blocked(cx);
    }
}
