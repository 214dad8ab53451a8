//! iperf: a TCP bulk receiver on the kernel stack (iperf3 listening on
//! `host.app.iperf_port`). The stack does the work — GRO, TCP receive, one
//! ACK per merged skb, `recv` of `host.kernel.recv_bytes` with its copy
//! (`stack/kernel/socket.rs`); the application only consumes the bytes.

use super::config::AppConfig;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::app::Transport;
use crate::stack::{App, AppCx, Socket, Verdict};

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(Iperf { port: cfg.iperf_port }))
}

struct Iperf {
    port: u16,
}

impl App for Iperf {
    fn name(&self) -> &'static str {
        "iperf"
    }

    /// Not a poll-mode driver application (the registry says so); consumes what it gets.
    fn burst(&mut self, _cx: &mut AppCx, _pkts: &[Slot]) -> Verdict {
        Verdict::Consume
    }

    fn replies(&self) -> bool {
        true
    }

    fn socket(&self) -> Option<Socket> {
        Some(Socket { transport: Transport::Tcp, port: self.port })
    }
}
