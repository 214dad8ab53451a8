"""touchfwd and touchdrop are composed of parts whose costs stay visible
(issue 15 item 10): touching is the app's per-line reads, forwarding adds
testpmd's MAC swap to the app and its transmit path to `tx`; touchdrop
transmits nothing. Checked on instruction counts, which are exact."""

import hostsim


def _run(app: str) -> dict:
    r = hostsim.simulate({"app": app, "preset": "altra", "sim": {"duration": "300us", "warmup": "100us"},
                          "loadgen": {"size": 512, "rate": "20%"}})
    acc = r["cores"][0]["account"]
    return {"packets": acc["packets"], **{k: acc["instructions"][k] for k in ("app", "tx", "rx", "mempool")},
            "rx_back": r["accounting"]["measured"]["returned"], "consumed": r["cores"][0]["pmd"]["app_consumed"]}


def test_touching_and_transmitting_are_each_visible():
    fwd, drop, pmd = _run("touchfwd"), _run("touchdrop"), _run("testpmd")
    # Below the knee every run handles the same packets.
    n = pmd["packets"]
    assert n > 500 and fwd["packets"] == drop["packets"] == n
    # touchdrop: 8 instructions per line (host.pmd.costs.touch_instr_per_line) over the
    # 508 B each frame has without its FCS, from a line-aligned buffer: 8 lines.
    assert drop["app"] == n * 8 * 8
    assert drop["tx"] == 0 and drop["consumed"] == n and drop["rx_back"] == 0
    # touchfwd = touchdrop's reads + testpmd's swap, then testpmd's transmit path.
    assert fwd["app"] == drop["app"] + pmd["app"]
    assert fwd["tx"] == pmd["tx"] > 0
    assert fwd["consumed"] == 0 and fwd["rx_back"] == pmd["rx_back"] > 0
