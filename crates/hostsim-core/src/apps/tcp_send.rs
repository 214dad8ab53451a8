//! tcp-send: a TCP sender on the kernel stack (the transmit study, SPEC
//! §1 study 4). One thread per core calls `write()` with a buffer of
//! `buffer_bytes` on each of its `connections` in turn, `writes` times in
//! all (0: until `sim.duration`); the kernel's TCP does the rest
//! (`stack/kernel/tcp_tx.rs`), and the load generator's receiver
//! (`loadgen.tcp`, which `--app tcp-send` implies) terminates the
//! connections at its round-trip time. What each `write()` cost — time
//! inside it, time blocked for send-buffer space, how long its buffer was
//! held — is in `host.cores[].stack.tcp_send`.


use super::config::AppConfig;
use crate::error::{ConfigError, Result};
use crate::nic::Slot;
use crate::stack::app::Transport;
use crate::stack::{App, AppCx, Socket, Verdict, WriterSpec};

/// `host.app.tcp_send`: what the application writes, the stack's
/// [`WriterSpec`] itself. Its defaults:
/// * `connections` 1 per core (estimate: a single bulk flow);
/// * `buffer_bytes` 3.6 MB, the study's application buffers (SPEC §1, study 4);
/// * `buffers` 2 per connection, written in turn (estimate: double
///   buffering); with `host.tx_scheme = zerocopy` a write waits until its
///   buffer's previous data is acknowledged and its completion read;
/// * `writes` 0: write until `sim.duration` ends (the study writes 1125
///   buffers, 4.05 GB: `writes = 1125`);
/// * `dst_port` 5001 (iperf2's; estimate) and `src_port` 40000, the first source port.
pub type TcpSendConfig = WriterSpec;

impl Default for WriterSpec {
    fn default() -> Self {
        WriterSpec { connections: 1, buffer_bytes: 3_600_000, buffers: 2, writes: 0, dst_port: 5001, src_port: 40000 }
    }
}

impl WriterSpec {
    pub fn validate(&self) -> Result<()> {
        let bad = |f: &str, v: u64, allowed: &str| -> Result<()> { Err(ConfigError::new(f, v.to_string(), allowed).into()) };
        if !(1..=256).contains(&self.connections) {
            return bad("app.tcp_send.connections", self.connections as u64, "1 to 256");
        }
        // Each core's buffers sit in 64 GiB of simulated addresses (`tcp_tx.rs`).
        if !(1..=256 << 20).contains(&self.buffer_bytes) {
            return bad("app.tcp_send.buffer_bytes", self.buffer_bytes, "1 to 268435456 (256 MiB)");
        }
        if !(1..=64).contains(&self.buffers) {
            return bad("app.tcp_send.buffers", self.buffers as u64, "1 to 64");
        }
        if self.buffer_bytes.div_ceil(2 << 20) * (2 << 20) * self.buffers as u64 * self.connections as u64 > 64 << 30 {
            return bad("app.tcp_send.buffer_bytes", self.buffer_bytes, "small enough that connections x buffers x buffer_bytes (2 MiB-aligned) fit in 64 GiB");
        }
        if self.src_port as u32 + self.connections * 64 > u16::MAX as u32 {
            return bad("app.tcp_send.src_port", self.src_port as u64, "low enough that 64 cores' connections fit below 65536");
        }
        Ok(())
    }
}

pub fn new(cfg: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(TcpSend { cfg: cfg.tcp_send }))
}

/// Segments carry at most 1460 B of payload (`host.kernel.tcp.mss_bytes`
/// allows no more): 1518 B frames.
pub fn max_frame_bytes(_: &AppConfig) -> u32 {
    1518
}

struct TcpSend {
    cfg: TcpSendConfig,
}

impl App for TcpSend {
    fn name(&self) -> &'static str {
        "tcp-send"
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        super::kernel_only_burst(cx, pkts)
    }

    fn replies(&self) -> bool {
        true
    }

    fn socket(&self) -> Option<Socket> {
        Some(Socket { transport: Transport::Tcp, port: self.cfg.src_port })
    }

    fn writer(&self) -> Option<WriterSpec> {
        Some(self.cfg)
    }
}
