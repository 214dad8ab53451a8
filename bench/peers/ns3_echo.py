#!/usr/bin/env python3
"""The harness workload in ns-3, for a speed comparison (issue 17).

Two nodes on a point-to-point link (`PointToPointHelper`: rate, one-way
delay, its default 100-packet DropTail queue per device); node 0 sends UDP
datagrams at a constant rate to an echo responder on node 1 that serves one
at a time for a fixed service time and sends each back to its sender; node
0 counts the echoes. Both applications are C++ (compiled through cppyy,
which the `ns3` package is built on), so no Python runs per packet.

A frame's time on the link is matched to hostsim's: ns-3's PPP framing has
no preamble, inter-frame gap or FCS, so the UDP payload is chosen to make
each PPP frame as long as a 64 B Ethernet frame with its 20 B of preamble
and gap (84 B: 2 B PPP + 20 B IPv4 + 8 B UDP + 54 B payload).

    python bench/peers/ns3_echo.py --rate-pps 74.4e6 --service 10ns --duration 10ms
"""

from __future__ import annotations

import argparse
import json
import time

CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/point-to-point-module.h"
#include <deque>

namespace hostsim_peer {
using namespace ns3;

// Serves datagrams one at a time for `service`, then returns each to its sender.
class EchoService : public Application {
  public:
    uint64_t received = 0, sent = 0;
    void Setup(uint16_t port, Time service) { m_port = port; m_service = service; }
  private:
    void StartApplication() override {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_socket->SetRecvCallback(MakeCallback(&EchoService::Read, this));
    }
    void StopApplication() override { if (m_socket) m_socket->Close(); }
    void Read(Ptr<Socket> s) {
        Address from;
        Ptr<Packet> p;
        while ((p = s->RecvFrom(from))) {
            received++;
            m_queue.emplace_back(p, from);
            if (!m_busy) Serve();
        }
    }
    void Serve() { m_busy = true; Simulator::Schedule(m_service, &EchoService::Done, this); }
    void Done() {
        auto [p, from] = m_queue.front();
        m_queue.pop_front();
        m_socket->SendTo(p, 0, from);
        sent++;
        if (m_queue.empty()) m_busy = false; else Serve();
    }
    Ptr<Socket> m_socket;
    uint16_t m_port = 0;
    Time m_service;
    bool m_busy = false;
    std::deque<std::pair<Ptr<Packet>, Address>> m_queue;
};

// Sends `count` datagrams of `size` B, one every `interval`; counts the echoes.
class RateClient : public Application {
  public:
    uint64_t sent = 0, echoed = 0;
    void Setup(Address peer, uint32_t size, Time interval, uint64_t count) {
        m_peer = peer; m_size = size; m_interval = interval; m_count = count;
    }
  private:
    void StartApplication() override {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->Bind();
        m_socket->Connect(m_peer);
        m_socket->SetRecvCallback(MakeCallback(&RateClient::Read, this));
        Send();
    }
    void StopApplication() override { if (m_socket) m_socket->Close(); }
    void Send() {
        m_socket->Send(Create<Packet>(m_size));
        if (++sent < m_count) Simulator::Schedule(m_interval, &RateClient::Send, this);
    }
    void Read(Ptr<Socket> s) { while (s->Recv()) echoed++; }
    Ptr<Socket> m_socket;
    Address m_peer;
    uint32_t m_size = 0;
    Time m_interval;
    uint64_t m_count = 0;
};

struct Outcome { uint64_t sent, served, echoed; double wall_s; };

Outcome run(double rate_bps, double delay_ns, double pps, double service_ns, double duration_ns, uint32_t payload) {
    NodeContainer nodes;
    nodes.Create(2);
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(rate_bps))));
    link.SetChannelAttribute("Delay", TimeValue(NanoSeconds(int64_t(delay_ns))));
    NetDeviceContainer devices = link.Install(nodes);
    InternetStackHelper stack;
    stack.Install(nodes);
    Ipv4AddressHelper addresses;
    addresses.SetBase("10.1.1.0", "255.255.255.0");
    Ipv4InterfaceContainer ifaces = addresses.Assign(devices);

    Ptr<EchoService> server = CreateObject<EchoService>();
    server->Setup(9, PicoSeconds(int64_t(service_ns * 1000)));
    nodes.Get(1)->AddApplication(server);
    Ptr<RateClient> client = CreateObject<RateClient>();
    uint64_t count = uint64_t(pps * duration_ns / 1e9);
    client->Setup(InetSocketAddress(ifaces.GetAddress(1), 9), payload, PicoSeconds(int64_t(1e12 / pps)), count);
    nodes.Get(0)->AddApplication(client);
    server->SetStartTime(Seconds(0));
    client->SetStartTime(Seconds(0));

    auto t0 = std::chrono::steady_clock::now();
    Simulator::Stop(NanoSeconds(int64_t(duration_ns)) + MilliSeconds(1));
    Simulator::Run();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Outcome o{client->sent, server->sent, client->echoed, wall};
    Simulator::Destroy();
    return o;
}
}  // namespace hostsim_peer
"""

#: PPP frame as long on the link as a 64 B Ethernet frame with preamble and gap.
WIRE_BYTES = 84
PAYLOAD = WIRE_BYTES - 2 - 20 - 8


def run(rate_bps: float = 100e9, delay_ns: float = 1000.0, pps: float = 74.4e6,
        service_ns: float = 10.0, duration_ns: float = 10e6) -> dict:
    """Runs the workload in ns-3; returns counts and its wall time (of `Simulator::Run` only)."""
    from ns import ns  # noqa: F401  (loads ns-3's libraries and headers into cppyy)
    import cppyy

    if not hasattr(cppyy.gbl, "hostsim_peer"):
        cppyy.cppdef(CPP)
    o = cppyy.gbl.hostsim_peer.run(rate_bps, delay_ns, pps, service_ns, duration_ns, PAYLOAD)
    return {
        "simulator": "ns-3", "sent": int(o.sent), "served": int(o.served), "echoed": int(o.echoed),
        "wall_s": float(o.wall_s), "packets_per_wall_s": int(o.sent) / float(o.wall_s),
    }


def workload_args(doc: str) -> argparse.ArgumentParser:
    """The workload's options, shared with compare.py."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate-pps", type=float, default=74.4e6)
    ap.add_argument("--service", default="10ns")
    ap.add_argument("--duration", default="10ms")
    ap.add_argument("--delay", default="1us")
    return ap


def main() -> None:
    from hostsim.units import parse_time_ps

    a = workload_args(__doc__).parse_args()
    out = run(100e9, parse_time_ps(a.delay, "delay") / 1e3, a.rate_pps,
              parse_time_ps(a.service, "service") / 1e3, parse_time_ps(a.duration, "duration") / 1e3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
