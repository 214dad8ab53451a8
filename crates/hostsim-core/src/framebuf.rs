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

pub struct FramePool {
    /// Every buffer, `buf_size` bytes each, back to back (one allocation).
    bufs: Vec<u8>,
    frame_bytes: Vec<u32>,
    /// The generator port that sent each frame (`NO_ORIGIN` for frames the
    /// host built); kept only when there are several ports.
    origin: Vec<u8>,
    track_origin: bool,
    free: Vec<FrameId>,
    buf_size: usize,
}

impl FramePool {
    /// A pool whose buffers hold frames up to `max_frame_bytes` (FCS included).
    pub fn new(max_frame_bytes: u32) -> Self {
        FramePool { bufs: Vec::new(), frame_bytes: Vec::new(), origin: Vec::new(), track_origin: false, free: Vec::new(), buf_size: max_frame_bytes as usize - FCS_LEN }
    }

    /// Remember which generator port sent each frame (several ports).
    pub fn track_origins(mut self) -> Self {
        self.track_origin = true;
        self
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
                if self.track_origin {
                    self.origin.push(NO_ORIGIN);
                }
                (self.frame_bytes.len() - 1) as FrameId
            }
        };
        self.frame_bytes[id as usize] = frame_bytes;
        if self.track_origin {
            self.origin[id as usize] = NO_ORIGIN;
        }
        id
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

    #[inline]
    pub fn free(&mut self, id: FrameId) {
        self.free.push(id);
    }

    /// Marks the frame as sent by generator port `port`.
    #[inline]
    pub fn set_origin(&mut self, id: FrameId, port: usize) {
        if self.track_origin {
            self.origin[id as usize] = port as u8;
        }
    }

    /// The generator port that sent the frame, if one did.
    #[inline]
    pub fn origin(&self, id: FrameId) -> Option<usize> {
        let o = *self.origin.get(id as usize)?;
        (o != NO_ORIGIN).then_some(o as usize)
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
        let mut p = FramePool::new(1518).track_origins();
        let a = p.alloc(64);
        let b = p.alloc(1518);
        assert_eq!(p.data(a).len(), 60);
        assert_eq!(p.data(b).len(), 1514);
        p.data_mut(a)[0] = 9;
        p.free(a);
        let c = p.alloc(128);
        assert_eq!(c, a);
        assert_eq!(p.data(c)[0], 9);
        assert_eq!(p.capacity(), 2);
        p.set_origin(c, 3);
        assert_eq!(p.origin(c), Some(3));
        p.free(c);
        let d = p.alloc(64);
        assert_eq!(p.origin(d), None, "a reused buffer forgets its origin");
        assert_eq!(p.in_use(), 2);
    }
}
