//! udp-echo: send each UDP datagram back where it came from (MACs, IP
//! addresses and ports swapped); on the poll-mode driver the twin of
//! testpmd macswap, on the kernel stack a socket application doing
//! recvfrom and sendto (RFC 862's echo; it listens on `host.app.echo_port`).
//! On the poll-mode driver it answers what the socket would: UDP datagrams
//! to `host.app.echo_port`; it frees any other frame and counts it
//! (`app.not_requests`), where the kernel drops it for want of a socket.

use serde_json::{json, Value};

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::Result;
use crate::framebuf::{Fate, FrameId};
use crate::nic::Slot;
use crate::stack::app::Transport;
use crate::stack::{App, AppCx, Socket, Verdict};
use crate::wire::{five_tuple, ipv4};

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(UdpEcho { port: cfg.echo_port, not_requests: 0 }))
}

struct UdpEcho {
    port: u16,
    /// Frames on the poll-mode driver that are not UDP datagrams to `port`.
    not_requests: u64,
}

impl UdpEcho {
    /// A UDP datagram to the echo port (an unfragmented one: the ports are read).
    fn is_request(&self, frame: &[u8]) -> bool {
        five_tuple(frame).is_some_and(|t| t.ports && t.protocol == ipv4::PROTO_UDP && t.dst_port() == self.port)
    }
}

impl App for UdpEcho {
    fn name(&self) -> &'static str {
        "udp-echo"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        let header_instr = cx.costs.header_instr as u64;
        cx.work.reset(Category::App);
        for s in pkts {
            cx.work.instr(header_instr).read(s.buf_addr);
            if !self.is_request(cx.frames.data(s.frame)) {
                self.not_requests += 1;
                cx.free.push(s.mbuf);
                cx.frames.end(s.frame, Fate::App);
                continue;
            }
            cx.work.write(s.buf_addr);
            crate::wire::swap_endpoints(cx.frames.data_mut(s.frame));
            cx.tx.push(*s);
        }
        cx.exec();
        Verdict::Listed
    }

    fn result_json(&self) -> Value {
        json!({ "not_requests": self.not_requests })
    }

    fn reset_stats(&mut self) {
        self.not_requests = 0;
    }

    fn replies(&self) -> bool {
        true
    }

    fn socket(&self) -> Option<Socket> {
        Some(Socket { transport: Transport::Udp, port: self.port })
    }

    fn recv(&mut self, _cx: &mut AppCx, _frame: FrameId, _len: u64) -> usize {
        1
    }

    /// The payload goes back from the send buffer in the request's own frame.
    fn reply(&mut self, cx: &mut AppCx, _i: usize, request: FrameId, len: u64) -> (FrameId, u64) {
        cx.work.reset(Category::App).instr(cx.kernel_app_instr).read(cx.user_rx).write(cx.user_tx);
        cx.exec();
        crate::wire::swap_endpoints(cx.frames.data_mut(request));
        (request, len)
    }
}
