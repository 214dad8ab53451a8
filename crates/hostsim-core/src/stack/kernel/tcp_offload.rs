//! Where a TCP segment's payload goes when `write()` queues it, by
//! transmit scheme (`host.tx_scheme`), and the polls of offloaded copies.
//!
//! ```text
//! copy      the core copies user → socket buffer (behind the headers)
//! zerocopy  the user pages are pinned; the NIC will read the payload there
//! ioat      pages pinned, a descriptor to the copy engine's channel
//!           (`dma/`): the engine reads user lines and writes the socket
//!           buffer through DCA, then its completion status; the segment
//!           may leave once the stack has seen that status
//! nicmem    pages pinned, a descriptor to the NIC (its ring in host
//!           memory, a doorbell over PCIe): the NIC reads the user lines
//!           over PCIe into its own memory (`nic/memory.rs`) and writes a
//!           completion; the socket buffer holds only the headers, and the
//!           NIC joins them to the payload on its card at every
//!           transmission, retransmissions included
//! ```
//!
//! With `ioat` and `nicmem`, `write()` returns — and the application may
//! reuse its buffer — once the last of its copies has completed: the
//! thread sleeps until then (the completion is polled when it resumes).
//!
//! Simplified: one copy descriptor per segment and a doorbell for each;
//! the descriptor ring never fills; the card's space for a segment is
//! fixed by the socket buffer that holds its headers (2 KiB each).

use super::config::TxScheme;
use super::Kernel;
use crate::cpu::Category;
use crate::engine::time::Ps;
use crate::mem::Agent;
use crate::nic::memory::NIC_MEMORY_BASE;
use crate::pcie::Kind;
use crate::stack::StackCx;
use crate::wire::TCP_HEADERS;

/// Descriptors in a core's copy ring (the ring's lines are reused in turn).
const COPY_RING: u64 = 64;
/// Bytes of one copy descriptor (ioat's `struct ioat_dma_descriptor`: 64 B).
const COPY_DESC_BYTES: u32 = 64;
/// Card bytes reserved for each socket buffer's payload (`nicmem`).
const CARD_SLOT_BYTES: u64 = 2048;

impl Kernel {
    /// The payload of a new segment of `len` bytes at user address `user`,
    /// whose socket buffer's data starts at `data` (page buffer `buf`):
    /// the work of the scheme. Returns when the segment may be sent (0: at
    /// once; else its copy's completion) and where its payload lives if
    /// not behind its headers (the user buffer or the card; 0 otherwise).
    pub(super) fn segment_payload(&mut self, cx: &mut StackCx, scheme: TxScheme, user: u64, data: u64, buf: u32, len: u64) -> (Ps, u64) {
        let c = self.cfg.costs;
        let pages = (user + len - 1) / 4096 - user / 4096 + 1;
        match scheme {
            TxScheme::Copy => {
                self.work.reset(Category::Copy).copy_lines(user, data + TCP_HEADERS as u64, len, c.copy_instr_per_line as u64);
                self.exec(cx);
                (0, 0)
            }
            TxScheme::Zerocopy => {
                self.work.reset(Category::Proto).instr(pages * c.zerocopy_page_instr as u64);
                self.exec(cx);
                (0, user)
            }
            TxScheme::Ioat | TxScheme::Nicmem => {
                // The source pages pinned for the device, then the descriptor.
                let desc = self.at.copy_ring + (self.copy_pos % COPY_RING) * COPY_DESC_BYTES as u64;
                self.copy_pos += 1;
                self.work.reset(Category::Proto).instr(pages * c.zerocopy_page_instr as u64 + c.offload_submit_instr as u64).write(desc);
                self.exec(cx);
                if scheme == TxScheme::Ioat {
                    (self.engine_copy(cx, desc, user, data + TCP_HEADERS as u64, len), 0)
                } else {
                    let card = NIC_MEMORY_BASE + buf as u64 * CARD_SLOT_BYTES;
                    (self.card_fill(cx, desc, user, card, len), card)
                }
            }
        }
    }

    /// The copy engine copies `len` bytes from `src` to `dst`, its
    /// descriptor at `desc`: returns when its completion status is visible.
    ///
    /// Simplified: the copy's memory accesses are booked when the engine
    /// fetches its descriptor, not when its channel reaches it. A copy may
    /// wait behind a whole 3.6 MB write, up to 1.4 ms on one channel; DRAM
    /// channels remember busy periods only `HISTORY_PS` (100 µs) behind the
    /// latest booking (`engine::timeline`), so bookings that far ahead
    /// would make the present's look idle. The copy still completes no
    /// earlier than its slot's end; the DRAM time its lines take is spent
    /// earlier than the engine would spend it.
    fn engine_copy(&mut self, cx: &mut StackCx, desc: u64, src: u64, dst: u64, len: u64) -> Ps {
        let now = cx.core.now();
        let fetched = cx.mem.device_read_by(Agent::Engine, desc, COPY_DESC_BYTES, now);
        let slot = cx.dma.book(self.id, fetched, len);
        let read = cx.mem.device_read_by(Agent::Engine, src, len as u32, fetched);
        let written = cx.mem.device_write_by(Agent::Engine, dst, len as u32, read) - read;
        let done = read.max(slot.end) + written;
        let status = cx.mem.device_write_by(Agent::Engine, self.at.copy_status, 8, fetched) - fetched;
        done + status
    }

    /// The NIC moves `len` bytes from host address `src` to card address
    /// `card`, its descriptor at `desc`: returns when its completion is
    /// visible in host memory.
    fn card_fill(&mut self, cx: &mut StackCx, desc: u64, src: u64, card: u64, len: u64) -> Ps {
        // The engine's doorbell is an uncached store.
        let now = cx.core.mmio_write(crate::cpu::Category::Copy);
        let port = self.napis[0].s.tx_port;
        let latency = cx.nic.ports[port].params.pcie_latency_ps;
        let dev = &mut cx.nic.devs[cx.nic.ports[port].dev];
        let arrive = dev.io.mmio_write(now, 8);
        let host = cx.mem.device_read(desc, COPY_DESC_BYTES, arrive + latency).saturating_sub(arrive + latency);
        let fetched = dev.io.dma_read(arrive, COPY_DESC_BYTES, host, Kind::Descriptor);
        let host = cx.mem.device_read(src, len as u32, fetched + latency).saturating_sub(fetched + latency);
        let read = dev.io.dma_read(fetched, len as u32, host, Kind::Payload);
        let written = dev.memory.as_mut().map_or(read, |m| m.write(card, len as u32, read));
        let (mem, status) = (&mut *cx.mem, self.at.copy_status);
        dev.io.dma_write_to(written, 16, Kind::Descriptor, |arrive| mem.device_write(status, 16, arrive))
    }

    /// One poll of the offloaded copies' completion status (its line,
    /// which the engine or the NIC wrote).
    pub(super) fn offload_poll(&mut self, cx: &mut StackCx) {
        self.work.reset(Category::Completion).instr(self.cfg.costs.offload_poll_instr as u64).read(self.at.copy_status);
        self.exec(cx);
    }

    /// Copies the stack waited for have completed: poll, and send what the windows allow.
    pub(super) fn tcp_copies_done(&mut self, cx: &mut StackCx) {
        self.writer.as_mut().unwrap().copy_wait = None;
        self.offload_poll(cx);
        for k in 0..self.writer.as_ref().unwrap().conns.len() {
            self.tcp_write_xmit(cx, k);
        }
    }
}
