"""describe's lines for a flight dump and for a run with the flight
recorder on (record --flight), from headers as the recorder writes them,
and the reader's shape check of the two header members."""
from hopscope.record.reader import check_header
from hopscope.report.describe import flight_lines

START = 1_000_000_000


def dump(**kw):
    d = {"index": 2, "trigger": "d_oq>500us", "trigger_ns": START + 1_500_000_000,
         "delay": "d_oq", "delay_ns": 812_000, "trigger_seq": 77, "triggers": 3,
         "frozen_ns": START + 1_600_000_000, "freeze_ns": 9_000_000, "records": 128,
         "records_per_cpu": 128}
    d.update(kw)
    return {"start_monotonic_ns": START, "drop_reasons": {"5": "QDISC_DROP"},
            "flight": {"records": 128, "triggers": ["d_oq>500us", "signal"]},
            "flight_dump": d}


def test_a_dump_says_its_trigger_packet_and_times():
    [(label, text)] = flight_lines(dump(), None)
    assert label == "flight"
    assert text == ("FLIGHT DUMP 2: trigger d_oq>500us (d_oq 812.000 us, packet seq 77) at "
                    "1.500 s into the run; the last 128 records before the freeze at 1.600 s "
                    "(3 triggers by then; the rings kept 128 per CPU)"), text


def test_a_drop_dump_names_the_reason_and_a_signal_dump_no_packet():
    h = dump(trigger="drop:QDISC_DROP", drop_reason=5)
    del h["flight_dump"]["delay"], h["flight_dump"]["delay_ns"]
    assert "trigger drop:QDISC_DROP (reason QDISC_DROP, packet seq 77)" in flight_lines(h, None)[0][1]
    h = dump(trigger="signal")
    for k in ("delay", "delay_ns", "trigger_seq"):
        del h["flight_dump"][k]
    assert "FLIGHT DUMP 2: trigger signal at 1.500 s" in flight_lines(h, None)[0][1]


def test_the_run_says_what_its_recorder_did():
    h = dump()
    del h["flight_dump"]
    c = {"flight": {"dumps": 1, "dumps_skipped": 4, "dumps_failed": 0, "triggers": 9,
                    "records_kept": 100, "records_not_kept": 2}}
    assert flight_lines(h, c) == [("flight", "recorder on: last 128 records, triggers "
                                   "d_oq>500us, signal; 1 dumps, 4 skipped, 9 triggers, 2 "
                                   "records not kept (frozen)")]
    assert flight_lines({}, c) == []


def test_the_members_must_be_objects():
    assert check_header(dump()) is None
    for k in ("flight", "flight_dump"):
        assert check_header({k: [1]}) == f"{k!r} is a list, expected an object", k
