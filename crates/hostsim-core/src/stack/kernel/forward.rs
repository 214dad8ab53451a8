//! Forwarding in the softirq: the packets of a NAPI poll, with no socket,
//! go through the IP receive checks (unless the application takes frames
//! at the device's `rx_handler`, before the IP layer, as a bridge or Open
//! vSwitch does), the application's forwarding decision (a route lookup, a
//! bridge's FDB, a switch's flow table: `App::forward`), IP output
//! (`ip_forward_finish`, `ip_output`, the neighbour's header,
//! `dev_queue_xmit`; an `rx_handler` application skips it and hands the
//! frame to the device) and the qdisc and driver of the port the topology
//! gives, all in the softirq that received them. The skb and its page
//! buffer travel with the packet and are freed when the NIC has sent it.
//! A clone the application asks for (`Forwarding::TransmitAndClone`) gets
//! its own sk_buff from the slab, sharing the page buffer, goes up the
//! host's receive path, is dropped there as addressed to another host, and
//! is freed.

use super::{code, Kernel, SKB_LINES};
use crate::cpu::{Category, CodeRegion};
use crate::framebuf::Fate;
use crate::nic::Slot;
use crate::stack::app::{App, Forwarding};
use crate::stack::StackCx;

impl Kernel {
    pub(super) fn forward(&mut self, cx: &mut StackCx, app: &mut dyn App) {
        let c = self.cfg.costs;
        let ip_layer = !app.rx_handler();
        let rcvd = std::mem::take(&mut self.rcvd);
        for q in &rcvd {
            // netif_receive_skb and ip_rcv's checks, on the header line the
            // driver already read (as on the socket path).
            let buf_addr = cx.mbufs.data_addr(q.buf);
            if ip_layer {
                self.work.reset(Category::Proto).code(CodeRegion::kernel(code::FORWARD, self.cfg.code.forward_bytes)).instr(c.ip_rcv_instr as u64);
                self.exec(cx);
            }
            let verdict = app.forward(&mut self.app_cx(cx), q.frame, buf_addr);
            if verdict == Forwarding::TransmitAndClone {
                self.clone_up(cx, q.skb);
            }
            if verdict == Forwarding::Drop {
                self.c.not_forwarded += 1;
                cx.frames.end(q.frame, Fate::App);
                self.free_skb(cx, q.skb, q.buf);
            } else {
                self.c.forwarded += 1;
                if ip_layer {
                    // ip_forward_finish → ip_output → neighbour output → dev_queue_xmit.
                    self.work.reset(Category::Proto).code(CodeRegion::kernel(code::FORWARD, self.cfg.code.forward_bytes)).instr(c.ip_output_instr as u64);
                    self.exec(cx);
                }
                self.queue_xmit(cx, Slot { mbuf: q.buf, frame: q.frame, buf_addr }, q.skb);
            }
        }
        self.rcvd = rcvd;
    }

    /// `skb_clone` of `skb` (a new sk_buff from the slab, the header copied,
    /// the page buffer shared), its trip up the receive path to `ip_rcv`,
    /// which drops a frame for another host, and its release.
    fn clone_up(&mut self, cx: &mut StackCx, skb: u32) {
        let c = self.cfg.costs;
        self.ids.clear();
        self.touched.clear();
        if !self.skbs.get_bulk(0, 1, &mut self.ids, &mut self.touched) {
            self.c.nombuf += 1;
            return;
        }
        self.c.clones += 1;
        self.work.reset(Category::Skb).instr(c.skb_alloc_instr as u64);
        for &a in &self.touched {
            self.work.write(a);
        }
        let (from, to) = (self.skbs.mbuf_addr(skb), self.skbs.mbuf_addr(self.ids[0]));
        for l in 0..SKB_LINES {
            self.work.read(from + l * 64).write(to + l * 64);
        }
        self.exec(cx);
        self.work.reset(Category::Proto).instr(c.ip_rcv_instr as u64);
        self.exec(cx);
        // The clone's sk_buff goes back; the page buffer stays with the original.
        self.touched.clear();
        self.skbs.put_bulk(0, &self.ids, &mut self.touched);
        self.exec_touched(cx, Category::Skb, c.skb_free_instr as u64);
        self.ids.clear();
    }
}
