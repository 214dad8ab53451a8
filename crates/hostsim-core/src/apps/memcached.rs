//! memcached over UDP: the key-value store (`crate::kvs`) as an application.
//! On the poll-mode driver (MemcachedDPDK), run to completion: each
//! received frame that is a UDP datagram to the store's port goes to
//! `Store::handle_datagram`; each reply datagram goes back in a frame
//! addressed to the sender (the request's frame and mbuf are reused for the
//! first one, as DPDK servers answer in place; further datagrams of a long
//! reply take fresh mbufs). On the kernel stack (MemcachedKernel), the
//! request is read from the socket into the user buffer and each reply
//! datagram is built in the send buffer and sent with `sendto`. One store
//! serves every core.
//!
//! Timing: the request's bytes are read, `request_instr` instructions are
//! charged per request, the store reports the lines of its hash table and
//! items it touches (at their simulated addresses), and the reply's bytes
//! are written, all in the core's App category. Frames that are not requests
//! to the store are counted and dropped (`kvs.not_requests`); requests that
//! get no reply (noreply, malformed datagrams memcached ignores) are counted
//! as consumed.
//!
//! Read first: memcached's doc/protocol.txt ("UDP protocol"), params.md §8.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use super::config::{AppConfig, KvsAppConfig};
use crate::cpu::{Category, CodeRegion, Work};
use crate::error::Result;
use crate::framebuf::{Fate, FrameId};
use crate::kvs::{Datagrams, Store, StoreConfig, ValueLimit};
use crate::nic::Slot;
use crate::stack::app::Transport;
use crate::stack::{App, AppCx, Socket, Verdict};
use crate::wire::ethernet::{self, Mac, FCS_LEN};
use crate::wire::{ipv4, udp};

/// Simulated addresses of the store (after the rings and the mempool).
const BUCKETS_BASE: u64 = 0x4000_0000;
const ITEMS_BASE: u64 = 0x5000_0000;
/// The code region of memcached's request path.
const KVS_CODE: u16 = 300;

use crate::wire::UDP_HEADERS;

/// Largest reply frame: a full 1400 B memcached datagram with its headers and FCS.
pub const MAX_REPLY_FRAME_BYTES: u32 = UDP_HEADERS as u32
    + crate::wire::memcached::UDP_MAX_PAYLOAD_BYTES as u32
    + FCS_LEN as u32;

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(KvsApp::new(&cfg.kvs)?))
}

/// Frame buffers must hold a full reply datagram whatever the request's size.
pub fn max_frame_bytes(_: &AppConfig) -> u32 {
    MAX_REPLY_FRAME_BYTES
}

/// The store and the buffers of the deployment.
pub struct KvsApp {
    store: Store,
    replies: Datagrams,
    /// The sender of the request being answered on the kernel stack.
    peer: Option<Peer>,
    udp_port: u16,
    request_instr: u64,
    code: CodeRegion,
    requests: u64,
    not_requests: u64,
    no_reply: u64,
    reply_datagrams: u64,
}

/// Who sent a request: the reply goes back to it.
pub struct Peer {
    mac: Mac,
    our_mac: Mac,
    ip: Ipv4Addr,
    our_ip: Ipv4Addr,
    port: u16,
    our_port: u16,
}

impl KvsApp {
    pub fn new(cfg: &KvsAppConfig) -> Result<KvsApp> {
        let store = Store::new(StoreConfig {
            buckets: cfg.buckets as usize,
            items: cfg.items as usize,
            value_limit: ValueLimit::ValueBytes(cfg.max_value_bytes as usize),
            bucket_base_addr: BUCKETS_BASE,
            item_base_addr: ITEMS_BASE,
        })?;
        Ok(KvsApp {
            store,
            replies: Datagrams::new(),
            peer: None,
            udp_port: cfg.udp_port,
            request_instr: cfg.request_instr as u64,
            code: CodeRegion::user(KVS_CODE, cfg.code_bytes),
            requests: 0,
            not_requests: 0,
            no_reply: 0,
            reply_datagrams: 0,
        })
    }

