"""Clock times in a zone with daylight-saving time: which moments "2:30" can mean.

On the night the clocks go back, 2:30 happens twice; on the night they go forward, not
at all. ``pytz``'s ``localize`` quietly picks one occurrence (or raises, with
``is_dst=None``) and ``zoneinfo`` needs ``fold`` handled by hand, so this works from
instants instead: an instant is an occurrence of a wall time exactly when converting
it back (``datetime.fromtimestamp``, right in both libraries) gives that wall time.
The functions therefore work for pytz and zoneinfo zones and fixed offsets alike.

Moments are compared by ``timestamp()`` here: two datetimes sharing one zoneinfo
``tzinfo`` compare by wall time, so the two 2:30s would be "equal".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

_PROBES = [timedelta(hours=h) for h in range(-48, 49, 6)]
"""Where to look for the UTC offsets in force around a wall time: any change within a
day either side is seen, and offsets never exceed a day."""


def _offsets(wall: datetime, tz: tzinfo) -> set[timedelta]:
    """The UTC offsets ``tz`` uses in the two days around the naive ``wall``."""
    rough = wall.replace(tzinfo=UTC)
    found = set()
    for probe in _PROBES:
        offset = (rough + probe).astimezone(tz).utcoffset()
        if offset is not None:
            found.add(offset)
    return found


def _instant(wall: datetime, offset: timedelta, tz: tzinfo) -> datetime:
    """``wall`` read with ``offset``, as an aware datetime in ``tz`` (whatever its wall time)."""
    return (wall.replace(tzinfo=UTC) - offset).astimezone(tz)


def occurrences(wall: datetime, tz: tzinfo) -> list[datetime]:
    """Every moment the naive ``wall`` time happens in ``tz``, earliest first: one on most
    days, two in the hour repeated when the clocks go back, none in the hour skipped when
    they go forward."""
    found = {}
    for offset in _offsets(wall, tz):
        moment = _instant(wall, offset, tz)
        if moment.replace(tzinfo=None) == wall:
            found[moment.timestamp()] = moment
    return [found[t] for t in sorted(found)]


def after_gap(wall: datetime, tz: tzinfo) -> datetime:
    """For a ``wall`` time that does not exist (skipped by the clocks going forward), the
    moment it would have been, as the clock reads after the jump: 2:30 becomes 3:30 when
    the clocks go from 2:00 to 3:00. ``wall`` itself when it exists."""
    found = occurrences(wall, tz)
    if found:
        return found[0]
    readings = [_instant(wall, offset, tz) for offset in _offsets(wall, tz)]
    return min((m for m in readings if m.replace(tzinfo=None) > wall), key=lambda m: m.replace(tzinfo=None))


def repeat_note(moment: datetime, now: datetime) -> str:
    """Which of two "1:30 AM"s ``moment`` is, for the night the clocks go back:
    ", before the clocks go back" or ", after the clocks go back" ("went" once they have,
    as seen from ``now``); "" when its clock time happens only once."""
    if moment.tzinfo is None:
        return ""
    found = occurrences(moment.replace(tzinfo=None), moment.tzinfo)
    if len(found) < 2:
        return ""
    first, second, at = found[0], found[-1], now.timestamp()
    if at >= second.timestamp():
        went = True
    elif at <= first.timestamp():
        went = False
    else:  # in the repeated hour itself: which side of the change is it?
        went = now.astimezone(moment.tzinfo).utcoffset() == second.utcoffset()
    side = "before" if moment.timestamp() == first.timestamp() else "after"
    return f", {side} the clocks {'went' if went else 'go'} back"
