"""What the command groups' arguments share: the argparse types that refuse a number out of
range or a day in the future in one line, and the help of `--json`."""

from __future__ import annotations

import argparse
from datetime import UTC, date, datetime

JSON_HELP = "print one JSON object per table (what a scheduler reads) instead of a text line"


def _at_least(kind, lowest, inclusive: bool):
    """An argparse type: `kind`, refused below `lowest` (or at it, unless `inclusive`)."""

    def parse(text: str):
        value = kind(text)
        if value < lowest or (value == lowest and not inclusive):
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: must be {'at least' if inclusive else 'more than'} {lowest}"
            )
        return value

    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value"
    return parse


POSITIVE_INT = _at_least(int, 0, False)
NON_NEGATIVE = _at_least(float, 0, True)


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range: a share is between 0 and 1")
    return value


SHARE = _share  # argparse names it in "invalid _share value"


def _past_day(text: str) -> date:
    try:
        day = date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is not a day: write it YYYY-MM-DD") from None
    if day > datetime.now(UTC).date():
        raise argparse.ArgumentTypeError(
            f"{text} is in the future: its history would end after today, and the quality "
            f"gates keep out sales from the future"
        )
    return day


PAST_DAY = _past_day
