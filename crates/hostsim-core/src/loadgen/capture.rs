//! Frame capture to pcap (libpcap format, nanosecond timestamps, Ethernet
//! link type), readable by tcpdump, Wireshark/tshark, scapy and dpkt. Frames
//! are written without their FCS, as capture tools record them.

use std::fs::File;
use std::io::BufWriter;
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::engine::time::Ps;
use crate::error::{Error, Result};

pub struct Capture {
    path: String,
    writer: Option<PcapWriter<BufWriter<File>>>,
    limit: u64,
    written: u64,
    error: Option<String>,
}

impl Capture {
    pub fn create(path: &str, limit: u64) -> Result<Capture> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: 65535,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
        };
        let writer = PcapWriter::with_header(BufWriter::with_capacity(1 << 16, file), header).map_err(|e| Error::io(path, e))?;
        Ok(Capture { path: path.to_string(), writer: Some(writer), limit, written: 0, error: None })
    }

    #[inline]
    pub fn write(&mut self, t: Ps, data: &[u8]) {
        if self.limit != 0 && self.written >= self.limit {
            return;
        }
        if let Some(w) = self.writer.as_mut() {
            let pkt = PcapPacket::new(Duration::from_nanos(t / 1_000), data.len() as u32, data);
            match w.write_packet(&pkt) {
                Ok(_) => self.written += 1,
                Err(e) => {
                    self.error = Some(e.to_string());
                    self.writer = None;
                }
            }
        }
    }

    /// Flushes the file; reports the first write error.
    pub fn finish(mut self) -> Result<u64> {
        if let Some(w) = self.writer.take() {
            use std::io::Write;
            w.into_writer().flush().map_err(|e| Error::io(&self.path, e))?;
        }
        match self.error {
            Some(e) => Err(Error::io(&self.path, e)),
            None => Ok(self.written),
        }
    }
}
