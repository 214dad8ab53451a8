//! Forwarding in the softirq: the packets of a NAPI poll, with no socket,
//! go through the IP receive checks, the application's forwarding decision
//! (a route lookup, a bridge's FDB, a switch's flow table: `App::forward`)
//! and `dev_queue_xmit` — the qdisc and the driver — on the port the
//! topology gives, all in the softirq that received them. The skb and its
//! page buffer travel with the packet and are freed when the NIC has sent it.

use super::Kernel;
use crate::cpu::Category;
use crate::framebuf::Fate;
use crate::nic::Slot;
use crate::stack::app::App;
use crate::stack::StackCx;

impl Kernel {
    pub(super) fn forward(&mut self, cx: &mut StackCx, app: &mut dyn App) {
        let c = self.cfg.costs;
        let rcvd = std::mem::take(&mut self.rcvd);
        for q in &rcvd {
            // netif_receive_skb and ip_rcv's checks, on the header line the
            // driver already read (as on the socket path).
            let buf_addr = cx.mbufs.data_addr(q.buf);
            self.work.reset(Category::Proto).instr(c.ip_rcv_instr as u64);
            self.exec(cx);
            if app.forward(&mut self.app_cx(cx), q.frame, buf_addr) {
                self.c.forwarded += 1;
                self.queue_xmit(cx, Slot { mbuf: q.buf, frame: q.frame, buf_addr }, q.skb);
            } else {
                self.c.not_forwarded += 1;
                cx.frames.end(q.frame, Fate::App);
                self.free_skb(cx, q.skb, q.buf);
            }
        }
        self.rcvd = rcvd;
    }
}
