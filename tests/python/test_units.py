"""Unit strings: parsing to base units and errors that name field, value and allowed forms."""

import pytest

from hostsim.units import (
    ConfigError,
    parse_bit_rate_bps,
    parse_frequency_hz,
    parse_int,
    parse_rate,
    parse_size_bytes,
    parse_time_ps,
)


@pytest.mark.parametrize(
    "text, ps",
    [
        ("200ns", 200_000),
        ("1.1us", 1_100_000),
        ("1 us", 1_000_000),
        ("2\u00b5s", 2_000_000),
        ("2\u03bcs", 2_000_000),
        ("1ms", 10**9),
        ("1s", 10**12),
        ("7ps", 7),
        ("1e-6s", 10**6),
        ("0.5ns", 500),
    ],
)
def test_time_to_picoseconds(text, ps):
    assert parse_time_ps(text, "sim.duration") == ps
    assert isinstance(parse_time_ps(text, "sim.duration"), int)


def test_time_zero_allowed_only_where_asked():
    assert parse_time_ps(0, "sim.warmup", positive=False) == 0
    assert parse_time_ps("0ns", "sim.warmup", positive=False) == 0
    with pytest.raises(ConfigError, match=r"^sim\.duration: invalid value '0ms'"):
        parse_time_ps("0ms", "sim.duration")


@pytest.mark.parametrize("bad", ["-1us", "10", "10 parsecs", "ms", "1.2.3ns", "", True, None, [1]])
def test_time_errors_name_field_and_value(bad):
    with pytest.raises(ConfigError) as e:
        parse_time_ps(bad, "sim.duration")
    msg = str(e.value)
    assert msg.startswith("sim.duration: invalid value ")
    assert "allowed:" in msg and "ns" in msg
    assert e.value.field == "sim.duration"


@pytest.mark.parametrize(
    "text, unit, value",
    [
        ("10Gbps", "bps", 10e9),
        ("100 Mbps", "bps", 100e6),
        ("1.5Tbps", "bps", 1.5e12),
        ("64kbps", "bps", 64e3),
        ("5Mpps", "pps", 5e6),
        ("250Kpps", "pps", 250e3),
        ("1pps", "pps", 1.0),
        ("100%", "percent", 100.0),
        ("50.5%", "percent", 50.5),
    ],
)
def test_rate(text, unit, value):
    assert parse_rate(text, "loadgen.rate") == {"unit": unit, "value": value}


def test_rate_dict_form_passes_through_checked():
    assert parse_rate({"unit": "pps", "value": 3}, "loadgen.rate") == {"unit": "pps", "value": 3.0}
    with pytest.raises(ConfigError, match="loadgen.rate"):
        parse_rate({"unit": "furlongs", "value": 3}, "loadgen.rate")
    with pytest.raises(ConfigError, match="loadgen.rate"):
        parse_rate({"unit": "pps", "value": 0}, "loadgen.rate")


def test_rate_error_message_is_exact():
    with pytest.raises(ConfigError) as e:
        parse_rate("10Gbsp", "loadgen.rate")
    assert str(e.value) == (
        "loadgen.rate: invalid value '10Gbsp' (allowed: a rate like '10Gbps', '5Mpps' or '50%')"
    )


@pytest.mark.parametrize("bad", ["0Gbps", "-10Gbps", "0%", "-5%", "10", "10GBps", "fast", 5, 0.0])
def test_rate_rejects_zero_negative_and_unknown(bad):
    with pytest.raises(ConfigError, match=r"^loadgen\.rate: invalid value"):
        parse_rate(bad, "loadgen.rate")


def test_bit_rate_is_integer_bps_and_refuses_pps():
    assert parse_bit_rate_bps("100Gbps", "link.rate") == 100_000_000_000
    assert parse_bit_rate_bps("2.5Gbps", "link.rate") == 2_500_000_000
    for bad in ("5Mpps", "50%", "0Gbps", "-1Gbps"):
        with pytest.raises(ConfigError, match=r"^link\.rate: "):
            parse_bit_rate_bps(bad, "link.rate")


def test_frequency():
    assert parse_frequency_hz("3GHz", "cpu.frequency") == 3e9
    assert parse_frequency_hz("2.5 MHz", "cpu.frequency") == 2.5e6
    assert parse_frequency_hz("100kHz", "cpu.frequency") == 1e5
    assert parse_frequency_hz(1000, "cpu.frequency") == 1000.0
    with pytest.raises(ConfigError, match=r"^cpu\.frequency: invalid value '3Gbps'"):
        parse_frequency_hz("3Gbps", "cpu.frequency")


@pytest.mark.parametrize(
    "text, n",
    [
        (64, 64),
        ("64", 64),
        ("64B", 64),
        ("1KB", 1000),
        ("2MiB", 2 * 1024 * 1024),
        ("1.5KiB", 1536),
        ("1GB", 10**9),
        ("1GiB", 2**30),
        ("19.25MiB", int(19.25 * 2**20)),
    ],
)
def test_sizes_decimal_and_binary(text, n):
    assert parse_size_bytes(text, "cache.size") == n


@pytest.mark.parametrize("bad", ["1.5B", "2Mb", "-1KiB", "lots", "0B"])
def test_size_errors(bad):
    with pytest.raises(ConfigError, match=r"^cache\.size: invalid value"):
        parse_size_bytes(bad, "cache.size")


def test_int_ranges():
    assert parse_int("7", "loadgen.flows", 1, 10) == 7
    with pytest.raises(ConfigError) as e:
        parse_int(0, "loadgen.flows", 1, 65536)
    assert str(e.value) == "loadgen.flows: invalid value '0' (allowed: an integer from 1 to 65536)"
    with pytest.raises(ConfigError):
        parse_int(True, "loadgen.flows", 1, 10)
    with pytest.raises(ConfigError):
        parse_int(2.5, "loadgen.flows", 1, 10)


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)
