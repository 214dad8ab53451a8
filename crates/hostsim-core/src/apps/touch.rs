//! touchfwd and touchdrop (the kernel-bypass study's benchmarks): read every
//! byte of every packet, then swap the MACs and forward it (touchfwd) or
//! free it (touchdrop). The reads are real (a fold over the bytes, kept as
//! a digest) and charged per cache line.

use serde_json::{json, Value};

use super::config::AppConfig;
use crate::cpu::Category;
use crate::error::Result;
use crate::nic::Slot;
use crate::stack::{App, AppCx, Verdict};

pub fn new_fwd(_: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(Touch { forward: true, digest: 0 }))
}

pub fn new_drop(_: &AppConfig) -> Result<Box<dyn App>> {
    Ok(Box::new(Touch { forward: false, digest: 0 }))
}

struct Touch {
    forward: bool,
    /// XOR of the digests of every packet read.
    digest: u64,
}

impl App for Touch {
    fn name(&self) -> &'static str {
        if self.forward {
            "touchfwd"
        } else {
            "touchdrop"
        }
    }

    fn burst(&mut self, cx: &mut AppCx, pkts: &[Slot]) -> Verdict {
        let c = *cx.costs;
        cx.work.reset(Category::App);
        for s in pkts {
            let frame = cx.frames.data_mut(s.frame);
            cx.work.read_lines(s.buf_addr, frame.len() as u64, c.touch_instr_per_line as u64);
            self.digest ^= touch(frame);
            if self.forward {
                super::swap_macs(cx, s);
            }
        }
        cx.exec();
        if self.forward {
            Verdict::Forward
        } else {
            Verdict::Consume
        }
    }

    fn result_json(&self) -> Value {
        json!({"touch_digest": self.digest})
    }

    fn reset_stats(&mut self) {
        self.digest = 0;
    }
}

/// Reads every byte of a frame: a word-wise XOR fold, so the bytes are really read.
#[inline]
pub fn touch(frame: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut chunks = frame.chunks_exact(8);
    for c in &mut chunks {
        acc ^= u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    }
    for &b in chunks.remainder() {
        acc = acc.rotate_left(8) ^ b as u64;
    }
    acc
}
