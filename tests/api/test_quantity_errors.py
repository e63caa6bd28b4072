"""go_parse_error agrees with parse_quantity on what parses, and names ParseQuantity's error."""

from hypothesis import given
from hypothesis import strategies as st

from taintplane.api.quantity import QuantityError, go_parse_error, parse_quantity

QUANTITYISH = st.text(alphabet="0123456789.+-eEinumkKMGTPx ", max_size=8).map(str.strip)


@given(QUANTITYISH)
def test_it_refuses_exactly_what_parse_quantity_refuses(text):
    try:
        parse_quantity(text)
        parses = True
    except QuantityError:
        parses = False
    assert (go_parse_error(text) is None) == parses


def test_the_two_errors():
    assert go_parse_error("1KK") == "unable to parse quantity's suffix"
    assert go_parse_error("abc") == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
