//! udp-echo: send each UDP datagram back where it came from (MACs, IP
//! addresses and ports swapped); on the poll-mode driver the twin of
//! testpmd macswap, on the kernel stack a socket application doing
//! recvfrom and sendto (RFC 862's echo; it listens on `host.app.echo_port`).

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::Result;
use crate::framebuf::FrameId;
use crate::nic::Slot;
use crate::stack::app::Transport;
use crate::stack::{App, AppCx, Socket, Verdict};

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(UdpEcho { port: cfg.echo_port }))
}

struct UdpEcho {
    port: u16,
}

impl App for UdpEcho {
    fn name(&self) -> &'static str {
        "udp-echo"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        let header_instr = cx.costs.header_instr as u64;
        cx.work.reset(Category::App);
        for s in pkts {
            cx.work.instr(header_instr).read(s.buf_addr).write(s.buf_addr);
            crate::wire::swap_endpoints(cx.frames.data_mut(s.frame));
        }
        cx.exec();
        Verdict::Forward
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
