//! Pooled frame buffers. Frame bytes live in buffers that are allocated once
//! and reused, and move between components by a 32-bit handle, so nothing is
//! allocated per packet. A buffer holds the frame without its 4 B FCS; the
//! pool remembers each frame's length on the wire (FCS included).
//!
//! Buffers are zeroed when created and only the bytes a component writes
//! change, so frame contents are deterministic.

use crate::wire::ethernet::FCS_LEN;

pub type FrameId = u32;

/// A frame no generator port sent (the host built it).
pub const NO_ORIGIN: u8 = u8::MAX;

/// A frame that carries and answers no generator frame.
pub const NO_SEQ: u64 = u64::MAX;

/// How a frame's life ended. Every buffer is given back with its fate, so
/// the pool's [`Ledger`] accounts for every frame a generator sent: it came
/// back, the device consumed it, a named buffer dropped it, or it is still
/// inside the system (in flight) when the run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fate {
    /// It came back to a generator port.
    Returned = 0,
    /// Its life ended inside the device by design, and the device says so
    /// (it is measured as delivered): an application that receives without
    /// answering (rxonly, touchdrop, a TCP receiver).
    Consumed,
    /// The application discarded it without an answer: not a request it
    /// serves (memcached's `not_requests`), or a request it answers with
    /// nothing.
    App,
    /// The NIC's RX FIFO had no room (`rx_missed_errors`) while the queue
    /// of its head frame had no free descriptor: software did not refill.
    RxFifoCore,
    /// The RX FIFO had no room while its head's queue had descriptors: the
    /// DMA path (PCIe, memory) could not drain it.
    RxFifoDma,
    /// The RX FIFO had no room while its head's queue's core could not send
    /// (its TX ring full): the transmit side held everything up.
    RxFifoTx,
    /// A PMD's `tx_burst` could not place it on the TX ring; the application freed it.
    TxRing,
    /// An `rte_ring` between cores was full.
    SwRing,
    /// The socket's receive buffer was full (`rcvbuf_errors`).
    Socket,
    /// No socket is bound to its destination port (`no_ports`).
    NoSocket,
    /// The kernel could not send the reply: qdisc full, or no skb or buffer.
    Qdisc,
    /// The reflector's queue was full.
    DeviceQueue,
    /// The reflector's injected fault (`reflector.drop_every`).
    Fault,
}

impl Fate {
    pub const ALL: [Fate; 13] = [
        Fate::Returned,
        Fate::Consumed,
        Fate::App,
        Fate::RxFifoCore,
        Fate::RxFifoDma,
        Fate::RxFifoTx,
        Fate::TxRing,
        Fate::SwRing,
        Fate::Socket,
        Fate::NoSocket,
        Fate::Qdisc,
        Fate::DeviceQueue,
        Fate::Fault,
    ];

    /// Its name in results (`accounting.*.drops`).
    pub fn name(self) -> &'static str {
        match self {
            Fate::Returned => "returned",
            Fate::Consumed => "consumed",
            Fate::App => "app",
            Fate::RxFifoCore => "rx_fifo_core",
            Fate::RxFifoDma => "rx_fifo_dma",
            Fate::RxFifoTx => "rx_fifo_tx",
            Fate::TxRing => "tx_ring",
            Fate::SwRing => "sw_ring",
            Fate::Socket => "socket",
            Fate::NoSocket => "no_socket",
            Fate::Qdisc => "qdisc",
            Fate::DeviceQueue => "device_queue",
            Fate::Fault => "fault",
        }
    }

    /// A drop (not returned, not consumed)?
    pub fn is_drop(self) -> bool {
        !matches!(self, Fate::Returned | Fate::Consumed)
    }
}

pub const N_FATES: usize = Fate::ALL.len();

/// Per-frame flags.
const LIVE: u8 = 1;
/// A generator port sent it.
const SENT: u8 = 2;
/// A generator port sent it inside its measured window.
const MEASURED: u8 = 4;

/// What became of the frames one generator port sent: over the whole run
/// (`total`) and over the frames sent in its measured window (`measured`).
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    pub sent: [u64; 2],
    pub ended: [[u64; N_FATES]; 2],
}

impl Ledger {
    /// Index of the whole run's counts; `MEASURED_ROW` is the window's.
    pub const TOTAL_ROW: usize = 0;
    pub const MEASURED_ROW: usize = 1;

    pub fn count(&self, row: usize, fate: Fate) -> u64 {
        self.ended[row][fate as usize]
    }

    pub fn dropped(&self, row: usize) -> u64 {
        Fate::ALL.iter().filter(|f| f.is_drop()).map(|&f| self.count(row, f)).sum()
    }
}