    /// The request's UDP payload range and its sender, if the frame is a UDP
    /// datagram to the store's port.
    fn parse(&self, frame: &[u8]) -> Option<(std::ops::Range<usize>, Peer)> {
        let eth = ethernet::Packet::new_checked(frame).ok()?;
        let e = ethernet::Repr::parse(&eth).ok()?;
        if e.ethertype != ethernet::ETHERTYPE_IPV4 {
            return None;
        }
        let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
        let i = ipv4::Repr::parse(&ip).ok()?;
        if i.protocol != ipv4::PROTO_UDP {
            return None;
        }
        let u = udp::Packet::new_checked(ip.payload()).ok()?;
        if u.dst_port() != self.udp_port {
            return None;
        }
        let start = ethernet::HEADER_LEN + ip.header_len() + udp::HEADER_LEN;
        let end = start + u.payload().len();
        let peer = Peer { mac: e.src, our_mac: e.dst, ip: i.src, our_ip: i.dst, port: u.src_port(), our_port: u.dst_port() };
        Some((start..end, peer))
    }

    /// Serves one frame: if it is a request to the store, reads its `len`
    /// bytes at `addr` (simulated), runs it, and leaves the reply datagrams
    /// in [`Self::reply`]. Counts requests, non-requests and unanswered ones.
    fn serve(&mut self, frame: &[u8], addr: u64, len: u64, per_line: u64, work: &mut Work) -> Served {
        let Some((range, peer)) = self.parse(frame) else {
            self.not_requests += 1;
            return Served::NotRequest;
        };
        self.requests += 1;
        work.code(self.code).read_lines(addr, len, per_line).instr(self.request_instr);
        self.replies.clear();
        self.store.handle_datagram(&frame[range], &mut self.replies, work);
        if self.replies.is_empty() {
            self.no_reply += 1;
            return Served::NoReply;
        }
        self.reply_datagrams += self.replies.len() as u64;
        Served::Reply(peer)
    }

    fn counters_json(&self) -> Value {
        let s = self.store.stats();
        json!({
            "requests": self.requests,
            "not_requests": self.not_requests,
            "no_reply": self.no_reply,
            "reply_datagrams": self.reply_datagrams,
            "items": self.store.table().len(),
            "cmd_get": s.cmd_get,
            "get_hits": s.get_hits,
            "get_misses": s.get_misses,
            "cmd_set": s.cmd_set,
            "total_items": s.total_items,
            "delete_hits": s.delete_hits,
            "delete_misses": s.delete_misses,
            "errors": s.errors,
            "client_errors": s.client_errors,
            "too_large": s.too_large,
            "out_of_memory": s.out_of_memory,
        })
    }

    fn reset_counters(&mut self) {
        self.requests = 0;
        self.not_requests = 0;
        self.no_reply = 0;
        self.reply_datagrams = 0;
    }
}

/// What became of a frame given to the store.
enum Served {
    /// Not a UDP datagram to the store's port.
    NotRequest,
    /// A request that gets no answer (noreply, or one memcached ignores).
    NoReply,
    /// Replies to send to this peer.
    Reply(Peer),
}

/// Writes a reply datagram into `buf` (the frame without FCS) to `peer`.
fn write_reply(buf: &mut [u8], peer: &Peer, payload: &[u8]) {
    let n = buf.len();
    ethernet::Repr { dst: peer.mac, src: peer.our_mac, ethertype: ethernet::ETHERTYPE_IPV4 }
        .emit(&mut ethernet::Packet::new_unchecked(&mut buf[..]));
    let l3 = &mut buf[ethernet::HEADER_LEN..];
    let udp_len = udp::HEADER_LEN + payload.len();
    ipv4::Repr { src: peer.our_ip, dst: peer.ip, protocol: ipv4::PROTO_UDP, payload_len: udp_len, ttl: 64 }
        .emit(&mut ipv4::Packet::new_unchecked(&mut l3[..]));
    let l4 = &mut l3[ipv4::HEADER_LEN..];
    udp::Repr { src_port: peer.our_port, dst_port: peer.port, payload_len: payload.len() }
        .emit(&mut udp::Packet::new_unchecked(&mut l4[..]));
    let start = UDP_HEADERS;
    buf[start..start + payload.len()].copy_from_slice(payload);
    // Zero the padding of a short frame (it may hold the request's bytes).
    buf[start + payload.len()..n].fill(0);
}

