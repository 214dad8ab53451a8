//! The kernel's transmit side on one core: freeing skbs and their page
//! buffers (a TCP clone's buffer with its last reference), cleaning the TX
//! ring the NIC has sent, draining the qdisc into it, and the driver's
//! `xmit` with its doorbell.

use super::{code, tcp_tx, Kernel};
use crate::cpu::{Category, CodeRegion};
use crate::nic::{NicEvent, Slot};
use crate::stack::{Event, StackCx};

impl Kernel {
    /// Frees one skb and its page buffer.
    pub(super) fn free_skb(&mut self, cx: &mut StackCx, skb: u32, buf: u32) {
        self.ids.clear();
        self.ids2.clear();
        self.ids.push(skb);
        self.ids2.push(buf);
        self.free_skbs(cx);
    }

    /// Frees one skb, and its page buffer if given.
    pub(super) fn free_skb_only(&mut self, cx: &mut StackCx, skb: u32, buf: Option<u32>) {
        self.ids.clear();
        self.ids2.clear();
        self.ids.push(skb);
        self.ids2.extend(buf);
        self.free_skbs(cx);
    }

    /// Frees the skbs in `ids` and the page buffers in `ids2`.
    pub(super) fn free_skbs(&mut self, cx: &mut StackCx) {
        let c = self.cfg.costs;
        self.touched.clear();
        self.skbs.put_bulk(0, &self.ids, &mut self.touched);
        let n = self.ids.len() as u64;
        self.exec_touched(cx, Category::Skb, n * c.skb_free_instr as u64);
        self.touched.clear();
        cx.mbufs.put_bulk(self.id, &self.ids2, &mut self.touched);
        let n = self.ids2.len() as u64;
        self.exec_touched(cx, Category::Mempool, n * c.buf_instr as u64);
        self.ids.clear();
        self.ids2.clear();
    }

    /// Frees what the NIC has sent, then moves waiting packets from the
    /// qdisc to the ring.
    pub(super) fn clean_tx(&mut self, cx: &mut StackCx) {
        let (done, freed) = {
            let r = &self.txq(cx).ring;
            (r.done, r.freed)
        };
        if done > freed {
            let n = done - freed;
            self.work.reset(Category::Tx).code(CodeRegion::kernel(code::TX_CLEAN, self.cfg.code.tx_clean_bytes)).instr(n * self.cfg.costs.tx_clean_instr as u64);
            self.ids.clear();
            self.ids2.clear();
            let s = self.s();
            let tx = &mut cx.nic.ports[s.tx_port].txq[s.tx_queue].ring;
            let napi = &mut self.napis[self.cur];
            for pos in freed..done {
                self.work.read(tx.ring.desc_addr(pos));
                let skb = napi.tx_skbs.pop_front().expect("an skb for every TX descriptor");
                self.ids.push(skb & !tcp_tx::CLONE);
                self.ids2.push(tx.ring.slots[tx.ring.slot(pos)].mbuf);
                if skb & tcp_tx::CLONE != 0 {
                    // A clone of a TCP segment: its buffer goes with the last reference.
                    if let Some(w) = self.writer.as_mut() {
                        w.tsq_free(skb & !tcp_tx::CLONE, self.cfg.skb_truesize_bytes as u64);
                    }
                    let buf = self.ids2.pop().unwrap();
                    let r = &mut self.data_refs[buf as usize];
                    *r -= 1;
                    if *r == 0 {
                        self.ids2.push(buf);
                    }
                }
            }
            tx.freed = done;
            self.exec(cx);
            self.free_skbs(cx);
        }
        while self.txq(cx).ring.free() > 0 {
            let Some((slot, skb)) = self.napi().qdisc.pop_front() else { break };
            let q = self.qdisc_addr();
            self.work.reset(Category::Qdisc).instr(self.cfg.costs.qdisc_instr as u64 / 2).write(q);
            self.exec(cx);
            self.xmit(cx, slot, skb);
        }
        self.set_tx_blocked(cx);
        if self.writer.is_some() {
            self.tsq_resume(cx);
        }
    }

    /// The driver puts one packet on the TX ring and rings the doorbell.
    pub(super) fn xmit(&mut self, cx: &mut StackCx, slot: Slot, skb: u32) {
        let (tp, tq) = (self.s().tx_port, self.s().tx_queue);
        let tx = &mut cx.nic.ports[tp].txq[tq].ring;
        let pos = tx.tail;
        let i = tx.ring.slot(pos);
        tx.ring.slots[i] = slot;
        tx.split[i] = match self.frame_split.get_mut(slot.frame as usize) {
            Some(a) => std::mem::take(a),
            None => 0,
        };
        tx.tail += 1;
        let (desc, tail) = (tx.ring.desc_addr(pos), tx.tail);
        self.napi().tx_skbs.push_back(skb);
        self.work.reset(Category::Tx).code(CodeRegion::kernel(code::XMIT, self.cfg.code.xmit_bytes)).instr(self.cfg.costs.xmit_instr as u64).read(self.skbs.mbuf_addr(skb & !tcp_tx::CLONE)).write(desc);
        self.exec(cx);
        let t = cx.nic.io_of(tp).mmio_write(cx.core.mmio_write(Category::Tx), 4);
        cx.out.schedule(t, Event::Nic(NicEvent::TxDoorbell { port: tp as u8, queue: tq as u16, tail: tail as u32 }));
    }
}
