"""The URL converters every route uses."""

from werkzeug.routing import IntegerConverter


class RowIdConverter(IntegerConverter):
    """``<int:...>`` in every route: ids are 32-bit on PostgreSQL, so a larger number is no
    row of ours and answers 404 at routing instead of reaching the database.

    The range is written into the pattern itself (1 to 2**31 - 1, no leading zeros): a value
    refused later, by the converter, would let the router answer 405 when another method's
    rule has the same path.
    """

    regex = (r"(?:[1-9]\d{0,8}|1\d{9}|20\d{8}|21[0-3]\d{7}|214[0-6]\d{6}|2147[0-3]\d{5}|21474[0-7]\d{4}"
             r"|214748[0-2]\d{3}|2147483[0-5]\d{2}|21474836[0-3]\d|214748364[0-7])")

    def __init__(self, url_map, *args, **kwargs):
        kwargs.setdefault("max", 2**31 - 1)
        super().__init__(url_map, *args, **kwargs)
