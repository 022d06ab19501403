"""The domain's parsers take anything a client can send: each answers a value or its own typed refusal.

The other unit tests check what the parsers make of good input. These feed them whatever
Hypothesis can build (text with lone surrogates and NUL, wrong types, NaN and 1e999, nesting
far past any limit, RRULE parts in any order and spelling, zones that do not exist) and hold
them to one promise: a value that is what it says, or the parser's typed error with words for a
person. Any other exception would be a 500 in the shell that called the parser.
"""

import json
from datetime import date, datetime, time, timezone

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from models.actions.scheduling import check_payload
from models.core.errors import InvalidInput, TooLarge
from models.core.json_input import MAX_DEPTH, parse_json_object
from models.core.policy import Policy
from models.core.time_input import parse_local_time, resolve_typed
from models.timing.cadence import Cadence, CadenceError, parse_cadence
from models.timing.delay import InvalidDelay, parse_delay
from models.timing.recurrence import RecurrenceError, parse_recurrence
from models.timing.send_window import InvalidSendWindow, parse_send_window
from models.timing.wall_time import InvalidTimezone

ZONES = ["America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kolkata", "UTC"]
GARBAGE_ZONES = ["Mars/Olympus_Mons", "", "../../etc/passwd", "America/New_York\x00", "\ud800", "EST5EDT,M3"]
# Hypothesis leaves lone surrogates out of text unless asked; a client's JSON can carry them (\ud800).
TEXT = st.text(alphabet=st.characters() | st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\x00", "\u202e"]),
               max_size=40)
ANYTHING = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), TEXT,
                     st.lists(st.integers(), max_size=3), st.dictionaries(TEXT, st.integers(), max_size=2))


# -- payloads: a JSON body ----------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**40, max_value=10**40),
              st.floats(allow_nan=True, allow_infinity=True), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=20,
)


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


@st.composite
def json_bodies(draw) -> bytes:
    """A body as a client might send it: an object around any value, maybe nested deep, maybe 1e999."""
    inner = draw(JSON_VALUES)
    nesting = draw(st.sampled_from([0, 1, MAX_DEPTH - 2, MAX_DEPTH, 5_000]))
    text = "[" * nesting + json.dumps(inner) + "]" * nesting  # ensure_ascii: lone surrogates become \\udxxx
    if draw(st.booleans()):
        text = text.replace("0", "1e999", 1)
    text = '{"payload": %s}' % text
    encoding = draw(st.sampled_from(["utf-8", "utf-16", "latin-1"]))
    return text.encode(encoding, "replace")


def _storable(body: dict) -> None:
    """What every accepted body must be: strict JSON, encodable as UTF-8, no NUL, within the depth."""
    text = json.dumps(body, allow_nan=False, ensure_ascii=False)
    text.encode("utf-8")
    assert "\x00" not in text and "\\u0000" not in text
    assert _depth(body) <= MAX_DEPTH
    assert json.loads(text) == body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.one_of(json_bodies(), st.binary(max_size=200)))
@example(raw=b'{"payload": {"x": NaN}}')
@example(raw=b'{"payload": [-Infinity]}')
@example(raw=b'{"payload": 1e999}')
@example(raw=b'{"payload": "\\ud800"}')
@example(raw=b'{"\\udc00": 1}')
@example(raw=b'{"payload": "a\\u0000b"}')
@example(raw=b"[" * 100_000 + b"]" * 100_000)
def test_a_json_body_is_an_object_fit_to_store_or_a_clear_refusal(raw):
    try:
        body = parse_json_object(raw)
    except InvalidInput as refused:
        assert refused.status in (400, 422) and refused.message and refused.code
        return
    assert isinstance(body, dict)
    _storable(body)
    try:
        check_payload(body.get("payload"), Policy())
    except (InvalidInput, TooLarge) as refused:
        assert refused.field == "payload"


# -- wall times ---------------------------------------------------------------------------------


@given(raw=st.one_of(ANYTHING, st.from_regex(r"\A-?\d{1,5}-\d{1,3}-\d{1,3}[T ]\d{1,3}:\d{1,3}\Z")))
@example(raw="2026-02-30T09:00")
@example(raw="2026-03-08T24:00")
@example(raw="0000-01-01T00:00")
def test_a_typed_wall_time_is_a_date_and_a_time_or_a_refusal_naming_its_field(raw):
    try:
        day, at = parse_local_time(raw, "starts_local")
    except InvalidInput as refused:
        assert (refused.field, refused.code) == ("starts_local", "bad_time")
        return
    assert isinstance(day, date) and isinstance(at, time)
    assert raw.strip() == f"{day.year:04d}-{day.month:02d}-{day.day:02d}T{at.hour:02d}:{at.minute:02d}"


@given(moment=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59)),
       zone=st.sampled_from(ZONES + GARBAGE_ZONES) | TEXT)