pub struct FramePool {
    /// Every buffer, `buf_size` bytes each, back to back (one allocation).
    bufs: Vec<u8>,
    frame_bytes: Vec<u32>,
    /// The generator port that sent each frame (`NO_ORIGIN` for frames the host built).
    origin: Vec<u8>,
    flags: Vec<u8>,
    /// The generator's sequence number of the request each frame carries or
    /// answers (`NO_SEQ` for frames the host built on its own): the
    /// simulator's identity of a frame, whatever its bytes say.
    seq: Vec<u64>,
    /// One per generator port.
    ledgers: Vec<Ledger>,
    free: Vec<FrameId>,
    buf_size: usize,
}

impl FramePool {
    /// A pool whose buffers hold frames up to `max_frame_bytes` (FCS included).
    pub fn new(max_frame_bytes: u32) -> Self {
        FramePool { bufs: Vec::new(), frame_bytes: Vec::new(), origin: Vec::new(), flags: Vec::new(), seq: Vec::new(), ledgers: Vec::new(), free: Vec::new(), buf_size: max_frame_bytes as usize - FCS_LEN }
    }

    /// Takes a buffer for a frame of `frame_bytes` (FCS included).
    #[inline]
    pub fn alloc(&mut self, frame_bytes: u32) -> FrameId {
        debug_assert!(frame_bytes as usize - FCS_LEN <= self.buf_size);
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.bufs.resize(self.bufs.len() + self.buf_size, 0);
                self.frame_bytes.push(0);
                self.origin.push(NO_ORIGIN);
                self.flags.push(0);
                self.seq.push(NO_SEQ);
                (self.frame_bytes.len() - 1) as FrameId
            }
        };
        self.frame_bytes[id as usize] = frame_bytes;
        self.origin[id as usize] = NO_ORIGIN;
        self.flags[id as usize] = LIVE;
        self.seq[id as usize] = NO_SEQ;
        id
    }

    /// Takes a buffer for another frame of the reply to `request` (a reply
    /// of several datagrams): it answers the same generator frame and goes
    /// back to the port that sent it, but is no frame the generator sent.
    #[inline]
    pub fn alloc_reply(&mut self, request: FrameId, frame_bytes: u32) -> FrameId {
        let (origin, seq) = (self.origin[request as usize], self.seq[request as usize]);
        let id = self.alloc(frame_bytes);
        self.origin[id as usize] = origin;
        self.seq[id as usize] = seq;
        id
    }

    /// The generator sequence number the frame carries or answers, if any.
    #[inline]
    pub fn seq(&self, id: FrameId) -> Option<u64> {
        let s = self.seq[id as usize];
        (s != NO_SEQ).then_some(s)
    }

    /// Changes a frame's length in place (an application rewriting it as a
    /// reply). `frame_bytes` must fit the buffer; false (and no change) if not.
    #[inline]
    pub fn resize(&mut self, id: FrameId, frame_bytes: u32) -> bool {
        if frame_bytes as usize - FCS_LEN > self.buf_size {
            return false;
        }
        self.frame_bytes[id as usize] = frame_bytes;
        true
    }

    /// Largest frame (FCS included) a buffer holds.
    pub fn max_frame_bytes(&self) -> u32 {
        (self.buf_size + FCS_LEN) as u32
    }

    /// The frame's life ended with `fate`: its buffer is free again, and the
    /// ledger of the generator port that sent it (if one did) counts it.
    #[inline]
    pub fn end(&mut self, id: FrameId, fate: Fate) {
        let i = id as usize;
        let flags = self.flags[i];
        debug_assert!(flags & LIVE != 0, "frame {id} ended twice");
        if flags & SENT != 0 {
            let l = &mut self.ledgers[self.origin[i] as usize];
            l.ended[Ledger::TOTAL_ROW][fate as usize] += 1;
            if flags & MEASURED != 0 {
                l.ended[Ledger::MEASURED_ROW][fate as usize] += 1;
            }
        }
        self.flags[i] = 0;
        self.free.push(id);
    }

    /// Marks the frame as generator port `port`'s frame `seq`, sent inside
    /// its measured window or not.
    #[inline]
    pub fn mark_sent(&mut self, id: FrameId, port: usize, seq: u64, measured: bool) {
        if port >= self.ledgers.len() {
            self.ledgers.resize(port + 1, Ledger::default());
        }
        let i = id as usize;
        self.origin[i] = port as u8;
        self.seq[i] = seq;
        self.flags[i] |= SENT | if measured { MEASURED } else { 0 };
        let l = &mut self.ledgers[port];
        l.sent[Ledger::TOTAL_ROW] += 1;
        l.sent[Ledger::MEASURED_ROW] += measured as u64;
    }

    /// Was the frame sent by a generator port inside its measured window?
    #[inline]
    pub fn measured(&self, id: FrameId) -> bool {
        self.flags[id as usize] & MEASURED != 0
    }

    /// The generator port that sent the frame, if one did.
    #[inline]
    pub fn origin(&self, id: FrameId) -> Option<usize> {
        let o = *self.origin.get(id as usize)?;
        (o != NO_ORIGIN).then_some(o as usize)
    }

    /// What became of generator port `port`'s frames so far.
    pub fn ledger(&self, port: usize) -> Ledger {
        self.ledgers.get(port).cloned().unwrap_or_default()
    }

    /// Frames each of the first `ports` generator ports sent that are still
    /// alive (in flight): over the whole run and in its measured window.
    pub fn in_flight(&self, ports: usize) -> Vec<[u64; 2]> {
        let mut n = vec![[0u64; 2]; ports];
        for (i, &f) in self.flags.iter().enumerate() {
            if f & (LIVE | SENT) == LIVE | SENT {
                if let Some(c) = n.get_mut(self.origin[i] as usize) {
                    c[Ledger::TOTAL_ROW] += 1;
                    c[Ledger::MEASURED_ROW] += (f & MEASURED != 0) as u64;
                }
            }
        }
        n
    }

    /// Length on the wire, FCS included.
    #[inline]
    pub fn frame_bytes(&self, id: FrameId) -> u32 {
        self.frame_bytes[id as usize]
    }

    /// The frame's bytes (without FCS).
    #[inline]
    pub fn data(&self, id: FrameId) -> &[u8] {
        let n = self.frame_bytes[id as usize] as usize - FCS_LEN;
        let at = id as usize * self.buf_size;
        &self.bufs[at..at + n]
    }

    #[inline]
    pub fn data_mut(&mut self, id: FrameId) -> &mut [u8] {
        let n = self.frame_bytes[id as usize] as usize - FCS_LEN;
        let at = id as usize * self.buf_size;
        &mut self.bufs[at..at + n]
    }

    /// Buffers created so far (the high-water mark of frames in flight).
    pub fn capacity(&self) -> usize {
        self.frame_bytes.len()
    }

    pub fn in_use(&self) -> usize {
        self.frame_bytes.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_buffers() {
        let mut p = FramePool::new(1518);
        let a = p.alloc(64);
        let b = p.alloc(1518);
        assert_eq!(p.data(a).len(), 60);
        assert_eq!(p.data(b).len(), 1514);
        p.data_mut(a)[0] = 9;
        p.end(a, Fate::Returned);
        let c = p.alloc(128);
        assert_eq!(c, a);
        assert_eq!(p.data(c)[0], 9);
        assert_eq!(p.capacity(), 2);
        p.mark_sent(c, 3, 7, true);
        assert_eq!(p.seq(c), Some(7));
        let r = p.alloc_reply(c, 64);
        assert_eq!((p.origin(r), p.seq(r)), (Some(3), Some(7)));
        p.end(r, Fate::Returned);
        assert_eq!(p.origin(c), Some(3));
        p.end(c, Fate::Returned);
        let d = p.alloc(64);
        assert_eq!(p.origin(d), None, "a reused buffer forgets its origin");
        assert_eq!(p.in_use(), 2);
    }

    #[test]
    fn the_ledger_accounts_for_every_frame_a_port_sent() {
        let mut p = FramePool::new(1518);
        let f: Vec<FrameId> = (0..6).map(|_| p.alloc(64)).collect();
        // Two before the window, four in it; one host-built frame (never sent).
        for (k, &id) in f.iter().enumerate().take(5) {
            p.mark_sent(id, 1, k as u64, k >= 2);
        }
        p.mark_sent(f[5], 1, 5, true);
        let host = p.alloc(64);
        p.end(f[0], Fate::RxFifoDma);
        p.end(f[1], Fate::Returned);
        p.end(f[2], Fate::Returned);
        p.end(f[3], Fate::Socket);
        p.end(f[4], Fate::Consumed);
        p.end(host, Fate::TxRing);
        let l = p.ledger(1);
        assert_eq!(l.sent, [6, 4]);
        assert_eq!((l.count(Ledger::TOTAL_ROW, Fate::Returned), l.count(Ledger::MEASURED_ROW, Fate::Returned)), (2, 1));
        assert_eq!((l.dropped(Ledger::TOTAL_ROW), l.dropped(Ledger::MEASURED_ROW)), (2, 1));
        assert_eq!(l.count(Ledger::TOTAL_ROW, Fate::TxRing), 0, "a host-built frame is no generator's");
        assert_eq!(p.in_flight(2), vec![[0, 0], [1, 1]]);
        assert_eq!(p.ledger(0).sent, [0, 0]);
    }
}