/// Frame length (FCS included, at least 64 B) carrying a UDP payload of `len`.
fn reply_frame_bytes(len: usize) -> u32 {
    ((UDP_HEADERS + len + FCS_LEN) as u32).max(64)
}


impl App for KvsApp {
    fn name(&self) -> &'static str {
        "memcached"
    }

    /// MemcachedDPDK: the store serves the received batch; replies go out in one tx_burst.
    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        let per_line = cx.costs.touch_instr_per_line as u64;
        cx.work.reset(Category::App);
        for s in pkts {
            let len = cx.frames.data(s.frame).len() as u64;
            let peer = match self.serve(cx.frames.data(s.frame), s.buf_addr, len, per_line, cx.work) {
                Served::Reply(peer) => peer,
                Served::NotRequest | Served::NoReply => {
                    cx.free.push(s.mbuf);
                    cx.frames.end(s.frame, Fate::App);
                    continue;
                }
            };
            for i in 0..self.replies.len() {
                let payload = self.replies.get(i);
                let bytes = reply_frame_bytes(payload.len());
                let (frame, mbuf, addr) = if i == 0 {
                    (s.frame, s.mbuf, s.buf_addr)
                } else {
                    match cx.alloc_mbuf() {
                        Some((m, a)) => (cx.frames.alloc_reply(s.frame, bytes), m, a),
                        None => break,
                    }
                };
                // The system sizes frame buffers for a full reply datagram
                // (MAX_REPLY_FRAME_BYTES), so this always fits.
                let fits = cx.frames.resize(frame, bytes);
                debug_assert!(fits, "frame buffers hold {MAX_REPLY_FRAME_BYTES} B replies");
                write_reply(cx.frames.data_mut(frame), &peer, payload);
                cx.work.write_lines(addr, bytes as u64 - FCS_LEN as u64, per_line);
                cx.tx.push(Slot { mbuf, frame, buf_addr: addr });
            }
        }
        cx.exec();
        Verdict::Listed
    }

    fn replies(&self) -> bool {
        true
    }

    fn socket(&self) -> Option<Socket> {
        Some(Socket { transport: Transport::Udp, port: self.udp_port })
    }

    /// MemcachedKernel: the store serves the request from the user buffer.
    fn recv(&mut self, cx: &mut AppCx, frame: FrameId, len: u64) -> usize {
        let per_line = cx.costs.touch_instr_per_line as u64;
        cx.work.reset(Category::App);
        let served = self.serve(cx.frames.data(frame), cx.user_rx, len, per_line, cx.work);
        cx.exec();
        match served {
            Served::Reply(peer) => {
                self.peer = Some(peer);
                self.replies.len()
            }
            Served::NoReply | Served::NotRequest => 0,
        }
    }

    /// Each reply datagram is built in the send buffer and in a frame.
    fn reply(&mut self, cx: &mut AppCx, i: usize, request: FrameId, _len: u64) -> (FrameId, u64) {
        let per_line = cx.costs.touch_instr_per_line as u64;
        let payload = self.replies.get(i);
        let bytes = reply_frame_bytes(payload.len());
        let f = if i == 0 { request } else { cx.frames.alloc_reply(request, bytes) };
        let fits = cx.frames.resize(f, bytes);
        debug_assert!(fits, "frame buffers hold full reply datagrams");
        if let Some(peer) = &self.peer {
            write_reply(cx.frames.data_mut(f), peer, payload);
        }
        cx.work.reset(Category::App).write_lines(cx.user_tx, payload.len() as u64, per_line);
        cx.exec();
        (f, payload.len() as u64)
    }

    fn result_json(&self) -> Value {
        self.counters_json()
    }

    fn reset_stats(&mut self) {
        self.reset_counters();
    }
}