@example(moment=datetime(1, 1, 1, 0, 0), zone="Pacific/Chatham")
@example(moment=datetime(9999, 12, 31, 23, 59), zone="America/New_York")
def test_a_wall_time_resolves_to_a_utc_instant_in_its_zone_or_is_refused(moment, zone):
    text = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:{moment.minute:02d}"
    day, at = parse_local_time(text)
    try:
        resolved = resolve_typed(day, at, zone)
    except InvalidInput as refused:
        assert refused.field in ("timezone", "local_time") and refused.message
        return
    assert resolved.instant.utcoffset().total_seconds() == 0
    # The wall time it shows is the one typed, or later by a gap (never more than a few hours).
    shown = resolved.local.replace(tzinfo=None)
    assert moment.replace(second=0, microsecond=0) <= shown
    assert (shown - moment.replace(second=0, microsecond=0)).total_seconds() <= 3 * 3600


# -- RRULE ----------------------------------------------------------------------------------------

PARTS = ["FREQ", "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYMONTH", "BYSETPOS", "WKST", "BYHOUR",
         "BYYEARDAY", "DTSTART", "X-NAME", "freq", ""]
VALUES = ["HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY", "SECONDLY", "1", "0", "-1", "2", "31", "366", "99999999",
          "MO", "TU,TH", "-1FR", "+2MO", "53SU", "20271231T090000Z", "20271231", "2027-12-31", "13", "", "1.5", "NaN",
          "\ud800", "a\x00b"]


@st.composite
def rrules(draw) -> str:
    parts = draw(st.lists(st.tuples(st.sampled_from(PARTS), st.sampled_from(VALUES) | TEXT), max_size=5))
    text = ";".join(f"{name}={value}" for name, value in parts)
    if draw(st.booleans()):
        text = "FREQ=" + draw(st.sampled_from(VALUES[:6])) + (";" + text if text else "")
    return draw(st.sampled_from(["", "RRULE:", " "])) + text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rrule=rrules() | TEXT | st.text(max_size=600),
       starts=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)).map(
           lambda moment: moment.replace(second=0, microsecond=0)),
       zone=st.sampled_from(ZONES + GARBAGE_ZONES))
@example(rrule="FREQ=MONTHLY;BYMONTHDAY=31", starts=datetime(2027, 1, 31, 9, 0), zone="Europe/London")
@example(rrule="FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", starts=datetime(2027, 1, 1, 9, 0), zone="UTC")
@example(rrule="FREQ=HOURLY;INTERVAL=99999999", starts=datetime(2027, 1, 1, 9, 0), zone="UTC")
def test_an_rrule_is_a_rule_whose_occurrences_go_forward_or_a_refusal_naming_its_part(rrule, starts, zone):
    try:
        rule = parse_recurrence(rrule, starts_local=starts, zone=zone)
    except RecurrenceError as refused:
        assert refused.part in ("rrule", "starts_local", "ends_local", "exdates_local") and refused.message
        return
    except InvalidTimezone as refused:
        assert zone not in ZONES and str(refused)
        return
    after = datetime(2026, 12, 1, tzinfo=timezone.utc)
    found = [occurrence.instant for occurrence in rule.next_occurrences(after, 5)]
    assert all(instant > after and instant.utcoffset().total_seconds() == 0 for instant in found)
    assert found == sorted(set(found))


# -- cadences, delays and send windows ------------------------------------------------------------


@given(value=ANYTHING | st.sampled_from([c.value for c in Cadence]).flatmap(
    lambda v: st.sampled_from([v, v.upper(), f" {v}", v.replace("_", "-")])))
def test_a_cadence_is_one_of_the_seven_spelled_exactly_or_a_refusal(value):
    try:
        cadence = parse_cadence(value)
    except CadenceError as refused:
        assert "hourly" in str(refused)  # the message names the seven
        return
    assert cadence.value == value


@given(text=ANYTHING | st.from_regex(r"\A[+-]?P(\d{1,6}[WDYM])*(T(\d{1,7}[HMS])*)?\Z"))
@example(text="P5M")
@example(text="PT1.5H")
@example(text="P99999999D")
def test_a_delay_is_a_duration_that_renders_back_or_a_refusal(text):
    try:
        delay = parse_delay(text)
    except InvalidDelay as refused:
        assert str(refused)
        return
    assert parse_delay(delay.iso) == delay


@given(window=st.dictionaries(st.sampled_from(["start", "end", "days", "zone"]) | TEXT,
                              ANYTHING | st.from_regex(r"\A\d{1,2}:\d{1,2}\Z")
                              | st.lists(st.sampled_from(["mon", "tue", "sun", "Mon", "xyz"]), max_size=8),
                              max_size=4) | ANYTHING)
@example(window={"start": "09:00", "end": "09:00", "days": ["mon"]})
@example(window={"start": "22:00", "end": "24:00", "days": ["mon", "mon"]})
def test_a_send_window_reads_back_as_itself_or_is_refused_naming_its_part(window):
    try:
        read = parse_send_window(window)
    except InvalidSendWindow as refused:
        assert refused.part in (None, "start", "end", "days") or refused.part in window
        return
    assert parse_send_window(read.as_dict()) == read
